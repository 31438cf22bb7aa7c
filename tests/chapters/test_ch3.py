"""Chapter 3's home on recorded rows: its rules and its exercises."""

import pandas as pd
import pytest

from helpers import verdicts
from helpers.chapters import ch3
from helpers.config import EngineConfig
from helpers.exercises import Choice
from helpers.load import Load
from helpers.scheduler_rule import step_plan
from tests.solutions import run_solution


def rows(**named) -> pd.DataFrame:
    return pd.DataFrame(list(named.values()), index=list(named))


def mixed_row(budget, chunking, gap, ttft, repeats=1, throughput=100.0):
    return {
        "engine_max_num_batched_tokens": budget,
        "engine_enable_chunked_prefill": chunking,
        "short_p99_itl_ms": gap,
        "short_p99_itl_ms_min": gap,
        "short_p99_itl_ms_max": gap,
        "long_mean_ttft_ms": ttft,
        "long_mean_ttft_ms_min": ttft,
        "long_mean_ttft_ms_max": ttft,
        "output_throughput": throughput,
        "repeats": repeats,
    }


# Shaped like a 2-core AVX-512 EPYC smoke run (one run each): the default budget stalled answers
# longer than chunking off.
RECORDED = {
    "budget 256": mixed_row(256, True, 547, 7000, throughput=80),
    "default budget": mixed_row(2048, True, 6000, 3800, throughput=140),
    "chunking off": mixed_row(2048, False, 2441, 5000, throughput=100),
}


def test_small_budget_held_default_budget_did_not():
    small, default, ttft, throughput = ch3.chunking_claims(pd.DataFrame(RECORDED).T)
    assert "(256)" in small.text
    assert small.verdict == verdicts.HELD
    assert default.verdict == verdicts.NOT_HELD and "(2048)" in default.text
    assert ttft.verdict == verdicts.HELD  # 7000 ms at 256 vs 3800 ms at the default, past the ×÷1.7 floor
    assert throughput.verdict == verdicts.HELD  # 140 vs 100 tokens/s, chunking on vs off
    assert all(c.rule for c in (small, default, ttft, throughput))


def test_chunking_that_lowers_throughput_did_not_hold():
    slower = pd.DataFrame({**RECORDED, "default budget": mixed_row(2048, True, 3596, 3800, throughput=70)}).T
    assert ch3.chunking_claims(slower)[3].verdict == verdicts.NOT_HELD  # 70 vs 100 tokens/s with chunking off


def test_the_smallest_budget_is_picked_by_the_engine_value():
    chunked = rows(
        **{
            "budget 1024": mixed_row(1024, True, 900, 4000),
            "budget 256": mixed_row(256, True, 500, 5000),
            "default budget": mixed_row(2048, True, 3000, 3800),
            "chunking off": mixed_row(2048, False, 2400, 5000),
        }
    )
    assert ch3.smallest_budget(chunked) == "budget 256"


def test_close_gaps_are_within_noise():
    chunked = rows(
        **{
            "budget 256": mixed_row(256, True, 2300, 5000),
            "default budget": mixed_row(2048, True, 2500, 3800),
            "chunking off": mixed_row(2048, False, 2400, 5000),
        }
    )
    small, default, _, _ = ch3.chunking_claims(chunked)
    assert small.verdict == default.verdict == verdicts.CANNOT_TELL  # a claim of any change: ×1 is in the interval


def sweep_row(concurrency, throughput, tpot):
    return {"load_max_concurrency": concurrency, "output_throughput": throughput, "mean_tpot_ms": tpot, "repeats": 1}


def test_concurrency_claims():
    held = ch3.concurrency_claims(pd.DataFrame([sweep_row(1, 30, 30), sweep_row(8, 90, 80)]))
    assert [c.verdict for c in held] == [verdicts.HELD, verdicts.HELD]
    flat = ch3.concurrency_claims(pd.DataFrame([sweep_row(1, 30, 30), sweep_row(8, 25, 31)]))
    # fell by a sixth: the interval (×÷1.3 floor) holds no change and excludes the claimed ×1.3, so within
    # noise; the second claim asks for any rise at all, which the interval cannot exclude
    assert [c.verdict for c in flat] == [verdicts.NOISE, verdicts.CANNOT_TELL]


