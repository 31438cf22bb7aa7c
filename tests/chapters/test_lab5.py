"""Lab 5's exercises on recorded rows: each check passes its own solution, computed by the method the
lab teaches, in vLLM's layout and in the merged one, and rejects a known-wrong answer."""
import pytest

from helpers import models
from helpers.chapters import ch7, lab5
from helpers.exercises import Choice, Question
from helpers.load import Load
from helpers.results import roofline
from tests.chapters._floors import LAYOUTS, ROOFS, measured, with_floors
from tests.solutions import run_solution


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lab5_solutions_pass_their_checks_in_both_layouts(layout, monkeypatch, tmp_path, capsys):
    folder = models.prepare_embedded()
    loads = {c: Load(num_prompts=max(8, 2 * c), input_len=128, output_len=32, max_concurrency=c) for c in (1, 8)}
    rows = with_floors({c: measured(folder, loads[c], running, layout) for c, running in ((1, 0.97), (8, 7.4))},
                       monkeypatch, tmp_path)
    roof = ROOFS[2]  # what the lab's cell 2 gives: H.experiment.roof(), every core
    env = {"files": roofline.checkpoint_files(folder), "base": type("Cfg", (), {"dtype": "float32"})(),
           "shape": models.shape(folder), "roof": roof, "rows": rows, "folder": folder, "loads": loads, "lab5": lab5}
    run_solution("lab05_q1.py", env)
    assert env["weights_mb"] == pytest.approx(roofline.weight_bytes(folder, "float32") / 1e6)
    for q, name, value in (("floor_one", "lab05_q2.py", lambda: rows[1]["roofline_tpot_ms"]),
                           ("floor_eight", "lab05_q3.py", lambda: rows[8]["roofline_tpot_ms"])):
        run_solution(name, env)
        wrong = ({"you left out the KV term": lambda: ch7.floor_with(rows[1], kv=False)} if q == "floor_one"
                 else ch7.nominal_mistake(rows[8]))
        check = Question(q, value, 0.05, "", name, known_wrong=wrong)
        assert check.check(env[q]), capsys.readouterr().out
        mistake = next(iter(wrong.values()))()
        assert not check.check(mistake), f"{q}: the known mistake {mistake:.3f} must fail"
        at_worker = env[q] * roof["bandwidth_gbs"] / ROOFS[1]["bandwidth_gbs"]  # divided by one core's roof
        assert not check.check(at_worker)
    env.update(context=144.0, kv_token=46_080)
    run_solution("lab05_q4.py", env)
    assert env["crossover"] == pytest.approx(ch7.crossover(folder, "float32", 46_080, roof, 144.0), rel=0.01)
    mistakes = ch7.crossover_mistakes(folder, "float32", 46_080, roof, 144.0)
    q4 = Question("q4", lambda: ch7.crossover(folder, "float32", 46_080, roof, 144.0), 0.1, "", "lab05_q4.py",
                  known_wrong=mistakes)
    assert q4.check(env["crossover"])
    for why, wrong in mistakes.items():  # no attention, attention on KV heads, no KV read: each named
        assert not q4.check(wrong()) and why.split(";")[0] in capsys.readouterr().out
    run_solution("lab05_q5.py", env)
    need = ch7.NEAR_FLOOR * ch7.allowed_mbu(rows[1])  # the lab's threshold: chapter 7's, scaled by the layout
    q5 = Choice("q5", ["yes", "no"], lambda: "yes" if rows[1]["mbu"] >= need else "no", "", "lab05_q5.py")
    assert q5.check(env["near"]) and not q5.check({"yes": "no", "no": "yes"}[env["near"]])


def test_q1_weights_and_its_known_mistakes(capsys):
    from helpers.chapters import lab5
    from helpers.exercises import Question
    folder = models.prepare_embedded()
    shape = models.shape(folder)
    want = lab5.weights_mb(folder, "float32")
    assert want == pytest.approx(2 * lab5.weights_mb(folder, "bfloat16"), rel=0.01)  # every weight, twice the bytes
    q1 = Question("weights", lambda: want, 0.03, "", "lab05_q1.py",
                  known_wrong=lab5.known_wrong_weights(folder, "float32", shape))
    for why, wrong in lab5.known_wrong_weights(folder, "float32", shape).items():
        assert not q1.check(wrong()) and why in capsys.readouterr().out
