"""Measuring a vLLM server that is already running (a workshop's shared GPU server, a team's
cluster) instead of starting one.

One way to select it: the environment variable `GUIDE_ENDPOINT=http://host:port`, set before
Jupyter starts (a workshop leader sets it for the room). Optional: `GUIDE_ENDPOINT_KEY` (the
API key, read at each request and never stored), `GUIDE_ENDPOINT_MODEL` (a served model name;
default: the first of /v1/models) and `GUIDE_ENDPOINT_TOKENIZER` (a local folder with the
model's tokenizer: vLLM's benchmark client counts prompt tokens on this machine).

An `Endpoint` stands in for a `Server` (base_url, model_path, tokenizer, report, start_seconds,
warmed_up), so the rest of the harness runs the same loads and reads the same facts. It never
starts or stops anything, and a remote engine's settings cannot be changed from a notebook:
`check_config` refuses a config that differs from the guide's default in an engine setting.
"""
from __future__ import annotations

import dataclasses
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from helpers import models
from helpers.config import ConfigError, EngineConfig
from helpers.engine import reported

URL_ENV, KEY_ENV, MODEL_ENV, TOKENIZER_ENV = ("GUIDE_ENDPOINT", "GUIDE_ENDPOINT_KEY", "GUIDE_ENDPOINT_MODEL",
                                              "GUIDE_ENDPOINT_TOKENIZER")
TIMEOUT_S = 10
# EngineConfig fields that do not describe the engine's behaviour on a remote server: the
# model is whatever it serves, the device whatever it runs on.
NOT_ENGINE_SETTINGS = ("model", "device")


class EndpointError(ConfigError):
    """The endpoint cannot be measured: wrong URL, nothing answers, not vLLM, key refused."""


class RemoteSettingError(ConfigError):
    """A cell asked a remote engine for a setting only whoever runs the server can change."""

    def __init__(self, asked: dict, running: dict, url: str):
        self.asked, self.running = asked, running
        wanted = ", ".join(f"{k}={v!r}" for k, v in asked.items())
        known = {k: v for k, v in running.items() if v is not None}
        runs = (", ".join(f"{k}={v!r}" for k, v in known.items()) if known else
                "settings it does not publish (/server_info answers only with VLLM_SERVER_DEV_MODE=1)")
        super().__init__(", ".join(asked),
                         f"a remote engine's settings cannot be toggled from the notebook: you asked for {wanted}; "
                         f"the server at {url} runs with {runs}.",
                         f"unset {URL_ENV} to measure that setting on a local engine, or ask whoever runs the "
                         "server to restart it with it. Load-side changes (concurrency, rate, prefix reuse, goodput) "
                         "run against the server unchanged.")