def seqs_row(n, throughput, waiting):
    return {"output_throughput": throughput, "peak_waiting": waiting, "engine_max_num_seqs": n, "repeats": 1}


@pytest.mark.parametrize(
    "small, verdict",
    [
        (seqs_row(2, 45, 6), verdicts.HELD),  # recorded: 6 waiting, 45 vs 91 tokens/s
        (seqs_row(2, 88, 6), verdicts.CANNOT_TELL),  # they waited, throughput within noise
        (seqs_row(2, 88, 0), verdicts.NOT_HELD),
    ],
)
def test_seqs_claim(small, verdict):
    seqs = pd.DataFrame([seqs_row(128, 91, 0), small], index=["default", 2])
    assert ch3.seqs_claim(seqs).verdict == verdict


def tiny(running, waiting, preemptions, usage):
    return {
        "peak_running": running,
        "peak_waiting": waiting,
        "preemptions": preemptions,
        "peak_kv_cache_usage_pct": usage,
        "kv_cache_tokens": 640,
        "num_blocks": 5,
        "block_size": 128,
    }


@pytest.mark.parametrize(
    "row, capped, preempted",
    [
        (tiny(4, 4, 3, 100), verdicts.HELD, verdicts.HELD),
        (tiny(4, 4, 0, 60), verdicts.HELD, verdicts.UNTESTED),  # the cache never ran out: not measured
        (tiny(4, 4, 0, 100), verdicts.HELD, verdicts.NOT_HELD),  # it ran out, yet nothing was preempted
        (tiny(8, 0, 0, 50), verdicts.NOT_HELD, verdicts.UNTESTED),
    ],
)
def test_block_claims(row, capped, preempted):
    a, b = ch3.block_claims(row, 8)
    assert (a.verdict, b.verdict) == (capped, preempted)
    assert a.rule and b.rule


def all_claims():
    sweep = pd.DataFrame([sweep_row(1, 30, 30), sweep_row(8, 90, 80)])
    seqs = pd.DataFrame([seqs_row(128, 91, 0), seqs_row(2, 45, 6)], index=["default", 2])
    one = lambda **kw: pd.Series({"repeats": 1, "engine_max_num_batched_tokens": 256, **kw})
    long_docs = {
        "small": one(mean_ttft_ms=5000, output_throughput=20),
        "default": one(mean_ttft_ms=3000, output_throughput=25),
    }
    queue = {
        "capped": one(failed=12, completed=4, p99_ttft_ms=400, cfg_max_num_queued_reqs=4),
        "waited": one(failed=0, completed=16, p99_ttft_ms=4000),
    }
    return ch3.claims(
        sweep,
        pd.DataFrame(RECORDED).T,
        seqs,
        {**tiny(4, 4, 3, 100), "engine_max_num_seqs": 128},
        8,
        long_docs=long_docs,
        admitted=4,
        queue=queue,
    )


def test_all_claims_have_rules():
    claims = all_claims()
    assert len(claims) == 12 and all(c.rule for c in claims)


def test_exercise_answers():
    chunked = pd.DataFrame(RECORDED).T
    assert ch3.smallest_gap(chunked) == "budget 256"
    assert ch3.budget_for(chunked, 1000) == {"budget 256"}
    assert "chunking off" in ch3.budget_for(chunked, 3000)  # 2441 ms, and a sooner first token than 256's
    assert ch3.budget_for(chunked, 100) == "none"
    assert ch3.best_concurrency(pd.DataFrame([sweep_row(1, 30, 30), sweep_row(8, 90, 80)])) == {8.0}


