"""Chapter 6's runs: loops of measurements that judge as they go. They sit above both the measuring
(`experiment`) and the judging (`slo`, `tuning`, the chapter's `service`: pure functions of rows), so
neither of those imports the other. `measure` (and `sweep`) can be handed in, so tests run them on recorded rows.
"""
from __future__ import annotations

import dataclasses

from helpers import experiment, tuning
from helpers.chapters.ch6a import service
from helpers.config import EngineConfig
from helpers.errors import ConfigError
from helpers.i18n import N_, tr
from helpers.load import LoadError
from helpers.slo import SLO, overloaded


def rate_sweep(config, load, rates: list[float], slo: SLO, *, force: bool = False, tag: str = "sweep",
               measure=None, say=print) -> list[dict]:
    """Measure `load` at each offered request rate (requests arrive as a Poisson process at that
    rate, vLLM's benchmark's `--request-rate`), lowest first, and stop early once the server is
    overloaded (median TTFT far past the target) or a run fails: higher rates would only queue
    more, for minutes. Every row measured so far is stored and returned."""
    measure = measure or experiment.measure
    if not rates or any(r <= 0 for r in rates):
        raise ConfigError(
            "rates", tr("must be positive request rates (req/s), got {rates!r}.", rates=rates), "rates=[0.5, 1, 2, 4]."
        )
    rows = []
    for rate in sorted(rates):
        try:
            row = measure(config, dataclasses.replace(load, request_rate=float(rate)), force=force, tag=tag)
        except Exception as e:  # noqa: BLE001 - keep what was measured, say why the sweep stopped
            say(tr("stopped at {rate:g} req/s: the run failed ({splitlines_first}); {n_rows} rate(s) kept", rate=rate,
                   splitlines_first=str(e).splitlines()[0][:200], n_rows=len(rows)))
            break
        rows.append(row)
        if overloaded(row, slo):
            say(
                tr("stopped after {rate:g} req/s: median TTFT {median_ttft_ms:,.0f} ms, far past the {ttft_ms:g} "
                   "ms target; higher rates would only queue longer", rate=rate, median_ttft_ms=row['median_ttft_ms'],
                   ttft_ms=slo.ttft_ms)
            )
            break
    return rows


def walk(
    config: EngineConfig,
    load,
    slo: SLO,
    steps: list[tuning.Step],
    *,
    force: bool = False,
    measure=None,
    also: dict | None = None,
    say=print,
) -> list[dict]:
    """Measure the baseline, then each step on top of the best config so far. Returns one
    record per step: its row, goodput, its effect against the config it changed, and whether
    it was kept. `also` ({step name or "baseline": [loads]}) runs other loads on a step's engine
    while it is up, so a later cell reads them from the store instead of starting it again."""
    measure = measure or experiment.measure
    also = also or {}

    def extra(name, cfg):
        for other in also.get(name, []):
            measure(cfg, other, force=force, tag="tuning")

    best_cfg = config
    best = measure(config, load, force=force, tag="tuning")
    extra("baseline", config)
    records = [
        {
            "step": "baseline",
            "chapter": 1,
            "change": {},
            "row": best,
            "goodput": slo.goodput(best),
            "effect": None,
            "ratio": 1.0,
            "kept": True,
            "config": config,
            "goodput_ratio": 1.0,
            "judged_on": None,
            "pace_ceiling": None,
        }
    ]
    for step in steps:
        try:
            cfg = best_cfg.replace(**step.change)
            row = measure(cfg, load, force=force, tag="tuning")
        except (ConfigError, RuntimeError, LoadError) as e:  # a refused setting, start or run: say so, go on
            say(f"{step.name}: skipped, {str(e).splitlines()[0][:300]}")
            continue
        extra(step.name, cfg)
        judged, ratio = tuning.effect(best, row, slo)
        kept = judged == tuning.HELPED
        g0, g1 = slo.goodput(best) or 0, slo.goodput(row) or 0
        records.append(
            {
                "step": step.name,
                "chapter": step.chapter,
                "change": step.change,
                "row": row,
                "goodput": slo.goodput(row),
                "effect": judged,
                "ratio": ratio,
                "kept": kept,
                "config": cfg,
                # against the best configuration so far (what the step changed), and what judged it
                "goodput_ratio": g1 / g0 if g0 else None,
                "judged_on": N_("pace")  # shown with tr() (helpers.tables.in_language)
                if (on_pace := tuning.judged_on_pace(best, row, slo))
                else N_("crossing the target")
                if tuning.crossed(best, row, slo)
                else N_("goodput"),
                # about the largest pace against `best` at this offered rate for an engine no
                # faster per request than these two rows
                "pace_ceiling": tuning.pace_ceiling(best, row) if on_pace else None,
            }
        )
        if kept:
            best_cfg, best = cfg, row
    return records


def prepare_service(
    config, *, slo: SLO | None = None, tag: str = "ch6", measure=None, sweep=None, say=print
) -> service.Service:
    """Unloaded latency → target (unless `slo` is given) → rate sweep → the rate to tune at.
    Stored rows are reused, so after notebook 06a this starts no engine."""
    measure = measure or experiment.measure
    unloaded = measure(config, service.unloaded_load(), tag=tag)
    slo = slo or service.slo_for(unloaded)
    args = (config, service.service_load(), service.rates_for(unloaded), slo)
    # a handed-in measure reaches the default sweep too, so a replay on recorded rows starts no engine
    rows = sweep(*args, tag=tag, say=say) if sweep else rate_sweep(*args, tag=tag, say=say, measure=measure)
    return service.Service(slo, service.tuning_rate(rows, slo), unloaded, rows)
