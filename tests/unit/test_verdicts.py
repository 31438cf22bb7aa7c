"""Verdicts from recorded rows: held, held partly, did not hold, within noise here, cannot tell here; the
intervals they read."""

import pytest

from helpers import verdicts
from helpers.results import intervals
from helpers.results.rows import combine


def row(value, runs=None, metric="mean_itl_ms"):
    """A stored row's shape for one figure: the median, and each repeat where there were several."""
    if runs is None:
        return {metric: value, "repeats": 1}
    return {metric: value, "repeats": len(runs), "runs": [{metric: v} for v in runs]}


def requests(values, metric="median_ttft_ms"):
    """A row of one run whose figure is a statistic of its requests' TTFTs."""
    import statistics

    return {metric: statistics.median(values), "repeats": 1, "request_ttft_ms": list(values)}


def test_a_rows_interval_covers_what_it_drew():
    """Synthetic requests with a known spread: the bootstrap interval of their mean is about ±1.96 σ/√n."""
    import numpy as np

    values = np.random.default_rng(7).normal(1000, 100, 400)
    r = {"mean_ttft_ms": float(values.mean()), "repeats": 1, "request_ttft_ms": values.tolist()}
    iv = intervals.of(r, "mean_ttft_ms")
    half = (iv.hi - iv.lo) / 2
    assert 0.7 * 1.96 * 100 / 20 < half < 1.3 * 1.96 * 100 / 20, iv
    assert iv.lo < iv.value < iv.hi and iv.covers == "bootstrap over this run's 400 requests only"
    # repeats without request lists: drawn over the runs; one run and no list: nothing to draw
    assert intervals.of(row(100, [90, 100, 110]), "mean_itl_ms").covers == "t interval over 3 runs"
    assert intervals.of(row(100), "mean_itl_ms") is None
    # several repeats: the run is the unit (its requests share its engine's state), whatever lists they keep
    two = {"median_ttft_ms": 10.0, "runs": [{"median_ttft_ms": 10.0, "request_ttft_ms": [9, 10, 11]},
                                             {"median_ttft_ms": 10.0, "request_ttft_ms": [8, 10, 12]}]}
    assert intervals.of(two, "median_ttft_ms").covers == "t interval over 2 runs"


def test_three_runs_give_a_t_interval_that_covers_about_as_often_as_it_says():
    """Three repeats of a figure with a known spread: the t interval over the runs (on a log scale) holds the
    true value in about 95 % of trials; a percentile bootstrap of three values would be their min–max (75 %)."""
    import numpy as np

    rng, hits, trials = np.random.default_rng(5), 0, 400
    for _ in range(trials):
        runs = np.exp(rng.normal(np.log(100.0), 0.1, 3))
        value = float(np.exp(np.log(runs).mean()))
        iv = intervals.of({"output_throughput": value, "runs": [{"output_throughput": v} for v in runs]},
                          "output_throughput")
        hits += iv.includes(100.0)
        assert iv.lo < min(runs) and iv.hi > max(runs)  # a t interval of three runs is wider than their range
    assert 0.88 <= hits / trials <= 0.99, hits


def test_two_starts_of_one_configuration_do_not_read_as_a_change():
    """The guide's stored pair of two starts of one configuration (chapter 3's "chunking off", 14 minutes apart):
    throughput ×1.13 and median TTFT ×1.34 (8 requests each). Neither may read "held"."""
    first, second = [668.0 + i for i in range(8)], [500.0 + i / 3 for i in range(8)]
    a = {"output_throughput": 111.0, "median_ttft_ms": 671.5, "request_ttft_ms": first}
    b = {"output_throughput": 125.4, "median_ttft_ms": 501.1666666666667, "request_ttft_ms": second}
    for metric, better in (("output_throughput", "higher"), ("median_ttft_ms", "lower")):
        assert verdicts.judge_change("the second start is better", a, b, metric, better, 1.0).verdict \
            == verdicts.CANNOT_TELL, metric


