"""Intervals: how far a measured figure, or the ratio of two, could move in another run like this one.

A row keeps every repeat (`runs`) and, in each, every request's TTFT, TPOT, end-to-end latency and worst
gap. The interval is a bootstrap (Efron's percentile interval): draw the repeats again with replacement
and, inside each drawn repeat, its requests; recompute the figure the way the row did (the statistic over
the requests, then the median over the repeats); the middle 95 % of DRAWS such draws is the interval.
It covers what it could draw, and says so: "requests" where one repeat ran, "requests and runs" where
several did, "runs" for a figure no request list gives (a throughput, a P99 of all token gaps, a peak of
the server's gauges, a maximum, a P99 of a few requests), and nothing for such a figure measured once.

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
MIN_TAIL = 5  # requests beyond a percentile needed before its bootstrap over requests means anything
AGREE = 0.02  # the recomputed figure must agree with the row's within this, or its lists are not its basis
METRIC = re.compile(r"^(?P<kind>short_|long_)?(?P<stat>mean|median|p\d+(?:\.\d+)?|max)"
                     r"_(?P<base>ttft|tpot|e2el|itl)_ms$")


@dataclass(frozen=True)
class Interval:
    """A figure (or a ratio), the interval around it, and what the interval covers, in words."""
    value: float
    lo: float
    hi: float
    covers: str
    measured: bool = True  # False: the start-to-start floor alone, nothing drawn

    def includes(self, x: float) -> bool:
        return self.lo - 1e-9 <= x <= self.hi + 1e-9

    def text(self, digits: int = 2, prefix: str = "×") -> str:
        """"×1.42 (95 % interval ×1.21–×1.66; covers …)", or "(allowance …)" for the floor alone."""
        f = f"{prefix}{{:,.{digits}f}}"
        name = f"{100 * LEVEL:.0f} % interval" if self.measured else "allowance"
        return f"{f.format(self.value)} ({name} {f.format(self.lo)}–{f.format(self.hi)}; {self.covers})"


def request_values(run: dict, metric: str) -> np.ndarray | None:
    """The per-request values a figure is a statistic of, or None where the row keeps none it can be
    drawn from: TTFT, TPOT and end-to-end latency per request. A mixed load's unprefixed figures are the
    short requests' (`workloads`), so they are drawn from the short requests' lists. A P99 or a maximum
    of a few requests has none: resampling them can never go past the slowest request seen, and requests
    of one wave stall together, so fewer than MIN_TAIL requests beyond the percentile are drawn over runs
    only (or not at all). A P99 of ITL is over every token gap, which a row does not keep."""
    m = METRIC.match(metric)
    if not m or m["base"] == "itl" or m["stat"] == "max":
        return None
    kind, base = m["kind"] or "", m["base"]
    if not kind and isinstance(run.get("short_request_ttft_ms"), list):
        kind = "short_"  # a mixed load: its headline latencies are the short requests'
    if base in ("ttft", "tpot"):
        picked = run.get(f"{kind}request_{base}_ms")
    else:
        picked = run.get("request_e2el_ms")
        if kind:  # a mixed load keeps one list for both kinds, in the order of request_kind
            kinds = run.get("request_kind")
            if not (isinstance(kinds, list) and isinstance(picked, list) and len(kinds) == len(picked)):
                return None
            picked = [v for v, k in zip(picked, kinds) if k == kind[:-1]]
    if not isinstance(picked, list):
        return None
    arr = np.asarray([v for v in picked if isinstance(v, (int, float)) and not math.isnan(v)], dtype=float)
    if base == "tpot":
        arr = arr[arr > 0]  # a one-token answer has no TPOT (vLLM's bench leaves it out; the row writes 0)
    if m["stat"].startswith("p") and arr.size * (1 - float(m["stat"][1:]) / 100) < MIN_TAIL:
        return None
    return arr if arr.size >= 2 else None


def _statistic(metric: str):
    stat = METRIC.match(metric)["stat"]
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
    pick = rng.integers(n, size=(DRAWS, n))
    if all(v is not None for v in per_request):
        stat = _statistic(metric)
        centre = float(np.median([stat(v) for v in per_request]))
        if centre and abs(centre / value - 1) <= AGREE:
            # each slot of each draw: a run drawn again, and its requests drawn again for that slot alone
            boot = np.stack([stat(v[rng.integers(v.size, size=(DRAWS, n, v.size))], axis=2) for v in per_request])
            out = np.median(boot[pick, np.arange(DRAWS)[:, None], np.arange(n)[None, :]], axis=1)
            count = sum(v.size for v in per_request)
            return out * (value / centre), f"{count} requests" + (f" in {n} runs" if n > 1 else "")
    figures = [_number(r, metric) for r in runs]
    if n < 2 or any(f is None for f in figures):
        return None
    out = np.median(np.asarray(figures)[pick], axis=1)
    centre = float(np.median(figures))
    return (out * (value / centre) if centre else out), f"{n} runs"


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
    than ×(1 + floor) either way around the measured ratio, on a log scale, so the interval of b ÷ a is
    the inverse of that of a ÷ b (two engine starts differ by about that much). None where a figure is
    missing or zero."""
    x, y = _number(before, metric), _number(after, metric)
    if not x or not y:
        return None
    r = y / x
    rng = np.random.default_rng(zlib.crc32(metric.encode()))
    a, b = draws(before, metric, rng), draws(after, metric, rng)
    lo, hi = r / (1 + floor), r * (1 + floor)
    floor_words = f"the start-to-start floor ×÷{1 + floor:.2f}, the guide's default (chapter 0)"
    if a is None and b is None:
        return Interval(r, lo, hi, f"{floor_words} only: not measured here, since each side ran once with no "
                                   "request list for this figure", measured=False)
    da = a[0] if a else np.full(DRAWS, x)
    db = b[0] if b else np.full(DRAWS, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = db / da
    q = q[np.isfinite(q) & (q > 0)]
    if q.size:
        blo, bhi = np.percentile(q, [50 * (1 - LEVEL), 100 - 50 * (1 - LEVEL)])
        lo, hi = min(lo, float(blo)), max(hi, float(bhi))
    sides = " and ".join(f"{c} {'before' if i == 0 else 'after'}" for i, c in
                         ((0, a[1] if a else "one run"), (1, b[1] if b else "one run")))
    return Interval(r, lo, hi, f"bootstrap over {sides}, never narrower than {floor_words}")
