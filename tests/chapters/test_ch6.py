"""Chapter 6's home on recorded rows: the service and its target, the runs (with `measure` handed in), the rules, the exercises."""
import json
import math
import re

import pytest

from helpers import run_size, verdicts
from helpers.chapters import ch6
from helpers.config import ConfigError
from helpers.exercises import Question
from helpers.slo import SLO
from tests.conftest import ROOT
from tests.solutions import run_solution

SLO_ = SLO(1000, 50, share=0.9)


def _row(good, total=10, duration=10.0, **extra):
    return {"runs": [{"request_ttft_ms": [100] * good + [5000] * (total - good), "request_tpot_ms": [20] * total,
                      "duration": duration}], **extra}


def test_startup_claims():
    checks = [{"figure": "KV cache tokens", "agree": True}, {"figure": "max concurrency", "agree": True}]
    idle, full = {"peak_kv_cache_usage_pct": 3.0, "preemptions": 0}, {"peak_kv_cache_usage_pct": 99.0, "preemptions": 3}
    c = ch6.startup_claims(checks, 0.82, idle, 0.05)
    assert [x.verdict for x in c] == [verdicts.HELD, verdicts.HELD]
    c = ch6.startup_claims(checks + [{"figure": "KV cache (GiB)", "agree": False}], 0.82, full, 0.05)
    assert [x.verdict for x in c] == [verdicts.PARTLY, verdicts.NOT_HELD]  # a high share, yet the cache ran short
    assert "off: KV cache (GiB)" in c[0].evidence


def test_each_band_is_judged_by_what_it_says():
    idle = {"peak_kv_cache_usage_pct": 3.0, "preemptions": 0}
    assert ch6.band_claim(0.15, 0.70, idle).verdict == verdicts.HELD  # weights really crowd the cache out
    low = ch6.band_claim(0.18, 0.04, idle)  # a small fraction, tiny weights: the band's reason is wrong
    assert low.verdict == verdicts.NOT_HELD and "weights crowd" in low.text
    assert ch6.band_claim(0.5, 0.3, idle).verdict == verdicts.HELD
    assert ch6.band_claim(0.5, 0.3, {"peak_kv_cache_usage_pct": 100.0, "preemptions": 0}).verdict == verdicts.NOT_HELD
    assert ch6.band_claim(0.3, 0.05, idle).verdict == verdicts.UNTESTED


def test_tuning_claims_follow_goodput():
    base, better, same = _row(3), _row(6), _row(3)
    records = [{"step": "baseline", "row": base, "kept": True},
               {"step": "budget", "row": better, "kept": True, "effect": "helped"},
               {"step": "caching off", "row": same, "kept": False, "effect": "within noise"}]
    c = ch6.tuning_claims(records, {"baseline": base, "row": same}, "advice", {"baseline": base, "tuned": _row(1)}, SLO_)
    assert [x.verdict for x in c] == [verdicts.HELD, verdicts.NOISE, verdicts.NOT_HELD]
    assert "1 of 2 steps kept" in c[0].evidence and "within the target 30 % → 60 % of requests" in c[0].evidence
    assert len(ch6.tuning_claims(records, {"baseline": base, "row": better}, "a", {}, SLO_)) == 2


def test_a_tuning_claim_needs_the_share_within_the_target_too():
    base = _row(6)
    sooner = _row(4, duration=4.0)  # goodput 0.6 → 1.0 req/s, but 60 % → 40 % of the requests within the target
    records = [{"step": "baseline", "row": base, "kept": True}, {"step": "seats", "row": sooner, "kept": False,
                                                                 "effect": "hurt"}]
    advised = {"baseline": base, "row": sooner}
    first, advice = ch6.tuning_claims(records, advised, "more seats", {}, SLO_, fresh=sooner)
    assert first.verdict == advice.verdict == verdicts.NOT_HELD and "60 % → 40 %" in advice.evidence
    # nothing met the target on either side: goodput cannot tell the two apart
    none = ch6.tuning_claims(records, {"baseline": _row(0), "row": _row(0)}, "a", {}, SLO_)[1]
    assert none.verdict == verdicts.UNTESTED and "no request met the target" in none.evidence
    # one lucky request after none is not a gain; a quarter of them is
    assert ch6.tuning_claims(records, {"baseline": _row(0), "row": _row(1)}, "a", {}, SLO_)[1].verdict == verdicts.NOISE
    assert ch6.tuning_claims(records, {"baseline": _row(0), "row": _row(3)}, "a", {}, SLO_)[1].verdict == verdicts.HELD
    # rows without per-request latencies cannot be judged
    bare = {"median_ttft_ms": 100.0}
    assert ch6.tuning_claims(records, {"baseline": bare, "row": bare}, "a", {}, SLO_)[1].verdict == verdicts.UNTESTED