def test_long_documents_and_the_queue_cap():
    one = lambda **kw: pd.Series({"repeats": 1, "engine_max_num_batched_tokens": 256, **kw})
    small, default = one(mean_ttft_ms=6000, output_throughput=20), one(mean_ttft_ms=3000, output_throughput=25)
    assert ch3.long_docs_claim(small, default).verdict == verdicts.HELD
    assert ch3.long_docs_claim(default, small).verdict == verdicts.NOT_HELD
    capped = one(failed=12, completed=4, p99_ttft_ms=400, cfg_max_num_queued_reqs=4)
    waited = one(failed=0, completed=16, p99_ttft_ms=4000)
    assert ch3.queue_claim(capped, waited).verdict == verdicts.HELD
    assert (
        ch3.queue_claim(one(failed=0, completed=16, p99_ttft_ms=3900, cfg_max_num_queued_reqs=64), waited).verdict
        == verdicts.NOT_HELD
    )


def test_blocks_alone_never_decide_in_vllm_032():
    tiny = pd.Series({"peak_running": 4, "engine_max_num_seqs": 128})
    claim = ch3.blocks_only_claim(tiny, admitted=4, sent=8)
    assert claim.verdict == verdicts.NOT_HELD  # blocks capped, but a seat cap exists: not "entirely" the blocks
    assert "what the blocks admit (4)" in claim.evidence
    more = ch3.blocks_only_claim(pd.Series({"peak_running": 6, "engine_max_num_seqs": 128}), 4, sent=8)
    assert more.verdict == verdicts.NOT_HELD
    assert "more than the 4 the blocks admit" in more.evidence and "what the blocks admit" not in more.evidence
    fewer = ch3.blocks_only_claim(pd.Series({"peak_running": 3, "engine_max_num_seqs": 128}), 4, sent=8)
    assert fewer.verdict == verdicts.NOT_HELD and "fewer than the 4 the blocks admit" in fewer.evidence
    unset = ch3.blocks_only_claim(pd.Series({"peak_running": 4, "engine_max_num_seqs": 0}), 4, sent=8)
    assert unset.verdict == verdicts.HELD and "no seat cap" in unset.evidence


@pytest.mark.parametrize(
    "row, admitted, sent",
    [
        ({"peak_running": 4, "engine_max_num_seqs": 128}, 4, 4),  # no more sent than the blocks admit
        ({"peak_running": 2, "engine_max_num_seqs": 2}, 4, 8),  # the seats bind first
        ({"engine_max_num_seqs": 128}, 4, 8),  # no peak recorded
        ({"peak_running": 4}, 4, 8),  # which max_num_seqs ran is unknown
        ({"peak_running": 4, "engine_max_num_seqs": 128}, None, 8),  # no block count
    ],
)
def test_blocks_only_cannot_be_judged_without_its_premise(row, admitted, sent):
    claim = ch3.blocks_only_claim(pd.Series(row), admitted, sent=sent)
    assert claim.verdict == verdicts.UNTESTED and claim.evidence.startswith("cannot be judged here") and claim.rule


def test_long_docs_and_queue_take_plain_rows():
    small = {"repeats": 1, "engine_max_num_batched_tokens": 256, "mean_ttft_ms": 6000, "output_throughput": 20}
    default = {**small, "engine_max_num_batched_tokens": 2048, "mean_ttft_ms": 3000}
    assert ch3.long_docs_claim(small, default).verdict == verdicts.HELD  # dicts, as measure returns them


def run(name: str, env: dict):
    return run_solution(name, env)["answer"]


def test_q1_the_rule_by_hand_predicts_the_recorded_smoothest_stream(capsys):
    chunked = pd.DataFrame(RECORDED).T
    setups = {"budget 256": (256, True), "default budget": (2048, True), "chunking off": (2048, False)}
    plans = {n: step_plan(b, on, [1200, 1200], decodes=8) for n, (b, on) in setups.items()}
    q = Choice("q1", list(plans), lambda: ch3.smoothest(chunked), "", "ch03_q1.py")
    assert q.check(run("ch03_q1.py", {"plans": plans}))


