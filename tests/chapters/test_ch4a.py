"""Chapter 4a's home on recorded rows: its rules, prompt designs and exercises 1 and 2."""
import math

import pandas as pd

from helpers.chapters import ch4a
from helpers.exercises import Question
from helpers.load import Load
from helpers.verdicts import CANNOT_TELL, HELD, NOT_HELD, PARTLY, UNTESTED
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
    samples = _frame({ch4a.N1: _row(peak_running=8, output_throughput=97),
                      ch4a.N4: _row(peak_running=32, output_throughput=124, mean_e2el_ms=8251),
                      ch4a.MANY: _row(peak_running=32, output_throughput=124, mean_e2el_ms=8229)})
    running, cost = ch4a.sample_claims(samples)
    assert running.verdict == HELD and cost.verdict == HELD
    samples.loc[ch4a.N4, "mean_e2el_ms"] = 16000  # latency doubled: only throughput still matches
    assert ch4a.sample_claims(samples)[1].verdict == PARTLY
    samples.loc[ch4a.N4, "peak_running"] = 8  # four samples ran as one sequence: refuted, not noise
    assert ch4a.sample_claims(samples)[0].verdict == NOT_HELD


def test_beam_search_against_the_same_number_of_samples():
    beam = {"greedy": {"mean_seconds": 0.47}, "sampled": {"mean_seconds": 0.6},
            "beam": {"mean_seconds": 1.97, "params": {"use_beam_search": True, "n": 2}}}
    assert ch4a.beam_claim(beam).verdict == HELD
    beam["beam"]["mean_seconds"] = 0.62
    assert ch4a.beam_claim(beam).verdict == CANNOT_TELL


def test_prefix_claims_from_hits_and_ttft():
    prefix = _frame({ch4a.FIXED: _row(total_input_tokens=9216, prefix_cache_hits=7680, prefix_cache_hit_rate=0.83,
                                     median_ttft_ms=460),
                     ch4a.CHURN: _row(total_input_tokens=9216, load_num_prompts=16, load_num_prefixes=8,
                                      prefix_cache_hits=3584, prefix_cache_hit_rate=0.39, median_ttft_ms=2100),
                     ch4a.SHORT: _row(load_prefix_len=64),
                     ch4a.OFF: _row(median_ttft_ms=3407)})
    fixed, churn, short = ch4a.prefix_claims(prefix)
    assert fixed.verdict == HELD and "83 % of the prompt tokens" in fixed.evidence and "86 % less" in fixed.evidence
    assert churn.verdict == HELD and short.verdict == HELD
    prefix.loc[ch4a.FIXED, "median_ttft_ms"] = 3000  # most tokens shared, but the first token barely sooner:
    assert ch4a.prefix_claims(prefix)[0].verdict == CANNOT_TELL  # inside a TTFT's ×÷1.5 floor, which holds ×1.43
    prefix.loc[ch4a.FIXED, "median_ttft_ms"] = 3400  # no change, and the claimed ×1.43 inside a TTFT's floor
    assert ch4a.prefix_claims(prefix)[0].verdict == CANNOT_TELL
    prefix.loc[ch4a.FIXED, "median_ttft_ms"] = 6000  # caching on, yet the first token came later
    assert ch4a.prefix_claims(prefix)[0].verdict == NOT_HELD
    prefix.loc[ch4a.SHORT, "prefix_cache_hits"] = 64
    assert ch4a.prefix_claims(prefix)[2].verdict == NOT_HELD
    assert math.isclose(ch4a.share_saved(prefix.loc[ch4a.FIXED]), 7680 / 9216)