class Endpoint:
    """An OpenAI-compatible vLLM server at `url`, measured as it runs. `connect()` checks it."""

    location = "remote"

    def __init__(self, url: str, api_key_env: str = KEY_ENV, model: str | None = None,
                 tokenizer: str | None = None):
        self.url = check_url(url)
        self.api_key_env, self.model, self.tokenizer_asked = api_key_env, model or None, tokenizer or None
        self.model_path: str | None = None  # the served model name requests carry
        self.tokenizer: str | None = None  # a local folder for the benchmark client
        self.root: str | None = None  # what /v1/models says the name stands for (often the server's path)
        self.max_model_len: int | None = None
        self.version: str | None = None
        self.server_info = False  # whether /server_info answers (the exact resolved settings)
        self.report = None  # no start-up log: facts come from /server_info and /metrics
        self.start_seconds = None
        self.warmed_up = False
        self.running = True

    # -- what the rest of the harness uses -----------------------------------------------------
    @property
    def base_url(self) -> str:
        return self.url

    @property
    def headers(self) -> dict:
        """The Authorization header, read from the environment at each request; {} without a key."""
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def record(self) -> dict:
        """Columns every row measured here carries (no key, no credentials)."""
        return {"engine_location": self.location, "endpoint_url": self.url, "endpoint_model": self.model_path,
                "endpoint_root": self.root, "server_version": self.version, "server_max_model_len": self.max_model_len,
                "server_info_enabled": self.server_info}

    def identity(self) -> dict:
        """What a stored row's key includes: the server, its model and version, and the settings
        it resolved (read now from /server_info, so a restart with other settings measures again)."""
        info = reported.fetch_server_info(self.url, self.headers).get("vllm_config", {})
        settings = {k: v for k, v in reported.from_server_info(info).items() if k.startswith("engine_")}
        return {"endpoint": self.url, "endpoint_model": self.model_path, "server_version": self.version,
                "server_settings": settings}

    def stop(self) -> None:
        """Nothing to stop: the server belongs to whoever started it."""

    def __repr__(self) -> str:
        return f"<Endpoint {self.url} serving {self.model_path or '?'}>"

    # -- checking the server -------------------------------------------------------------------
    def connect(self) -> "Endpoint":
        """Probe /v1/models, /version, /metrics and /server_info; a clear error for each way it fails."""
        status, models_page = self._get("/v1/models")
        if status is None:
            raise EndpointError(URL_ENV, f"nothing answers at {self.url} ({models_page}).",
                                "check the host and port (the server's --host must not be 127.0.0.1 when "
                                "it is on another machine), and that the server is up: curl URL/health.")
        if status in (401, 403):
            if self.api_key:
                raise EndpointError(self.api_key_env, f"the server at {self.url} refused the key in "
                                    f"${self.api_key_env} (HTTP {status}).",
                                    f"put the key the server was started with (--api-key) in ${self.api_key_env}.")
            raise EndpointError(self.api_key_env, f"the server at {self.url} wants an API key (HTTP {status}) and "
                                f"${self.api_key_env} is not set.",
                                f"export {self.api_key_env}=<the key> before starting Jupyter.")
        vstatus, version = self._get("/version")
        mstatus, metrics = self._get("/metrics")
        self.version = _json(version).get("version") if vstatus == 200 else None
        if not self.version and not (mstatus == 200 and "vllm:" in metrics):
            raise EndpointError(URL_ENV, f"{self.url} answers, but it is not a vLLM server: it has no /version "
                                "and no vllm: metrics on /metrics (the guide reads both).",
                                "point it at a vLLM OpenAI-compatible server (python -m vllm.entrypoints.openai."
                                "api_server or vllm serve), not at a proxy or another inference server.")
        served = _json(models_page).get("data") if status == 200 else None
        if not served:
            raise EndpointError(URL_ENV, f"{self.url}/v1/models answered HTTP {status} without a model list.",
                                "check that the URL is the server's root (no /v1 at the end).")
        self._pick_model(served)
        istatus, _ = self._get("/server_info?config_format=json")
        self.server_info = istatus == 200
        self.tokenizer = self._local_tokenizer()
        return self

    def _pick_model(self, served: list[dict]) -> None:
        names = [m.get("id") for m in served]
        if self.model is not None and self.model not in names:
            raise EndpointError(MODEL_ENV, f"the server at {self.url} does not serve {self.model!r}; it serves "
                                f"{names}.", f"{MODEL_ENV}={names[0]!r}, or leave it unset for the first one.")
        card = served[names.index(self.model)] if self.model is not None else served[0]
        self.model_path, self.root, self.max_model_len = card.get("id"), card.get("root"), card.get("max_model_len")

    def _local_tokenizer(self) -> str:
        """A local folder with the served model's tokenizer (the benchmark client needs it)."""
        if self.tokenizer_asked:
            path = Path(self.tokenizer_asked).expanduser()
            if not (path / "tokenizer_config.json").exists() and not (path / "tokenizer.json").exists():
                raise EndpointError(TOKENIZER_ENV, f"{path} has no tokenizer files (tokenizer.json or "
                                    "tokenizer_config.json).", "a local folder of the served model (or its tokenizer).")
            return str(path.resolve())
        for name in (self.root, self.model_path):  # the same machine, or a shared file system
            if name and Path(name).is_dir():
                return name
        embedded = models.embedded_dir().name
        if any(name and Path(name.rstrip("/")).name == embedded for name in (self.root, self.model_path)):
            return models.resolve(models.EMBEDDED)  # the guide's own model: converted locally, no download
        raise EndpointError(TOKENIZER_ENV, f"the server serves {self.model_path!r}, and this machine has no "
                            "tokenizer for it: vLLM's benchmark client counts prompt tokens locally.",
                            f"{TOKENIZER_ENV}=/path/to/a/local/copy of that model (the tokenizer files are enough).")

    def _get(self, path: str) -> tuple[int | None, str]:
        """(HTTP status, body); status None and the reason when nothing answers."""
        req = urllib.request.Request(self.url + path, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            return None, reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)


def check_url(url: str) -> str:
    """http(s)://host:port with nothing else (no credentials, no path); the trailing slash dropped."""
    fix = "GUIDE_ENDPOINT=http://HOST:PORT (the server's root; the key goes in $GUIDE_ENDPOINT_KEY)."
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError as e:
        raise EndpointError(URL_ENV, f"{url!r} is not a URL ({e}).", fix) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(URL_ENV, f"{url!r} needs http:// or https:// and a host.", fix)
    if parts.username or parts.password:
        raise EndpointError(URL_ENV, "the URL carries credentials; they would end up in result rows.", fix)
    if parts.path.rstrip("/") or parts.query or parts.fragment:
        raise EndpointError(URL_ENV, f"{url!r} has a path or query ({parts.path or parts.query}); the harness adds "
                            "/v1/…, /metrics and /version itself.", fix)
    if port is None:
        raise EndpointError(URL_ENV, f"{url!r} names no port.", fix + " vLLM listens on 8000 by default.")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port}"


_connected: dict[tuple, Endpoint] = {}


def selected() -> Endpoint | None:
    """The endpoint GUIDE_ENDPOINT names, checked once per process (None: start local engines)."""
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        return None
    what = (url, os.environ.get(MODEL_ENV) or None, os.environ.get(TOKENIZER_ENV) or None)
    if what not in _connected:
        _connected[what] = Endpoint(url, model=what[1], tokenizer=what[2]).connect()
    return _connected[what]


def asked_settings(config: EngineConfig) -> dict:
    """The engine settings in which `config` differs from the guide's default: {name: value}."""
    base = EngineConfig(model=config.model, device=config.device)
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if f.name not in NOT_ENGINE_SETTINGS and getattr(config, f.name) != getattr(base, f.name)}


def check_config(config: EngineConfig, endpoint: Endpoint, running) -> None:
    """Refuse a config that asks a remote engine for settings. `running()` reads what the
    server reports (reported.read: the `engine_<setting>` values), quoted in the error."""
    asked = asked_settings(config)
    if asked:
        facts = running()
        raise RemoteSettingError(asked, {k: facts.get(f"engine_{k}") for k in asked}, endpoint.url)


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
