"""The capstone lab (lab 4, "tune it yourself"): the service to tune, the learner's runs on it,
and the self-check, hints and solution, in the manner of `helpers.exercises`.

Everything here judges rows measured on this machine: the service (load, target, rate) comes
from chapter 6's `prepare_service`, the pass rule from its `capstone_verdict`, the hint from the
advisor's diagnosis of the learner's last row. Chapter 6 calls the same functions with the same
config, so after notebook 06a (one results store) preparing the lab starts no engine, and
checking the unchanged baseline never does.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

from helpers import advisor, tuning, verdicts
from helpers.chapters import ch6a
from helpers.config import SETTINGS, ConfigError, EngineConfig
from helpers.i18n import N_, tr
from helpers.slo import SLO, knee

SOLUTION = "lab04_solution.ipynb"
GOODPUT, MET = N_("goodput at the target (req/s)"), N_("requests within the target (share)")  # columns; tr() titles

# Which chapter explains each lever the panel offers (and the advisor may name): the settings'
# own declarations (helpers/config.py, `declare(..., panel=..., chapter=...)`).
LEVERS = {s.name: s.chapter for s in SETTINGS if s.chapter is not None}
TOPICS = {2: N_("memory: the memory fraction, max_model_len and block size decide how many KV tokens fit"),
          3: N_("batching: the token budget per step, chunked prefill, the prefill cap and the sequence cap"),
          4: N_("server-side settings: prefix caching for a repeated prompt start, compiling instead of eager"),
          5: N_("quantization: INT8/INT4 weights and an fp8 KV cache")}


def chapter_file(chapter: int) -> str:
    """The notebook(s) that explain a chapter's levers, from the notebooks' own metadata: a chapter
    in parts (4a and 4b) names each part."""
    from helpers import registry
    from helpers.i18n import language
    folder = "" if language() == "en" else f"{language()}/"  # the learner's edition of the chapter
    files = [folder + str(ch["path"].relative_to(registry.ROOT)) for ch in registry.chapters()
             if ch.get("chapter") == chapter and "lab" not in ch]
    return tr(" and ").join(files) or tr("chapter {chapter}", chapter=chapter)


def panel_controls(base: EngineConfig) -> dict:
    """The panel's dropdowns: every setting a chapter teaches, from its own declaration
    (`widgets.setting_control`), each set to the base's value (so Run first measures the baseline)."""
    from helpers import widgets
    return {name: widgets.setting_control(base, name) for name in LEVERS}


FRESH_SEED = 7919  # the fresh prompts' seed offset, as chapter 6a's final judgement uses


def with_goodput(row: dict, slo: SLO) -> dict:
    """The row plus its goodput and share within the target, as columns a chart can draw."""
    return {**row, GOODPUT: slo.goodput(row) or 0.0, MET: slo.met_share(row) or 0.0}