def test_q1_accepts_every_configuration_within_noise_of_the_smoothest(capsys):
    """Single runs, gaps of 400 and 420 ms: a run cannot tell them apart (±10 %), so both are right;
    900 ms is not."""
    chunked = pd.DataFrame({ch3.GAP: [400.0, 420.0, 900.0]}, index=["budget 256", "default budget", "chunking off"])
    assert ch3.smoothest(chunked) == {"budget 256", "default budget"}
    q = Choice("q1", list(chunked.index), lambda: ch3.smoothest(chunked), "", "ch03_q1.py")
    assert q.check("default budget") and "also right: budget 256" in capsys.readouterr().out
    assert not q.check("chunking off") and "budget 256 or default budget" in capsys.readouterr().out


def engine_row(design, **kw):
    """What the engine reports for the shrunken cache: every block of the override, the null one too."""
    return {"num_blocks": design.override, "block_size": design.block, "engine_max_num_seqs": 256, **kw}


@pytest.mark.parametrize("block", [16, 128])  # CUDA's default block; the CPU backend's
def test_q2_the_solution_passes_and_each_mistake_is_told_apart(capsys, block):
    design = ch3.shrunken_cache(EngineConfig(), block)
    assert design.flood.input_len % block and design.flood.input_len % 16  # room left in a prompt's last block
    # At block size 16 a sampled peak can read low (preemption soon after admission): the check does not use it.
    row = engine_row(design, peak_running=design.admitted - 2)
    q = ch3.q_admitted(design.flood, lambda: row)
    env = {"flood": design.flood, "block": design.block, "usable_blocks": design.usable_blocks}
    answer = run("ch03_q2.py", env)
    assert answer == design.admitted == ch3.peak_admitted(row, design.flood) == ch3.blocks_admit(row, 49)
    assert q.check(answer)
    mistakes = ch3.peak_mistakes(row, design.flood)
    assert set(mistakes) == {ch3.NULL_BLOCK, ch3.WHOLE_LENGTH}  # both differ from the right answer here
    for why, wrong in mistakes.items():
        assert wrong != answer and not q.check(wrong)
        assert why in capsys.readouterr().out
    assert not q.check(row["peak_running"])


def test_q2_recorded_cpu_run():
    """The 2-core smoke run at the CPU's block size: 5 blocks (4 usable), 8 requests, peak 4 sampled."""
    row = {"num_blocks": 5, "block_size": 128, "engine_max_num_seqs": 128, "peak_running": 4}
    flood = Load(num_prompts=8, input_len=64, output_len=192, max_concurrency=8)
    assert ch3.peak_admitted(row, flood) == row["peak_running"] == 4
    assert ch3.peak_mistakes(row, flood) == {ch3.NULL_BLOCK: 5, ch3.WHOLE_LENGTH: 2}


def test_q2_cannot_be_checked_without_the_engine_blocks(capsys):
    flood = Load(num_prompts=8, input_len=49, output_len=192, max_concurrency=8)
    assert ch3.peak_admitted({"peak_running": 4}, flood) is None
    assert not ch3.q_admitted(flood, lambda: {"peak_running": 4}).check(4)
    assert "cannot be checked here" in capsys.readouterr().out


def test_chapter_opening_lists_the_claims_the_verdict_judges():
    """Notebook 03's first cell names every claim of the verdict table, with its number."""
    import json
    import re

    from tests.conftest import ROOT

    cells = json.loads((ROOT / "notebooks" / "03_batching_and_chunked_prefill.ipynb").read_text())["cells"]
    opening = "".join(cells[0]["source"]).replace("`", "")
    listed = re.findall(r"^- (3\.\d .*?)(?: \[measured in 3\.\d\])?$", opening, flags=re.M)
    judged = [re.sub(r" \(\d+\)", "", c.text) for c in all_claims()]
    assert listed == judged


