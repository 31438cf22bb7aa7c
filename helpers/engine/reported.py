"""What a running engine reports about itself, read and merged in one place.

Three sources, in order of trust:
  1. /server_info (`vllm_config`): the engine's own config objects, exact, with every
     setting as it resolved it (the `engine_<setting>` columns, paths from helpers.settings);
  2. /metrics `vllm:cache_config_info`: the same cache figures, as label text;
  3. the start-up log (`startup_log.parse_startup`): rounded text, but the only source of the
     memory split (KV / non-KV / budget) and of the start-up timings.
A fact takes its value from the first source that reports one; `read(server)` is the record.
"""
from __future__ import annotations

import json
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from helpers.config import SETTINGS
from helpers.engine.startup_log import StartupReport
from helpers.settings import dig

# Facts from /server_info that are not settings: {fact: path in vllm_config}.
SERVER_INFO_FACTS = {
    "kv_cache_tokens": ("cache_config", "kv_cache_size_tokens"),
    "max_concurrency": ("cache_config", "kv_cache_max_concurrency"),
    "block_size": ("cache_config", "block_size"),
    "num_blocks": ("cache_config", "num_gpu_blocks"),
    "engine_compilation_mode": ("compilation_config", "mode"),
}
# Facts from /metrics: {fact: label of vllm:cache_config_info}.
METRICS_FACTS = {"kv_cache_tokens": "kv_cache_size_tokens", "max_concurrency": "kv_cache_max_concurrency",
                 "block_size": "block_size", "num_blocks": "num_gpu_blocks"}
# Facts from the start-up log (fields of StartupReport).
LOG_FACTS = ("kv_cache_tokens", "max_concurrency", "concurrency_at_len", "kv_cache_gib", "memory_budget_gib",
             "node_memory_gib", "non_kv_gib", "weights_load_s", "init_engine_s", "device_kind", "startup_lines",
             "compile_cache", "checkpoint_gib", "weights_gib", "linear_kernel", "worker_cores", "bound_ranks",
             "cores_kept_free")

# Every field of the record, in column order; absent facts are None.
FIELDS = ("kv_cache_tokens", "max_concurrency", "concurrency_at_len", "kv_cache_gib", "memory_budget_gib",
          "node_memory_gib", "non_kv_gib", "block_size", "num_blocks", "weights_load_s", "init_engine_s",
          "device_kind", "start_seconds",
          *(f"engine_{s.name}" for s in SETTINGS if s.resolved), "engine_compilation_mode", "compile_cache",
          "checkpoint_gib", "weights_gib", "linear_kernel", "worker_cores", "bound_ranks", "cores_kept_free",
          "startup_lines")


def read(server) -> dict:
    """One flat record of what this running server reports (what result rows carry)."""
    headers = getattr(server, "headers", None)  # a remote endpoint's key (experiment's fakes have none)
    info = fetch_server_info(server.base_url, headers).get("vllm_config", {})
    record = merge(from_server_info(info), from_metrics(fetch_metrics(server.base_url, headers)),
                   from_log(server.report))
    record["start_seconds"] = server.start_seconds
    return record


def merge(*sources: dict) -> dict:
    """All FIELDS; each from the first source (most trusted first) that has a value for it."""
    record = dict.fromkeys(FIELDS)
    for source in reversed(sources):
        record.update({k: v for k, v in source.items() if v is not None})
    return record


# -- one reader per source --------------------------------------------------------------------
def from_server_info(vllm_config: dict) -> dict:
    facts = {name: dig(vllm_config, path) for name, path in SERVER_INFO_FACTS.items()}
    facts.update({f"engine_{k}": v for k, v in resolved_values(vllm_config).items()})
    return facts


def from_metrics(text: str) -> dict:
    labels = cache_config_info(text)
    return {name: _number(labels.get(label)) for name, label in METRICS_FACTS.items()}


def from_log(report: StartupReport | None) -> dict:
    if report is None:
        return {}
    return {name: getattr(report, name) for name in LOG_FACTS}


def cache_config_info(text: str) -> dict:
    """The labels of /metrics' `vllm:cache_config_info` (the engine's cache config, as text)."""
    for family in text_string_to_metric_families(text):
        if family.name in ("vllm:cache_config", "vllm:cache_config_info"):
            for sample in family.samples:
                if sample.name.endswith("_info"):
                    return dict(sample.labels)
    return {}


def _number(text: str | None) -> int | float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return int(value) if value.is_integer() else value


# -- fetching (unit tests replace these two) ---------------------------------------------------
def fetch_server_info(base_url: str, headers: dict | None = None) -> dict:
    """/server_info as JSON; {} when the server does not answer (it needs VLLM_SERVER_DEV_MODE=1)."""
    req = urllib.request.Request(base_url + "/server_info?config_format=json", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return {}


def fetch_metrics(base_url: str, headers: dict | None = None) -> str:
    """The /metrics page; "" when the server does not answer."""
    try:
        with urllib.request.urlopen(urllib.request.Request(base_url + "/metrics", headers=headers or {}),
                                    timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def resolved_values(vllm_config: dict) -> dict:
    """{setting: the value the engine chose} from /server_info's `vllm_config` (None where absent)."""
    return {s.name: dig(vllm_config, s.resolved) for s in SETTINGS if s.resolved}
