"""Chapter 3's kept-apart solutions, run on recorded rows, pass the notebook's checks."""
import math

import pandas as pd

from helpers.claims import ch3
from helpers.exercises import Choice, Question
from helpers.load import Load
from helpers.scheduler_rule import step_plan
from tests.solutions import run_solution
from tests.unit.test_claims_ch3 import RECORDED, sweep_row


def run(name: str, env: dict):
    return run_solution(name, env)["answer"]


def test_q1_the_rule_by_hand_predicts_the_recorded_smoothest_stream(capsys):
    chunked = pd.DataFrame(RECORDED).T
    setups = {"budget 256": (256, True), "default budget": (2048, True), "chunking off": (2048, False)}
    plans = {n: step_plan(b, on, [1200, 1200], decodes=8) for n, (b, on) in setups.items()}
    q = Choice("q1", list(plans), lambda: ch3.smallest_gap(chunked), "", "ch03_q1.py")
    assert q.check(run("ch03_q1.py", {"plans": plans}))


def test_q2_block_arithmetic_gives_the_recorded_peak(capsys):
    flood = Load(num_prompts=8, input_len=64, output_len=192, max_concurrency=8)
    for block, peak in ((128, 4), (16, 8)):  # CPU's default block (recorded peak 4); CUDA's
        usable = math.ceil(2 * (flood.input_len + flood.output_len) / block)
        q = Question("q2", lambda: peak, 0.0, "", "ch03_q2.py")
        assert q.check(run("ch03_q2.py", {"flood": flood, "block": block, "usable_blocks": usable}))


def test_q3_and_q4(capsys):
    chunked = pd.DataFrame(RECORDED).T
    for limit in (100, 1000, 3000):
        q = Choice("q3", [*chunked.index, "none"], lambda: ch3.budget_for(chunked, limit), "", "ch03_q3.py")
        assert q.check(run("ch03_q3.py", {"chunked": chunked, "max_gap_ms": limit}))
    sweep = pd.DataFrame([sweep_row(1, 30, 30), sweep_row(2, 60, 40), sweep_row(8, 55, 80)])
    q = Question("q4", lambda: ch3.best_concurrency(sweep), 0.0, "", "ch03_q4.py")
    assert q.check(run("ch03_q4.py", {"sweep": sweep}))
