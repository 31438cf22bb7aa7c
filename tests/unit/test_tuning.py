import pytest

from helpers import tuning
from helpers.chapters.ch6a import walk
from helpers.config import ConfigError, EngineConfig
from helpers.slo import SLO
from helpers.tuning import HELPED, HURT, NOTHING, Step, effect

SLO_ = SLO(ttft_ms=1000, tpot_ms=50, share=0.5)


def _row(good: int, total: int = 10, duration: float = 10.0, repeats: int = 1):
    ttfts = [100] * good + [5000] * (total - good)
    return {"runs": [{"request_ttft_ms": ttfts, "request_tpot_ms": [20] * total, "duration": duration}] * repeats}


def test_effects_on_goodput_at_the_target():
    assert effect(_row(5), _row(8), SLO_) == (HELPED, pytest.approx(1.6))
    assert effect(_row(8), _row(5), SLO_)[0] == HURT
    assert effect(_row(10), _row(10), SLO_)[0] == NOTHING
    assert effect(_row(0), _row(3), SLO_)[0] == HELPED
    with pytest.raises(ConfigError):
        effect({"runs": [{"duration": 1}]}, _row(3), SLO_)


def test_a_higher_goodput_with_a_smaller_share_within_the_target_is_hurt():
    # 6 of 10 within the target in 10 s, then 4 of 10 in 4 s: goodput ×1.67, but fewer keep the promise
    judged, ratio = effect(_row(6), _row(4, duration=4.0), SLO_)
    assert judged == HURT and ratio == pytest.approx(4 / 4.0 / 0.6)
    assert effect(_row(6), _row(8, duration=7.0), SLO_)[0] == HELPED  # both higher, past the ×÷1.3 floor


def test_one_request_more_within_the_target_is_not_a_gain():
    """1 of 10 → 2 of 10 doubles goodput, but it is one request: only a change of pace would count."""
    assert effect(_row(1), _row(2), SLO_) == (NOTHING, pytest.approx(1.0))  # judged on the pace: the same
    assert effect(_row(2), _row(1), SLO_)[0] == NOTHING
    assert effect(_row(1), _row(0), SLO_)[0] == NOTHING  # one request fewer, down to none: still one request
    # one more within the target, but the load ran twice as long: the count and the pace disagree, so neither decides
    assert effect(_row(1), _row(2, duration=20.0), SLO_) == (NOTHING, pytest.approx(0.5))
    assert effect(_row(1), _row(3), SLO_)[0] == HELPED  # two requests more
    assert effect(_row(2), _row(3, duration=5.0), SLO_)[0] == HELPED  # one more, and the load ran twice as fast


def test_falling_below_the_targets_share_is_hurt_however_fast():
    """SLO_ promises half of the requests: 5 of 10 kept it, 4 of 10 in a third of the time do not."""
    assert effect(_row(5), _row(4, duration=3.0), SLO_)[0] == HURT
    # neither met it: one fewer within the target, far sooner: a share that fell is not a gain by finishing sooner
    assert effect(_row(4), _row(3, duration=3.0), SLO_)[0] == NOTHING


def test_from_a_reference_that_met_nothing_one_lucky_request_is_not_a_gain():
    assert effect(_row(0), _row(1), SLO_)[0] == NOTHING  # one of ten: under a quarter
    assert effect(_row(0), _row(2, total=4), SLO_)[0] == HELPED  # half of the requests, two of them
    assert effect(_row(0, total=4), _row(1, total=4), SLO_)[0] == NOTHING  # a quarter, but one request
    assert effect(_row(0), _row(0), SLO_) == (NOTHING, 1.0)


def test_the_walk_keeps_what_helped_and_builds_on_it():
    # Goodput per config: more seats help, a smaller budget hurts, caching changes nothing.
    def good(cfg):
        return 4 + (3 if cfg.max_num_seqs == 32 else 0) - (2 if cfg.max_num_batched_tokens == 256 else 0)

    seen = []

    def fake_measure(cfg, load, force=False, tag=""):
        seen.append(cfg)
        return _row(good(cfg))

    steps = [Step("more seats", {"max_num_seqs": 32}, 3), Step("small budget", {"max_num_batched_tokens": 256}, 3),
             Step("caching off", {"enable_prefix_caching": False}, 4), Step("bad", {"block_size": 48}, 2)]
    said = []
    records = walk(EngineConfig(device="cpu"), None, SLO_, steps, measure=fake_measure, say=said.append)
    assert [(r["step"], r["effect"], r["kept"]) for r in records] == [
        ("baseline", None, True), ("more seats", HELPED, True), ("small budget", HURT, False),
        ("caching off", NOTHING, False)]
    assert seen[2].max_num_seqs == 32 and seen[3].max_num_batched_tokens is None  # built on the kept step only
    assert "bad: skipped" in said[0] and "block_size" in said[0]


