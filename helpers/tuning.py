"""A tuning path: settings changed one at a time toward a latency target, each step measured
and judged on goodput at that target (helped, within noise, or hurt), the way the source
article orders it: a baseline, then max_model_len, the memory fraction, max_num_seqs and the
batch budget, then prefix caching, then quantization / the KV dtype.

A step that helped is kept and the next step starts from it; a step that did nothing or hurt
is dropped. The notebook supplies the steps (their values depend on the machine and the load)
and the chapter's verdicts come from the returned rows.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from helpers import report
from helpers.config import ConfigError, EngineConfig
from helpers.slo import SLO

HELPED, NOTHING, HURT = "helped", "within noise", "hurt"


@dataclass(frozen=True)
class Step:
    name: str
    change: dict = field(default_factory=dict)
    chapter: int = 0


def goodput_runs(row: dict, slo: SLO) -> list[float]:
    """Goodput of each repeat of a row (requests/s that met the target)."""
    out = []
    for run in row.get("runs") or [row]:
        g = slo.goodput({"runs": [run]})
        if g is not None:
            out.append(g)
    return out


def verdict(before: dict, after: dict, slo: SLO) -> tuple[str, float]:
    """(helped / within noise / hurt, ratio after ÷ before) on goodput at the target. The noise
    allowance is the larger run-to-run spread of the two rows, else report.DEFAULT_NOISE."""
    a, b = goodput_runs(before, slo), goodput_runs(after, slo)
    if not a or not b:
        raise ConfigError("slo", "these rows have no per-request latencies, so goodput cannot be judged.",
                          "measure them again (force=True) with this version of the guide.")
    x, y = statistics.median(a), statistics.median(b)
    spreads = [(max(v) - min(v)) / statistics.median(v) for v in (a, b) if len(v) > 1 and statistics.median(v)]
    noise = max(spreads, default=report.DEFAULT_NOISE)
    if x == 0:
        return (HELPED if y > 0 else NOTHING), (float("inf") if y > 0 else 1.0)
    ratio = y / x
    if abs(ratio - 1) <= noise:
        return NOTHING, ratio
    return (HELPED if ratio > 1 else HURT), ratio


def walk(config: EngineConfig, load, slo: SLO, steps: list[Step], *, force: bool = False, measure=None,
         also: dict | None = None, say=print) -> list[dict]:
    """Measure the baseline, then each step on top of the best config so far. Returns one
    record per step: its row, goodput, the verdict against the config it changed, and whether
    it was kept. `also` ({step name or "baseline": [loads]}) runs other loads on a step's engine
    while it is up, so a later cell reads them from the store instead of starting it again."""
    if measure is None:
        from helpers.experiment import measure
    also = also or {}

    def extra(name, cfg):
        for other in also.get(name, []):
            measure(cfg, other, force=force, tag="tuning")

    best_cfg = config
    best = measure(config, load, force=force, tag="tuning")
    extra("baseline", config)
    records = [{"step": "baseline", "chapter": 1, "change": {}, "row": best, "goodput": slo.goodput(best),
                "verdict": None, "ratio": 1.0, "kept": True, "config": config}]
    for step in steps:
        try:
            cfg = best_cfg.replace(**step.change)
            row = measure(cfg, load, force=force, tag="tuning")
        except ConfigError as e:  # a step this machine cannot take: say so and go on
            say(f"{step.name}: skipped, {e}")
            continue
        extra(step.name, cfg)
        judged, ratio = verdict(best, row, slo)
        kept = judged == HELPED
        records.append({"step": step.name, "chapter": step.chapter, "change": step.change, "row": row,
                        "goodput": slo.goodput(row), "verdict": judged, "ratio": ratio, "kept": kept, "config": cfg})
        if kept:
            best_cfg, best = cfg, row
    return records
