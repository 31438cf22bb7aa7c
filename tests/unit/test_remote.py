"""Measuring a server that is already running (GUIDE_ENDPOINT): tiny HTTP servers on
127.0.0.1 imitate a vLLM server (with and without a key), a server that is not vLLM, and a
port where nothing answers. No engine starts."""
import dataclasses
import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import EngineConfig, Load, experiment, models
from helpers.engine import remote
from helpers.engine.remote import Endpoint, EndpointError, RemoteSettingError, check_url
from helpers.load import workloads
from helpers.results import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data"
KEY = "s3cret-key-value"


class FakeServer:
    """An HTTP server in a thread. `pages` maps a path to (status, body); `key` makes every
    path answer 401 without `Authorization: Bearer <key>`. `seen` keeps each request's path."""

    def __init__(self, pages: dict, key: str | None = None):
        self.pages, self.key, self.seen = pages, key, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                outer.seen.append((self.command, self.path, self.headers.get("Authorization")))
                if outer.key and self.headers.get("Authorization") != f"Bearer {outer.key}":
                    status, body = 401, '{"error": "Unauthorized"}'
                else:
                    status, body = outer.pages.get(self.path, (404, "not found"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def vllm_pages(model="/srv/models/SmolLM2-135M-Instruct", server_info=True) -> dict:
    models_page = {"object": "list", "data": [{"id": model, "object": "model", "root": model, "max_model_len": 4096}]}
    pages = {"/v1/models": (200, json.dumps(models_page)), "/version": (200, '{"version": "0.32.0"}'),
             "/metrics": (200, (DATA / "metrics_idle.txt").read_text()), "/reset_prefix_cache": (200, "")}
    if server_info:
        pages["/server_info?config_format=json"] = (200, (DATA / "server_info_cpu.json").read_text())
    return pages


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """No endpoint remembered from another test; the embedded model is never prepared here."""
    monkeypatch.setattr(remote, "_connected", {})
    for name in (remote.URL_ENV, remote.KEY_ENV, remote.MODEL_ENV, remote.TOKENIZER_ENV, "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(models, "resolve", lambda name: str(tmp_path / "embedded-tokenizer"))


@pytest.fixture
def vllm_server():
    server = FakeServer(vllm_pages())
    yield server
    server.close()


@pytest.fixture
def keyed_server():
    server = FakeServer(vllm_pages(), key=KEY)
    yield server
    server.close()


def refused_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


# -- the URL ------------------------------------------------------------------------------------

def test_url_is_the_servers_root_with_a_port():
    assert check_url("http://gpu-box:8000/") == "http://gpu-box:8000"
    assert check_url(" https://10.0.0.5:443 ") == "https://10.0.0.5:443"
    for bad, says in [("gpu-box:8000", "http://"), ("http://gpu-box", "no port"),
                      ("http://gpu-box:8000/v1", "path"), ("http://user:pw@gpu-box:8000", "credentials"),
                      ("http://gpu-box:99999", "not a URL")]:
        with pytest.raises(EndpointError, match=says) as e:
            check_url(bad)
        assert e.value.setting == "GUIDE_ENDPOINT" and "Try:" in str(e.value)


# -- the three ways a connection fails ------------------------------------------------------------

def test_nothing_answers_at_a_refused_port():
    url = refused_url()
    with pytest.raises(EndpointError, match="nothing answers at " + url):
        Endpoint(url).connect()


def test_a_server_that_is_not_vllm_is_named():
    # An OpenAI-compatible server that is not vLLM: a model list, but no /version and no vllm: metrics.
    other = FakeServer({"/v1/models": (200, '{"data": [{"id": "llama"}]}'), "/metrics": (200, "up 1\n")})
    try:
        with pytest.raises(EndpointError, match="not a vLLM server"):
            Endpoint(other.url).connect()
    finally:
        other.close()


def test_a_missing_or_refused_key_is_named(keyed_server, monkeypatch):
    with pytest.raises(EndpointError, match=r"wants an API key .* \$GUIDE_ENDPOINT_KEY is not set"):
        Endpoint(keyed_server.url).connect()
    monkeypatch.setenv("GUIDE_ENDPOINT_KEY", "wrong")
    with pytest.raises(EndpointError, match=r"refused the key in \$GUIDE_ENDPOINT_KEY") as e:
        Endpoint(keyed_server.url).connect()
    assert "wrong" not in str(e.value)
    monkeypatch.setenv("GUIDE_ENDPOINT_KEY", KEY)
    endpoint = Endpoint(keyed_server.url).connect()
    assert endpoint.version == "0.32.0" and endpoint.server_info and endpoint.max_model_len == 4096
    everything = json.dumps([endpoint.record(), endpoint.identity(), repr(endpoint)])
    assert KEY not in everything, "the key is never stored"


# -- model and tokenizer ------------------------------------------------------------------------------

def test_model_defaults_to_the_first_and_must_be_served(vllm_server, tmp_path):
    endpoint = Endpoint(vllm_server.url).connect()
    assert endpoint.model_path == "/srv/models/SmolLM2-135M-Instruct"
    # The guide's own model on another machine: the local copy's tokenizer serves.
    assert endpoint.tokenizer == str(tmp_path / "embedded-tokenizer")
    with pytest.raises(EndpointError, match="does not serve 'other'") as e:
        Endpoint(vllm_server.url, model="other").connect()
    assert e.value.setting == "GUIDE_ENDPOINT_MODEL"


def test_another_model_needs_a_local_tokenizer(tmp_path):
    server = FakeServer(vllm_pages(model="meta-llama/Llama-3.1-8B-Instruct"))
    try:
        with pytest.raises(EndpointError, match="no tokenizer for it") as e:
            Endpoint(server.url).connect()
        assert e.value.setting == "GUIDE_ENDPOINT_TOKENIZER"
        with pytest.raises(EndpointError, match="has no tokenizer files"):
            Endpoint(server.url, tokenizer=str(tmp_path)).connect()
        (tmp_path / "tokenizer.json").write_text("{}")
        assert Endpoint(server.url, tokenizer=str(tmp_path)).connect().tokenizer == str(tmp_path)
    finally:
        server.close()


# -- the harness with an endpoint ----------------------------------------------------------------------

def no_local_engine(*args, **kwargs):
    raise AssertionError("a local engine was started although GUIDE_ENDPOINT is set")


def test_engine_settings_are_refused_load_settings_run(keyed_server, monkeypatch, tmp_path):
    monkeypatch.setenv("GUIDE_ENDPOINT", keyed_server.url)
    monkeypatch.setenv("GUIDE_ENDPOINT_KEY", KEY)
    monkeypatch.setattr(experiment, "Server", no_local_engine)
    sent = {}

    def fake_load(base_url, model_path, load, progress=True, *, tokenizer=None, api_key=None):
        sent.update(base_url=base_url, model=model_path, tokenizer=tokenizer, api_key=api_key)
        return {"output_throughput": 50.0 + load.max_concurrency, "completed": float(load.num_prompts)}

    monkeypatch.setattr(experiment, "run_load", fake_load)
    store = ResultStore(tmp_path / "results")
    load = Load(num_prompts=4, input_len=64, output_len=8, max_concurrency=2)

    with pytest.raises(RemoteSettingError, match="cannot be toggled from the notebook") as e:
        experiment.measure(EngineConfig(enable_prefix_caching=False), load, store=store, progress=False)
    assert "enable_prefix_caching=False" in str(e.value) and "enable_prefix_caching=True" in str(e.value)
    assert e.value.setting == "enable_prefix_caching"

    row = experiment.measure(EngineConfig(), load, store=store, progress=False, repeats=1)
    wider = experiment.measure(EngineConfig(), dataclasses.replace(load, max_concurrency=4), store=store,
                               progress=False, repeats=1)
    assert sent == {"base_url": keyed_server.url, "model": "/srv/models/SmolLM2-135M-Instruct",
                    "tokenizer": str(tmp_path / "embedded-tokenizer"), "api_key": KEY}
    assert (row["output_throughput"], wider["output_throughput"]) == (52.0, 54.0), "load-side changes run"
    assert row["engine_location"] == "remote" and row["endpoint_url"] == keyed_server.url
    assert row["server_version"] == "0.32.0" and row["engine_max_num_seqs"] and row["kv_cache_tokens"] > 0
    assert row["config_label"] == "remote " + keyed_server.url.split("://")[1]
    assert row["peak_running"] == 0.0, "/metrics was sampled with the key"
    assert row["prefix_cache_reset"] is False, "a shared server's prefix cache is not emptied"
    assert not any(path == "/reset_prefix_cache" for _, path, _ in keyed_server.seen)
    assert all(auth == f"Bearer {KEY}" for _, _, auth in keyed_server.seen)
    assert KEY not in store.path.read_text(), "the key is never written to results"
    again = experiment.measure(EngineConfig(), load, store=store, progress=False, repeats=1)
    assert again["reused"] and again["run_id"] == row["run_id"]


def test_remote_and_local_rows_never_share_a_key(vllm_server, monkeypatch):
    load = Load(num_prompts=4, input_len=64, output_len=8)
    local = experiment.base_row(EngineConfig(), load, "", "load")
    monkeypatch.setenv("GUIDE_ENDPOINT", vllm_server.url)
    remote_row = experiment.base_row(EngineConfig(), load, "", "load")
    assert local["engine_location"] == "local" and remote_row["engine_location"] == "remote"
    assert local["key"] != remote_row["key"]
    # The same server with other settings (a restart) is another result.
    vllm_server.pages.pop("/server_info?config_format=json")
    assert experiment.base_row(EngineConfig(), load, "", "load")["key"] != remote_row["key"]


def test_a_load_longer_than_the_servers_context_is_refused(vllm_server, monkeypatch):
    monkeypatch.setenv("GUIDE_ENDPOINT", vllm_server.url)
    monkeypatch.setattr(experiment, "run_load", no_local_engine)
    # The guide's default max_model_len (2048) does not apply: the server's 4096 does.
    with pytest.raises(Exception, match="server's max_model_len, 4096"):
        experiment.measure(EngineConfig(), Load(input_len=4000, output_len=200), progress=False)


def test_the_key_reaches_the_benchmark_client_for_one_load_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "theirs")
    with workloads._api_key(KEY):
        assert os.environ["OPENAI_API_KEY"] == KEY
    assert os.environ["OPENAI_API_KEY"] == "theirs"
    monkeypatch.delenv("OPENAI_API_KEY")
    with workloads._api_key(KEY):
        pass
    assert "OPENAI_API_KEY" not in os.environ
    args = workloads._bench_args("http://h:1", "served-name", [], False, tokenizer="/local/tok")
    assert (args.model, args.tokenizer) == ("served-name", "/local/tok")


def test_doctor_checks_the_endpoint(vllm_server, monkeypatch):
    from helpers import doctor
    monkeypatch.setenv("GUIDE_ENDPOINT", refused_url())
    item, what, fix = doctor._endpoint_check()
    assert item == "remote server" and "nothing answers" in what and fix
    monkeypatch.setenv("GUIDE_ENDPOINT", vllm_server.url)
    item, what, fix = doctor._endpoint_check()
    assert "vLLM 0.32.0" in what and fix is None
