"""Lab 3's chapter code, on recorded rows and a recorded start-up log."""
from pathlib import Path

from helpers.claims import lab3

DATA = Path(__file__).resolve().parents[1] / "data"
AUTO = ("Auto set (3.47/15.5) GiB for KV cache on node 0, with 3.88 GiB requested memory for the worker. "
        "0.41 GiB memory was consumed by non-kv usages.")


def test_why_names_each_layout_and_the_noise():
    measured = {("TP=1", "one user"): {"median_tpot_ms": 11.9}, ("TP=2", "one user"): {"median_tpot_ms": 14.4}}
    assert lab3.why(measured, ["TP=1", "TP=2"], "one user") == \
        "median_tpot_ms: TP=1 11.9, TP=2 14.4; noise allowance 10%"
    assert lab3.ranked(measured, ["TP=2", "TP=1"], "one user") == ["TP=1", "TP=2"]


def test_rank_memory_lines_sum_the_ranks_reservations():
    tp1 = {"kv_cache_tokens": 442_368, "kv_cache_gib": 3.38, "non_kv_gib": 0.83}
    tp2 = {"kv_cache_tokens": 909_312, "kv_cache_gib": 3.47, "non_kv_gib": 0.41, "cfg_gpu_memory_utilization": 0.25,
           "startup_lines": [AUTO, AUTO]}
    lines = lab3.rank_memory_lines(tp1, tp2)
    assert lines[0].startswith("- The TP=2 engine printed 2 `Auto set` lines") and "7.76 GiB of the node's 15.5" in lines[1]
    assert lab3.rank_memory_lines(tp1, {**tp2, "startup_lines": ["Available KV cache memory: 3.0 GiB"]}) == \
        ["No per-rank `Auto set` lines in this engine's report (they are the CPU backend's)."]


def test_binding_lines_come_from_the_rows_and_skip_rows_without_them():
    from helpers.engine.startup_log import parse_startup
    report = parse_startup((DATA / "startup_ok.log").read_text())
    row = {"bound_ranks": report.bound_ranks, "cores_kept_free": report.cores_kept_free}
    assert lab3.binding_lines({"TP=1": row, "TP=2": {}}) == \
        ["- TP=1: EngineCore rank 0 on core(s) [0]; core(s) 1 kept free for the server and scheduler"]