def test_a_churning_template_is_found_by_its_repeats_and_nothing_more():
    """16 requests, 8 templates of four 128-token blocks, each used twice: at most 8 × 512 tokens can hit."""
    fixed = _row(prefix_cache_hits=7680, load_num_prompts=16)
    churn = lambda hits: _row(load_num_prompts=16, load_num_prefixes=8, prefix_cache_hits=hits)  # noqa: E731
    assert ch4a.repeat_hits(churn(0)) == 4096
    assert ch4a.churn_claim(churn(3584), fixed).verdict == HELD  # 7 of 8 second uses found their template
    assert ch4a.churn_claim(churn(512), fixed).verdict == PARTLY  # the saving shrank more than the repeats explain
    over = ch4a.churn_claim(churn(6144), fixed)  # more than the repeats allow: templates shared blocks
    assert over.verdict == NOT_HELD and "allow 4,096" in over.evidence
    assert ch4a.churn_claim(churn(3584), _row(prefix_cache_hits=3584)).verdict == NOT_HELD  # no less than fixed
    assert ch4a.churn_claim(_row(block_size=None), fixed).verdict == UNTESTED


def test_one_changed_token_loses_only_the_blocks_from_the_change_on():
    prompts = ch4a.one_token_changes(block=128)
    ids, late, early = prompts[ch4a.ORIGINAL], prompts[ch4a.LATE], prompts[ch4a.EARLY]
    assert len(ids) == len(late) == len(early) == 6 * 128 + 8 and prompts[ch4a.AGAIN] == ids
    assert sum(a != b for a, b in zip(ids, late)) == 1 and [a != b for a, b in zip(ids, late)].index(True) // 128 == 5
    assert [a != b for a, b in zip(ids, early)].index(True) // 128 == 0
    chained = ch4a.one_token_claim({ch4a.ORIGINAL: 0, ch4a.LATE: 640, ch4a.EARLY: 0, ch4a.AGAIN: 768}, 128)
    assert chained.verdict == NOT_HELD and "5 blocks" in chained.evidence
    assert ch4a.one_token_claim({ch4a.ORIGINAL: 0, ch4a.LATE: 0, ch4a.EARLY: 0, ch4a.AGAIN: 768}, 128).verdict == HELD


def _stale(on: dict, off: dict) -> pd.DataFrame:
    full = {"peak_kv_cache_usage_pct": 100.0, "peak_waiting": 2, "peak_running": 2}
    return _frame({"caching on": _row(**{**full, **on}), "caching off": _row(**{**full, **off})})


def test_stale_blocks_held_only_when_throughput_falls_beyond_noise():
    held = ch4a.stale_claim(_stale({"output_throughput": 70, "peak_running": 1, "preemptions": 2}, {}))
    one = ch4a.stale_claim(_stale({"output_throughput": 70, "peak_running": 1, "preemptions": 1}, {}))
    assert one.verdict == NOT_HELD  # counts one apart: two runs of one engine can differ by that much
    assert held.verdict == HELD and "70.0 vs 100.0 tokens/s" in held.evidence and "preemptions 2 vs 0" in held.evidence
    same = ch4a.stale_claim(_stale({}, {}))
    assert same.verdict == NOT_HELD and same.rule
    faster = ch4a.stale_claim(_stale({"output_throughput": 130}, {}))
    assert faster.verdict == NOT_HELD
    # slower, but as many ran and none was preempted: the space was not what cost, so the claim did not hold
    slower = ch4a.stale_claim(_stale({"output_throughput": 70}, {}))
    assert slower.verdict == NOT_HELD and "no count shows the space taken" in slower.evidence


def test_a_one_sample_difference_in_the_counts_no_longer_holds():
    """The old rule held on peak running 1 vs 2 or one preemption more: now the throughput decides."""
    fewer = ch4a.stale_claim(_stale({"preemptions": 2, "output_throughput": 97}, {}))
    assert fewer.verdict == CANNOT_TELL and "leans the claim's way" in fewer.evidence
    by_one = ch4a.stale_claim(_stale({"peak_running": 1, "output_throughput": 97}, {}))
    assert by_one.verdict == NOT_HELD  # one fewer running is what two runs of one engine can differ by
    preempted = ch4a.stale_claim(_stale({"preemptions": 1, "output_throughput": 103}, {}))
    assert preempted.verdict == NOT_HELD  # a count leans, but caching on was not slower at all