CHURN = {"load_num_prefixes": 8, "load_prefix_len": 512, "load_input_len": 32, "load_output_len": 16,
         "load_num_prompts": 24, "load_max_concurrency": 4, "block_size": 128}


def test_backfire_claims():
    rows = {ch6.ROOMY: {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN},
            ch6.TIGHT: {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300, "kv_cache_tokens": 3200, **CHURN},
            ch6.HIGH_FRACTION: {"prefix_cache_hit_rate": 0.6, "cfg_gpu_memory_utilization": 0.5, "kv_cache_tokens": 2000},
            ch6.SEATS_HIGH: {"request_throughput": 10.0, "peak_running": 200, "engine_max_num_seqs": 256},
            ch6.SEATS_DEFAULT: {"request_throughput": 8.0, "peak_running": 128, "engine_max_num_seqs": 128},
            ch6.BUDGET: {"median_ttft_ms": 1000.0}, ch6.TINY: {"median_ttft_ms": 1600.0}}
    # the tight cache loses its hits; the high fraction does not; more seats were faster; tiny chunks slower
    assert [x.verdict for x in ch6.backfire_claims(rows)] == [verdicts.HELD, verdicts.NOT_HELD, verdicts.NOT_HELD, verdicts.HELD]
    assert len(ch6.backfire_claims({ch6.BUDGET: rows[ch6.BUDGET]})) == 0  # a pair is needed
    rows[ch6.SEATS_HIGH]["peak_running"] = 128  # the flood never used the extra seats
    assert ch6.backfire_claims(rows)[2].verdict == verdicts.UNTESTED
    assert ch6.very_many_seats(128, full=False) == 256 and ch6.very_many_seats(1024, full=True) == 2048


@pytest.mark.parametrize("full", [False, True])
def test_backfire_loads_are_the_ones_the_chapter_always_measured(full):
    """6.3's loads, with the parameters chapter 6 had before its split (stored rows keep matching)."""
    churn, flood, long_prompts = ch6.backfire_loads(128, full)
    assert (churn.kind, churn.num_prompts, churn.num_prefixes, churn.prefix_len, churn.input_len, churn.output_len,
            churn.max_concurrency) == ("prefix", 48 if full else 24, 16 if full else 8, 512, 32, 16, 4)
    # a quarter over the "very high" seats (smoke size: over the engine's default)
    assert flood.num_prompts == (ch6.very_many_seats(128, full) if full else 128) * 5 // 4
    assert (flood.input_len, flood.output_len, flood.max_concurrency) == (32, 16, None)
    assert (long_prompts.num_prompts, long_prompts.input_len, long_prompts.output_len,
            long_prompts.max_concurrency) == (12 if full else 4, 1536, 8, None)
    assert ch6.backfire_loads(128, full) == ch6.backfire_loads(128.0, full)  # a float read from a row: the same loads


def _code(name):
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_6a_and_6b_measure_the_same_backfire_loads_on_the_same_baseline():
    """6a's tuning walk measures 6.3's loads on the baseline while it is up, and 6b finds those rows only
    for an identical config and load: both notebooks take the loads from `ch6.backfire_loads`, with the
    same arguments, on the same baseline, and neither defines them itself."""
    a, b = _code("06a_tuning_toward_a_target.ipynb"), _code("06b_combinations_that_backfire.ipynb")
    call = r"^churn, flood, long_prompts = (ch6\.backfire_loads\(.*\))$"
    assert re.findall(call, a, flags=re.M) == re.findall(call, b, flags=re.M) == [
        'ch6.backfire_loads(cap["engine_max_num_seqs"], H.size() == "full")']
    for code in (a, b):
        assert re.search(r"^base = H\.EngineConfig\(\)$", code, flags=re.M)
        assert re.search(r'^cap = H\.capacity\(base, force=FORCE, tag="ch6"\)', code, flags=re.M)
        assert not re.search(r"^(churn|flood|long_prompts) = ", code, flags=re.M)
    assert 'also={"baseline": [churn, flood, long_prompts, mixed]}' in a  # measured while the baseline is up
    assert "ch6.backfire_claims(backfire)" in b and "ch6.backfire_claims" not in a


