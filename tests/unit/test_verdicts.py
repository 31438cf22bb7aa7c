"""Verdicts from recorded rows: held, held partly, did not hold, within noise here."""

import pytest

from helpers import verdicts
from helpers.results.rows import combine


def row(value, lo=None, hi=None, repeats=3, metric="mean_itl_ms"):
    """A stored row's shape for one figure: median, spread and repeat count."""
    if lo is None:
        return {metric: value, f"{metric}_min": value, f"{metric}_max": value, "repeats": 1}
    return {metric: value, f"{metric}_min": lo, f"{metric}_max": hi, "repeats": repeats}


def test_spread_needs_repeats():
    assert verdicts.spread(row(100), "mean_itl_ms") is None
    assert verdicts.spread(row(100, 90, 110), "mean_itl_ms") == pytest.approx(0.2)


def test_noise_falls_back_to_the_default_with_one_repeat():
    assert verdicts.noise([row(100), row(200)], "mean_itl_ms") == verdicts.DEFAULT_NOISE
    assert verdicts.noise([row(100, 95, 125), row(50, 49, 51)], "mean_itl_ms") == pytest.approx(0.30)


@pytest.mark.parametrize(
    "before, after, verdict",
    [
        (row(1000), row(400), verdicts.HELD),  # 2.5x lower, claim asks 2x
        (row(1000), row(700), verdicts.PARTLY),  # the right way, beyond 10 % noise, short of 2x
        (row(1000), row(1300), verdicts.NOT_HELD),  # the wrong way, beyond noise
        (row(1000), row(950), verdicts.NOT_HELD),  # 5 %: within the default 10 %, but ×2 is not
        (row(1000, 700, 1400), row(700, 650, 760), verdicts.NOISE),  # 30 % better, but the spread was 70 %
        (row(1000, 980, 1020), row(850, 845, 855), verdicts.PARTLY),  # 15 % better, spread 4 %: real
        (row(1000, 980, 1020), row(920, 915, 925), verdicts.NOT_HELD),  # 8 %: a 4 % spread from one start is not
        # the noise between two starts (10 %), and ×2 lies outside that band
    ],
)
def test_judge_change_lower_is_better(before, after, verdict):
    claim = verdicts.judge_change("worst gap shrinks", before, after, "mean_itl_ms", better="lower", held_at=2.0)
    assert claim.verdict == verdict, claim
    assert "noise allowance ±" in claim.evidence


def test_a_null_result_against_a_claim_far_outside_the_noise_did_not_hold():
    """×3 claimed, ×1.0 measured: the run would have seen ×3, so it is not "within noise"."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    claim = verdicts.judge_change("three times the tokens", a, b, "output_throughput", "higher", 3.0)
    assert claim.verdict == verdicts.NOT_HELD and "claimed ×3.00 lies outside" in claim.evidence
    assert "did not hold" in claim.rule
    slower = verdicts.judge_change("a third of the gap", row(300), row(300), "mean_itl_ms", "lower", 3.0)
    assert slower.verdict == verdicts.NOT_HELD


def test_a_null_result_against_a_claim_inside_the_noise_is_still_noise():
    """×1.05 claimed, ×1.0 measured, noise ±10 %: this run could not tell the two apart."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    claim = verdicts.judge_change("a little more", a, b, "output_throughput", "higher", 1.05)
    assert verdicts.noise([a, b], "output_throughput") == verdicts.DEFAULT_NOISE
    assert claim.verdict == verdicts.NOISE and "outside" not in claim.evidence
    # a claim "at all" (×1.0) is never outside the band, and a wide measured spread takes in a large claim
    assert verdicts.judge_change("more", a, b, "output_throughput", "higher", 1.0).verdict == verdicts.NOISE
    wide = verdicts.judge_change(
        "half the gap", row(1000, 600, 1500), row(1000, 600, 1500), "mean_itl_ms", "lower", 2.0
    )
    assert wide.verdict == verdicts.NOISE


def test_a_claim_on_the_noise_edge_is_inside_it():
    """×1.1 claimed against ±10 %: in floats 1.1 - 1 > 0.1, but the claim sits on the band's edge."""
    a, b = row(100, metric="output_throughput"), row(100, metric="output_throughput")
    assert not verdicts.claim_outside_noise("higher", 1.1, 0.1)
    assert verdicts.judge_change("10 % more", a, b, "output_throughput", "higher", 1.1).verdict == verdicts.NOISE


def test_did_not_hold_only_when_the_move_plus_noise_falls_short():
    """×1.15 claimed, ×1.08 seen, noise ±10 %: the claim could still be true, so within noise, not did not hold."""
    a, b = row(100, metric="output_throughput"), row(108, metric="output_throughput")
    claim = verdicts.judge_change("15 % more", a, b, "output_throughput", "higher", 1.15)
    assert claim.verdict == verdicts.NOISE, claim
    flat = verdicts.judge_change("15 % more", a, a, "output_throughput", "higher", 1.15)
    assert flat.verdict == verdicts.NOT_HELD


def test_a_callers_own_rule_gets_the_did_not_hold_clause():
    a = row(100, metric="output_throughput")
    claim = verdicts.judge_change("triple", a, a, "output_throughput", "higher", 3.0, rule="held: ×3 or more")
    assert claim.verdict == verdicts.NOT_HELD and claim.rule.startswith("held: ×3 or more")
    assert "did not hold" in claim.rule


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
        verdicts.untested("e", "5"),
    ]
    md = verdicts.markdown(claims)
    for word in ("held", "held partly", "did not hold", "within noise here", "not measured here"):
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
        assert "each load ran once" in verdicts.how_to_read() and "±10 %" in verdicts.how_to_read()
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
