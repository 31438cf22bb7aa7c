"""Engine facts: the three sources read from recorded pages and merged in order of trust."""
import json
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.config import SETTINGS
from helpers.engine import reported
from helpers.engine.startup_log import parse_startup

DATA = Path(__file__).resolve().parents[1] / "data"

# What experiment._capacity_fields returned before reported.py (rows keep these columns).
OLD_FIELDS = {"kv_cache_tokens", "max_concurrency", "kv_cache_gib", "memory_budget_gib", "node_memory_gib",
              "non_kv_gib", "block_size", "num_blocks", "start_seconds", "engine_max_num_batched_tokens",
              "engine_max_num_seqs", "engine_enable_chunked_prefill", "engine_enable_prefix_caching",
              "engine_block_size", "engine_kv_cache_dtype", "engine_dtype", "engine_max_model_len",
              "engine_compilation_mode"}


@pytest.fixture(scope="module")
def info() -> dict:
    return json.loads((DATA / "server_info_cpu.json").read_text())


@pytest.fixture(scope="module")
def metrics_page() -> str:
    return (DATA / "metrics_idle.txt").read_text()


@pytest.fixture(scope="module")
def report():
    return parse_startup((DATA / "startup_ok.log").read_text())


@pytest.fixture
def server(monkeypatch, info, metrics_page, report):
    """A running server as reported.read sees it, its HTTP pages replaced by the recorded ones."""
    monkeypatch.setattr(reported, "fetch_server_info", lambda url, headers=None: info)
    monkeypatch.setattr(reported, "fetch_metrics", lambda url, headers=None: metrics_page)
    return SimpleNamespace(base_url="http://127.0.0.1:9", report=report, start_seconds=12.5)


# -- one source at a time ---------------------------------------------------------------------

def test_cache_config_info_labels(metrics_page):
    labels = reported.cache_config_info(metrics_page)
    assert labels["kv_cache_size_tokens"] == "53888"
    assert labels["block_size"] == "128"
    assert labels["enable_prefix_caching"] == "True"
    assert labels["gpu_memory_utilization"] == "0.25"
    assert reported.cache_config_info("") == {}


def test_from_metrics(metrics_page):
    assert reported.from_metrics(metrics_page) == {"kv_cache_tokens": 53888, "max_concurrency": 26.3125,
                                                "block_size": 128, "num_blocks": 421}
    assert set(reported.from_metrics("").values()) == {None}


def test_from_server_info(info):
    f = reported.from_server_info(info["vllm_config"])
    assert (f["kv_cache_tokens"], f["max_concurrency"], f["block_size"], f["num_blocks"]) == (54912, 26.8125, 128, 429)
    assert f["engine_compilation_mode"] == 0  # eager
    assert (f["engine_max_num_batched_tokens"], f["engine_max_num_seqs"]) == (2048, 128)
    assert f["engine_enable_chunked_prefill"] is True and f["engine_enable_prefix_caching"] is True
    assert f["engine_kv_cache_dtype"] == "auto" and f["engine_dtype"] == "torch.bfloat16"
    assert f["engine_cpu_offload_gb"] == 0.0 and f["engine_enforce_eager"] is True
    for s in SETTINGS:
        assert (f"engine_{s.name}" in f) == (s.resolved is not None), s.name
    assert set(reported.from_server_info({}).values()) == {None}


def test_from_log(report):
    f = reported.from_log(report)
    assert f["kv_cache_tokens"] == 53888 and f["max_concurrency"] == pytest.approx(26.31)
    assert f["kv_cache_gib"] == pytest.approx(1.16) and f["non_kv_gib"] == pytest.approx(1.08)
    assert reported.from_log(None) == {}


# -- merging ----------------------------------------------------------------------------------

def test_merge_takes_the_most_trusted_value():
    merged = reported.merge({"kv_cache_tokens": 1, "num_blocks": None}, {"kv_cache_tokens": 2, "num_blocks": 5},
                         {"kv_cache_tokens": 3, "kv_cache_gib": 1.5})
    assert merged["kv_cache_tokens"] == 1  # first source wins
    assert merged["num_blocks"] == 5  # a None does not hide a lower source's value
    assert merged["kv_cache_gib"] == 1.5
    assert merged["max_concurrency"] is None and list(merged) == list(reported.FIELDS)


def test_read_merges_the_three_pages(server):
    record = reported.read(server)
    assert list(record) == list(reported.FIELDS)
    assert set(record) >= OLD_FIELDS
    # /server_info first (its run recorded 54912 tokens; the log and /metrics another run's 53888)
    assert record["kv_cache_tokens"] == 54912 and record["max_concurrency"] == 26.8125
    assert record["num_blocks"] == 429 and record["block_size"] == 128
    # the memory split and timings only the log has
    assert record["kv_cache_gib"] == pytest.approx(1.16) and record["memory_budget_gib"] == pytest.approx(2.24)
    assert record["node_memory_gib"] == pytest.approx(8.96) and record["weights_load_s"] == pytest.approx(0.87)
    assert record["start_seconds"] == 12.5
    assert record["engine_max_num_seqs"] == 128 and record["engine_compilation_mode"] == 0
    json.dumps(record)  # goes into a JSON result row as is


def test_read_without_server_info_falls_back_to_metrics_then_log(server, monkeypatch):
    monkeypatch.setattr(reported, "fetch_server_info", lambda url, headers=None: {})
    record = reported.read(server)
    assert record["kv_cache_tokens"] == 53888 and record["max_concurrency"] == 26.3125  # /metrics, exact
    assert record["num_blocks"] == 421 and record["engine_max_num_seqs"] is None
    monkeypatch.setattr(reported, "fetch_metrics", lambda url, headers=None: "")
    record = reported.read(server)
    assert record["max_concurrency"] == pytest.approx(26.31) and record["num_blocks"] is None  # the log


def test_fetchers_answer_empty_when_nothing_listens():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
        assert reported.fetch_server_info(url) == {} and reported.fetch_metrics(url) == ""