def test_a_median_interval_covers_the_true_median_about_as_often_as_it_says():
    """Coverage on synthetic requests with a known distribution: lognormal TTFTs, whose median is e^μ."""
    import numpy as np

    rng, hits, trials = np.random.default_rng(11), 0, 200
    for _ in range(trials):
        values = rng.lognormal(mean=6.0, sigma=0.5, size=64)
        iv = intervals.of({"median_ttft_ms": float(np.median(values)), "request_ttft_ms": values.tolist()},
                          "median_ttft_ms")
        hits += iv.includes(float(np.exp(6.0)))
    assert 0.85 <= hits / trials <= 0.99, hits


def test_a_tail_of_a_few_requests_is_not_drawn_from_them():
    """A P99 or a maximum of 16 requests: resampling can never pass the slowest one seen, so it is drawn over
    runs where there are several, and not at all for one run."""
    values = list(range(100, 116))
    one = {"p99_ttft_ms": 115.0, "request_ttft_ms": values}
    assert intervals.of(one, "p99_ttft_ms") is None and intervals.of(one, "max_itl_ms") is None
    three = {"p99_ttft_ms": 115.0, "runs": [{"p99_ttft_ms": v, "request_ttft_ms": values} for v in (110, 115, 130)]}
    assert intervals.of(three, "p99_ttft_ms").covers == "t interval over 3 runs"


def test_a_mixed_loads_headline_figures_are_drawn_from_its_short_requests():
    short, long = [100.0 + i for i in range(12)], [5000.0, 5100.0]
    row = {"median_ttft_ms": 105.5, "short_median_ttft_ms": 105.5, "short_request_ttft_ms": short,
           "long_request_ttft_ms": long, "request_ttft_ms": short + long,
           "request_kind": ["short"] * 12 + ["long"] * 2, "request_e2el_ms": short + long, "median_e2el_ms": 105.5}
    for metric in ("median_ttft_ms", "short_median_ttft_ms", "median_e2el_ms"):
        iv = intervals.of(row, metric)
        assert iv.covers == "bootstrap over this run's 12 requests only" and iv.hi < 200, (metric, iv)
    # fewer than MIN_REQUESTS: a bootstrap over them would cover far less than it says, so nothing is drawn
    assert intervals.of({**row, "short_request_ttft_ms": short[:8], "median_ttft_ms": 103.5}, "median_ttft_ms") is None
    # lists that do not give the row's own figure are not its basis: nothing is drawn from them
    assert intervals.of({**row, "median_ttft_ms": 900.0, "short_request_ttft_ms": None}, "median_ttft_ms") is None


def test_a_ratios_interval_is_never_narrower_than_the_start_to_start_floor():
    same = requests([1000] * 30)
    iv = verdicts.ratio_interval(same, requests([500] * 30), "median_ttft_ms")
    assert iv.value == 0.5 and iv.lo == pytest.approx(0.5 / 1.7) and iv.hi == pytest.approx(0.85)  # a TTFT's floor
    assert "the start-to-start floor ×÷1.70" in iv.covers and not iv.measured  # requests all alike: the floor
    # the floor is symmetric on a log scale: the interval of b ÷ a is the inverse of that of a ÷ b
    back = verdicts.ratio_interval(requests([500] * 30), same, "median_ttft_ms")
    assert back.lo == pytest.approx(1 / iv.hi) and back.hi == pytest.approx(1 / iv.lo)
    wide = verdicts.ratio_interval(requests([500, 1000, 1500] * 10), requests([400, 1000, 1600] * 10), "median_ttft_ms")
    assert wide.lo < 0.9 and wide.hi > 1.1  # the requests' own spread is wider than the floor
    floor_only = verdicts.ratio_interval(row(100), row(150), "mean_itl_ms")
    assert not floor_only.measured and "allowance" in floor_only.text()
    assert "no interval drawn here" in floor_only.covers


def test_noise_falls_back_to_the_default_with_one_repeat():
    assert verdicts.noise([row(100), row(200)], "mean_itl_ms") == verdicts.DEFAULT_NOISE
    assert verdicts.noise([row(100, [70, 100, 160]), row(50, [49, 50, 51])], "mean_itl_ms") > 0.2