def test_the_tight_cache_is_a_demonstration_whose_premise_is_checked():
    roomy = {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN}
    tight = {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300, "kv_cache_tokens": 3200, **CHURN}
    # 25 blocks, one of them the null block; four running requests hold 5 each, 4 of them their prefix's
    # (shared with the cache), so 1 of their own: 20 left for 8 prefixes of 4 blocks
    assert ch6.prefix_room(tight) == (20, 32) and ch6.prefix_room(roomy)[0] > 32
    shown = ch6.tight_cache_claim(roomy, tight)
    assert shown.verdict == verdicts.HELD and "demonstration" in shown.text and "demonstration" in shown.rule
    assert "20 tight, for 32 blocks" in shown.evidence
    kept = ch6.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": 0.6})  # the prefixes came back in time
    assert kept.verdict == verdicts.NOT_HELD
    assert ch6.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": 0.55}).verdict == verdicts.PARTLY
    roomier = ch6.tight_cache_claim(roomy, {**tight, "kv_cache_tokens": 10_000})  # room for every prefix
    assert roomier.verdict == verdicts.UNTESTED and "was not short" in roomier.evidence
    cold = ch6.tight_cache_claim({**roomy, "prefix_cache_hit_rate": 0.0}, tight)  # no hits to lose
    assert cold.verdict == verdicts.UNTESTED and "no hits" in cold.evidence
    bare = ch6.tight_cache_claim({"prefix_cache_hit_rate": 0.6}, {"prefix_cache_hit_rate": 0.1})
    assert bare.verdict == verdicts.UNTESTED and "lack" in bare.evidence


def test_the_kept_configuration_is_judged_on_fresh_prompts():
    base, lucky, fresh = _row(3), _row(6), _row(3)
    records = [{"step": "baseline", "row": base, "kept": True},
               {"step": "budget", "row": lucky, "kept": True, "effect": "helped"}]
    advised = {"baseline": base, "row": base}
    assert ch6.tuning_claims(records, advised, "a", {}, SLO_)[0].verdict == verdicts.HELD
    judged = ch6.tuning_claims(records, advised, "a", {}, SLO_, fresh=fresh)[0]
    assert judged.verdict == verdicts.NOISE and "fresh run" in judged.evidence  # the lucky row does not count


def test_order_claim_compares_the_two_paths():
    base, good, worse = _row(3), _row(6), _row(4)
    forward = [{"step": "baseline", "row": base, "kept": True, "goodput": 0.75},
               {"step": "budget", "row": good, "kept": True, "goodput": 1.5}]
    reverse = [{"step": "baseline", "row": base, "kept": True, "goodput": 0.75},
               {"step": "INT8 weights", "row": worse, "kept": True, "goodput": 1.0}]
    assert ch6.order_claim(forward, reverse, SLO_).verdict == verdicts.HELD
    assert ch6.order_claim(reverse, forward, SLO_).verdict == verdicts.NOT_HELD
    assert ch6.order_claim(forward, None, SLO_).verdict == verdicts.UNTESTED
    nothing = [{"step": "baseline", "row": _row(0), "kept": True, "goodput": 0.0}]
    assert ch6.order_claim(nothing, nothing, SLO_).verdict == verdicts.UNTESTED  # no request met it on either path


