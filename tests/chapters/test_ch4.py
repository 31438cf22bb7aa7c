"""Chapter 4's home on recorded rows (both its notebooks, 4a and 4b): its rules, prompt designs and exercises."""
import math

import pandas as pd

from helpers.chapters import ch4
from helpers.exercises import Question
from helpers.load import Load
from helpers.verdicts import HELD, NOISE, NOT_HELD, PARTLY, UNTESTED
from tests.solutions import run_solution


def _row(**kw):
    base = {"repeats": 1, "completed": 8, "peak_running": 8, "output_throughput": 100.0, "mean_e2el_ms": 2000.0,
            "total_input_tokens": 1000, "prefix_cache_hits": 0, "prefix_cache_hit_rate": 0.0, "median_ttft_ms": 400.0,
            "preemptions": 0, "num_blocks": 13, "block_size": 128, "load_prefix_len": 512, "load_num_prefixes": 1,
            "load_max_concurrency": 1, "start_seconds": 25.0, "mean_tpot_ms": 30.0}
    return {**base, **kw}


def _frame(rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows.values()), index=list(rows))


def test_samples_are_sequences_and_cost_like_requests():
    samples = _frame({ch4.N1: _row(peak_running=8, output_throughput=97),
                      ch4.N4: _row(peak_running=32, output_throughput=124, mean_e2el_ms=8251),
                      ch4.MANY: _row(peak_running=32, output_throughput=124, mean_e2el_ms=8229)})
    running, cost = ch4.sample_claims(samples)
    assert running.verdict == HELD and cost.verdict == HELD
    samples.loc[ch4.N4, "mean_e2el_ms"] = 16000  # latency doubled: only throughput still matches
    assert ch4.sample_claims(samples)[1].verdict == PARTLY


def test_beam_search_against_the_same_number_of_samples():
    beam = {"greedy": {"mean_seconds": 0.47}, "sampled": {"mean_seconds": 0.6},
            "beam": {"mean_seconds": 1.97, "params": {"use_beam_search": True, "n": 2}}}
    assert ch4.beam_claim(beam).verdict == HELD
    beam["beam"]["mean_seconds"] = 0.62
    assert ch4.beam_claim(beam).verdict == NOISE


def test_prefix_claims_from_hits_and_ttft():
    prefix = _frame({ch4.FIXED: _row(total_input_tokens=9216, prefix_cache_hits=7680, prefix_cache_hit_rate=0.83,
                                     median_ttft_ms=460),
                     ch4.CHURN: _row(total_input_tokens=9216, load_num_prefixes=16, median_ttft_ms=3380),
                     ch4.SHORT: _row(load_prefix_len=64),
                     ch4.OFF: _row(median_ttft_ms=3407)})
    fixed, churn, short = ch4.prefix_claims(prefix)
    assert fixed.verdict == HELD and "83 % of the prompt tokens" in fixed.evidence and "86 % less" in fixed.evidence
    assert churn.verdict == HELD and short.verdict == HELD
    prefix.loc[ch4.FIXED, "median_ttft_ms"] = 3000  # most tokens shared, but the first token barely sooner
    assert ch4.prefix_claims(prefix)[0].verdict == PARTLY
    prefix.loc[ch4.FIXED, "median_ttft_ms"] = 3400  # no change, where the claimed ×1.43 would have stood out
    assert ch4.prefix_claims(prefix)[0].verdict == NOT_HELD
    prefix.loc[ch4.FIXED, "median_ttft_ms"] = 4500  # caching on, yet the first token came later
    assert ch4.prefix_claims(prefix)[0].verdict == NOT_HELD
    prefix.loc[ch4.SHORT, "prefix_cache_hits"] = 64
    assert ch4.prefix_claims(prefix)[2].verdict == NOT_HELD
    assert math.isclose(ch4.share_saved(prefix.loc[ch4.FIXED]), 7680 / 9216)


def test_one_changed_token_loses_only_the_blocks_from_the_change_on():
    prompts = ch4.one_token_changes(block=128)
    ids, late, early = prompts[ch4.ORIGINAL], prompts[ch4.LATE], prompts[ch4.EARLY]
    assert len(ids) == len(late) == len(early) == 6 * 128 + 8 and prompts[ch4.AGAIN] == ids
    assert sum(a != b for a, b in zip(ids, late)) == 1 and [a != b for a, b in zip(ids, late)].index(True) // 128 == 5
    assert [a != b for a, b in zip(ids, early)].index(True) // 128 == 0
    chained = ch4.one_token_claim({ch4.ORIGINAL: 0, ch4.LATE: 640, ch4.EARLY: 0, ch4.AGAIN: 768}, 128)
    assert chained.verdict == NOT_HELD and "5 blocks" in chained.evidence
    assert ch4.one_token_claim({ch4.ORIGINAL: 0, ch4.LATE: 0, ch4.EARLY: 0, ch4.AGAIN: 768}, 128).verdict == HELD


