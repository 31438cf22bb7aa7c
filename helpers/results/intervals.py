"""Intervals: where a measured figure's typical value on this engine likely lies, and the ratio of two.

A row keeps every repeat (`runs`) and, in each, every request's TTFT, TPOT and end-to-end latency.
Each side of a comparison is summarised on a log scale as a centre and a standard error, with what it
covers:

* several runs: the spread of the runs' own figures, a t interval (n − 1 degrees of freedom). The run
  is the unit drawn: requests of one run share its engine's state and its waves, so they are not
  independent draws of what another run would give. Three runs give a wide interval, as they should.
* one run with a request list of at least MIN_REQUESTS that gives the figure (a mean or median TTFT, TPOT
  or end-to-end latency; a mixed load's headline figures from its short requests): a bootstrap over those
  requests (Efron's, DRAWS draws), read as the draws' standard deviation on a log scale with n − 1
  degrees of freedom. It covers this run's requests only: another run of the same engine can land
  outside it. A tail (a P99 of a few requests, a maximum) is not drawn from requests: a resample can
  never pass the slowest one seen.
* otherwise nothing is drawn (one run of a throughput, a gauge, a P99 of token gaps).

The interval of a ratio of two rows adds the two sides' errors, and is never narrower than the floor of
that figure (`verdicts.default_noise`) either way around the measured ratio, on a log scale: two rows come
from two engine starts, which neither side's draws can see, and two starts of one configuration differ
by about that much on these machines. Where nothing was drawn on either side it is the floor alone, an
allowance rather than a measured interval.

An interval is a confidence interval for the figure's typical value, not a prediction of where one more
run lands: a single re-run can fall outside it.
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import numpy as np

from helpers.i18n import tr

LEVEL = 0.95
DRAWS = 1000
MIN_TAIL = 5  # requests beyond a percentile needed before its bootstrap over requests means anything
MIN_REQUESTS = 10  # fewer: the interval (t with 1-8 degrees of freedom) is too wide to tell anything, and a few
# requests of one run, sent in one or two waves, are hardly independent draws
MAX_REQUESTS = 2000  # a larger list (an imported file) is drawn from a fixed sample of this many
AGREE = 0.02  # the recomputed figure must agree with the row's within this, or its lists are not its basis
METRIC = re.compile(r"^(?P<kind>short_|long_)?(?P<stat>mean|median|p\d+(?:\.\d+)?|max)"
                     r"_(?P<base>ttft|tpot|e2el|itl)_ms$")
# Student's t at 97.5 % by degrees of freedom (a two-sided 95 % interval); beyond 30, the normal's 1.96
_T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18,
         15: 2.13, 20: 2.09, 30: 2.04}


def t975(df: float) -> float:
    if not math.isfinite(df) or df > 30:
        return 1.96
    return _T975[max(k for k in _T975 if k <= max(1, int(df)))]


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
        return tr("{value} ({name} {lo}–{hi}; {covers})", value=f.format(self.value), name=self.name(),
                  lo=f.format(self.lo), hi=f.format(self.hi), covers=self.covers)

    def name(self) -> str:
        """"95 % interval", or "allowance" for the floor alone, in the learner's language."""
        return tr("{level} % interval").format(level=f"{100 * LEVEL:.0f}") if self.measured else tr("allowance")


@dataclass(frozen=True)
class Side:
    """One row's figure on a log scale: its centre, standard error and degrees of freedom, and what they cover."""
    log: float
    se: float
    df: float
    covers: str
    bootstrap: bool = False  # drawn from one run's requests (not a t interval over runs)


def request_values(run: dict, metric: str) -> np.ndarray | None:
    """The per-request values a figure is a statistic of, or None where the row keeps none it can be
    drawn from: TTFT, TPOT and end-to-end latency per request. A mixed load's unprefixed figures are the
    short requests' (`workloads`), so they are drawn from the short requests' lists. A tail with fewer than
    MIN_TAIL requests beyond its percentile, and a maximum, have none. A P99 of ITL is over every token
    gap, which a row does not keep."""
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
    if arr.size > MAX_REQUESTS:
        arr = np.random.default_rng(arr.size).choice(arr, MAX_REQUESTS, replace=False)
    return arr if arr.size >= MIN_REQUESTS else None


