"""Intervals: how far a measured figure, or the ratio of two, could move in another run like this one.

A row keeps every repeat (`runs`) and, in each, every request's TTFT, TPOT, end-to-end latency and worst
gap. The interval is a bootstrap (Efron's percentile interval): draw the repeats again with replacement
and, inside each drawn repeat, its requests; recompute the figure the way the row did (the statistic over
the requests, then the median over the repeats); the middle 95 % of DRAWS such draws is the interval.
It covers what it could draw, and says so: "requests" where one repeat ran, "requests and runs" where
several did, "runs" for a figure no request list gives (a throughput, a P99 of all token gaps, a peak of
the server's gauges), and nothing for such a figure measured once.

Two rows compared come from two engine starts, and draws inside one row cannot see how much two starts
differ: chapter 0 measured about 10 % (20 % for a tail figure) on these shared machines. So the interval
of a ratio is never narrower than that floor around the measured ratio (`ratio`), and where nothing could
be drawn it is that floor alone, said as such.
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
DRAWS = 1000
_METRIC = re.compile(r"^(?P<kind>short_|long_)?(?P<stat>mean|median|p\d+(?:\.\d+)?|max)"
                     r"_(?P<base>ttft|tpot|e2el|itl)_ms$")


@dataclass(frozen=True)
class Interval:
    """A figure (or a ratio), the interval around it, and what the interval covers, in words."""
    value: float
    lo: float
    hi: float
    covers: str

    def includes(self, x: float) -> bool:
        return self.lo - 1e-9 <= x <= self.hi + 1e-9

    def text(self, digits: int = 2, prefix: str = "×") -> str:
        """"×1.42 (95 % interval ×1.21–×1.66; covers …)"."""
        f = f"{prefix}{{:,.{digits}f}}"
        return (f"{f.format(self.value)} ({100 * LEVEL:.0f} % interval {f.format(self.lo)}–{f.format(self.hi)}; "
                f"{self.covers})")


def request_values(run: dict, metric: str) -> np.ndarray | None:
    """The per-request values a figure is a statistic of, or None where the row keeps none for it: TTFT,
    TPOT and end-to-end latency per request, and each request's worst gap for a maximum gap. A P99 of ITL
    is over every token gap, which a row does not keep, so it has none."""
    m = _METRIC.match(metric)
    if not m:
        return None
    kind, base = m["kind"] or "", m["base"]
    if base in ("ttft", "tpot"):
        picked = run.get(f"{kind}request_{base}_ms")
    elif base == "e2el" or (base == "itl" and m["stat"] == "max"):
        picked = run.get("request_e2el_ms" if base == "e2el" else "request_max_itl_ms")
        if kind:  # a mixed load keeps one list for both kinds, in the order of request_kind
            kinds = run.get("request_kind")
            if not (isinstance(kinds, list) and isinstance(picked, list) and len(kinds) == len(picked)):
                return None
            picked = [v for v, k in zip(picked, kinds) if k == kind[:-1]]
    else:
        return None
    if not isinstance(picked, list):
        return None
    arr = np.asarray([v for v in picked if isinstance(v, (int, float)) and not math.isnan(v)], dtype=float)
    if base == "tpot":
        arr = arr[arr > 0]  # a one-token answer has no TPOT (vLLM's bench leaves it out; the row writes 0)
    return arr if arr.size >= 2 else None


def _statistic(metric: str):
    stat = _METRIC.match(metric)["stat"]
    if stat == "mean":
        return lambda a, axis=None: np.mean(a, axis=axis)
    if stat == "median":
        return lambda a, axis=None: np.median(a, axis=axis)
    if stat == "max":
        return lambda a, axis=None: np.max(a, axis=axis)
    q = float(stat[1:])
    return lambda a, axis=None: np.percentile(a, q, axis=axis)


def _number(row, key) -> float | None:
    try:
        v = row[key]
    except (KeyError, IndexError, TypeError):
        return None
    try:
        return None if v is None or v != v else float(v)
    except (TypeError, ValueError):
        return None


def draws(row, metric: str, rng: np.random.Generator) -> tuple[np.ndarray, str] | None:
    """DRAWS bootstrap values of `metric` for one row, scaled so the row's own figure sits where the
    recomputed one does, and what they cover; None where nothing can be drawn."""
    value = _number(row, metric)
    if value is None:
        return None
    runs = row.get("runs") if hasattr(row, "get") else None
    runs = [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) and runs else [dict(row)]
    n = len(runs)
    per_request = [request_values(r, metric) for r in runs]
    pick = rng.integers(n, size=(DRAWS, n)) if n > 1 else np.zeros((DRAWS, 1), dtype=int)
    if all(v is not None for v in per_request):
        stat = _statistic(metric)
        boot = np.stack([stat(v[rng.integers(v.size, size=(DRAWS, v.size))], axis=1) for v in per_request])
        out = np.median(boot[pick, np.arange(DRAWS)[:, None]], axis=1)
        centre = float(np.median([stat(v) for v in per_request]))
        count = sum(v.size for v in per_request)
        covers = f"{count} requests" + (f" in {n} runs" if n > 1 else "")
    else:
        figures = [_number(r, metric) for r in runs]
        if n < 2 or any(f is None for f in figures):
            return None
        out = np.median(np.asarray(figures)[pick], axis=1)
        centre, covers = float(np.median(figures)), f"{n} runs"
    return (out * (value / centre) if centre else out), covers


def of(row, metric: str) -> Interval | None:
    """The interval of one row's figure, or None where nothing could be drawn (one run, no request list)."""
    value = _number(row, metric)
    got = draws(row, metric, np.random.default_rng(zlib.crc32(metric.encode())))
    if value is None or got is None:
        return None
    d, covers = got
    lo, hi = np.percentile(d, [50 * (1 - LEVEL), 100 - 50 * (1 - LEVEL)])
    return Interval(value, float(min(lo, value)), float(max(hi, value)), f"bootstrap over {covers}")


def of_ratio(before, after, metric: str, floor: float) -> Interval | None:
    """The interval of after ÷ before for `metric`: the two rows drawn independently, never narrower
    than ×(1 ± floor) around the measured ratio (two engine starts differ by about that much).
    None where a figure is missing or zero."""
    x, y = _number(before, metric), _number(after, metric)
    if not x or not y:
        return None
    r = y / x
    rng = np.random.default_rng(zlib.crc32(metric.encode()))
    a, b = draws(before, metric, rng), draws(after, metric, rng)
    lo, hi = r * (1 - floor), r * (1 + floor)
    floor_words = f"start to start ±{100 * floor:.0f} % (chapter 0)"
    if a is None and b is None:
        return Interval(r, lo, hi, f"{floor_words} only: each side ran once and keeps no request list for it")
    da = a[0] if a else np.full(DRAWS, x)
    db = b[0] if b else np.full(DRAWS, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = db / da
    q = q[np.isfinite(q)]
    if q.size:
        blo, bhi = np.percentile(q, [50 * (1 - LEVEL), 100 - 50 * (1 - LEVEL)])
        lo, hi = min(lo, float(blo)), max(hi, float(bhi))
    sides = " and ".join(f"{c} {'before' if i == 0 else 'after'}" for i, c in
                         ((0, a[1] if a else "one run"), (1, b[1] if b else "one run")))
    return Interval(r, lo, hi, f"bootstrap over {sides}, never narrower than {floor_words}")