def test_stale_blocks_cannot_be_judged_when_the_cache_never_filled():
    roomy = {"peak_kv_cache_usage_pct": 40.0, "peak_waiting": 0}
    claim = ch4a.stale_claim(_stale({**roomy, "output_throughput": 70}, roomy))
    assert claim.verdict == UNTESTED and claim.evidence.startswith("cannot be judged here")
    blank = _stale({}, {})
    blank["output_throughput"] = float("nan")
    assert ch4a.stale_claim(blank).verdict == UNTESTED  # no throughput and no duration
    blank["duration"] = [30.0, 20.0]  # caching on took longer: judged on the duration instead
    blank["peak_running"] = [1, 3]
    assert ch4a.stale_claim(blank).verdict == HELD


def test_eviction_prompts_predict_tail_first():
    prompts, predicted = ch4a.eviction_prompts(block=128, usable=12)
    a, b = prompts[ch4a.FIRST], prompts[ch4a.OTHER]
    assert len(a) == 8 * 128 + 8 and len(b) == 6 * 128 + 8 and prompts[ch4a.FIRST_AGAIN] == a
    assert predicted == 5 * 128  # A's 8 full blocks, its last 3 evicted by B
    assert ch4a.eviction_claim({ch4a.FIRST_AGAIN: 640}, predicted, 128).verdict == HELD
    assert ch4a.eviction_claim({ch4a.FIRST_AGAIN: 256}, predicted, 128).verdict == NOT_HELD  # another order
    # nothing found: head-first eviction and a cache that kept nothing read alike
    assert ch4a.eviction_claim({ch4a.FIRST_AGAIN: 0}, predicted, 128).verdict == CANNOT_TELL
    untried = ch4a.one_token_claim({ch4a.LATE: 0, ch4a.EARLY: 0, ch4a.AGAIN: 0}, 128)
    assert untried.verdict == UNTESTED and "found 0 tokens" in untried.evidence


def test_the_verdict_table_holds_every_claim_of_41_and_42_once():
    samples = _frame({ch4a.N1: _row(peak_running=8), ch4a.N4: _row(peak_running=32), ch4a.MANY: _row(peak_running=32)})
    beam = {"greedy": {"mean_seconds": 0.5}, "sampled": {"mean_seconds": 0.6},
            "beam": {"mean_seconds": 2.0, "params": {"use_beam_search": True, "n": 2}}}
    prefix = _frame({ch4a.FIXED: _row(prefix_cache_hits=640, prefix_cache_hit_rate=0.6, median_ttft_ms=200),
                     ch4a.CHURN: _row(load_num_prompts=16, load_num_prefixes=8), ch4a.SHORT: _row(load_prefix_len=64),
                     ch4a.OFF: _row()})
    one_token = {"hits": {ch4a.ORIGINAL: 0, ch4a.LATE: 640, ch4a.EARLY: 0, ch4a.AGAIN: 768}}
    eviction = ({"hits": {ch4a.FIRST_AGAIN: 640}}, 640)
    sharing = ch4a.claims(samples, beam, prefix, _stale({}, {}), one_token=one_token, eviction=eviction)
    assert [c.text[:3] for c in sharing] == ["4.1"] * 3 + ["4.2"] * 6
    assert len(ch4a.claims(samples, beam, prefix, _stale({}, {}))) == 7  # without the two lookups
    texts = [c.text for c in sharing]
    assert len(set(texts)) == len(texts)


