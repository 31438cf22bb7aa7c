"""Verdicts computed from what was just measured, and the closing "What we measured" table.

A notebook never types a verdict: it passes the measured numbers and the rule, and this
module says held / held partly / did not hold / within noise here / cannot tell here.

The noise rule (explained in chapter 0): a comparison of two rows reads the interval of their ratio
(`results.intervals.of_ratio`): over the repeats each row kept, or a bootstrap over one run's requests, never narrower
than the start-to-start floor (`default_noise`: two configurations come from two engine starts, which
differ by that much on these shared machines). `judge_change` holds a claim's
stated size against that interval: beyond no change the claimed way, held (or partly, short of the
size); beyond no change the other way, did not hold; an interval that holds no change but not the
claimed size, within noise here (the claimed change did not show); one that holds both, cannot tell.
"""
from __future__ import annotations

from dataclasses import dataclass

from helpers.i18n import N_, tr
from helpers.results import intervals
from helpers.results.gaps import missing

HELD, PARTLY, NOT_HELD, NOISE, CANNOT_TELL, UNTESTED = ("held", "held partly", "did not hold", "within noise here",
                                                       "cannot tell here", "not measured here")
# Marks every browser draws with its ordinary text fonts (no emoji font needed).
_ICON = {HELD: "✓", PARTLY: "◐", NOT_HELD: "✗", NOISE: "≈", CANNOT_TELL: "?", UNTESTED: "·"}
# The floor of a ratio's interval: two rows come from two engine starts, which a row's own draws cannot see.
# Its source is the guide's own stored rows on 2-core shared machines: 27 pairs of starts of one configuration
# under one load (the same key, two run ids), within one session and across sessions. Their throughputs and
# times per token differed by ×1.03–×1.13 within a session, a median TTFT by up to ×1.53, a worst gap by up to
# ×1.56; across sessions (a busier host) by more. The floors below hold about seven in eight of those
# comparisons (189 of 216 over eight figures); the rest were further apart, up to ×3.4 for a TTFT and ×2.46
# for a worst gap. So a verdict on one start a side can be wrong about one time in eight: a floor is a
# default, not a bound, and the pages say so.
DEFAULT_NOISE = 0.30  # a throughput, a mean or median TPOT, ITL or end-to-end latency, a count, a goodput
TTFT_NOISE = 0.70  # a mean or median TTFT
TAIL_NOISE = 1.00  # a tail figure (a P90 or higher, a worst gap) of one run rests on a handful of requests
CAPACITY_NOISE = 0.05  # what a start reports (KV tokens, the concurrency they give): two starts, ×1.016–×1.03
CAPACITY = ("kv_cache_tokens", "max_concurrency", "num_blocks", "kv_cache_gib")


def floors_text() -> str:
    """The three floors as chapter 0 prints them, in the learner's language."""
    return tr("The floors of a comparison's interval (two configurations come from two engine starts, which differ by "
              "about this much): ×÷{floor} for a throughput, a time per token or per request, a count or a goodput, "
              "×÷{ttft} for a time to first token, ×÷{tail} for a tail figure (a P99, a worst gap), the three holding "
              "about seven pairs of starts in eight; ×÷{capacity} for what a start reports (KV tokens), which held "
              "every pair of starts seen.").format(
        capacity=f"{1 + CAPACITY_NOISE:.2f}",
        floor=f"{1 + DEFAULT_NOISE:.1f}", ttft=f"{1 + TTFT_NOISE:.1f}", tail=f"{1 + TAIL_NOISE:.1f}")


def default_noise(metric: str) -> float:
    """The floor for one figure: CAPACITY_NOISE for what a start reports (CAPACITY), TAIL_NOISE for a
    latency's maximum or a percentile from P90 up, TTFT_NOISE for a mean or median TTFT, DEFAULT_NOISE
    otherwise."""
    if metric in CAPACITY:
        return CAPACITY_NOISE
    m = intervals.METRIC.match(metric)
    if m and (m["stat"] == "max" or (m["stat"].startswith("p") and float(m["stat"][1:]) >= 90)):
        return TAIL_NOISE
    return TTFT_NOISE if m and m["base"] == "ttft" else DEFAULT_NOISE


