"""Verdicts computed from what was just measured, and the closing "What we measured" table.

A notebook never types a verdict: it passes the measured numbers and the rule, and this
module says held / held partly / did not hold / within noise here.

The noise rule (explained in chapter 0): these machines are shared, and the same load on the
same engine differs by about 10 % from one run to the next, and a tail figure (P99, worst gap) by
about 20 %. A difference between two configurations counts only when it is larger than the noise
allowance: the larger of that default (`default_noise`) and the spread measured in this run where a
row has several repeats ((max - min) / median of its repeats). The default is a floor: a row's
repeats share one engine start, while two configurations come from two starts, which differ by about
that much. A smaller difference is
reported as "within noise here", not as held or not, unless the claim itself asked for a change
larger than that allowance: a run that would have seen
the claimed change and saw none says the claim did not hold (`judge_change`).
"""
from __future__ import annotations

from dataclasses import dataclass

from helpers.results.gaps import missing

HELD, PARTLY, NOT_HELD, NOISE, UNTESTED = ("held", "held partly", "did not hold", "within noise here",
                                          "not measured here")
# Marks every browser draws with its ordinary text fonts (no emoji font needed).
_ICON = {HELD: "✓", PARTLY: "◐", NOT_HELD: "✗", NOISE: "≈", UNTESTED: "·"}
DEFAULT_NOISE = 0.10  # start-to-start spread seen on 2-core shared machines: the allowance's floor
# A tail figure (a P99, a worst gap) of one run rests on a handful of requests and moves more: two starts of
# one configuration in a CI run of this guide gave P99 ITLs 16 % apart while their throughputs were 7 % apart.
TAIL_NOISE = 0.20


def default_noise(metric: str) -> float:
    """The allowance's floor for one figure: TAIL_NOISE for a P99 or a maximum, DEFAULT_NOISE otherwise."""
    return TAIL_NOISE if ("p99_" in metric or "max_" in metric) else DEFAULT_NOISE


@dataclass
class Claim:
    text: str
    verdict: str
    evidence: str
    rule: str = ""  # one line: what "held" needs, so a learner can check the verdict by eye

    def markdown_row(self) -> str:
        return f"| {self.text} | {_ICON[self.verdict]} {self.verdict} | {self.evidence} | {self.rule} |"


def judge(text: str, held: bool, evidence: str, partly: bool = False, within_noise: bool = False,
          rule: str = "") -> Claim:
    """within_noise → within noise here; else held → held; else partly → held partly; else did not hold."""
    if within_noise:
        return Claim(text, NOISE, evidence, rule)
    return Claim(text, HELD if held else (PARTLY if partly else NOT_HELD), evidence, rule)


def untested(text: str, why: str, rule: str = "") -> Claim:
    return Claim(text, UNTESTED, why, rule)


def expect(text: str, held: bool, evidence: str) -> Claim:
    """A notebook's check of what a measurement should show before the prose reads it, as one printed
    sentence instead of an assert's traceback: "✓ text: evidence", or "✗ text did not hold here:
    evidence" and a word on what that means for the cells that follow. The run goes on either way."""
    claim = judge(text, bool(held), evidence)
    if claim.verdict == HELD:
        print(f"{_ICON[HELD]} {text}: {evidence}")
    else:
        print(f"{_ICON[NOT_HELD]} {text} did not hold here: {evidence}. The cells below read this run's rows as "
              "they are; a busy machine or a changed default can do this, so run the section again "
              "(FORCE = True) before drawing a conclusion from it.")
    return claim


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def spread(row, metric: str) -> float | None:
    """Relative run-to-run spread of one figure in one row, or None with a single repeat."""
    lo, hi, mid = number(row, f"{metric}_min"), number(row, f"{metric}_max"), number(row, metric)
    if (number(row, "repeats") or 1) < 2 or lo is None or hi is None or not mid:
        return None
    return (hi - lo) / abs(mid)