def test_the_walk_runs_other_loads_on_an_engine_while_it_is_up():
    seen = []

    def fake_measure(cfg, load, force=False, tag=""):
        seen.append((cfg.max_num_seqs, load))
        return _row(5)

    walk(EngineConfig(device="cpu"), "service", SLO_, [Step("seats", {"max_num_seqs": 8}, 3)], measure=fake_measure,
         also={"baseline": ["flood", "churn"], "seats": ["flood"]})
    # each extra load runs right after its config's own row, before any other engine is needed
    assert seen == [(None, "service"), (None, "flood"), (None, "churn"), (8, "service"), (8, "flood")]


def test_rising_to_the_targets_share_is_helped_even_by_one_request():
    """SLO_ promises half: 4 of 10 broke it, 5 of 10 keep it. One request, but the step that makes the
    service meet its target (a smoke run's max_num_seqs=3: 7 of 8 → 8 of 8 at share 0.9)."""
    assert effect(_row(4), _row(5), SLO_) == (HELPED, pytest.approx(1.25))
    assert effect(_row(7, total=8), _row(8, total=8), SLO(1000, 50, share=0.9))[0] == HELPED
    assert effect(_row(5), _row(4), SLO_)[0] == HURT  # and back down: the mirror case


def test_a_failed_request_is_a_miss():
    """Four fast and four failed of eight is half of the requests sent within the target, not all."""
    half = {"runs": [{"request_ttft_ms": [100] * 4, "request_tpot_ms": [20] * 4, "duration": 10.0, "failed": 4}]}
    assert SLO(1000, 50, share=0.9).met_share(half) == 0.5
    assert not SLO(1000, 50, share=0.9).meets(half)
    assert effect(_row(4, total=8), half, SLO_) == (NOTHING, pytest.approx(1.0))  # the same 4 of 8


def test_crossing_the_target_at_a_lower_goodput_is_not_a_gain():
    """7 of 8 in 1.6 s, then 8 of 8 in 3.3 s: the share crossed the target, but goodput fell ×0.55, beyond the
    ×÷1.3 floor: hurt, as the rule printed beside the verdict says (either one lower beyond noise)."""
    judged, ratio = effect(_row(7, total=8, duration=1.6), _row(8, total=8, duration=3.3), SLO(1000, 50, share=0.9))
    assert judged == HURT and ratio == pytest.approx((8 / 3.3) / (7 / 1.6))
    # one more within the target but the run took twice as long, no crossing: goodput ×0.6, also hurt
    assert effect(_row(5, total=8, duration=2.3), _row(6, total=8, duration=4.6), SLO(1000, 50, share=0.9))[0] == HURT


def test_only_crossing_is_said_where_the_count_cannot_decide():
    slo = SLO(1000, 50, share=0.9)
    assert tuning.count_cannot_decide(_row(7, total=8), slo)  # one more could meet it: the count cannot move by 2
    assert not tuning.count_cannot_decide(_row(5, total=8), slo)  # three more could


def test_the_noise_allowance_never_falls_below_the_start_to_start_default():
    """Three tight repeats (0.7 % spread) from one start do not make a 4 % faster run a gain."""
    def rows(durations):
        return {"runs": [{"request_ttft_ms": [100] * 30 + [5000] * 2, "request_tpot_ms": [20] * 32, "duration": d}
                         for d in durations]}
    assert effect(rows([15.0, 15.05, 15.1]), rows([14.45, 14.5, 14.5]), SLO(1000, 50, share=0.9))[0] == NOTHING


def test_a_faster_run_with_a_lower_goodput_is_not_a_gain():
    """5 of 8 within the target in 14.7 s, then 4 of 8 in 12 s: sooner (×1.22), but fewer requests a second
    met the target (0.33 against 0.34): the pace alone no longer passes it."""
    judged, _ = effect(_row(5, total=8, duration=14.7), _row(4, total=8, duration=12.0), SLO(1000, 50, share=0.9))
    assert judged == NOTHING


def test_the_pace_ceiling_counts_the_last_requests_own_time():
    """8 requests at 1.4 req/s: the last is sent at 5.71 s and takes at least the shortest request's time."""
    row = {"load_request_rate": 1.4, "load_num_prompts": 8, "load_output_len": 32, "duration": 6.351,
           "request_ttft_ms": [200.0] * 8, "request_tpot_ms": [10.0] * 8}
    assert tuning.pace_ceiling(row) == pytest.approx(6.351 / (8 / 1.4 + 0.51))
    assert tuning.pace_ceiling({**row, "load_request_rate": None}) is None


def test_a_step_decided_by_crossing_the_target_is_labelled_so():
    slo = SLO(1000, 50, share=0.9)
    assert tuning.crossed(_row(7, total=8), _row(8, total=8), slo)
    assert not tuning.crossed(_row(5, total=8), _row(6, total=8), slo)
