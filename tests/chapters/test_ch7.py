"""Chapter 7's rules on recorded rows: each can say "held" and "did not hold"; its solutions pass its checks."""
import pytest

from helpers import models, verdicts
from helpers.chapters import ch7
from helpers.exercises import Choice, Question
from tests.solutions import run_solution


def _roof(numpy_read=10.0, torch_read=11.0):
    kernels = lambda read: {k: {"best_gbs": v, "median_gbs": v * 0.95, "min_gbs": v * 0.9}
                            for k, v in (("read", read), ("copy", 2 * read), ("triad", read))}
    return {"threads": 2, "numpy": kernels(numpy_read), "torch": kernels(torch_read), "bandwidth_gbs": torch_read,
            "bandwidth_min_gbs": torch_read * 0.9, "methods_ratio": numpy_read / torch_read, "compute_gflops": 100.0}


def _row(tpot, floor, running=1.0, throughput=100.0, label="base", **over):
    return {"mean_tpot_ms": tpot, "roofline_tpot_ms": floor, "mbu": floor / tpot, "mean_running": running,
            "bytes_per_step_mb": floor * 11.0, "roof_bandwidth_gbs": 11.0, "output_throughput": throughput,
            "config_label": label, "repeats": 1, **over}


def test_the_probe_claim_holds_when_the_methods_agree_and_fails_when_they_do_not():
    assert ch7.probe_claim(_roof(10.0, 11.0)).verdict == verdicts.HELD
    assert ch7.probe_claim(_roof(13.5, 11.0)).verdict == verdicts.PARTLY
    assert ch7.probe_claim(_roof(20.0, 10.0)).verdict == verdicts.NOT_HELD
    assert ch7.roof_table(_roof()).shape == (6, 3)


def test_near_the_floor_and_cheap_batching_can_each_fail():
    held = ch7.floor_claims({1: _row(50.0, 40.0), 8: _row(60.0, 42.0, running=8)})
    assert [c.verdict for c in held] == [verdicts.HELD, verdicts.HELD]
    failed = ch7.floor_claims({1: _row(200.0, 40.0), 8: _row(1000.0, 42.0, running=8)})
    assert [c.verdict for c in failed] == [verdicts.NOT_HELD, verdicts.NOT_HELD]


def test_the_bytes_claim_holds_when_time_falls_with_the_bytes_and_not_when_it_rises():
    base = _row(50.0, 40.0, bytes_per_step_mb=500.0)
    assert ch7.bytes_claims(base, _row(26.0, 20.0, bytes_per_step_mb=250.0, label="int8"))[0].verdict == verdicts.HELD
    slower = ch7.bytes_claims(base, _row(70.0, 20.0, bytes_per_step_mb=250.0, label="int8"))
    assert slower[0].verdict == verdicts.NOT_HELD
    assert slower[1].verdict == verdicts.NOT_HELD  # the gap grew from 10 to 50 ms: not a fixed cost
    assert ch7.bytes_claims(base, _row(30.0, 20.0, bytes_per_step_mb=250.0, label="int8"))[1].verdict == verdicts.HELD


def test_layout_and_binding_claims_say_which_way():
    split, merged = _row(50, 20, throughput=100.0, worker_cores=1), _row(35, 20, throughput=143.0)
    out = ch7.layout_claims({ch7.MERGED: merged, ch7.VLLM: split}, {ch7.AUTO: split, ch7.ALL: _row(90, 20, throughput=60.0)}, 2)
    assert [c.verdict for c in out] == [verdicts.HELD, verdicts.NOT_HELD]


def test_floors_grow_only_by_the_kv_term():
    table = ch7.floors(models.prepare_embedded(), "float32", 46_080, _roof(), batches=(1, 8), context=144)
    assert table.loc[1, "weights read (MB)"] == table.loc[8, "weights read (MB)"]
    assert table.loc[8, "KV read (MB)"] == pytest.approx(8 * table.loc[1, "KV read (MB)"])


def test_chapter7_solutions():
    rows = {1: _row(60.0, 45.0)}
    env = run_solution("ch07_q1.py", {"sweep_rows": rows})
    assert Question("q1", lambda: 0.75, 0.25, "", "ch07_q1.py").check(env["answer1"])
    folder = models.prepare_embedded()
    from helpers.results import roofline
    eight = {"mean_running": 7.5, "kv_cache_gib": 100_000 * 46_080 / 2**30, "kv_cache_tokens": 100_000,
             "roof_bandwidth_gbs": 10.0}
    want = roofline.floor_ms(roofline.step_bytes(roofline.weight_bytes(folder, "float32"), 7.5, 144, 46_080), 10.0)
    base = type("Cfg", (), {"dtype": "float32"})()
    env = run_solution("ch07_q2.py", {"eight": eight, "folder": folder, "base": base, "context": 144})
    assert Question("q2", lambda: want, 0.02, "", "ch07_q2.py").check(env["answer2"])
    binding = {ch7.AUTO: {"output_throughput": 90.0}, ch7.ALL: {"output_throughput": 60.0}}
    env = run_solution("ch07_q3.py", {"binding_rows": binding})
    assert Choice("q3", [ch7.AUTO, ch7.ALL], lambda: ch7.AUTO, "", "ch07_q3.py").check(env["answer3"])


def test_a_gpu_roof_has_one_method_and_says_so():
    gpu = {"threads": 0, "cuda": {"copy": {"best_gbs": 4000.0, "median_gbs": 3900.0, "min_gbs": 3800.0}},
           "methods_ratio": None, "bandwidth_gbs": 4000.0}
    assert ch7.roof_table(gpu).shape == (1, 3)
    assert ch7.probe_claim(gpu).verdict == verdicts.UNTESTED
