"""Lab 5's exercises on recorded rows: the solutions pass the lab's checks."""
import pytest

from helpers import models
from helpers.chapters import ch7
from tests.solutions import run_solution


def test_lab5_solutions():
    from helpers.results import roofline
    folder = models.prepare_embedded()
    shape = models.shape(folder)
    base = type("Cfg", (), {"dtype": "float32"})()
    files = roofline.checkpoint_files(folder)
    roof = {"bandwidth_gbs": 10.0, "compute_gflops": 100.0}
    kv = 46_080
    rows = {c: {"mean_running": float(c), "kv_cache_gib": 100_000 * kv / 2**30, "kv_cache_tokens": 100_000,
                "mean_tpot_ms": 70.0, "roofline_tpot_ms": 56.0} for c in (1, 8)}
    env = {"files": files, "base": base, "shape": shape, "roof": roof, "rows": rows, "folder": folder,
           "context": 144.0, "kv_token": kv}
    weights = roofline.weight_bytes(folder, "float32")
    run_solution("lab05_q1.py", env)
    assert env["weights_mb"] == pytest.approx(weights / 1e6)
    run_solution("lab05_q2.py", env)
    assert env["floor_one"] == pytest.approx(roofline.floor_ms(roofline.step_bytes(weights, 1, 144, kv), 10.0))
    run_solution("lab05_q3.py", env)
    assert env["floor_eight"] == pytest.approx(roofline.floor_ms(roofline.step_bytes(weights, 8, 144, kv), 10.0))
    run_solution("lab05_q4.py", env)
    assert env["crossover"] == pytest.approx(ch7.crossover(folder, "float32", kv, roof, 144.0), rel=0.01)
    run_solution("lab05_q5.py", env)
    assert env["near"] == "yes"


def test_q1_weights_and_its_known_mistakes(capsys):
    from helpers.chapters import lab5
    from helpers.exercises import Question
    folder = models.prepare_embedded()
    shape = models.shape(folder)
    want = lab5.weights_mb(folder, "float32")
    assert want == pytest.approx(2 * lab5.weights_mb(folder, "bfloat16"), rel=0.01)  # every weight, twice the bytes
    q1 = Question("weights", lambda: want, 0.03, "", "lab05_q1.py", known_wrong=lab5.known_wrong_weights(folder, "float32", shape))
    for why, wrong in lab5.known_wrong_weights(folder, "float32", shape).items():
        assert not q1.check(wrong()) and why in capsys.readouterr().out
