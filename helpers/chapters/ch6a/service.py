"""The service chapter 6 and the capstone lab tune toward: one load, a latency target and the
offered request rate to tune at, all derived from measurements on this machine.

Machines differ by ×5 and more (AVX-512 vs AVX2, bf16 vs float32), so no fixed target would be
fair to both: the target is a multiple of this machine's *unloaded* latency (one request at a
time), and the rates a sweep tries are multiples of how many requests per second one-at-a-time
serving manages. The load is a chat service: every prompt starts with one of two system
prompts, then a short question; requests arrive as a Poisson process.

Notebook 06a and the capstone lab call the same functions with the same config, so in one run
(one results store) the lab reuses the chapter's rows instead of starting engines again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from helpers import run_size, tuning, verdicts
from helpers.errors import ConfigError
from helpers.i18n import N_, tr
from helpers.load import Load
from helpers.slo import SLO, knee

SYSTEM_PROMPT, QUESTION, ANSWER = 384, 64, 32  # tokens
TTFT_HEADROOM, TPOT_HEADROOM = 4.0, 2.0  # the target: this many times the unloaded median
SHARE = 0.9  # of requests that must meet the target
RATE_STEPS = {"smoke": (1, 2, 4, 8), "full": (1, 1.5, 2, 3, 4, 6, 8)}  # × the one-at-a-time rate


def service_load(rate: float = math.inf) -> Load:
    """The chat service at an offered `rate` (requests per second, Poisson arrivals)."""
    return Load(kind="prefix", num_prompts=run_size.smoke_or_full(8, 32), prefix_len=SYSTEM_PROMPT, input_len=QUESTION,
                output_len=ANSWER, num_prefixes=2, max_concurrency=None, request_rate=rate)


def unloaded_load() -> Load:
    """The same requests, one at a time: the latency a lone user sees on this machine."""
    return replace(service_load(), num_prompts=run_size.smoke_or_full(4, 8), max_concurrency=1)


def _round_up(x: float) -> float:
    """Up to two significant figures (340, 47, 5.2): a target a person would write down."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step - 1e-9) * step


def slo_for(unloaded: dict) -> SLO:
    """The target: TTFT and TPOT within a few times what one request alone gets here."""
    ttft, tpot = unloaded.get("median_ttft_ms"), unloaded.get("median_tpot_ms")
    if not ttft or not tpot:
        raise ConfigError("unloaded", tr("the unloaded row has no TTFT or TPOT (did every request fail?)."),
                          tr("measure target.unloaded_load() again with force=True and read the engine's log."))
    return SLO(ttft_ms=round(_round_up(TTFT_HEADROOM * ttft), 6), tpot_ms=round(_round_up(TPOT_HEADROOM * tpot), 6),
               share=SHARE)


def goodput_mistakes(row, slo: SLO) -> dict:
    """Exercise 2's named slips, from the row's first repeat (`row` is a callable: read at check time):
    every request counted, the nominal duration N ÷ rate, the share without the duration, and one of
    the two limits checked alone."""
    def run():
        r = row()
        return (r.get("runs") or [r])[0], r

    def met():
        first, _ = run()
        return sum(t <= slo.ttft_ms and p <= slo.tpot_ms
                   for t, p in zip(first["request_ttft_ms"], first["request_tpot_ms"]))

    def nominal():
        _, r = run()
        return met() / (r["load_num_prompts"] / r["load_request_rate"]) if r.get("load_request_rate") else None

    return {N_("you counted every request, not only those within the target (that is request throughput)"):
            lambda: len(run()[0]["request_ttft_ms"]) / run()[0]["duration"],
            N_("you divided by N ÷ rate, the schedule's length, not the run's own duration"): nominal,
            N_("you gave the share within the target; goodput divides the count by the duration"):
            lambda: met() / len(run()[0]["request_ttft_ms"]),
            N_("you checked only the TTFT limit; a request counts when its TPOT is within the target too"):
            lambda: sum(t <= slo.ttft_ms for t in run()[0]["request_ttft_ms"]) / run()[0]["duration"],
            N_("you checked only the TPOT limit; a request counts when its TTFT is within the target too"):
            lambda: sum(p <= slo.tpot_ms for p in run()[0]["request_tpot_ms"]) / run()[0]["duration"]}


def one_at_a_time_rate(unloaded: dict) -> float:
    """Requests per second served one after another: 1 / a request's whole latency."""
    return 1000.0 / float(unloaded["median_e2el_ms"])