def _statistic(metric: str):
    stat = METRIC.match(metric)["stat"]
    if stat == "mean":
        return lambda a, axis=None: np.mean(a, axis=axis)
    if stat == "median":
        return lambda a, axis=None: np.median(a, axis=axis)
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


def side(row, metric: str) -> Side | None:
    """One row's figure as a Side (see the module's docstring), or None where nothing can be drawn."""
    value = _number(row, metric)
    if not value or value <= 0 or not math.isfinite(value):
        return None
    runs = row.get("runs") if hasattr(row, "get") else None
    runs = [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
    runs = runs or [dict(row)]
    figures = [_number(r, metric) for r in runs]
    if len(runs) > 1:
        if any(f is None or f <= 0 for f in figures):
            return None
        logs = np.log(figures)
        return Side(math.log(value), float(np.std(logs, ddof=1) / math.sqrt(len(logs))), len(logs) - 1,
                    tr("{n} runs").format(n=len(runs)))
    values = request_values(runs[0], metric)
    if values is None:
        return None
    stat = _statistic(metric)
    centre = float(stat(values))
    if not centre or centre <= 0 or abs(centre / value - 1) > AGREE:
        return None  # the lists do not give the row's own figure: they are not its basis
    rng = np.random.default_rng(zlib.crc32(metric.encode()) + values.size)
    draws = stat(values[rng.integers(values.size, size=(DRAWS, values.size))], axis=1)
    draws = draws[draws > 0]
    if draws.size < DRAWS // 2:
        return None
    # the draws' spread on a log scale, with the small-sample correction √(n / (n − 1)) and n − 1 degrees of freedom
    se = float(np.std(np.log(draws))) * math.sqrt(values.size / (values.size - 1))
    return Side(math.log(value), se, values.size - 1, tr("this run's {n} requests only").format(n=values.size),
                bootstrap=True)


def of(row, metric: str) -> Interval | None:
    """The 95 % interval of one row's figure, or None where nothing could be drawn."""
    s = side(row, metric)
    if s is None:
        return None
    half = t975(s.df) * s.se
    how = tr("bootstrap over {covers}") if s.bootstrap else tr("t interval over {covers}")
    return Interval(math.exp(s.log), math.exp(s.log - half), math.exp(s.log + half), how.format(covers=s.covers))


def of_ratio(before, after, metric: str, floor: float) -> Interval | None:
    """The interval of after ÷ before for `metric`: the two sides' errors added, never narrower than
    ×÷(1 + floor) around the measured ratio (log scale, so b ÷ a is the inverse of a ÷ b). None where a
    figure is missing, zero or negative."""
    x, y = _number(before, metric), _number(after, metric)
    if not x or not y or x <= 0 or y <= 0 or not math.isfinite(x * y):
        return None
    r = y / x
    lo, hi = r / (1 + floor), r * (1 + floor)
    floor_words = tr("the start-to-start floor ×÷{floor} (chapter 0)").format(floor=f"{1 + floor:.2f}")
    a, b = side(before, metric), side(after, metric)
    if a is None and b is None:
        return Interval(r, lo, hi, tr("{floor_words} only: no interval drawn here, since neither side has repeats or "
                                      "a request list that gives this figure").format(floor_words=floor_words),
                        measured=False)
    sides = [s for s in (a, b) if s is not None]
    half = t975(min(s.df for s in sides)) * math.sqrt(sum(s.se ** 2 for s in sides))
    widened = r * math.exp(half) > hi + 1e-12  # the draws reached past the floor
    lo, hi = min(lo, r * math.exp(-half)), max(hi, r * math.exp(half))
    said = tr(" and ").join(w.format(covers=s.covers if s else tr("nothing drawn"))
                            for s, w in ((a, tr("{covers} before")), (b, tr("{covers} after"))))
    if not widened:
        return Interval(r, lo, hi, tr("{floor_words}, wider than what was drawn ({said})").format(
            floor_words=floor_words, said=said), measured=False)
    return Interval(r, lo, hi, tr("{said}, never narrower than {floor_words}").format(said=said,
                                                                                     floor_words=floor_words))
