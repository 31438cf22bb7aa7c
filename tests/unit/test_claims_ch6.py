from helpers import report
from helpers.claims import ch6
from helpers.slo import SLO

SLO_ = SLO(1000, 50, share=0.9)


def _row(good, total=10, duration=10.0, **extra):
    return {"runs": [{"request_ttft_ms": [100] * good + [5000] * (total - good), "request_tpot_ms": [20] * total,
                      "duration": duration}], **extra}


def test_startup_claims():
    checks = [{"figure": "KV cache tokens", "agree": True}, {"figure": "max concurrency", "agree": True}]
    idle, full = {"peak_kv_cache_usage_pct": 3.0, "preemptions": 0}, {"peak_kv_cache_usage_pct": 99.0, "preemptions": 3}
    c = ch6.startup_claims(checks, 0.82, idle, 0.05)
    assert [x.verdict for x in c] == [report.HELD, report.HELD]
    c = ch6.startup_claims(checks + [{"figure": "KV cache (GiB)", "agree": False}], 0.82, full, 0.05)
    assert [x.verdict for x in c] == [report.PARTLY, report.NOT_HELD]  # a high share, yet the cache ran short
    assert "off: KV cache (GiB)" in c[0].evidence


def test_each_band_is_judged_by_what_it_says():
    idle = {"peak_kv_cache_usage_pct": 3.0, "preemptions": 0}
    assert ch6.band_claim(0.15, 0.70, idle).verdict == report.HELD  # weights really crowd the cache out
    low = ch6.band_claim(0.18, 0.04, idle)  # a small fraction, tiny weights: the band's reason is wrong
    assert low.verdict == report.NOT_HELD and "weights crowd" in low.text
    assert ch6.band_claim(0.5, 0.3, idle).verdict == report.HELD
    assert ch6.band_claim(0.5, 0.3, {"peak_kv_cache_usage_pct": 100.0, "preemptions": 0}).verdict == report.NOT_HELD
    assert ch6.band_claim(0.3, 0.05, idle).verdict == report.UNTESTED


def test_tuning_claims_follow_goodput():
    base, better, same = _row(3), _row(6), _row(3)
    records = [{"step": "baseline", "row": base, "kept": True},
               {"step": "budget", "row": better, "kept": True, "effect": "helped"},
               {"step": "caching off", "row": same, "kept": False, "effect": "within noise"}]
    c = ch6.tuning_claims(records, {"baseline": base, "row": same}, "advice", {"baseline": base, "tuned": _row(1)}, SLO_)
    assert [x.verdict for x in c] == [report.HELD, report.NOISE, report.NOT_HELD]
    assert "1 of 2 steps kept" in c[0].evidence
    assert len(ch6.tuning_claims(records, {"baseline": base, "row": better}, "a", {}, SLO_)) == 2


def test_backfire_claims():
    rows = {ch6.ROOMY: {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 1000},
            ch6.TIGHT: {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300},
            ch6.HIGH_FRACTION: {"prefix_cache_hit_rate": 0.6, "cfg_gpu_memory_utilization": 0.5, "kv_cache_tokens": 2000},
            ch6.SEATS_HIGH: {"request_throughput": 10.0, "peak_running": 200, "engine_max_num_seqs": 256},
            ch6.SEATS_DEFAULT: {"request_throughput": 8.0, "peak_running": 128, "engine_max_num_seqs": 128},
            ch6.BUDGET: {"median_ttft_ms": 1000.0}, ch6.TINY: {"median_ttft_ms": 1600.0}}
    # the tight cache loses its hits; the high fraction does not; more seats were faster; tiny chunks slower
    assert [x.verdict for x in ch6.backfire_claims(rows)] == [report.HELD, report.NOT_HELD, report.NOT_HELD, report.HELD]
    assert len(ch6.backfire_claims({ch6.BUDGET: rows[ch6.BUDGET]})) == 0  # a pair is needed
    rows[ch6.SEATS_HIGH]["peak_running"] = 128  # the flood never used the extra seats
    assert ch6.backfire_claims(rows)[2].verdict == report.UNTESTED
    assert ch6.very_many_seats(128, full=False) == 256 and ch6.very_many_seats(1024, full=True) == 2048


def test_the_kept_configuration_is_judged_on_fresh_prompts():
    base, lucky, fresh = _row(3), _row(6), _row(3)
    records = [{"step": "baseline", "row": base, "kept": True},
               {"step": "budget", "row": lucky, "kept": True, "effect": "helped"}]
    advised = {"baseline": base, "row": base}
    assert ch6.tuning_claims(records, advised, "a", {}, SLO_)[0].verdict == report.HELD
    judged = ch6.tuning_claims(records, advised, "a", {}, SLO_, fresh=fresh)[0]
    assert judged.verdict == report.NOISE and "fresh run" in judged.evidence  # the lucky row does not count


def test_order_claim_compares_the_two_paths():
    base, good, worse = _row(3), _row(6), _row(4)
    forward = [{"step": "baseline", "row": base, "kept": True, "goodput": 0.75},
               {"step": "budget", "row": good, "kept": True, "goodput": 1.5}]
    reverse = [{"step": "baseline", "row": base, "kept": True, "goodput": 0.75},
               {"step": "INT8 weights", "row": worse, "kept": True, "goodput": 1.0}]
    assert ch6.order_claim(forward, reverse, SLO_).verdict == report.HELD
    assert ch6.order_claim(reverse, forward, SLO_).verdict == report.NOT_HELD
    assert ch6.order_claim(forward, None, SLO_).verdict == report.UNTESTED