@pytest.mark.parametrize(
    "before, after, verdict",
    [
        (row(1000), row(400), verdicts.HELD),  # 2.5x lower, claim asks 2x
        (row(1000), row(700), verdicts.PARTLY),  # the right way, beyond the ×÷1.3 floor, short of 2x
        (row(1000), row(1500), verdicts.NOT_HELD),  # the wrong way, beyond the ×÷1.3 floor
        (row(1000), row(950), verdicts.NOISE),  # 5 %: the interval holds no change and excludes ×2
        (row(1000, [700, 1000, 1400]), row(700, [300, 700, 1300]), verdicts.CANNOT_TELL),  # holds ×1 and ×2
        (row(1000, [980, 1000, 1020]), row(700, [695, 700, 705]), verdicts.PARTLY),  # ×1.43 better: real
        (row(1000, [980, 1000, 1020]), row(920, [915, 920, 925]), verdicts.NOISE),  # 8 %: a 2 % spread from one
        # start is not the noise between two starts (×÷1.2), and ×2 lies outside the interval
    ],
)
def test_judge_change_lower_is_better(before, after, verdict):
    claim = verdicts.judge_change("worst gap shrinks", before, after, "mean_itl_ms", better="lower", held_at=2.0)
    assert claim.verdict == verdict, claim
    assert "95 % interval ×" in claim.evidence or "allowance ×" in claim.evidence


def test_a_null_result_against_a_claim_far_outside_the_interval_is_within_noise():
    """×3 claimed, ×1.0 measured: the interval holds no change and not ×3, so the claimed change did not show."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    claim = verdicts.judge_change("three times the tokens", a, b, "output_throughput", "higher", 3.0)
    assert claim.verdict == verdicts.NOISE and "excludes the claimed ×3.00" in claim.evidence


def test_a_null_result_against_a_claim_inside_the_interval_cannot_tell():
    """×1.05 claimed, ×1.0 measured, floor ±10 %: this run could not tell the two apart."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    claim = verdicts.judge_change("a little more", a, b, "output_throughput", "higher", 1.05)
    assert claim.verdict == verdicts.CANNOT_TELL and "holds both no change and the claimed ×1.05" in claim.evidence
    # a claim "at all" (×1.0) cannot be excluded by an interval holding ×1
    assert verdicts.judge_change("more", a, b, "output_throughput", "higher", 1.0).verdict == verdicts.CANNOT_TELL
    wide = verdicts.judge_change("half the gap", row(1000, [600, 1000, 1500]), row(1000, [500, 1000, 1700]),
                                 "mean_itl_ms", "lower", 2.0)
    assert wide.verdict == verdicts.CANNOT_TELL


def test_a_claim_on_the_intervals_edge_is_inside_it():
    """×1.1 claimed against the ×÷1.3 floor: the claim lies inside the interval, so the run cannot tell."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    assert verdicts.judge_change("10 % more", a, b, "output_throughput", "higher", 1.1).verdict == verdicts.CANNOT_TELL


def test_a_move_short_of_the_claim_cannot_tell_while_its_interval_reaches_the_claim():
    """×1.15 claimed, ×1.08 seen, floor ×÷1.3: the claim could still be true, so cannot tell; a claim exactly
    on the floor's edge cannot be excluded by no change, one past it can."""
    a, b = row(100, metric="output_throughput"), row(108, metric="output_throughput")
    claim = verdicts.judge_change("15 % more", a, b, "output_throughput", "higher", 1.15)
    assert claim.verdict == verdicts.CANNOT_TELL, claim
    assert verdicts.judge_change("30 % more", a, a, "output_throughput", "higher", 1.3).verdict == verdicts.CANNOT_TELL
    flat = verdicts.judge_change("40 % more", a, a, "output_throughput", "higher", 1.4)
    assert flat.verdict == verdicts.NOISE


def test_a_callers_own_rule_is_kept():
    a = row(100, metric="output_throughput")
    claim = verdicts.judge_change("triple", a, a, "output_throughput", "higher", 3.0, rule="held: ×3 or more")
    assert claim.verdict == verdicts.NOISE and claim.rule == "held: ×3 or more"