def test_chapter4a_solutions():
    one = Load(num_prompts=4, input_len=256, output_len=16, max_concurrency=4, temperature=1.0)
    env = run_solution("ch04_q1.py", {"sample_loads": {"n=1": one}})
    assert Question("q1", lambda: 16.0, 0.0, "", "ch04_q1.py").check(env["answer"])
    fixed = Load(kind="prefix", num_prompts=6, prefix_len=512, input_len=64, output_len=16, max_concurrency=4)
    measured = {"prefix_cache_hits": 2560.0, "total_input_tokens": 3456.0}  # this project's smoke run
    env = run_solution("ch04_q2.py", {"fixed": fixed, "block": 128})
    assert Question("q2", lambda: ch4a.share_by_shape(fixed, 128), 0.05, "", "ch04_q2.py").check(env["answer"])
    assert abs(ch4a.share_saved(measured) - ch4a.share_by_shape(fixed, 128)) < 1e-9  # a CPU run found them all
    # a GPU's 16-token blocks at smoke size: two requests lost their last prefix block to the re-tokenized junction
    gpu = Load(kind="prefix", num_prompts=6, prefix_len=64, input_len=64, output_len=16, max_concurrency=4)
    env = run_solution("ch04_q2.py", {"fixed": gpu, "block": 16})
    assert Question("q2", lambda: ch4a.share_by_shape(gpu, 16), 0.05, "", "ch04_q2.py").check(env["answer"])
    note = ch4a.junction_note(gpu, 16, {"prefix_cache_hits": 288.0, "total_input_tokens": 768.0})
    assert "2 block(s) fewer" in note


def test_stale_blocks_need_a_wait_while_the_cache_was_full_in_the_same_sample():
    """Pass 12's stored case: 4 waited while 17 of 22 blocks were free (the token budget, not space), so the
    space was not needed; a wait at 91 % usage (a 5-block prompt could not fit) is the premise met."""
    design = {"num_blocks": 23, "block_size": 128, "load_prefix_len": 512, "load_input_len": 48,
              "peak_kv_cache_usage_pct": 68.0, "peak_waiting": 4, "output_throughput": 70, "peak_running": 1,
              "preemptions": 0}
    early = [{"running": 1, "waiting": 3, "kv_cache_usage_pct": 22.7}] + [{"running": 3, "waiting": 0,
                                                                            "kv_cache_usage_pct": 68.0}] * 3
    claim = ch4a.stale_claim(_stale({**design, "timeseries": early}, {**design, "timeseries": early}))
    assert claim.verdict == UNTESTED and "no /metrics sample" in claim.evidence
    full = early + [{"running": 4, "waiting": 1, "kv_cache_usage_pct": 91.0}]
    assert ch4a.stale_claim(_stale({**design, "timeseries": full}, {**design, "timeseries": full})).verdict != UNTESTED


def test_the_same_sample_premise_survives_the_notebooks_table():
    """Pass 13: `H.table` dropped the /metrics series, so the notebook judged on peaks from different moments."""
    from helpers.tables import table
    design = {"num_blocks": 23, "block_size": 128, "load_prefix_len": 512, "load_input_len": 48,
              "peak_kv_cache_usage_pct": 91.0, "peak_waiting": 3, "output_throughput": 70, "peak_running": 2,
              "preemptions": 0, "cfg_enable_prefix_caching": True}
    series = [{"running": 1, "waiting": 3, "kv_cache_usage_pct": 23.0}] + [{"running": 4, "waiting": 0,
                                                                             "kv_cache_usage_pct": 91.0}] * 3
    rows = {"caching on": {**design, "timeseries": series},
            "caching off": {**design, "output_throughput": 100, "peak_running": 4, "timeseries": series}}
    assert ch4a.stale_claim(table(rows)).verdict == UNTESTED


def test_eviction_prompts_fit_a_vocabulary_of_20k():
    """Llama-2, Mistral-7B and TinyLlama have 32,000 tokens: vLLM refuses an id past the vocabulary."""
    prompts, _ = ch4a.eviction_prompts(block=128, usable=12)
    ids = [i for p in prompts.values() for i in p]
    assert max(ids) < 20000 and not set(prompts[ch4a.FIRST]) & set(prompts[ch4a.OTHER])