def noise(rows, metric: str) -> float:
    """The noise allowance for comparing `metric` across rows, used either way (a ratio within 1 ± it
    is noise): the largest measured spread (a row's whole range, max − min over the median, so the
    allowance is wide rather than narrow), never below DEFAULT_NOISE: a row's repeats share one engine
    start, while two rows compared come from two starts, which differ by about that much (chapter 0)."""
    measured = [s for s in (spread(r, metric) for r in rows) if s is not None]
    return max([*measured, default_noise(metric)])


def noise_text(rows, metric: str) -> str:
    """The allowance as evidence says it, and where it came from."""
    measured = [s for s in (spread(r, metric) for r in rows) if s is not None]
    where = ("the widest range between repeats, max − min" if measured and max(measured) > default_noise(metric)
             else "start to start, chapter 0's default" + (" for a tail figure" if default_noise(metric) > DEFAULT_NOISE
                                                            else ""))
    return f"noise allowance ±{100 * noise(rows, metric):.0f} % ({where})"


def within_noise(a, b, metric: str) -> bool:
    """True when rows a and b differ in `metric` by no more than the run-to-run noise."""
    x, y = number(a, metric), number(b, metric)
    if x is None or y is None or not x:
        return False
    return abs(y / x - 1) <= noise([a, b], metric) + 1e-9  # the same margin as claim_outside_noise


def judge_change(text: str, before, after, metric: str, better: str, held_at: float, evidence: str = "",
                 unit: str = "", rule: str = "") -> Claim:
    """Did `metric` move the claimed way from row `before` to row `after`?

    better: "higher" or "lower". held_at: the factor the claim asks for (e.g. 2.0 for "over
    twice"): at least that → held; a smaller move the right way, beyond noise → held partly;
    the wrong way → did not hold. A move within noise is "within noise here" only while the
    claimed factor lies inside the noise band too: a run this noisy could not have told them
    apart. When the claimed factor lies outside the band (×3 claimed, noise ±10 %), a run that
    saw no change would have seen that one, so the verdict is did not hold.
    """
    x, y = number(before, metric), number(after, metric)
    if x is None or y is None:  # an imported file may not record every figure: say so, don't guess
        if why := (missing(before, metric) or missing(after, metric)):
            return untested(text, why, rule or change_rule(better, held_at, DEFAULT_NOISE))
    if x == 0 or y == 0:  # a ratio with a zero is no measurement: a gauge that sampled no request reads 0
        return untested(text, (evidence or f"{metric}: {x:,.1f} → {y:,.1f}") + ": a figure of 0 on one side cannot be "
                        "compared as a ratio (a sampled gauge that saw no request, a run too short for its sampling)",
                        rule or change_rule(better, held_at, default_noise(metric)))
    gain = ratio(y, x) if better == "higher" else ratio(x, y)
    ev = evidence or f"{metric}: {x:,.1f} → {y:,.1f}{(' ' + unit) if unit else ''} (×{gain:.2f} the claimed way)"
    level = noise([before, after], metric)
    ev += f"; {noise_text([before, after], metric)}"
    if rule and claim_outside_noise(better, held_at, level):
        rule += _OUTSIDE_CLAUSE.format(100 * level, held_at)
    rule = rule or change_rule(better, held_at, level)
    if within_noise(before, after, metric):
        # The claimed ratio (after ÷ before) must lie within the noise of the measured one, or this run would
        # have seen it: a move the wrong way, or none against a claim beyond the band, did not hold.
        measured, claimed = y / x, (held_at if better == "higher" else 1 / held_at)
        reached = gain >= held_at  # as far as claimed, only inside the noise
        if not reached and abs(claimed - measured) > level + 1e-9:
            return Claim(text, NOT_HELD, ev + f"; the claimed ×{held_at:.2f} lies outside the noise of what was "
                                              "measured, so this run would have seen it", rule)
        return Claim(text, NOISE, ev, rule)
    return judge(text, gain >= held_at, ev, partly=gain > 1, rule=rule)