def test_judge_change_higher_is_better():
    a, b = row(10, metric="output_throughput"), row(25, metric="output_throughput")
    assert verdicts.judge_change("more tokens", a, b, "output_throughput", "higher", 2.0).verdict == verdicts.HELD
    assert verdicts.judge_change("more tokens", b, a, "output_throughput", "higher", 2.0).verdict == verdicts.NOT_HELD


def test_judge_within_noise_flag_wins():
    assert verdicts.judge("x", True, "e", within_noise=True).verdict == verdicts.NOISE
    assert verdicts.judge("x", False, "e", partly=True).verdict == verdicts.PARTLY


def test_table_has_every_verdict_kind():
    claims = [
        verdicts.judge("a", True, "1"),
        verdicts.judge("b", False, "2", partly=True),
        verdicts.judge("c", False, "3"),
        verdicts.judge("d", True, "4", within_noise=True),
        verdicts.judge("d", True, "4", cannot_tell=True),
        verdicts.untested("e", "5"),
    ]
    md = verdicts.markdown(claims)
    for word in ("held", "held partly", "did not hold", "within noise here", "cannot tell here", "not measured here"):
        assert f" {word} |" in md


def test_measured_on_names_cpu_and_isa():
    from helpers.results import fingerprint

    line = verdicts.measured_on()
    assert fingerprint()["cpu_isa"] in line and "vLLM" in line


def test_combine_takes_medians_and_keeps_every_repeat():
    runs = [
        {"output_throughput": 10.0, "first_error": None},
        {"output_throughput": 14.0, "first_error": "boom"},
        {"output_throughput": 11.0, "first_error": None},
    ]
    out = combine(runs)
    assert out["repeats"] == 3 and out["runs"] == runs
    assert out["output_throughput"] == 11.0
    assert (out["output_throughput_min"], out["output_throughput_max"]) == (10.0, 14.0)
    assert out["first_error"] == "boom"


def test_the_caveat_under_a_verdict_table_follows_the_run_size():
    from helpers import run_size

    before = run_size.size()
    try:
        run_size.set_size("smoke")
        assert "Each load ran once" in verdicts.how_to_read() and "×÷1.3" in verdicts.how_to_read()
        run_size.set_size("full")
        assert "ran 3 times" in verdicts.how_to_read() and "read once" in verdicts.how_to_read()
    finally:
        run_size.set_size(before)


def test_a_notebooks_expectation_is_a_sentence_that_can_say_did_not_hold(capsys):
    held = verdicts.expect("more memory gave more KV tokens", True, "100 → 200 tokens")
    assert held.verdict == verdicts.HELD and capsys.readouterr().out.startswith("✓ more memory gave more KV tokens: ")
    failed = verdicts.expect("more memory gave more KV tokens", False, "200 → 100 tokens")
    out = capsys.readouterr().out
    assert failed.verdict == verdicts.NOT_HELD and "did not hold here: 200 → 100 tokens" in out and "FORCE" in out


def test_a_tail_figure_has_a_wider_floor():
    """Two starts of one configuration: P99 ITL 16 % apart while throughput moved 7 % (a CI run)."""
    one = lambda v, metric: {metric: v, f"{metric}_min": v, f"{metric}_max": v, "repeats": 1}  # noqa: E731
    assert verdicts.noise([one(671, "p99_itl_ms"), one(577, "p99_itl_ms")], "p99_itl_ms") == verdicts.TAIL_NOISE
    assert verdicts.within_noise(one(671, "p99_itl_ms"), one(577, "p99_itl_ms"), "p99_itl_ms")
    assert verdicts.noise([one(100, "output_throughput")], "output_throughput") == verdicts.DEFAULT_NOISE
    assert verdicts.default_noise("short_max_itl_ms") == verdicts.TAIL_NOISE


def test_a_zero_on_either_side_is_not_an_infinite_gain():
    before, after = {"peak_running": 0.0, "repeats": 1}, {"peak_running": 0.0, "repeats": 1}
    claim = verdicts.judge_change("each sample runs alone", before, after, "peak_running", "higher", 2.0)
    assert claim.verdict == verdicts.UNTESTED and "figure of 0" in claim.evidence
    assert verdicts.judge_change("x", before, {"peak_running": 2.0}, "peak_running", "higher", 2.0).verdict == \
        verdicts.UNTESTED
