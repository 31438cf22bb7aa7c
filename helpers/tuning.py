"""A tuning path: settings changed one at a time toward a latency target, each step measured
and judged on goodput at that target (helped, within noise, or hurt), the way the source
article orders it: a baseline, then max_model_len, the memory fraction, max_num_seqs and the
batch budget, then prefix caching, then quantization / the KV dtype.

A step that helped is kept and the next step starts from it; a step that did nothing or hurt
is dropped. The notebook supplies the steps (their values depend on the machine and the load)
and the chapter's verdicts come from the returned rows (each step's `effect`).

A step is judged on two figures of the same requests: goodput (requests per second within the
target) and the share of requests within it, which is what the target promises. On one load the
two move together unless the run's length changes: goodput = share × requests ÷ duration. So
goodput can rise while the share falls only when the load finishes sooner; such a change counts as
hurt, not helped, when the share fell beyond the noise (by at least MIN_COUNT_CHANGE requests) or below
the target's where the reference met it.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from helpers import verdicts
from helpers.config import ConfigError
from helpers.i18n import N_, tr
from helpers.results import intervals
from helpers.results.gaps import missing
from helpers.slo import SLO

HELPED, NOTHING, HURT = N_("helped"), N_("within noise"), N_("hurt")  # compared as English, shown with tr()
# From a reference that met the target for no request, one lucky request is not a gain: "helped"
# then needs at least this share of the requests, and at least this many, within the target.
FROM_NONE_SHARE, FROM_NONE_COUNT = 0.25, 2
# Requests within the target are counted: a change of one request (1 of 10 → 2 of 10, ×2 goodput) is one
# request's luck, so a change in the count shorter than this is not counted; only a change of pace is.
MIN_COUNT_CHANGE = 2
RULE = ("helped: goodput at the target higher beyond noise, and the share of requests within the target not lower "
        "beyond noise, or the share rising to the target's where the reference missed it (goodput not lower beyond "
        "noise); hurt: either one lower "
        "beyond noise, or the share falling below the target's where the reference met it (crossing the target "
        "is decisive both ways, even by one request; a failed request is a miss); otherwise a change of fewer than "
        f"{MIN_COUNT_CHANGE} requests within the target counts as none, and "
        "then only the pace (the run's duration) is judged; from a reference that met the target for no request, "
        f"helped needs at least {FROM_NONE_SHARE:.0%} of the requests (and {FROM_NONE_COUNT}) within it")


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


def met_runs(row: dict, slo: SLO) -> list[tuple[int, int]]:
    """(requests within the target, requests sent) for each repeat of a row: a failed request is a miss."""
    return [counted for run in row.get("runs") or [row] if (counted := slo.met_and_sent(run)) is not None]


def count_cannot_decide(row: dict, slo: SLO) -> bool:
    """Whether fewer than MIN_COUNT_CHANGE more of this row's requests could still meet the target (its
    median repeat): then no step from it can win on the count, only by crossing the target or on the pace."""
    runs = met_runs(row, slo)
    return bool(runs) and statistics.median(n - m for m, n in runs) < MIN_COUNT_CHANGE


def _ratio_interval(before: list[float], after: list[float]):
    """The 95 % interval of median(after) ÷ median(before) over the repeats (`results.intervals.of_ratio`),
    never narrower than the start-to-start floor; None where either median is 0."""
    row = lambda values: {"figure": statistics.median(values), "runs": [{"figure": v} for v in values]}  # noqa: E731
    return intervals.of_ratio(row(before), row(after), "figure", verdicts.DEFAULT_NOISE)


def _unchanged(before: list[float], after: list[float]) -> bool:
    """Whether the interval of the ratio of the two medians holds no change (a 0 on one side never does)."""
    iv = _ratio_interval(before, after)
    return bool(iv and iv.includes(1.0)) or statistics.median(before) == statistics.median(after)


def enough_from_none(row: dict, slo: SLO) -> bool:
    """Whether a row met the target for enough requests to count as a gain over a reference that
    met it for none (FROM_NONE_SHARE and FROM_NONE_COUNT, median over the repeats)."""
    met = met_runs(row, slo)
    if not met:
        return False
    count = statistics.median(m for m, _ in met)
    share = statistics.median(m / n if n else 0.0 for m, n in met)
    return count >= FROM_NONE_COUNT and share >= FROM_NONE_SHARE


def effect(before: dict, after: dict, slo: SLO) -> tuple[str, float]:
    """The effect of a change: (helped / within noise / hurt, ratio) on goodput at the target, with
    the share of requests within the target as the second figure (RULE). The ratio is goodput after ÷
    before, or, where the count within the target moved by less than MIN_COUNT_CHANGE, the pace
    (duration before ÷ after): the figure the verdict was judged on.
    (A claim's verdict, verdicts.HELD and the rest, is judged from it in chapters/ch6a.) A change is
    within noise where the 95 % interval of its ratio over the two rows' repeats (goodput, share or
    duration; `_ratio_interval`, never narrower than verdicts.DEFAULT_NOISE) holds no change, and beyond
    it where the interval excludes no change."""
    a, b = goodput_runs(before, slo), goodput_runs(after, slo)
    if not a or not b:
        if why := (missing(before, "request_ttft_ms") or missing(after, "request_ttft_ms")):
            raise ConfigError("slo", tr("goodput cannot be judged on these rows: {why}.", why=why),
                              tr("import a file with per-request data (vllm bench serve --save-detailed, GuideLLM)."))
        raise ConfigError("slo", tr("these rows have no per-request latencies, so goodput cannot be judged."),
                          tr("measure them again (force=True) with this version of the guide."))
    sa = [m / n if n else 0.0 for m, n in met_runs(before, slo)]
    sb = [m / n if n else 0.0 for m, n in met_runs(after, slo)]
    x, y = statistics.median(a), statistics.median(b)
    if x == 0:
        if y == 0:
            return NOTHING, 1.0
        return (HELPED if enough_from_none(after, slo) else NOTHING), float("inf")
    share_x, share_y = statistics.median(sa), statistics.median(sb)
    if share_y < slo.share <= share_x:
        return HURT, y / x  # the reference kept the target's promise and this step does not, however fast
    if share_x < slo.share <= share_y and (y >= x or _unchanged(a, b)):
        return HELPED, y / x  # it keeps the promise the reference broke, even by one request, at no lower goodput
    count_x, count_y = (statistics.median(m for m, _ in met_runs(r, slo)) for r in (before, after))
    if y < x and count_y >= count_x and not _unchanged(a, b):
        return HURT, y / x  # goodput fell beyond noise and not by a request's luck: the run took longer
    durations = [[run.get("duration") or 0 for run in r.get("runs") or [r]] for r in (after, before)]
    if abs(count_y - count_x) >= MIN_COUNT_CHANGE:
        if share_x and share_y < share_x and not _unchanged(sa, sb):
            return HURT, y / x  # a smaller share kept the promise, whatever the requests per second
        ratio, same = y / x, _unchanged(a, b)
    else:  # a count that moved by less than MIN_COUNT_CHANGE: one request's luck; judge only the pace
        ratio, same = pace(before, after), _unchanged(*durations)  # durations after ÷ before: its inverse
        # ...unless the pace disagrees with goodput or with the count (sooner, but fewer requests a second or
        # fewer requests within the target; later with more): then the step did nothing beyond noise. A share
        # that fell does not become a gain by finishing sooner (the module's rule).
        if (ratio > 1 and (y < x or count_y < count_x)) or (ratio < 1 and (y > x or count_y > count_x)):
            return NOTHING, ratio
    if same:
        return NOTHING, ratio
    return (HELPED if ratio > 1 else HURT), ratio


def crossed(before: dict, after: dict, slo: SLO) -> bool:
    """Whether the share within the target crossed the target's share, either way: `effect` then judges on the
    crossing, whatever the goodput ratio (unless it fell beyond noise)."""
    sx, sy = (statistics.median(m / n if n else 0.0 for m, n in met_runs(r, slo)) or 0.0
              for r in (before, after))
    return sy < slo.share <= sx or sx < slo.share <= sy


def judged_on_pace(before: dict, after: dict, slo: SLO) -> bool:
    """Whether `effect` judged this change on the pace (the same load finishing sooner) rather than on
    goodput: no side crossed the target and the count within it moved by less than MIN_COUNT_CHANGE."""
    a, b = goodput_runs(before, slo), goodput_runs(after, slo)
    if not a or not b or statistics.median(a) == 0:
        return False
    sx, sy = (statistics.median(m / n if n else 0.0 for m, n in met_runs(r, slo)) for r in (before, after))
    if sy < slo.share <= sx or sx < slo.share <= sy:
        return False
    cx, cy = (statistics.median(m for m, _ in met_runs(r, slo)) for r in (before, after))
    x, y = statistics.median(a), statistics.median(b)
    if y < x and cy >= cx and not _unchanged(a, b):  # effect's goodput branch: a run that took longer
        return False
    return abs(cy - cx) < MIN_COUNT_CHANGE


def ratio_text(before: dict, after: dict, slo: SLO, ratio: float) -> str:
    """What to print beside a goodput change: the goodput ratio, and the pace where `effect` judged
    on the pace (its `ratio` is then the pace, not goodput after ÷ before)."""
    if ratio == float("inf"):
        return tr("none met the target before")
    g0, g1 = slo.goodput(before) or 0, slo.goodput(after) or 0
    text = f"×{g1 / g0:.2f}" if g0 else tr("from none")
    if judged_on_pace(before, after, slo):
        text += tr("; judged on the pace: the same load finished ×{ratio:.2f} as fast", ratio=ratio)
        if ceiling := pace_ceiling(before, after):
            text += (tr(" (about ×{ceiling:.2f} at most for an engine no faster per request than these two: at an "
                        "offered rate the last request is sent on schedule and takes its own time)", ceiling=ceiling))
    return text


def pace_ceiling(before: dict, after: dict | None = None) -> float | None:
    """The largest pace against `before` at an offered request rate of an engine no faster per request
    than the faster of the two rows: vLLM's benchmark stretches the Poisson gaps so the last request is
    sent at N ÷ rate (`get_request` in vllm/benchmarks/serve.py), and that request then takes at least
    the shortest latency either row saw (not a bound on every engine: a faster one could shorten it
    too). None for a burst load."""
    rate, n = before.get("load_request_rate"), before.get("load_num_prompts")
    if not rate or not n or rate == float("inf"):
        return None
    d = statistics.median(run.get("duration") or 0 for run in before.get("runs") or [before])
    shortest = min(_shortest_latency_s(r) for r in (before, after) if r is not None)
    return d / (n / rate + shortest) if d else None


def _shortest_latency_s(row: dict) -> float:
    """The shortest request of the row, from its first token and its pace (0 where not recorded)."""
    out = row.get("load_output_len") or 0
    ttft, tpot = row.get("request_ttft_ms") or [], row.get("request_tpot_ms") or []
    if not ttft or len(tpot) != len(ttft):
        return 0.0
    return min(t + max(out - 1, 0) * p for t, p in zip(ttft, tpot)) / 1000


def pace(before: dict, after: dict) -> float:
    """How much sooner the same load finished: the ratio of the two rows' median durations."""
    d = [statistics.median(run.get("duration") or 0 for run in r.get("runs") or [r]) for r in (before, after)]
    return d[0] / d[1] if d[1] else 1.0