def rates_for(unloaded: dict) -> list[float]:
    """Offered rates for the sweep: multiples of the one-at-a-time rate, two significant figures."""
    base = one_at_a_time_rate(unloaded)
    return sorted({float(f"{base * k:.2g}") for k in RATE_STEPS[run_size.size()]})


def tuning_rate(sweep_rows: list[dict], slo: SLO) -> float:
    """The rate to tune at: the first offered rate the baseline missed (just past the knee),
    where a better config can still turn misses into hits. If every rate met the target, the
    highest tried; if none did, the lowest."""
    if not sweep_rows:
        raise ConfigError("sweep", tr("no rate was measured, so there is no rate to tune at."),
                          tr("run the sweep first; if it stopped at once, read why it said so."))
    k = knee(sweep_rows, slo)
    rates = sorted(r["load_request_rate"] for r in sweep_rows)
    if k.best_rate is None:
        return rates[0]
    return k.first_miss if k.first_miss is not None else rates[-1]


@dataclass(frozen=True)
class Service:
    """What chapter 6 tunes toward: the target, the offered rate and the load at that rate."""

    slo: SLO
    rate: float
    unloaded: dict
    sweep: list

    @property
    def load(self) -> Load:
        return service_load(self.rate)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    mine: float
    baseline: float
    advised: float
    text: str  # the reason, then the figures
    figures: str = ""  # the three goodputs alone, for a caller that gives another reason (lab 4's fresh prompts)


def _figures(m: float, b: float, a: float) -> str:
    return tr("your goodput {m:.2f} req/s; the baseline's {b:.2f}; the advisor's {a:.2f}", m=m, b=b, a=a)


def capstone_verdict(mine: dict, baseline: dict, advised: dict, slo: SLO, *, same_as_baseline: bool = False,
                     same_as_advised: bool = False) -> Verdict:
    """`_verdict`, with its figures kept apart as well (`Verdict.figures`)."""
    v = _verdict(mine, baseline, advised, slo, same_as_baseline=same_as_baseline, same_as_advised=same_as_advised)
    return replace(v, figures=_figures(v.mine, v.baseline, v.advised))


