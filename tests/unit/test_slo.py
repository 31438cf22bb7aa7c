import pytest

from helpers.config import ConfigError
from helpers.slo import SLO, knee, overloaded


def _row(rate, ttfts, tpots, duration=10.0):
    return {"load_request_rate": rate, "median_ttft_ms": sorted(ttfts)[len(ttfts) // 2],
            "runs": [{"request_ttft_ms": ttfts, "request_tpot_ms": tpots, "duration": duration}]}


def test_goodput_counts_requests_within_both_limits():
    slo = SLO(ttft_ms=1000, tpot_ms=50, share=0.5)
    row = _row(1.0, [500, 900, 1500, 800], [40, 60, 30, 45])
    assert slo.met_share(row) == 0.5 and slo.meets(row)
    assert slo.goodput(row) == pytest.approx(0.2)  # 2 good requests in 10 s
    assert SLO(1000, 50, share=0.9).meets(row) is False
    assert SLO(1000, 50).met_share({"runs": [{"duration": 1.0}]}) is None  # stored before per-request latencies


def test_the_knee_is_the_last_rate_met_before_the_first_miss():
    slo = SLO(ttft_ms=1000, tpot_ms=50, share=1.0)
    good, bad = ([100] * 4, [20] * 4), ([5000] * 4, [20] * 4)
    rows = [_row(4.0, *good), _row(1.0, *good), _row(2.0, *good), _row(8.0, *bad), _row(16.0, *good)]
    k = knee(rows, slo)
    assert (k.best_rate, k.first_miss) == (4.0, 8.0)  # the lucky 16 req/s above the knee does not count
    assert "4 req/s" in k.text(slo)


def test_no_rate_meets_the_target_names_the_closest():
    slo = SLO(ttft_ms=100, tpot_ms=10, share=0.9)
    rows = [_row(1.0, [50, 50, 500, 500], [5, 5, 5, 5]), _row(2.0, [500] * 4, [5] * 4)]
    k = knee(rows, slo)
    assert k.best_rate is None and (k.closest_rate, k.closest_share) == (1.0, 0.5)
    assert "No offered rate met" in k.text(slo) and "Closest: 1 req/s" in k.text(slo)


@pytest.mark.parametrize("kwargs, setting, fix", [
    ({"ttft_ms": 0.5, "tpot_ms": 50}, "ttft_ms", "ttft_ms=500"),  # seconds given
    ({"ttft_ms": 2000, "tpot_ms": 0.05}, "tpot_ms", "tpot_ms=50"),
    ({"ttft_ms": 2_000_000, "tpot_ms": 50}, "ttft_ms", "milliseconds"),
    ({"ttft_ms": -1, "tpot_ms": 50}, "ttft_ms", "milliseconds"),
    ({"ttft_ms": 2000, "tpot_ms": 50, "share": 90}, "share", "share=0.9"),  # a percent given
])
def test_a_target_in_the_wrong_unit_is_refused(kwargs, setting, fix):
    with pytest.raises(ConfigError) as err:
        SLO(**kwargs)
    assert err.value.setting == setting and fix in str(err.value)


def test_a_sweep_stops_when_the_queue_explodes():
    slo = SLO(ttft_ms=1000, tpot_ms=50)
    assert overloaded({"median_ttft_ms": 5000}, slo) and not overloaded({"median_ttft_ms": 900}, slo)


def test_a_sweep_goes_up_and_stops_early_keeping_what_it_measured():
    from helpers.chapters.ch6a import rate_sweep as sweep
    from helpers.load import Load

    slo, said, asked = SLO(ttft_ms=1000, tpot_ms=50), [], []

    def fake_measure(config, load, force=False, tag=""):
        asked.append(load.request_rate)
        ttft = 300 * load.request_rate ** 2
        return _row(load.request_rate, [ttft] * 4, [20] * 4)

    rows = sweep(None, Load(num_prompts=8), [4, 1, 2, 8, 16], slo, measure=fake_measure, say=said.append)
    assert asked == [1.0, 2.0, 4.0] and len(rows) == 3  # 4 req/s: median TTFT 4,800 ms > 4 × target
    assert "stopped after 4 req/s" in said[0]
    assert knee(rows, slo).best_rate == 1.0  # 2 req/s: 1,200 ms


def test_a_failed_run_ends_the_sweep_but_keeps_the_rows():
    from helpers.chapters.ch6a import rate_sweep as sweep
    from helpers.load import Load

    def flaky(config, load, force=False, tag=""):
        if load.request_rate > 1:
            raise RuntimeError("the load failed: server disconnected")
        return _row(load.request_rate, [100] * 4, [20] * 4)

    said = []
    rows = sweep(None, Load(num_prompts=8), [1, 2, 4], SLO(1000, 50), measure=flaky, say=said.append)
    assert len(rows) == 1 and "the run failed" in said[0]
    with pytest.raises(ConfigError):
        sweep(None, Load(num_prompts=8), [0, 1], SLO(1000, 50), measure=flaky)


def test_the_knee_says_what_met_means_at_this_size():
    """At smoke size 90 % of 8 requests is 8 of 8: one late request decides a rate."""
    from helpers.slo import SLO, knee
    row = lambda rate, good: {"load_request_rate": rate, "load_num_prompts": 8, "runs": [{  # noqa: E731
        "request_ttft_ms": [100.0] * good + [9000.0] * (8 - good), "request_tpot_ms": [10.0] * 8, "duration": 4.0}]}
    text = knee([row(1, 8), row(2, 7)], SLO(1000, 50, share=0.9)).text(SLO(1000, 50, share=0.9))
    assert "8 of its 8 requests" in text and "one late request decides" in text
    assert "7 of its 8" in knee([row(1, 8)], SLO(1000, 50, share=0.8)).text(SLO(1000, 50, share=0.8))


def test_a_sweep_whose_lowest_rate_missed_while_a_higher_came_closer_is_flagged():
    from helpers.slo import SLO, knee
    row = lambda rate, good: {"load_request_rate": rate, "load_num_prompts": 8, "runs": [{  # noqa: E731
        "request_ttft_ms": [100.0] * good + [9000.0] * (8 - good), "request_tpot_ms": [10.0] * 8, "duration": 4.0}]}
    slo = SLO(1000, 50, share=0.9)
    assert "does not fall with the rate" in knee([row(0.5, 5), row(1, 6), row(2, 7)], slo).text(slo)
    assert "does not fall" not in knee([row(0.5, 7), row(1, 6), row(2, 3)], slo).text(slo)


def test_the_first_miss_names_its_half_and_whether_anything_waited():
    from helpers.slo import SLO, first_misses
    slo = SLO(1000, 50, share=0.9)
    ok = {"load_request_rate": 1.0, "runs": [{"request_ttft_ms": [100] * 8, "request_tpot_ms": [20] * 8}]}
    tpot = {"load_request_rate": 2.0, "peak_waiting": 0,
            "runs": [{"request_ttft_ms": [100] * 8, "request_tpot_ms": [20] * 7 + [60]}]}
    text = first_misses([tpot, ok], slo)
    assert "At 2 req/s" in text and "0 of 8 requests over the TTFT limit, 1 over the TPOT limit" in text
    assert "no request was seen waiting" in text
    assert first_misses([ok], slo) is None