@dataclass
class Capstone:
    """The service, the two reference rows (baseline and the advisor's), and the learner's runs."""

    base: EngineConfig
    service: ch6a.Service
    baseline: dict
    advice: advisor.Advice
    advised: dict
    measure: Callable = field(repr=False, default=None)
    tag: str = "lab4"
    tried: list = field(default_factory=list)  # (config, row) of each of the learner's runs, in order
    rate: float | None = None  # the rate the lab judges at: the service's, or a higher one (`harder`)
    note: str = ""  # why the lab judges at a higher rate than the service's

    def __post_init__(self):
        if self.rate is None:
            self.rate = self.service.rate

    @property
    def load(self):
        """The load the learner's runs and the references are judged on."""
        return replace(self.service.load, request_rate=self.rate)

    @classmethod
    def prepare(cls, base: EngineConfig, *, slo: SLO | None = None, tag: str = "lab4", measure=None, sweep=None,
                say=print) -> "Capstone":
        """Service (target, rate) → the baseline on its load → the advisor's change, measured.
        Rows stored by notebook 06a (same config, same loads) are reused."""
        if measure is None:
            from helpers.experiment import measure
        service = ch6a.prepare_service(base, slo=slo, tag=tag, measure=measure, sweep=sweep, say=say)
        baseline = measure(base, service.load, tag=tag)
        advice = advisor.advise(baseline, base, service.slo)
        advised = measure(advice.apply(base), service.load, tag=tag) if advice.change else baseline
        lab = cls(base, service, baseline, advice, advised, measure, tag)
        if lab.nothing_to_gain(advised) or lab.crossing_is_luck():
            lab.harder(say)
        return lab

    def reference_config(self) -> EngineConfig:
        """The better reference's configuration on goodput: the advisor's change or the baseline."""
        better = (self.slo.goodput(self.advised) or 0) > (self.slo.goodput(self.baseline) or 0)
        return self.advice.apply(self.base) if better else self.base

    def fresh_load(self):
        """The lab's load on fresh prompts (chapter 6a's seed offset): where a crossing must hold too."""
        return replace(self.load, seed=self.load.seed + FRESH_SEED)

    def crossing_is_luck(self) -> bool:
        """Where only crossing the target can pass (`only_crossing`) and the better reference meets the
        target on fresh prompts, its miss on the service's prompts was one request's luck: no configuration
        can be told from it at this rate (one more load on the reference's engine, read back where stored)."""
        if not self.only_crossing():
            return False
        ref_fresh = self.measure(self.reference_config(), self.fresh_load(), tag=self.tag, progress=False)
        return (self.slo.met_share(ref_fresh) or 0) >= self.slo.share

    def nothing_to_gain(self, advised: dict) -> bool:
        """True where no configuration could beat the advice on its load: every request within the target,
        finishing as soon as the arrival schedule allows an engine no faster per request than the advice
        (`tuning.pace_ceiling`), would still gain no
        more than the noise allowance."""
        share = self.slo.met_share(advised) or 0
        if share < self.slo.share:  # the advice missed the target's share: meeting it would pass (a crossing)
            return False
        return share > 0 and (1 / share) * (tuning.pace_ceiling(advised) or 1.0) <= 1 + verdicts.DEFAULT_NOISE

    def harder(self, say=print) -> None:
        """Where the advice meets the target for every request, nothing can beat it on that load: goodput
        is then fixed by the arrival schedule. Judge at the next rate of the baseline's sweep where a
        configuration could still beat the advice (it misses some, or finishing sooner could gain more than
        the noise) (measured on the advisor's engine, still up; the baseline's row at that rate
        is the sweep's own), or at the highest the sweep reached, saying so."""
        share = self.slo.met_share(self.advised) or 0
        met_all = (tr("the advisor's change met the target for {share:.0%} of the requests at {rate:g} req/s (even "
                      "all of them, finishing as soon as the arrivals allow, would gain no more than the noise)",
                      share=share, rate=self.service.rate) if self.nothing_to_gain(self.advised) else
                   tr("at {rate:g} req/s only meeting the target could pass, and the better reference met it on "
                      "fresh prompts: its miss on the service's prompts was one request's luck",
                      rate=self.service.rate))
        higher = sorted((r for r in self.service.sweep if r["load_request_rate"] > self.service.rate),
                        key=lambda r: r["load_request_rate"])
        if not higher:
            last = self.service.sweep[-1]["load_request_rate"] if self.service.sweep else self.service.rate
            self.note = (tr("{met_all}, and the sweep has no higher rate ({rate:g} req/s is its last: it ran up to "
                            "{last:g}): the lab is judged there, where no configuration may be able to pass; "
                            "loosen the target or sweep higher rates (`prepare(..., slo=...)`).", met_all=met_all,
                            rate=self.service.rate, last=last))
            say(self.note)
            return
        for sweep_row in higher:
            rate = sweep_row["load_request_rate"]
            advised = self.measure(self.advice.apply(self.base), replace(self.service.load, request_rate=rate),
                                   tag=self.tag)
            self.rate, self.baseline, self.advised = rate, sweep_row, advised
            if not self.nothing_to_gain(advised) and not self.crossing_is_luck():
                break
        all_met, luck = self.nothing_to_gain(self.advised), self.crossing_is_luck()
        where = (tr("where a configuration could still beat the advice (it misses some requests, or the arrival "
                    "schedule leaves more than the noise to gain by finishing sooner; the baseline's row at that "
                    "rate is its sweep's).")
                 if not all_met and not luck else
                 tr("the highest rate the sweep reached; the advice met every request there too, so no "
                    "configuration may be able to pass there (the arrival schedule caps any gain): loosen the "
                    "target or sweep higher rates (`prepare(..., slo=...)`).") if all_met else
                 tr("the highest rate the sweep reached; there too the better reference met the target on fresh "
                    "prompts (its miss was luck), so no configuration may be able to pass there: loosen the target "
                    "or sweep higher rates (`prepare(..., slo=...)`)."))
        self.note = (
            tr(
                "{met_all}, so no configuration could beat it there: the lab is judged at {rate:g} req/s, ",
                met_all=met_all,
                rate=self.rate,
            )
            + where
        )
        say(self.note)

    @property
    def slo(self) -> SLO:
        return self.service.slo

    # -- what the learner reads first ---------------------------------------------------------
    def describe(self) -> str:
        """How the load, the target and the rate were derived, from this machine's rows."""
        u, s = self.service.unloaded, self.slo
        rates = tr(", ").join(f"{r['load_request_rate']:g}" for r in self.service.sweep)
        k = knee(self.service.sweep, s)
        return "\n".join(
            [
                tr("Load: {label}", label=self.load.label()),
                tr(
                    "Unloaded (one request at a time): median TTFT {median_ttft_ms:,.0f} ms, median TPOT "
                    "{median_tpot_ms:.1f} ms, a request every {median_e2el_ms:,.0f} ms.",
                    median_ttft_ms=u["median_ttft_ms"],
                    median_tpot_ms=u["median_tpot_ms"],
                    median_e2el_ms=u["median_e2el_ms"],
                ),
                tr(
                    "Target: {label} (TTFT ×{ttft_headroom:g} and TPOT ×{tpot_headroom:g} the unloaded medians, "
                    "rounded up).",
                    label=s.label(),
                    ttft_headroom=ch6a.TTFT_HEADROOM,
                    tpot_headroom=ch6a.TPOT_HEADROOM,
                )
                if s == ch6a.slo_for(u)
                else tr("Target (yours): {label}.", label=s.label()),
                tr("Rate sweep of the baseline at {rates} req/s: {text_value}", rates=rates, text_value=k.text(s)),
                tr("You tune at {rate:g} req/s (Poisson arrivals).", rate=self.rate)
                + (
                    (tr(" Why not {rate:g}: ", rate=self.service.rate) if self.rate != self.service.rate
                     else tr(" Note: ")) + self.note
                    if self.note
                    else ""
                ),
            ]
        )

    def references(self) -> str:
        """The baseline's and the advisor's goodput, and what the check asks for."""
        b, a = self.slo.goodput(self.baseline) or 0.0, self.slo.goodput(self.advised) or 0.0
        return "\n".join(
            [
                tr(
                    "Baseline ({label}): goodput {b:.2f} req/s, {value:.0%} of requests within the target{how}.",
                    label=self.base.label(),
                    b=b,
                    value=self.slo.met_share(self.baseline) or 0,
                    how=_how(self.baseline),
                ),
                (
                    tr("Advisor (read at {rate:g} req/s, the baseline's row there): ", rate=self.service.rate)
                    if self.rate != self.service.rate
                    else tr("Advisor: ")
                )
                + self.advice.text(),
                tr(
                    "Advised ({label}): goodput {a:.2f} req/s, {value:.0%} within the target{how}.",
                    label=self.advice.apply(self.base).label(),
                    a=a,
                    value=self.slo.met_share(self.advised) or 0,
                    how=_how(self.advised),
                ),
                tr(
                    "To pass: a configuration of your own (not the baseline, not the advisor's change) whose goodput "
                    "beats the better of the two ({a:.2f} req/s) by more than the run-to-run noise, with no share of "
                    "its requests within the target smaller beyond the noise (nor below the target's where a reference "
                    "met it); or one whose share reaches the target's where the better reference missed it, at a "
                    "goodput not lower beyond the noise, and again on fresh prompts.",
                    a=max(a, b),
                )
                + self._only_crossing()
                + (
                    tr(
                        " Neither reference met the target for any request, so a pass also needs at least "
                        "{from_none_share:.0%} of your requests (and {from_none_count}) within it.",
                        from_none_share=tuning.FROM_NONE_SHARE,
                        from_none_count=tuning.FROM_NONE_COUNT,
                    )
                    if max(a, b) == 0
                    else ""
                ),
            ]
        )

    def only_crossing(self) -> bool:
        """Whether the goodput route cannot be taken here: both references miss the target, fewer than
        MIN_COUNT_CHANGE more requests can still meet it, and the pace cannot move beyond the noise."""
        ref = max((self.baseline, self.advised), key=lambda r: self.slo.goodput(r) or 0)
        sent, met = len((ref.get("runs") or [ref])[0].get("request_ttft_ms") or []), self.slo.met_share(ref) or 0
        ceiling = tuning.pace_ceiling(ref)
        return not (
            not sent
            or met >= self.slo.share
            or sent - round(met * sent) >= tuning.MIN_COUNT_CHANGE
            or ceiling is None
            or ceiling > 1 + verdicts.DEFAULT_NOISE
        )

    def _only_crossing(self) -> str:
        """The references' line where only crossing the target can pass, with the whole rule."""
        if not self.only_crossing():
            return ""
        if self.crossing_is_luck():
            return tr(
                " Here only meeting the target could pass, and the better reference met it on fresh prompts "
                "too: its miss was luck, so no configuration may be able to pass at this rate (loosen the "
                "target or sweep higher rates)."
            )
        ref = max((self.baseline, self.advised), key=lambda r: self.slo.goodput(r) or 0)
        sent, met = len((ref.get("runs") or [ref])[0].get("request_ttft_ms") or []), self.slo.met_share(ref) or 0
        return tr(
            " Here only the second way can pass: {sent} more request(s) can meet the target (fewer than "
            "{min_count_change}, so the count cannot decide) and finishing sooner can gain about "
            "×{pace_ceiling:.2f} at most, inside the noise: meet the target for every request, and again on "
            "fresh prompts, where the better reference is run on the same prompts and must miss the target "
            "(or yours must beat it beyond the noise).",
            sent=sent - round(met * sent),
            min_count_change=tuning.MIN_COUNT_CHANGE,
            pace_ceiling=tuning.pace_ceiling(ref),
        )

    # -- the learner's runs -------------------------------------------------------------------
    def run(self, config: EngineConfig, *, force: bool = False, progress=True) -> dict:
        """Measure `config` on the service load (or reuse its stored row), with its goodput."""
        if not isinstance(config, EngineConfig):
            raise ConfigError(
                "MY_CONFIG",
                tr("must be an EngineConfig, got {name}.", name=type(config).__name__),
                tr("MY_CONFIG = base.replace(max_num_batched_tokens=512) (any settings you like)."),
            )
        row = with_goodput(self.measure(config, self.load, force=force, tag=self.tag, progress=progress), self.slo)
        self.tried.append((config, row))
        return row

    def panel_run(self, *, force: bool = False, progress=True, **settings) -> dict:
        """The control panel's function: the base config with the panel's settings."""
        return self.run(self.base.replace(**settings), force=force, progress=progress)

    def verdict(self, config: EngineConfig, row: dict) -> ch6a.Verdict:
        """The check's verdict. A pass that rests on crossing the target (the references missed it, this
        run met it) can be one request's luck on the service's prompts, so it must hold on fresh prompts
        too, against the better reference on the same fresh prompts (chapter 6 judges its kept step the
        same way): yours meets the target there and the reference does not, or yours is helped beyond noise
        (one more load on each engine, read back where stored)."""
        v = ch6a.capstone_verdict(
            row,
            self.baseline,
            self.advised,
            self.slo,
            same_as_baseline=config == self.base,
            same_as_advised=config == self.advice.apply(self.base),
        )
        refs = max(self.slo.met_share(self.baseline) or 0, self.slo.met_share(self.advised) or 0)
        if not v.passed or not refs < self.slo.share <= (self.slo.met_share(row) or 0):
            return v
        fresh_load = self.fresh_load()
        fresh = self.measure(config, fresh_load, tag=self.tag, progress=False)
        share = self.slo.met_share(fresh) or 0
        # the better reference on the same fresh prompts: a gain beyond noise there passes whatever the shares;
        # otherwise yours must meet the target there and the reference must not (crossing it on the service's
        # prompts can be one request's luck)
        ref_config = self.reference_config()
        ref_fresh = self.measure(ref_config, fresh_load, tag=self.tag, progress=False)
        ref_share = self.slo.met_share(ref_fresh) or 0
        judged, _ = tuning.effect(ref_fresh, fresh, self.slo)
        if judged != tuning.HELPED and share < self.slo.share:
            return replace(
                v,
                passed=False,
                text=tr(
                    "Not yet: your configuration met the target on the service's "
                    "prompts but not on fresh ones ({share:.0%} within it there, "
                    "and no gain beyond noise over the reference there): one "
                    "request's luck, not a pass. ",
                    share=share,
                )
                + v.figures,
            )
        if ref_share < self.slo.share or judged == tuning.HELPED:
            return replace(
                v,
                # before the figures, so "held" is said of the learner's configuration, not of the last figure
                text=v.text.removesuffix(v.figures)
                + tr(
                    "It held on fresh prompts too ({share:.0%} within the target, the reference's {ref_share:.0%}). ",
                    share=share,
                    ref_share=ref_share,
                )
                + v.figures,
            )
        return replace(
            v,
            passed=False,
            text=tr(
                "Not yet, cannot tell: on fresh prompts the reference ({label}) "
                "meets the target too ({ref_share:.0%} within it, yours "
                "{share:.0%}) and your goodput there is {judged}: crossing the "
                "target on the service's prompts was one request's luck. ",
                label=ref_config.label(),
                ref_share=ref_share,
                share=share,
                judged=tr(judged),
            )
            + v.figures,
        )

    def check(self, config: EngineConfig) -> bool:
        """Measure (or reuse) `config` on the service load and print the computed verdict."""
        t0 = time.monotonic()
        row = self.run(config)
        v = self.verdict(config, row)
        how = (
            tr("a stored row, reused")
            if row.get("reused")
            else tr("measured now in {monotonic:.0f} s", monotonic=time.monotonic() - t0)
        )
        print(f"{'✓' if v.passed else '✗'} {v.text}")
        print(
            tr(
                "  ({label}: {how}, {value:.0%} of requests within the target)",
                label=config.label(),
                how=how,
                value=row[MET],
            )
        )
        return v.passed

    def summary(self, rows: list[dict]) -> str:
        """The panel's line under its chart: the verdict for the last run."""
        if not self.tried:
            return ""
        config, row = self.tried[-1]
        v = self.verdict(config, row)
        return f"<b>{tr('Passes') if v.passed else tr('Does not pass yet')}</b>: {v.text}"

    # -- help ---------------------------------------------------------------------------------
    def hint(self) -> None:
        """The advisor's reading of your last run (the baseline before you ran one), and the
        chapter that explains each lever it points at."""
        config, row = self.tried[-1] if self.tried else (self.base, self.baseline)
        found = advisor.diagnose(row, config, self.slo)
        whose = tr("{who} ({label})", who=tr("the baseline") if config == self.base else tr("your last run"),
                   label=config.label())
        print(tr("Hint, from {whose}:", whose=whose))
        for a in found:
            levers = list(a.change) or [k for k, ch in LEVERS.items() if ch == a.chapter]
            print(tr("- {limit}: {evidence}.", limit=tr(a.limit), evidence=a.evidence))
            if not levers:  # the target was met: nothing to turn at this rate
                print(tr("  Nothing to change at this rate; offer more load to find the next limit."))
                continue
            print(
                tr(
                    "  Levers: {levers}. Chapter {chapter} explains them ({chapter_2}): {chapter_file}.",
                    levers=", ".join(levers),
                    chapter=a.chapter,
                    chapter_2=tr(TOPICS.get(a.chapter, "")),
                    chapter_file=chapter_file(a.chapter),
                )
            )
        changed = sorted(k for k in LEVERS if getattr(config, k) != getattr(self.base, k))
        print(
            tr("Changed from the baseline so far: ")
            + (", ".join(changed) or tr("nothing yet"))
            + tr(". Levers by chapter: ")
            + tr("; ").join(tr("chapter {chapter}", chapter=ch) + " " + tr(", ").join(k for k, c in LEVERS.items()
                                                                                     if c == ch) for ch in TOPICS)
            + tr(".")
        )

    def solution(self) -> None:
        from helpers.exercises import solution_path

        print(
            tr(
                "One path to try, measured on the same service: {solution_path}. It starts from the advisor's "
                "change, prints the advisor's reading of the changed run and takes INT8 weights; its verdict is "
                "computed from its own run, so on your machine it may read differently (on the guide's 2-core "
                "test host, at the service's rate, the INT8 step did not pass: a path to try, not a promise).",
                solution_path=solution_path(SOLUTION),
            )
        )

    # -- your own target ----------------------------------------------------------------------
    def try_target(self, slo: SLO) -> str:
        """What the stored rate sweep says about another target, without measuring again."""
        return knee(self.service.sweep, slo).text(slo)


def _how(row: dict) -> str:
    return tr(" (a stored row, reused)") if row.get("reused") else ""


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ()
PANELS = ("LEVERS", "TOPICS", "panel_controls")
CHECKS = ("SOLUTION", "FRESH_SEED", "GOODPUT", "MET", "chapter_file", "with_goodput", "Capstone")
CLAIMS = ()