def _stale(on: dict, off: dict) -> pd.DataFrame:
    full = {"peak_kv_cache_usage_pct": 100.0, "peak_waiting": 2, "peak_running": 2}
    return _frame({"caching on": _row(**{**full, **on}), "caching off": _row(**{**full, **off})})


def test_stale_blocks_held_only_when_throughput_falls_beyond_noise():
    held = ch4.stale_claim(_stale({"output_throughput": 70, "peak_running": 1, "preemptions": 2}, {}))
    one = ch4.stale_claim(_stale({"output_throughput": 70, "peak_running": 1, "preemptions": 1}, {}))
    assert one.verdict == PARTLY  # counts one apart: two runs of one engine can differ by that much
    assert held.verdict == HELD and "70.0 vs 100.0 tokens/s" in held.evidence and "preemptions 2 vs 0" in held.evidence
    same = ch4.stale_claim(_stale({}, {}))
    assert same.verdict == NOT_HELD and same.rule
    faster = ch4.stale_claim(_stale({"output_throughput": 130}, {}))
    assert faster.verdict == NOT_HELD
    # slower, but as many ran and none was preempted: the space was not what cost, so only partly
    slower = ch4.stale_claim(_stale({"output_throughput": 70}, {}))
    assert slower.verdict == PARTLY and "no count shows the space taken" in slower.evidence


def test_a_one_sample_difference_in_the_counts_no_longer_holds():
    """The old rule held on peak running 1 vs 2 or one preemption more: now the throughput decides."""
    fewer = ch4.stale_claim(_stale({"preemptions": 2, "output_throughput": 97}, {}))
    assert fewer.verdict == NOISE and "leans the claim's way" in fewer.evidence
    by_one = ch4.stale_claim(_stale({"peak_running": 1, "output_throughput": 97}, {}))
    assert by_one.verdict == NOT_HELD  # one fewer running is what two runs of one engine can differ by
    preempted = ch4.stale_claim(_stale({"preemptions": 1, "output_throughput": 103}, {}))
    assert preempted.verdict == NOT_HELD  # a count leans, but caching on was not slower at all


def test_stale_blocks_cannot_be_judged_when_the_cache_never_filled():
    roomy = {"peak_kv_cache_usage_pct": 40.0, "peak_waiting": 0}
    claim = ch4.stale_claim(_stale({**roomy, "output_throughput": 70}, roomy))
    assert claim.verdict == UNTESTED and claim.evidence.startswith("cannot be judged here")
    blank = _stale({}, {})
    blank["output_throughput"] = float("nan")
    assert ch4.stale_claim(blank).verdict == UNTESTED  # no throughput and no duration
    blank["duration"] = [30.0, 20.0]  # caching on took longer: judged on the duration instead
    blank["peak_running"] = [1, 3]
    assert ch4.stale_claim(blank).verdict == HELD


def test_streaming_advice_cannot_be_judged_here():
    claim = ch4.streaming_claim()
    assert claim.verdict == UNTESTED and claim.evidence.startswith("cannot be judged here, because")
    assert "stream=True" in claim.evidence and "skip_special_tokens" in claim.text and claim.rule


def test_compile_break_even_and_claims():
    eager, compiled = _row(start_seconds=25, output_throughput=30), _row(start_seconds=75, output_throughput=40)
    # 50 s extra start, 1/30 - 1/40 = 1/120 s saved per token: 6000 tokens to catch up.
    assert math.isclose(ch4.break_even_tokens(eager, compiled), 6000)
    assert ch4.break_even_tokens(eager, _row(start_seconds=75, output_throughput=30)) == math.inf
    frame = _frame({"eager": _row(start_seconds=25, mean_tpot_ms=30), "compiled": _row(start_seconds=75, mean_tpot_ms=20)})
    start, tpot, graphs = ch4.compile_claims(frame)
    assert start.verdict == HELD and tpot.verdict == HELD and graphs.verdict == UNTESTED
    assert len(ch4.compile_claims(frame, device="cuda")) == 2


def test_logging_claim():
    logs = _frame({"info": _row(output_throughput=100), "debug": _row(output_throughput=70)})
    assert ch4.logging_claim(logs).verdict == HELD
    logs.loc["debug", "output_throughput"] = 97
    assert ch4.logging_claim(logs).verdict == NOISE


def test_eviction_prompts_predict_tail_first():
    prompts, predicted = ch4.eviction_prompts(block=128, usable=12)
    a, b = prompts[ch4.FIRST], prompts[ch4.OTHER]
    assert len(a) == 8 * 128 + 8 and len(b) == 6 * 128 + 8 and prompts[ch4.FIRST_AGAIN] == a
    assert predicted == 5 * 128  # A's 8 full blocks, its last 3 evicted by B
    assert ch4.eviction_claim({ch4.FIRST_AGAIN: 640}, predicted, 128).verdict == HELD
    assert ch4.eviction_claim({ch4.FIRST_AGAIN: 0}, predicted, 128).verdict == NOT_HELD  # head first