def _verdict(mine: dict, baseline: dict, advised: dict, slo: SLO, *, same_as_baseline: bool = False,
             same_as_advised: bool = False) -> Verdict:
    """Does the learner's row pass? It must be a configuration of their own (neither the baseline
    nor the advisor's change) and beat the better of the two references on goodput at the target
    beyond the run-to-run noise, with no smaller share of requests within the target: chapter 6's
    "helped" (`tuning.effect`), and not "hurt" against the other reference either. Where neither
    reference met the target for any request, a pass needs
    a minimum share and count of requests within it (`tuning.FROM_NONE_SHARE`, `FROM_NONE_COUNT`)."""
    g = lambda row: slo.goodput(row) or 0.0  # noqa: E731
    m, b, a = g(mine), g(baseline), g(advised)
    name, ref = (tr("the advisor's"), advised) if a > b else (tr("the baseline's"), baseline)
    figures = _figures(m, b, a)
    if same_as_baseline:
        return Verdict(
            False, m, b, a, tr("This is the baseline configuration: change at least one setting. ") + figures
        )
    if same_as_advised:
        return Verdict(False, m, b, a, tr("This is the advisor's own change: the lab asks you to beat it. ") + figures)
    judged, ratio = tuning.effect(ref, mine, slo)
    times = f"×{m / max(a, b):.2f}" if max(a, b) else tr("from 0")  # the goodput ratio (effect's may be the pace's)
    needed = tr(" (needed: above {name} {a:.2f} by more than the run-to-run noise)", name=name, a=max(a, b))
    met = slo.met_share(ref) or 0
    sent = len((ref.get("runs") or [ref])[0].get("request_ttft_ms") or [])
    ceiling = tuning.pace_ceiling(ref)
    if (
        met < slo.share
        and 0 < sent - round(met * sent) < tuning.MIN_COUNT_CHANGE
        and ceiling is not None
        and ceiling <= 1 + verdicts.DEFAULT_NOISE
    ):  # the lab's "only the second way can pass" (_only_crossing)
        needed = tr(
            " (needed here: every request within the target, on these prompts and on fresh ones, where "
            "the better reference, run on the same fresh prompts, misses it)"
        )
    other = baseline if ref is advised else advised
    mine_share, other_share = slo.met_share(mine) or 0, slo.met_share(other) or 0
    if judged == tuning.HELPED and mine_share < slo.share <= other_share:  # the other reference kept its promise
        return Verdict(
            False,
            m,
            b,
            a,
            tr(
                "Not yet: {times} {name} goodput, but {mine_share:.0%} of your requests "
                "met the target, which the other reference met ({other_share:.0%}). ",
                times=times,
                name=name,
                mine_share=mine_share,
                other_share=other_share,
            )
            + figures,
        )
    other_name = tr("the baseline's") if other is baseline else tr("the advisor's")
    if judged == tuning.HELPED and tuning.effect(other, mine, slo)[0] == tuning.HURT:  # same rule, both references
        return Verdict(
            False,
            m,
            b,
            a,
            tr(
                "Not yet: {times} {name} goodput, but against {other_name} run your "
                "change hurt: {mine_share:.0%} of your requests met the target against "
                "{other_share:.0%} of theirs, a smaller share beyond the noise (chapter "
                "6's rule: finishing sooner does not make up for it). ",
                times=times,
                name=name,
                other_name=other_name,
                mine_share=mine_share,
                other_share=other_share,
            )
            + figures,
        )
    if judged == tuning.HELPED:
        ref_share = slo.met_share(ref) or 0
        if (
            ref_share < slo.share <= mine_share
            and other_share >= slo.share
            and tuning.effect(other, mine, slo)[0] != tuning.HELPED
        ):  # matching a reference that met it is no gain
            return Verdict(
                False,
                m,
                b,
                a,
                tr(
                    "Not yet: your configuration meets the target where {name} run did "
                    "not, but {other_name} run met it too ({other_share:.0%}), and you "
                    "did not beat it beyond the noise. ",
                    name=name,
                    other_name=other_name,
                    other_share=other_share,
                )
                + figures,
            )
        if ref_share < slo.share <= mine_share:  # the crossing decides (tuning.effect), at no lower goodput
            return Verdict(
                True,
                m,
                b,
                a,
                tr(
                    "Passed: your configuration keeps the target's promise "
                    "({mine_share:.0%} of requests within it) where {name} did not "
                    "({ref_share:.0%}), at {times} its goodput (not lower beyond the "
                    "noise). ",
                    mine_share=mine_share,
                    name=name,
                    ref_share=ref_share,
                    times=times,
                )
                + figures,
            )
        if not max(a, b):
            return Verdict(True, m, b, a, tr("Passed: {name} goodput of 0 raised. ", name=name) + figures)
        how = tr("the same requests finished sooner") if abs(ratio - m / max(a, b)) > 1e-6 else tr("beyond the noise")
        return Verdict(
            True, m, b, a, tr("Passed: {times} {name} goodput ({how}). ", times=times, name=name, how=how) + figures
        )
    if max(a, b) == 0:  # no request met the target in either reference: one lucky request is not a pass
        return Verdict(
            False,
            m,
            b,
            a,
            tr(
                "Not yet: neither reference met the target for any request, so a pass "
                "needs at least {from_none_share:.0%} of your requests (and "
                "{from_none_count}) within it; {value:.0%} were. ",
                from_none_share=tuning.FROM_NONE_SHARE,
                from_none_count=tuning.FROM_NONE_COUNT,
                value=slo.met_share(mine) or 0,
            )
            + figures,
        )
    mine_share, ref_share = slo.met_share(mine) or 0, slo.met_share(ref) or 0
    if judged == tuning.HURT and ratio > 1:
        why = tr("more requests per second than {name} run, but a smaller share of them within the target", name=name)
    elif judged == tuning.NOTHING and tuning.judged_on_pace(ref, mine, slo) and mine_share < ref_share:
        why = (
            tr(
                "fewer of your requests met the target than in {name} run (by less than {min_count_change}), so "
                "finishing sooner does not count (chapter 6's rule)",
                name=name,
                min_count_change=tuning.MIN_COUNT_CHANGE,
            )
            if tuning.pace(ref, mine) > 1
            else tr(
                "fewer of your requests met the target than in {name} run (by less than {min_count_change}), and "
                "your run finished no sooner",
                name=name,
                min_count_change=tuning.MIN_COUNT_CHANGE,
            )
        )
    else:
        why = (tr("within the noise of {name} goodput", name=name) if judged == tuning.NOTHING
               else tr("below {name} goodput", name=name))
    return Verdict(
        False,
        m,
        b,
        a,
        tr(
            "Not yet: {why} ({mine_share:.0%} of your requests within the target, {ref_share:.0%} of theirs). ",
            why=why,
            mine_share=mine_share,
            ref_share=ref_share,
        )
        + figures
        + needed,
    )
