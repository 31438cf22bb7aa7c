import math

import pytest

from helpers import runners, sizes, target
from helpers.config import ConfigError
from helpers.slo import SLO


def _row(rate, ttfts, tpots, duration=10.0):
    return {"load_request_rate": rate, "median_ttft_ms": sorted(ttfts)[len(ttfts) // 2],
            "runs": [{"request_ttft_ms": ttfts, "request_tpot_ms": tpots, "duration": duration}]}


def test_the_target_is_a_rounded_multiple_of_the_unloaded_latency():
    slo = target.slo_for({"median_ttft_ms": 84.3, "median_tpot_ms": 23.4})
    assert (slo.ttft_ms, slo.tpot_ms, slo.share) == (340, 47, target.SHARE)  # 337.2 → 340, 46.8 → 47
    with pytest.raises(ConfigError, match="unloaded"):
        target.slo_for({"median_ttft_ms": None, "median_tpot_ms": 20})


def test_sweep_rates_are_multiples_of_the_one_at_a_time_rate(monkeypatch):
    monkeypatch.setattr(sizes, "_size", "smoke")
    assert target.rates_for({"median_e2el_ms": 800.0}) == [1.2, 2.5, 5.0, 10.0]


def test_tune_just_past_the_knee():
    slo = SLO(1000, 50, share=1.0)
    good, bad = ([100] * 4, [20] * 4), ([5000] * 4, [20] * 4)
    assert target.tuning_rate([_row(1, *good), _row(2, *good), _row(4, *bad)], slo) == 4
    assert target.tuning_rate([_row(1, *good), _row(2, *good)], slo) == 2  # all met: the highest tried
    assert target.tuning_rate([_row(1, *bad), _row(2, *bad)], slo) == 1  # none met: the lowest
    with pytest.raises(ConfigError):
        target.tuning_rate([], slo)


def test_the_service_load_arrives_at_the_rate_asked():
    load = target.service_load(2.5)
    assert load.kind == "prefix" and load.request_rate == 2.5 and load.max_concurrency is None
    assert math.isinf(target.service_load().request_rate)
    assert target.unloaded_load().max_concurrency == 1


def test_prepare_reuses_what_it_is_given():
    calls = []

    def measure(config, load, tag=""):
        calls.append(load)
        return {"median_ttft_ms": 100.0, "median_tpot_ms": 20.0, "median_e2el_ms": 500.0}

    def sweep(config, load, rates, slo, tag="", say=print):
        return [_row(r, [100] * 4, [20] * 4) if r < 8 else _row(r, [9000] * 4, [20] * 4) for r in rates]

    service = runners.prepare_service(object(), measure=measure, sweep=sweep)
    assert service.slo.ttft_ms == 400 and service.slo.tpot_ms == 40
    assert service.rate == min(r["load_request_rate"] for r in service.sweep if r["median_ttft_ms"] > 1000)
    assert service.load.request_rate == service.rate and calls[0].max_concurrency == 1


def test_capstone_passes_only_beyond_the_noise_of_the_better_reference():
    slo = SLO(1000, 50, share=0.9)
    row = lambda good: _row(1, [100] * good + [5000] * (10 - good), [20] * 10)  # noqa: E731
    base, advised = row(4), row(6)  # goodput 0.4 and 0.6 req/s
    v = target.capstone_verdict(row(8), base, advised, slo)
    assert v.passed and "the advisor's" in v.text  # 0.8 vs 0.6: beyond the ±10 % noise of one repeat
    v = target.capstone_verdict(row(6), base, advised, slo)
    assert not v.passed and v.text.startswith("Not yet: within the noise")  # matching the advisor is not beating it
    v = target.capstone_verdict(row(5), base, row(3), slo)
    assert v.passed and "the baseline's" in v.text  # the advice hurt: the baseline is the one to beat
    v = target.capstone_verdict(row(9), base, advised, slo, same_as_advised=True)
    assert not v.passed and "advisor's own change" in v.text
    v = target.capstone_verdict(row(9), base, advised, slo, same_as_baseline=True)
    assert not v.passed and "change at least one setting" in v.text
    assert not target.capstone_verdict(row(0), row(0), row(0), slo).passed  # nothing met the target anywhere