@dataclass
class Claim:
    text: str
    verdict: str
    evidence: str
    rule: str = ""  # one line: what "held" needs, so a learner can check the verdict by eye

    def markdown_row(self) -> str:
        """The claim and its rule in the learner's language where the `guide` catalog has them (a claim's
        text and a fixed rule are collected there by helpers.i18n.code_strings); the evidence, made of
        this run's figures, stays as measured."""
        return (f"| {tr(self.text)} | {_ICON[self.verdict]} {said(self.verdict)} | {self.evidence} | "
                f"{tr(self.rule)} |")


def said(verdict: str) -> str:
    """A verdict word in the learner's language (helpers.i18n): the constants stay English, as the rules
    compare them."""
    return {HELD: tr("held"), PARTLY: tr("held partly"), NOT_HELD: tr("did not hold"), NOISE: tr("within noise here"),
            CANNOT_TELL: tr("cannot tell here"), UNTESTED: tr("not measured here")}[verdict]


def judge(text: str, held: bool, evidence: str, partly: bool = False, within_noise: bool = False,
          rule: str = "", cannot_tell: bool = False) -> Claim:
    """within_noise → within noise here; cannot_tell → cannot tell here; else held → held; else partly →
    held partly; else did not hold."""
    if within_noise:
        return Claim(text, NOISE, evidence, rule)
    if cannot_tell:
        return Claim(text, CANNOT_TELL, evidence, rule)
    return Claim(text, HELD if held else (PARTLY if partly else NOT_HELD), evidence, rule)


def untested(text: str, why: str, rule: str = "") -> Claim:
    return Claim(text, UNTESTED, why, rule)


def cannot_tell(text: str, why: str, rule: str = "") -> Claim:
    """Measured, but the rows cannot decide the claim (why says what they lack): not "not measured"."""
    return Claim(text, CANNOT_TELL, why, rule)


def expect(text: str, held: bool, evidence: str) -> Claim:
    """A notebook's check of what a measurement should show before the prose reads it, as one printed
    sentence instead of an assert's traceback: "✓ text: evidence", or "✗ text did not hold here:
    evidence" and a word on what that means for the cells that follow. The run goes on either way."""
    claim = judge(text, bool(held), evidence)
    if claim.verdict == HELD:
        print(_ICON[HELD] + " " + tr("{text}: {evidence}", text=tr(text), evidence=evidence))
    else:
        print(_ICON[NOT_HELD] + " " + tr(
            "{text} did not hold here: {evidence}. The cells below read this run's rows as they are; a busy "
            "machine or a changed default can do this, so run the section again (FORCE = True) before drawing a "
            "conclusion from it.").format(text=tr(text), evidence=evidence))
    return claim


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def interval(row, metric: str) -> intervals.Interval | None:
    """One row's figure with its 95 % interval (`results.intervals.of`), or None where nothing could be
    drawn (one run, and no request list for the figure)."""
    return intervals.of(row, metric)


def ratio_interval(before, after, metric: str) -> intervals.Interval | None:
    """The interval of after ÷ before for `metric` (`results.intervals.of_ratio`), never narrower than
    the start-to-start floor for that figure; None where either figure is missing or zero."""
    return intervals.of_ratio(before, after, metric, default_noise(metric))


def change_text(before, after, metric: str) -> str:
    """The ratio after ÷ before as a sentence reads it: "×0.62 (95 % interval ×0.55–×0.70; bootstrap over …)"."""
    iv = ratio_interval(before, after, metric)
    return iv.text() if iv else tr("no ratio (a figure is missing or zero)")


def noise(rows, metric: str) -> float:
    """One relative level for sentences that name a single allowance across several rows: the widest
    half-width of a row's own 95 % interval (`results.intervals.of`) over its figure, never below the
    start-to-start floor (`default_noise`). Two rows are compared by the interval of their ratio
    (`within_noise`, `judge_change`), not by this."""
    widths = [(iv.hi - iv.lo) / 2 / abs(iv.value) for r in rows
              if (iv := intervals.of(r, metric)) is not None and iv.value]
    return max([*widths, default_noise(metric)])


def within_noise(a, b, metric: str) -> bool:
    """True when the interval of b ÷ a for `metric` holds no change (×1): this run cannot tell them apart."""
    iv = ratio_interval(a, b, metric)
    return bool(iv and iv.includes(1.0))