def claim_outside_noise(better: str, held_at: float, level: float) -> bool:
    """True when the claimed factor, as a ratio after/before, lies outside the noise band
    (1 ± level): a change that big would have stood out of this run's noise."""
    if not held_at or held_at <= 0:
        return False
    claimed = held_at if better == "higher" else 1 / held_at
    # a margin, so a claimed ×1.1 against ±10 % noise counts as inside (1.1 - 1 > 0.1 in floats)
    return abs(claimed - 1) > level + 1e-9


def change_rule(better: str, held_at: float, level: float) -> str:
    """The one-line threshold shown beside a judge_change verdict."""
    way = "lower" if better == "lower" else "higher"
    need = f"×{held_at:g} or more {way}" if held_at > 1 else f"{way} at all"
    rule = f"held: {need}; a change under ±{100 * level:.0f} % (run-to-run noise) counts as noise"
    if claim_outside_noise(better, held_at, level):
        rule += _OUTSIDE_CLAUSE.format(100 * level, held_at)
    return rule


_OUTSIDE_CLAUSE = ("; a change within the ±{:.0f} % noise that could not reach ×{:.2f} even with that noise counts as "
                   "did not hold")


def markdown(claims: list[Claim], title: str | None = None) -> str:
    """The verdict table, under a heading only when given one: each chapter's own "What we measured"
    heading sits right above it (two would show twice in the book's page and contents)."""
    lines = (([f"### {title}", ""] if title else [])
             + ["| claim | verdict on this machine | measured | rule |", "|---|---|---|---|"])
    lines += [c.markdown_row() for c in claims]
    return "\n".join(lines)


def measured_on() -> str:
    """The "measured on" line under each verdict table: CPU, its instruction sets, cores, GPU, vLLM."""
    from helpers.results import fingerprint

    fp = fingerprint()
    where = f"{fp['cpu_model']} ({fp['cpu_isa']}), {fp['cpu_cores']} cores" + (f", {fp['gpu']}" if fp["gpu"] else "")
    return f"*Measured on {where}, vLLM {fp['vllm']} ({fp['vllm_build']}).*"


def how_to_read() -> str:
    """The caveat under each verdict table, in one place: how often each load ran at this size, and
    what that means for the verdicts."""
    from helpers import run_size

    n = run_size.repeats()
    if n < 2:
        return ("*These runs are short: each load ran once (the smoke size), so every verdict allowed the default "
                f"±{100 * DEFAULT_NOISE:.0f} % noise (±{100 * TAIL_NOISE:.0f} % for a P99 or a worst gap). Trust the "
                "ratios more than the absolute milliseconds, "
                "and run the full size (`GUIDE_SIZE=full`, each load three times) before you draw a conclusion.*")
    return (f"*Each load ran {n} times at this size, and the verdicts on load figures allowed for the spread "
            f"measured between the runs where it was wider than the default ±{100 * DEFAULT_NOISE:.0f} % "
            f"(±{100 * TAIL_NOISE:.0f} % for a P99 or a worst gap; the repeats "
            "share one engine start; two configurations come from two starts); a figure read once (a start's "
            "capacity or start time) was judged against the default. Trust the ratios more than the absolute "
            "milliseconds: another machine gives other milliseconds.*")


def show(claims: list[Claim], title: str | None = None) -> None:
    from IPython.display import Markdown, display

    display(Markdown(markdown(claims, title) + "\n\n" + measured_on() + "\n\n" + how_to_read()))


def number(row, key):
    """row[key] as a float, or None where it is missing or NaN (rows are dicts or pandas Series)."""
    try:
        v = row[key]
    except (KeyError, IndexError, TypeError):
        return None
    try:
        return None if v is None or v != v else float(v)  # NaN → None
    except (TypeError, ValueError):
        return None
