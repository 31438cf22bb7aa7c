"""A latency target (SLO) and what a run's rows say about it: goodput, and the highest offered
request rate that still meets the target (the knee of a rate sweep).

Goodput is vLLM's benchmark's `request_goodput` (its `--goodput ttft:… tpot:…`): completed
requests per second, at the offered rate, whose TTFT and TPOT both stayed within the limits
(TPOT as vLLM computes it: (latency - TTFT) / (output tokens - 1)). DistServe's goodput, the
highest rate at which the required share meets the target, is what `knee` finds. A row keeps every
request's TTFT and TPOT (helpers/load/workloads.summarize), so any target can be judged after
the run, on the same measurements.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from helpers.errors import ConfigError
from helpers.i18n import tr
from helpers.results.gaps import missing


@dataclass(frozen=True)
class SLO:
    """Both limits in milliseconds; `share`: the fraction of requests that must meet them
    (0.9: "P90 within target")."""

    ttft_ms: float
    tpot_ms: float
    share: float = 0.9

    def __post_init__(self):
        for name, value, low, high in (("ttft_ms", self.ttft_ms, 5, 600_000), ("tpot_ms", self.tpot_ms, 0.5, 60_000)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ConfigError(name, tr("must be a positive number of milliseconds, got {value!r}.", value=value),
                                  tr("{name}=2000 (TTFT) or {name}=100 (TPOT): milliseconds.", name=name))
            if value < low:
                raise ConfigError(name, tr("({value}) is under {low} ms: that looks like seconds, not milliseconds.",
                                           value=value, low=low),
                                  tr("{name}={value:g} if you meant {value_2} s.", name=name, value=value * 1000,
                                     value_2=value))
            if value > high:
                raise ConfigError(
                    name,
                    tr(
                        "({value}) is over {high:,} ms: that looks like microseconds, or a "
                        "target nothing would notice.",
                        value=value,
                        high=high,
                    ),
                    tr("{name} in milliseconds, e.g. {value:g}.", name=name, value=value / 1000),
                )
        if not isinstance(self.share, (int, float)) or not 0 < self.share <= 1:
            hint = (
                f"share={self.share / 100:g}"
                if isinstance(self.share, (int, float)) and 1 < self.share <= 100
                else "share=0.9"
            )
            raise ConfigError(
                "share",
                tr("must be a fraction in (0, 1], got {share!r}.", share=self.share),
                tr("{hint} (a fraction, not a percent).", hint=hint),
            )

    def label(self) -> str:
        return tr(
            "TTFT ≤ {ttft_ms:g} ms and TPOT ≤ {tpot_ms:g} ms for {value:g} % of requests",
            ttft_ms=self.ttft_ms,
            tpot_ms=self.tpot_ms,
            value=100 * self.share,
        )

    def met_share(self, row: dict) -> float | None:
        """Share of the requests sent that met both limits, a failed request counting as a miss
        (median over the repeats); None for rows without per-request latencies."""
        shares = []
        for run in row.get("runs") or [row]:
            if (counted := self.met_and_sent(run)) is None:
                return None
            met, sent = counted
            shares.append(met / sent if sent else 0.0)
        return float(statistics.median(shares)) if shares else None

    def met_and_sent(self, run: dict) -> tuple[int, int] | None:
        """(requests that met both limits, requests sent) in one run: a request that failed was
        sent and missed the target (four failed and four fast of eight is half, not all). None
        without per-request latencies."""
        ttfts, tpots = run.get("request_ttft_ms"), run.get("request_tpot_ms")
        if ttfts is None or tpots is None:
            return None
        met = sum(t <= self.ttft_ms and p <= self.tpot_ms for t, p in zip(ttfts, tpots))
        return met, len(ttfts) + int(run.get("failed") or 0)

    def meets(self, row: dict) -> bool:
        share = self.met_share(row)
        return share is not None and share >= self.share

    def goodput(self, row: dict) -> float | None:
        """Requests per second that met both limits (median over the repeats)."""
        return goodput(row, self.ttft_ms, self.tpot_ms)

    def first_repeat_goodput(self, row) -> float | None:
        """Goodput in the row's first repeat, or None where the row keeps no per-request latencies."""
        return first_repeat_goodput(row, self.ttft_ms, self.tpot_ms)


def first_misses(rows: list[dict], slo: SLO) -> str | None:
    """Which half of the target the first rate that missed it missed on (TTFT, TPOT, failed), in its
    first repeat, and how many requests waited at the peak: a knee is read as queueing only where
    requests waited. None where every rate met the target or rows lack per-request latencies."""
    for row in sorted(rows, key=lambda r: r.get("load_request_rate") or 0):
        if slo.meets(row) or slo.met_share(row) is None:
            continue
        run = (row.get("runs") or [row])[0]
        pairs = list(zip(run["request_ttft_ms"], run["request_tpot_ms"]))
        ttft = sum(t > slo.ttft_ms for t, _ in pairs)
        tpot = sum(p > slo.tpot_ms for _, p in pairs)
        failed = int(run.get("failed") or 0)
        waiting = row.get("peak_waiting")
        waited = (
            tr("{waiting:.0f} request(s) waited to be scheduled at the peak (for a seat, the step's token budget "
               "or KV blocks)", waiting=waiting)
            if waiting
            else tr("no request was seen waiting in the /metrics samples (every half second): a wait shorter than "
                    "that can hide between two reads")
        )
        return (
            tr(
                "At {value:g} req/s, the first rate that missed: {ttft} of {n_pairs} requests over the TTFT "
                "limit, {tpot} over the TPOT limit",
                value=row.get("load_request_rate"),
                ttft=ttft,
                n_pairs=len(pairs),
                tpot=tpot,
            )
            + (tr(", {failed} failed", failed=failed) if failed else "")
            + tr(" (first repeat); {waited}.", waited=waited)
        )
    return None