def judge_change(text: str, before, after, metric: str, better: str, held_at: float, evidence: str = "",
                 unit: str = "", rule: str = "", null_refutes: bool = False) -> Claim:
    """Did `metric` move the claimed way from row `before` to row `after`, as far as claimed?

    better: "higher" or "lower". held_at: the factor the claim asks for (2.0 for "over twice"; 1 for
    "at all"). The gain (after ÷ before, or its inverse for "lower") carries its 95 % interval
    (`ratio_interval`). An interval wholly beyond ×1 the claimed way: held where the gain reached the
    claimed factor, held partly short of it. Wholly beyond ×1 the other way: did not hold. An interval
    that holds ×1: within noise here where it excludes the claimed factor (a change that size did not
    show), cannot tell here where it holds that too. null_refutes: a claim about a mechanism that must
    move a count (n samples run as n sequences) is refuted, not lost in noise, when the count stayed put:
    such an interval reads did not hold.
    """
    x, y = number(before, metric), number(after, metric)
    if x is None or y is None:  # an imported file may not record every figure: say so, don't guess
        why = missing(before, metric) or missing(after, metric) or tr("{metric} is missing from a row", metric=metric)
        return untested(text, why, rule or change_rule(better, held_at, default_noise(metric)))
    if x == 0 or y == 0:  # a ratio with a zero is no measurement: a gauge that sampled no request reads 0
        return untested(
            text,
            (evidence or f"{metric}: {x:,.1f} → {y:,.1f}")
            + tr(
                ": a figure of 0 on one side cannot be "
                "compared as a ratio (a sampled gauge "
                "that saw no request, a run too short "
                "for its sampling)"
            ),
            rule or change_rule(better, held_at, default_noise(metric)),
        )
    iv = ratio_interval(before, after, metric)
    if iv is None:  # a figure missing from a row of the guide's own (no import to blame)
        return untested(
            text,
            evidence or tr("{metric} is negative on one side", metric=metric),
            rule or change_rule(better, held_at, default_noise(metric)),
        )
    gain = iv.value if better == "higher" else 1 / iv.value
    lo, hi = (iv.lo, iv.hi) if better == "higher" else (1 / iv.hi, 1 / max(iv.lo, 1e-12))
    ev = evidence or f"{metric}: {x:,.1f} → {y:,.1f}{(' ' + unit) if unit else ''}"
    ev += tr("; ×{gain} the claimed way ({name} ×{lo}–×{hi}; {covers})").format(
        gain=f"{gain:.2f}", name=iv.name(), lo=f"{lo:.2f}", hi=f"{hi:.2f}", covers=iv.covers
    )
    floor = default_noise(metric)
    rule = rule or change_rule(better, held_at, floor)
    if 1 < held_at <= 1 + floor + 1e-9:  # a claim smaller than the floor: say what that means for the verdict
        rule += tr(
            "; the claimed ×{claim} lies inside this figure's ×÷{floor} floor, so held needs a ratio past "
            "×{floor}; a ratio between ×1 and the claimed size can only read cannot tell"
        ).format(claim=f"{held_at:.2f}", floor=f"{1 + floor:.1f}")
    if lo > 1 + 1e-9:
        if gain < held_at - 1e-9 and hi >= held_at:
            ev += tr("; the interval reaches the claimed ×{claim}, so it may have held in full").format(
                claim=f"{held_at:.2f}"
            )
        elif gain >= held_at - 1e-9 and lo < held_at - 1e-9:
            ev += tr("; the interval also reaches below the claimed ×{claim}, so it may have held only in part").format(
                claim=f"{held_at:.2f}"
            )
        return judge(text, gain >= held_at - 1e-9, ev, partly=True, rule=rule)
    if hi < 1 - 1e-9:
        return Claim(text, NOT_HELD, ev, rule)
    if held_at > 1 and hi < held_at - 1e-9 and null_refutes:
        refuted = tr(
            "; the interval holds no change and excludes the claimed ×{claim}: the change this mechanism "
            "makes did not happen"
        ).format(claim=f"{held_at:.2f}")
        return Claim(
            text, NOT_HELD, ev + refuted, rule + tr("; a figure the mechanism must move that stayed put: did not hold")
        )
    if held_at > 1 and hi < held_at - 1e-9:
        return Claim(
            text,
            NOISE,
            ev
            + tr(
                "; the interval holds no change and excludes the claimed ×{claim}, so a "
                "change that size did not show here"
            ).format(claim=f"{held_at:.2f}"),
            rule,
        )
    return Claim(
        text,
        CANNOT_TELL,
        ev
        + (
            tr("; the interval holds both no change and the claimed ×{claim}").format(claim=f"{held_at:.2f}")
            if held_at > 1
            else tr("; the interval holds no change")
        ),
        rule,
    )