def _rate_row(rate, ttfts, tpots, duration=10.0):
    return {"load_request_rate": rate, "median_ttft_ms": sorted(ttfts)[len(ttfts) // 2],
            "runs": [{"request_ttft_ms": ttfts, "request_tpot_ms": tpots, "duration": duration}]}


def test_the_target_is_a_rounded_multiple_of_the_unloaded_latency():
    slo = ch6.slo_for({"median_ttft_ms": 84.3, "median_tpot_ms": 23.4})
    assert (slo.ttft_ms, slo.tpot_ms, slo.share) == (340, 47, ch6.SHARE)  # 337.2 → 340, 46.8 → 47
    with pytest.raises(ConfigError, match="unloaded"):
        ch6.slo_for({"median_ttft_ms": None, "median_tpot_ms": 20})


def test_sweep_rates_are_multiples_of_the_one_at_a_time_rate(monkeypatch):
    monkeypatch.setattr(run_size, "_size", "smoke")
    assert ch6.rates_for({"median_e2el_ms": 800.0}) == [1.2, 2.5, 5.0, 10.0]


def test_tune_just_past_the_knee():
    slo = SLO(1000, 50, share=1.0)
    good, bad = ([100] * 4, [20] * 4), ([5000] * 4, [20] * 4)
    assert ch6.tuning_rate([_rate_row(1, *good), _rate_row(2, *good), _rate_row(4, *bad)], slo) == 4
    assert ch6.tuning_rate([_rate_row(1, *good), _rate_row(2, *good)], slo) == 2  # all met: the highest tried
    assert ch6.tuning_rate([_rate_row(1, *bad), _rate_row(2, *bad)], slo) == 1  # none met: the lowest
    with pytest.raises(ConfigError):
        ch6.tuning_rate([], slo)


def test_the_service_load_arrives_at_the_rate_asked():
    load = ch6.service_load(2.5)
    assert load.kind == "prefix" and load.request_rate == 2.5 and load.max_concurrency is None
    assert math.isinf(ch6.service_load().request_rate)
    assert ch6.unloaded_load().max_concurrency == 1


def test_prepare_reuses_what_it_is_given():
    calls = []

    def measure(config, load, tag=""):
        calls.append(load)
        return {"median_ttft_ms": 100.0, "median_tpot_ms": 20.0, "median_e2el_ms": 500.0}

    def sweep(config, load, rates, slo, tag="", say=print):
        return [_rate_row(r, [100] * 4, [20] * 4) if r < 8 else _rate_row(r, [9000] * 4, [20] * 4) for r in rates]

    service = ch6.prepare_service(object(), measure=measure, sweep=sweep)
    assert service.slo.ttft_ms == 400 and service.slo.tpot_ms == 40
    assert service.rate == min(r["load_request_rate"] for r in service.sweep if r["median_ttft_ms"] > 1000)
    assert service.load.request_rate == service.rate and calls[0].max_concurrency == 1


def test_capstone_passes_only_beyond_the_noise_of_the_better_reference():
    slo = SLO(1000, 50, share=0.9)
    row = lambda good: _rate_row(1, [100] * good + [5000] * (10 - good), [20] * 10)  # noqa: E731
    base, advised = row(4), row(6)  # goodput 0.4 and 0.6 req/s
    v = ch6.capstone_verdict(row(8), base, advised, slo)
    assert v.passed and "the advisor's" in v.text  # 0.8 vs 0.6: beyond the ±10 % noise of one repeat
    v = ch6.capstone_verdict(row(6), base, advised, slo)
    assert not v.passed and v.text.startswith("Not yet: within the noise")  # matching the advisor is not beating it
    v = ch6.capstone_verdict(row(6), base, row(3), slo)
    assert v.passed and "the baseline's" in v.text  # the advice hurt: the baseline is the one to beat
    assert not ch6.capstone_verdict(row(5), base, row(3), slo).passed  # one request more is one request's luck
    v = ch6.capstone_verdict(row(9), base, advised, slo, same_as_advised=True)
    assert not v.passed and "advisor's own change" in v.text
    v = ch6.capstone_verdict(row(9), base, advised, slo, same_as_baseline=True)
    assert not v.passed and "change at least one setting" in v.text
    assert not ch6.capstone_verdict(row(0), row(0), row(0), slo).passed  # nothing met the target anywhere
    v = ch6.capstone_verdict(row(1), row(0), row(0), slo)  # one lucky request against two references at 0
    assert not v.passed and "neither reference met the target" in v.text and "10%" in v.text
    assert ch6.capstone_verdict(row(3), row(0), row(0), slo).passed  # three of ten: a quarter or more
    sooner = _rate_row(1, [100] * 4 + [5000] * 6, [20] * 10, duration=4.0)  # 1.0 req/s, but 40 % within
    v = ch6.capstone_verdict(sooner, base, advised, slo)
    assert not v.passed and "smaller share of them within the target" in v.text


def test_chapter6_solutions():
    from helpers.config import EngineConfig
    from helpers.slo import SLO

    base, cap = EngineConfig(), {"kv_cache_tokens": 223872, "max_concurrency": 109.3125}
    env = run_solution("ch06_q1.py", {"cap": cap, "base": base})
    assert Question("q1", lambda: cap["max_concurrency"], 0.01, "", "ch06_q1.py").check(env["answer"])
    slo = SLO(1600, 65)
    row = {"runs": [{"request_ttft_ms": [100, 2000, 300, 400], "request_tpot_ms": [50, 50, 70, 60], "duration": 4.0}]}
    env = run_solution("ch06_q2.py", {"baseline_row": row, "slo": slo})
    assert env["answer"] == slo.goodput(row) == 0.5
    two = {"runs": row["runs"] + [{**row["runs"][0], "duration": 2.0}]}  # the check reads the first repeat only
    q2 = Question("q2", lambda: slo.first_repeat_goodput(two), 0.01, "", "ch06_q2.py")
    assert q2.check(env["answer"]) and not q2.check(slo.goodput(two))
    assert not Question("q2", lambda: slo.first_repeat_goodput({}), 0.01, "", "ch06_q2.py").check(0.5)  # cannot check
    backfire = {"default budget": {"median_ttft_ms": 1000.0}, "tiny chunks": {"median_ttft_ms": 1500.0}}
    env = run_solution("ch06_q3.py", {"backfire": backfire})
    assert env["answer3"] == "yes"