def goodput(row: dict, max_ttft_ms: float, max_tpot_ms: float, prefix: str = "") -> float | None:
    """Requests per second whose TTFT and TPOT both stayed within the limits (median over the
    repeats), or None for rows stored before per-request latencies were kept. vLLM's benchmark
    calls this `request_goodput` (its `--goodput ttft:… tpot:…`). `prefix`: "short_" / "long_"
    for one side of a mixed load."""
    values = []
    for run in row.get("runs") or [row]:
        ttfts, tpots, seconds = (
            run.get(prefix + "request_ttft_ms"),
            run.get(prefix + "request_tpot_ms"),
            run.get("duration"),
        )
        if ttfts is None or tpots is None or not seconds:
            return None
        values.append(sum(t <= max_ttft_ms and p <= max_tpot_ms for t, p in zip(ttfts, tpots)) / seconds)
    return float(statistics.median(values)) if values else None


@dataclass(frozen=True)
class Knee:
    """What a rate sweep found: the highest offered rate that met the target (None: none did),
    the lowest that did not, and, when none met it, the row that came closest."""

    best_rate: float | None
    first_miss: float | None
    closest_rate: float | None
    closest_share: float | None
    why: str | None = None  # why no knee can be read: rows without per-request latencies
    requests: int | None = None  # requests sent at each rate
    lowest_rate: float | None = None  # the lowest rate swept

    def text(self, slo: SLO) -> str:
        if self.why:
            return tr("No knee can be read from these rows: {why}.", why=self.why)
        return self._found(slo) + self._per_rate(slo)

    def _per_rate(self, slo: SLO) -> str:
        """What "met" means at this size: ceil(share × n) of the n requests of a rate."""
        if not self.requests:
            return ""
        need = math.ceil(slo.share * self.requests - 1e-9)
        few = tr(" (with so few requests one late request decides a rate)") if self.requests - need <= 1 else ""
        return tr(
            " A rate meets the target when {need} of its {requests} requests do{few}.",
            need=need,
            requests=self.requests,
            few=few,
        )

    def _found(self, slo: SLO) -> str:
        if self.best_rate is None:
            odd = (
                tr(" The lowest rate missed while a higher one came closer, so the sweep does not fall with the "
                   "rate as a knee would: slow first requests at the lowest rate (a cold engine, a busy machine) "
                   "can do that; read it with care, or sweep again.")
                if self.lowest_rate is not None
                and self.closest_rate is not None
                and self.closest_rate > self.lowest_rate
                else ""
            )
            met = self.closest_share is not None and self.closest_share >= slo.share
            head = (
                tr("No knee: the lowest rate missed the target ({label}), though {closest_rate:g} req/s met it",
                   label=slo.label(), closest_rate=self.closest_rate)
                if met
                else tr("No offered rate met the target ({label})", label=slo.label())
            )
            return (
                tr(
                    "{head}. Closest: {closest_rate:g} req/s, where {value:.0f} % of requests met it. Loosen "
                    "the target, or tune the engine and sweep again.",
                    head=head,
                    closest_rate=self.closest_rate,
                    value=100 * (self.closest_share or 0),
                )
                + odd
            )
        miss = (
            tr("; at {first_miss:g} req/s it was missed", first_miss=self.first_miss)
            if self.first_miss is not None
            else tr("; every rate tried met it, so the knee lies higher")
        )
        return tr(
            "The highest offered rate that met the target: {best_rate:g} req/s{miss}.",
            best_rate=self.best_rate,
            miss=miss,
        )


def knee(rows: list[dict], slo: SLO) -> Knee:
    """The knee of a sweep: rows with `load_request_rate`, in any order. A rate counts as met
    only if every lower rate met it too (a lucky run above the knee does not move it)."""
    ordered = sorted(rows, key=lambda r: r["load_request_rate"])
    if whys := [why for r in ordered if (why := missing(r, "request_ttft_ms"))]:
        return Knee(None, None, None, None, why=whys[0])
    best = first_miss = None
    for r in ordered:
        if slo.meets(r):
            best = r["load_request_rate"]
        else:
            first_miss = r["load_request_rate"]
            break
    shares = [(slo.met_share(r) or 0.0, r["load_request_rate"]) for r in ordered]
    closest_share, closest_rate = max(shares, key=lambda s: (s[0], -s[1])) if shares else (None, None)
    sent = [int(n) for r in ordered if (n := r.get("load_num_prompts"))]
    return Knee(
        best,
        first_miss,
        closest_rate,
        closest_share,
        requests=max(sent) if sent else None,
        lowest_rate=ordered[0]["load_request_rate"] if ordered else None,
    )


def overloaded(row: dict, slo: SLO, factor: float = 4.0) -> bool:
    """True when a sweep should stop: the median TTFT is many times the target, so higher
    rates only queue more (the rows measured so far are kept)."""
    ttft = row.get("median_ttft_ms")
    return ttft is not None and ttft > factor * slo.ttft_ms


def first_repeat_goodput(row, max_ttft_ms: float, max_tpot_ms: float) -> float | None:
    """Goodput in the row's first repeat (chapter 0's exercise 3, chapter 6's exercise 2); a row
    without `runs` is one run. None where the row keeps no per-request latencies, so the check
    says it cannot check rather than failing."""
    try:
        runs = row.get("runs") if hasattr(row, "get") else row["runs"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(runs, list) or not runs:  # one run kept in the row itself (an imported --save-detailed file)
        return goodput(row, max_ttft_ms, max_tpot_ms) if hasattr(row, "get") else None
    return goodput({"runs": runs[:1]}, max_ttft_ms, max_tpot_ms)
