"""vLLM V1's token-budget rule, applied by hand to a load, so a learner can predict what a
measurement will show before running it.

This follows `Scheduler.schedule()` in vllm/v1/core/sched/scheduler.py, reduced to the part
chapter 3 needs: each step has `max_num_batched_tokens` to give out. RUNNING requests are
served first, in the order they were admitted (a decode takes one token; a prompt already being
prefilled in chunks takes as much of its rest as the budget allows), then WAITING prompts in
arrival order. The plan assumes the decoding requests were admitted before the prompts (as in
chapter 3's load), so their tokens come first; a decode admitted after a chunked prompt can get
no token in a step that prompt fills. A waiting prompt
that does not fit what is left is cut to fit when chunked prefill is on; when it is off the
scheduler stops admitting (`break`) and the prompt waits for a later step.

`cap` is `long_prefill_token_threshold` (vLLM's default 0: off): while more than one request
is running or waiting, no request gets more than `cap` tokens in a step.

It is arithmetic, not a measurement: it ignores KV blocks, `max_num_seqs`, prefix caching,
and when each request really reaches the scheduler.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Plan:
    steps: list[int]  # tokens each step carries
    first_token_step: list[int]  # per prompt: the step (1-based) that finishes its prefill

    @property
    def biggest_step(self) -> int:
        return max(self.steps)


def step_plan(budget: int, chunked: bool, prompts: list[int], decodes: int = 0, cap: int = 0) -> Plan:
    """The steps needed until every prompt in `prompts` (all waiting at the start, in arrival
    order) is prefilled, while `decodes` requests decode one token per step. A prompt whose prefill
    finished is not added to the decodes (in vLLM it keeps running, and counts toward the
    `num_running + num_waiting > 1` test of `long_prefill_token_threshold`): with `cap`, pass
    decodes ≥ 1, as chapter 3 does, or a lone prompt after a finished one is planned uncapped."""
    if not chunked and any(p > budget for p in prompts):
        raise ValueError("with chunked prefill off every prompt must fit the budget (vLLM refuses to start "
                         "when max_num_batched_tokens < max_model_len)")
    left = list(prompts)  # prompt tokens not yet computed
    started, done, steps = [False] * len(prompts), [0] * len(prompts), []
    while any(left):
        room = budget - min(decodes, budget)  # running decodes come first
        capped = cap > 0 and decodes + sum(1 for n in left if n) > 1
        for i in range(len(left)):  # running chunked prefills, then waiting prompts, in order
            if not left[i] or room == 0:
                continue
            want = min(left[i], cap) if capped else left[i]  # the cap applies first, as in vLLM
            if not started[i] and not chunked and want > room:
                break  # chunking off: this waiting prompt does not fit; stop admitting
            take = min(want, room)
            left[i], room, started[i] = left[i] - take, room - take, True
            if not left[i]:
                done[i] = len(steps) + 1
        steps.append(budget - room)
    return Plan(steps, done)