def test_q3_and_q4(capsys):
    chunked = pd.DataFrame(RECORDED).T
    for limit in (100, 1000, 3000):
        q = Choice("q3", [*chunked.index, "none"], lambda: ch3.budget_for(chunked, limit), "", "ch03_q3.py")
        assert q.check(run("ch03_q3.py", {"chunked": chunked, "max_gap_ms": limit}))
    sweep = pd.DataFrame([sweep_row(1, 30, 30), sweep_row(2, 60, 40), sweep_row(8, 55, 80)])
    q = Choice("q4", [1.0, 2.0, 8.0], lambda: ch3.best_concurrency(sweep), "", "ch03_q4.py")
    assert q.check(run("ch03_q4.py", {"sweep": sweep}))
    close = pd.DataFrame([sweep_row(1, 30, 30), sweep_row(8, 100, 80), sweep_row(16, 104, 90)])
    assert ch3.best_concurrency(close) == {8.0, 16.0}  # 4 % apart: a run cannot tell them apart


def test_at_a_budget_that_holds_the_whole_load_chunking_cannot_be_judged():
    """An H100's default budget (8,192) holds 4 × 1,200 long prompt tokens and 16 decodes in one step:
    chunking on and off then build the same steps."""
    chunked = pd.DataFrame(RECORDED).T.assign(load_long_prompts=4, load_long_input_len=1200, load_num_prompts=16)
    judged = ch3.chunking_claims(chunked)  # a CPU's 2,048: judged
    assert all(c.verdict != verdicts.UNTESTED for c in judged)
    chunked.loc["default budget", "engine_max_num_batched_tokens"] = 8192
    at_default, throughput = ch3.chunking_claims(chunked)[1], ch3.chunking_claims(chunked)[3]
    assert at_default.verdict == throughput.verdict == verdicts.UNTESTED and "same steps" in at_default.evidence


def test_a_chunking_claim_is_not_judged_where_the_long_prompts_met_no_short_answer():
    import pandas as pd

    from helpers import verdicts
    from helpers.chapters import ch3

    row = lambda gap, met: {
        "short_p99_itl_ms": gap,
        "long_mean_ttft_ms": 500.0,
        "output_throughput": 100.0,  # noqa: E731
        "engine_max_num_batched_tokens": 256,
        "engine_enable_chunked_prefill": True,
        "shorts_in_flight_at_long": met,
        "long_start_s": 2.1,
        "config_label": "x",
    }
    chunked = pd.DataFrame(
        {
            ch3.OFF: {**row(1800.0, 0), "engine_max_num_batched_tokens": 2048, "engine_enable_chunked_prefill": False},
            ch3.DEFAULT: {**row(700.0, 8), "engine_max_num_batched_tokens": 2048},
            "budget 256": row(600.0, 8),
        }
    ).T
    claims = ch3.chunking_claims(chunked)
    assert claims[0].verdict == verdicts.UNTESTED and "stalled nobody" in claims[0].evidence
    assert claims[1].verdict == verdicts.UNTESTED


def test_a_zero_peak_is_not_judged_by_the_block_cap_claim():
    from helpers import verdicts
    from helpers.chapters import ch3
    tiny = {"peak_running": 0.0, "peak_waiting": 0.0, "kv_cache_tokens": 1024, "num_blocks": 9, "block_size": 128,
            "preemptions": 0.0, "peak_kv_cache_usage_pct": 0.0}
    assert ch3.block_claims(tiny, 8)[0].verdict == verdicts.UNTESTED


def test_a_queue_cap_whose_accepted_requests_waited_longer_did_not_hold():
    from helpers import verdicts
    from helpers.chapters import ch3
    capped = {"failed": 12.0, "completed": 4.0, "p99_ttft_ms": 6000.0, "cfg_max_num_queued_reqs": 2.0, "repeats": 1}
    waited = {"failed": 0.0, "completed": 16.0, "p99_ttft_ms": 2815.0, "repeats": 1}
    assert ch3.queue_claim(capped, waited).verdict == verdicts.NOT_HELD
    assert ch3.queue_claim({**capped, "p99_ttft_ms": 2800.0}, waited).verdict == verdicts.PARTLY
    assert ch3.queue_claim({**capped, "p99_ttft_ms": 900.0}, waited).verdict == verdicts.HELD