def test_each_part_judges_its_own_sections_and_every_claim_once():
    """4a's table holds the claims of 4.1 and 4.2, 4b's those of 4.3; between them, every claim of the chapter."""
    samples = _frame({ch4.N1: _row(peak_running=8), ch4.N4: _row(peak_running=32), ch4.MANY: _row(peak_running=32)})
    beam = {"greedy": {"mean_seconds": 0.5}, "sampled": {"mean_seconds": 0.6},
            "beam": {"mean_seconds": 2.0, "params": {"use_beam_search": True, "n": 2}}}
    prefix = _frame({ch4.FIXED: _row(prefix_cache_hits=640, prefix_cache_hit_rate=0.6, median_ttft_ms=200),
                     ch4.CHURN: _row(load_num_prefixes=8), ch4.SHORT: _row(load_prefix_len=64), ch4.OFF: _row()})
    one_token = {"hits": {ch4.ORIGINAL: 0, ch4.LATE: 640, ch4.EARLY: 0, ch4.AGAIN: 768}}
    eviction = ({"hits": {ch4.FIRST_AGAIN: 640}}, 640)
    sharing = ch4.sharing_claims(samples, beam, prefix, _stale({}, {}), one_token=one_token, eviction=eviction)
    assert [c.text[:3] for c in sharing] == ["4.1"] * 3 + ["4.2"] * 6
    assert len(ch4.sharing_claims(samples, beam, prefix, _stale({}, {}))) == 7  # without the two lookups
    stages = _frame({"eager": _row(start_seconds=25, mean_tpot_ms=30), "compiled": _row(start_seconds=75, mean_tpot_ms=20)})
    logs = _frame({"info": _row(output_throughput=100), "debug": _row(output_throughput=70)})
    compiling = ch4.compile_and_logging_claims(stages, logs)
    assert [c.text[:3] for c in compiling] == ["4.3"] * 5 and compiling[-1].text == ch4.streaming_claim().text
    assert [c.verdict for c in compiling] == [HELD, HELD, UNTESTED, HELD, UNTESTED]
    assert len(ch4.compile_and_logging_claims(stages, logs, device="cuda")) == 4  # no "no CUDA GPU here" row
    texts = [c.text for c in sharing + compiling]
    assert len(set(texts)) == len(texts) and not hasattr(ch4, "claims")


def test_chapter4_solutions():
    import math
    from helpers.chapters import ch4

    one = Load(num_prompts=4, input_len=256, output_len=16, max_concurrency=4, temperature=1.0)
    env = run_solution("ch04_q1.py", {"sample_loads": {"n=1": one}})
    assert Question("q1", lambda: 16.0, 0.0, "", "ch04_q1.py").check(env["answer"])
    fixed = Load(kind="prefix", num_prompts=6, prefix_len=512, input_len=64, output_len=16, max_concurrency=4)
    measured = {"prefix_cache_hits": 2560.0, "total_input_tokens": 3456.0}  # this project's smoke run
    env = run_solution("ch04_q2.py", {"fixed": fixed, "block": 128})
    assert Question("q2", lambda: ch4.share_saved(measured), 0.05, "", "ch04_q2.py").check(env["answer"])
    eager_rows = {1: {"start_seconds": 26.6, "output_throughput": 26.2}}
    compiled_rows = {1: {"start_seconds": 75.7, "output_throughput": 33.2}}
    q3 = ch4.q_break_even(lambda: eager_rows[1], lambda: compiled_rows[1])
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert q3.check(env["answer3"])
    assert not q3.check(49.1 / 7.0)  # the throughputs subtracted
    assert not q3.check(2 * env["answer3"])
    compiled_rows[1]["output_throughput"] = 20.0  # slower: it never catches up
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert math.isinf(env["answer3"]) and q3.check(env["answer3"])


def test_q3_a_compiled_engine_that_started_first_was_never_behind(capsys):
    """The check said 0 where the solution's formula gave a negative count: both say 0 now."""
    eager_rows = {1: {"start_seconds": 40.0, "output_throughput": 26.2}}
    compiled_rows = {1: {"start_seconds": 30.0, "output_throughput": 33.2}}  # a cached compile: it started first
    q3 = ch4.q_break_even(lambda: eager_rows[1], lambda: compiled_rows[1])
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert env["answer3"] == 0 == ch4.break_even_tokens(eager_rows[1], compiled_rows[1]) and q3.check(env["answer3"])
    formula = (30.0 - 40.0) / (1 / 26.2 - 1 / 33.2)
    assert formula < 0 and not q3.check(formula)
    assert ch4.NEVER_BEHIND in capsys.readouterr().out
    compiled_rows[1]["output_throughput"] = 20.0  # first, but slower: the eager one overtakes it later
    env = run_solution("ch04_q3.py", {"eager_rows": eager_rows, "compiled_rows": compiled_rows})
    assert env["answer3"] == 0 and q3.check(0) and not q3.check((30.0 - 40.0) / (1 / 26.2 - 1 / 20.0))
