"""Chapter 0's exercises on recorded rows: the kept-apart solutions pass the chapter's checks."""

from helpers.exercises import Choice, Question
from helpers.load import Load
from helpers.slo import goodput
from tests.solutions import run_solution


def test_chapter0_solutions():
    runs = [{"duration": 10.0, "total_output_tokens": 1024, "request_ttft_ms": [500, 1500, 800],
             "request_tpot_ms": [40, 30, 60]}]
    first = {"output_throughput": 102.4, "total_output_tokens": 1024.0, "duration": 10.0, "mean_ttft_ms": 2000.0,
             "mean_tpot_ms": 50.0, "runs": runs}
    first_load = Load(num_prompts=16, input_len=256, output_len=64, max_concurrency=8)
    env = run_solution("ch00_q1.py", {"first": first})
    assert Question("t", lambda: first["output_throughput"], 0.02, "", "ch00_q1.py").check(env["throughput"])
    env = run_solution("ch00_q2.py", {"first": first, "first_load": first_load})
    assert Choice("c", ["first token", "the rest"], lambda: "the rest", "", "ch00_q2.py").check(env["prediction"])
    env = run_solution("ch00_q3.py", {"first": first})
    assert env["strict_goodput"] == goodput({"runs": runs}, 1000, 50) == 0.1


def test_where_the_time_goes_can_say_either():
    from helpers.chapters import ch0
    load = Load(num_prompts=4, input_len=256, output_len=65, max_concurrency=4)
    assert ch0.where_the_time_goes({"mean_ttft_ms": 800.0, "mean_tpot_ms": 10.0}, load) == ch0.FIRST_TOKEN  # 800 > 640
    assert ch0.where_the_time_goes({"mean_ttft_ms": 500.0, "mean_tpot_ms": 10.0}, load) == ch0.THE_REST
    tie = ch0.where_the_time_goes({"mean_ttft_ms": 660.0, "mean_tpot_ms": 10.0}, load)  # 3 % apart: either answer
    assert tie == {ch0.FIRST_TOKEN, ch0.THE_REST}
    assert "64 × 10.0 ms = 640 ms" in ch0.time_split({"mean_ttft_ms": 600.0, "mean_tpot_ms": 10.0}, load)


def test_goodput_exercise_cannot_be_checked_on_a_row_without_per_request_data(capsys):
    """A stored or imported row may keep no `runs`: the expectation is None, and the check says so."""
    from helpers.chapters import ch0
    runs = [{"duration": 10.0, "request_ttft_ms": [500, 1500, 800], "request_tpot_ms": [40, 30, 60]},
            {"duration": 5.0, "request_ttft_ms": [500], "request_tpot_ms": [40]}]
    assert ch0.first_repeat_goodput({"runs": runs}, 1000, 50) == 0.1  # the first repeat only
    for row in ({}, {"runs": None}, {"runs": []}, {"runs": [{"duration": 10.0}]}):
        assert ch0.first_repeat_goodput(row, 1000, 50) is None
    q = Question("goodput", lambda: ch0.first_repeat_goodput({}, 1000, 50), 0.01, "", "ch00_q3.py")
    assert not q.check(0.1) and "cannot be checked here" in capsys.readouterr().out
    right = Question("goodput", lambda: ch0.first_repeat_goodput({"runs": runs}, 1000, 50), 0.01, "", "ch00_q3.py")
    env = run_solution("ch00_q3.py", {"first": {"runs": runs}})
    assert right.check(env["strict_goodput"]) and not right.check(0.3)  # 0.3: every request counted
