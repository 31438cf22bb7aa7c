"""A tuning path: settings changed one at a time toward a latency target, each step measured
and judged on goodput at that target (helped, within noise, or hurt), the way the source
article orders it: a baseline, then max_model_len, the memory fraction, max_num_seqs and the
batch budget, then prefix caching, then quantization / the KV dtype.

A step that helped is kept and the next step starts from it; a step that did nothing or hurt
is dropped. The notebook supplies the steps (their values depend on the machine and the load)
and the chapter's verdicts come from the returned rows (each step's `effect`).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from helpers import verdicts
from helpers.config import ConfigError
from helpers.results.gaps import missing
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


def effect(before: dict, after: dict, slo: SLO) -> tuple[str, float]:
    """The effect of a change: (helped / within noise / hurt, ratio after ÷ before) on goodput at
    the target. (A claim's verdict, verdicts.HELD and the rest, is judged from it in chapters/ch6.) The noise
    allowance is the larger run-to-run spread of the two rows, else verdicts.DEFAULT_NOISE."""
    a, b = goodput_runs(before, slo), goodput_runs(after, slo)
    if not a or not b:
        if why := (missing(before, "request_ttft_ms") or missing(after, "request_ttft_ms")):
            raise ConfigError("slo", f"goodput cannot be judged on these rows: {why}.",
                              "import a file with per-request data (vllm bench serve --save-detailed, GuideLLM).")
        raise ConfigError("slo", "these rows have no per-request latencies, so goodput cannot be judged.",
                          "measure them again (force=True) with this version of the guide.")
    x, y = statistics.median(a), statistics.median(b)
    spreads = [(max(v) - min(v)) / statistics.median(v) for v in (a, b) if len(v) > 1 and statistics.median(v)]
    noise = max(spreads, default=verdicts.DEFAULT_NOISE)
    if x == 0:
        return (HELPED if y > 0 else NOTHING), (float("inf") if y > 0 else 1.0)
    ratio = y / x
    if abs(ratio - 1) <= noise:
        return NOTHING, ratio
    return (HELPED if ratio > 1 else HURT), ratio
