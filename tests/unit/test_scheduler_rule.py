"""The budget rule by hand: what chapter 3 predicts before it measures."""
import pytest

from helpers.scheduler_rule import step_plan


def test_chunking_fills_a_big_budget_with_pieces_of_several_prompts():
    plan = step_plan(2048, True, [1200, 1200], decodes=8)
    assert plan.steps == [2048, 368]          # 8 decodes + 1200 + an 840-token piece; then 8 + the rest
    assert plan.first_token_step == [1, 2]


def test_chunking_off_stops_at_the_first_prompt_that_does_not_fit():
    plan = step_plan(2048, False, [1200, 1200], decodes=8)
    assert plan.steps == [1208, 1208]         # one whole prompt per step
    assert plan.first_token_step == [1, 2]


def test_a_small_budget_keeps_steps_small_and_long_prompts_late():
    plan = step_plan(256, True, [1200, 1200], decodes=8)
    assert plan.biggest_step == 256
    assert plan.first_token_step[-1] == len(plan.steps) == 10  # 2400 tokens at 248 a step


def test_the_biggest_step_orders_the_three_configurations():
    prompts = [1200, 1200]
    steps = {name: step_plan(b, c, prompts, 8).biggest_step
             for name, b, c in [("small", 256, True), ("default", 2048, True), ("off", 2048, False)]}
    assert steps["small"] < steps["off"] < steps["default"]


def test_chunking_off_refuses_a_prompt_longer_than_the_budget():
    with pytest.raises(ValueError):
        step_plan(1024, False, [1200])


def test_a_prefill_cap_splits_the_budget_between_the_long_prompts():
    plan = step_plan(2048, True, [1200, 1200], decodes=8, cap=256)
    assert plan.biggest_step == 8 + 2 * 256
    assert plan.first_token_step == [5, 5]  # both prompts advance together
    alone = step_plan(2048, True, [1200], decodes=0, cap=256)
    assert alone.steps == [1200]  # nobody else to protect: vLLM lifts the cap