NULL_RULE = N_("an interval holding no change: within noise where it excludes the claimed size, else cannot tell")


def change_rule(better: str, held_at: float, level: float) -> str:
    """The one-line threshold shown beside a judge_change verdict, in the learner's language."""
    held = (
        tr(
            "held: ×{claim} or more lower, its 95 % interval beyond no change (never narrower than ×÷{floor} "
            "start to start)"
        )
        if better == "lower" and held_at > 1
        else tr(
            "held: ×{claim} or more higher, its 95 % interval beyond no change (never narrower than ×÷{floor} "
            "start to start)"
        )
        if held_at > 1
        else tr("held: lower at all, its 95 % interval beyond no change (never narrower than ×÷{floor} start to start)")
        if better == "lower"
        else tr(
            "held: higher at all, its 95 % interval beyond no change (never narrower than ×÷{floor} start to start)"
        )
    )
    return tr("{held}; {null}").format(
        held=held.format(claim=f"{held_at:g}", floor=f"{1 + level:.2f}"), null=tr(NULL_RULE)
    )


def markdown(claims: list[Claim], title: str | None = None) -> str:
    """The verdict table, under a heading only when given one: each chapter's own "What we measured"
    heading sits right above it (two would show twice in the book's page and contents)."""
    lines = ([f"### {title}", ""] if title else []) + [
        tr("| claim | verdict on this machine | measured | rule |"),
        "|---|---|---|---|",
    ]
    lines += [c.markdown_row() for c in claims]
    return "\n".join(lines)


def measured_on() -> str:
    """The "measured on" line under each verdict table: CPU, its instruction sets, cores, GPU, vLLM."""
    from helpers.results import fingerprint

    fp = fingerprint()
    where = tr("{cpu} ({isa}), {cores} cores").format(cpu=fp["cpu_model"], isa=fp["cpu_isa"], cores=fp["cpu_cores"]) + (
        f", {fp['gpu']}" if fp["gpu"] else ""
    )
    return tr("*Measured on {where}, vLLM {vllm} ({build}).*").format(
        where=where, vllm=fp["vllm"], build=fp["vllm_build"]
    )


def how_to_read() -> str:
    """The caveat under each verdict table, in one place: how often each load ran at this size, and
    what that means for the verdicts."""
    from helpers import run_size

    n = run_size.repeats()
    runs = tr("Each load ran once (the smoke size).") if n < 2 else tr("Each load ran {n} times.").format(n=n)
    body = tr(
        "A comparison reads the interval of its ratio (95 %: a t interval over the repeats each row kept, or a "
        "bootstrap over one run's requests), never narrower than the start-to-start floor (×÷{floor}; ×÷{ttft} "
        "for a TTFT, ×÷{tail} for a P99 or a worst gap, ×÷{capacity} for what a start reports, such as its KV "
        "tokens), because two configurations come from two engine starts; a figure read once with no request "
        "behind it (a start's capacity, a throughput at the smoke size) has its floor alone, an allowance rather "
        "than a measured interval, and so does any interval the floor is wider than (it says what was drawn). "
        "Trust the ratios more than the absolute milliseconds: another machine gives "
        "other milliseconds."
    ).format(
        floor=f"{1 + DEFAULT_NOISE:.1f}",
        ttft=f"{1 + TTFT_NOISE:.1f}",
        tail=f"{1 + TAIL_NOISE:.1f}",
        capacity=f"{1 + CAPACITY_NOISE:.2f}",
    )
    more = (
        tr(
            "The full size (`GUIDE_SIZE=full`) adds requests and repeats inside one start: it narrows an interval "
            "down to the floor, and only more engine starts could narrow the floor itself."
        )
        if n < 2
        else ""
    )
    return tr("*{runs} {body} {more}*").format(runs=runs, body=body, more=more).replace(" *", "*")


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
