"""Parsing /metrics pages and turning sampled rows into a run's time series and totals."""
import json
from pathlib import Path

import pytest

from helpers.load.metrics import TRACKED, MetricsSampler, parse

DATA = Path(__file__).resolve().parents[1] / "data"

TWO_ENGINES = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 50.0
# HELP vllm:prefix_cache_queries_created Prefix cache queries, in tokens.
# TYPE vllm:prefix_cache_queries_created gauge
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7959481084597297e+09
vllm:prefix_cache_queries_created{engine="1",model_name="m"} 1.7959481084597297e+09
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 30.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 20.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# HELP vllm:external_prefix_cache_hits_total External prefix cache hits.
# TYPE vllm:external_prefix_cache_hits_total counter
vllm:external_prefix_cache_hits_total{engine="0",model_name="m"} 999.0
"""


def test_parse_idle_page():
    v = parse((DATA / "metrics_idle.txt").read_text())
    assert set(v) == set(TRACKED.values())  # the cache config is an engine fact (test_facts.py)
    for name in TRACKED.values():
        assert v[name] == 0.0, name


def test_parse_sums_engines_and_skips_created():
    v = parse(TWO_ENGINES)
    assert v["prefix_cache_queries"] == 150.0
    assert v["prefix_cache_hits"] == 50.0  # external_prefix_cache_hits is not counted
    assert v["running"] == 5.0
    assert v["waiting"] == 0.0  # absent metric: zero
    assert "cache_config" not in v


def test_parse_empty_page():
    assert parse("") == {name: 0.0 for name in TRACKED.values()}


def _row(t, kv, running, waiting, queries, hits, preempt, prompt, gen):
    return {"t_s": t, "kv_cache_usage": kv, "running": running, "waiting": waiting,
            "prefix_cache_queries": queries, "prefix_cache_hits": hits, "preemptions": preempt,
            "prompt_tokens": prompt, "generation_tokens": gen}


@pytest.fixture
def sampler():
    s = MetricsSampler("http://127.0.0.1:9")  # never contacted
    s.rows = [_row(0.0, 0.0, 0, 0, 1000.0, 400.0, 2.0, 5000.0, 100.0),
              _row(0.5, 0.3, 4, 2, 1100.0, 450.0, 2.0, 5400.0, 140.0),
              _row(1.0, 0.5, 2, 0, 1200.0, 550.0, 3.0, 5800.0, 200.0)]
    return s


def test_frame_turns_counters_into_increases(sampler):
    df = sampler.frame()
    assert list(df["prefix_cache_queries"]) == [0.0, 100.0, 200.0]
    assert list(df["prefix_cache_hits"]) == [0.0, 50.0, 150.0]
    assert list(df["preemptions"]) == [0.0, 0.0, 1.0]
    assert list(df["prompt_tokens"]) == [0.0, 400.0, 800.0]
    assert list(df["generation_tokens"]) == [0.0, 40.0, 100.0]
    assert list(df["kv_cache_usage_pct"]) == pytest.approx([0.0, 30.0, 50.0])
    assert "kv_cache_usage" not in df
    assert list(df["running"]) == [0, 4, 2]  # gauges unchanged


def test_totals(sampler):
    t = sampler.totals()
    assert t["prefix_cache_queries"] == 200.0
    assert t["prefix_cache_hits"] == 150.0
    assert t["prefix_cache_hit_rate"] == pytest.approx(0.75)
    assert t["preemptions"] == 1.0
    assert t["peak_kv_cache_usage_pct"] == pytest.approx(50.0)
    assert t["peak_running"] == 4.0
    assert t["peak_waiting"] == 2.0
    assert t["mean_running"] == 3.0  # the samples with sequences running: 4 and 2 (the roofline's batch)
    json.dumps(t)  # goes into a JSON result row as is


def test_frame_leaves_rows_alone(sampler):
    sampler.frame()
    assert sampler.rows[1]["prefix_cache_queries"] == 1100.0
    assert sampler.totals() == sampler.totals()


def test_totals_without_queries():
    s = MetricsSampler("http://127.0.0.1:9")
    s.rows = [_row(0.0, 0.0, 0, 0, 10.0, 5.0, 0.0, 0.0, 0.0), _row(0.5, 0.1, 1, 0, 10.0, 5.0, 0.0, 8.0, 1.0)]
    assert s.totals()["prefix_cache_hit_rate"] == 0.0


def test_empty_sampler():
    s = MetricsSampler("http://127.0.0.1:9")
    assert s.frame().empty
    assert s.totals() == {}

