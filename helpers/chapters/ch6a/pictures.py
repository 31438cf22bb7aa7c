"""What chapter 6a's two pictures show, in sentences computed from the rows they draw: a run past the
knee from the inside (its timeline), and the configurations of the tuning path as a Pareto front."""
from __future__ import annotations

import math
import statistics

from helpers import tables, verdicts
from helpers.results.rows import over_saturated


def busiest(sweep_rows: list[dict]) -> dict:
    """The sweep's row at the highest rate offered: the one whose queue grows most."""
    return max(sweep_rows, key=lambda r: r["load_request_rate"])


def inside_the_busiest(row: dict) -> str:
    """The requests in the engine (running + waiting, /metrics) at the middle and at the end of the time
    requests were sent, whether its queue was still growing (`rows.over_saturated`), and the page's reading
    judged: past the knee each request sent waits longer than the one before, so the last quarter of the
    requests, in the order sent, should wait longer for a first token than the first quarter."""
    run = (row.get("runs") or [row])[0]
    starts, ttfts, series = run.get("request_start_s"), run.get("request_ttft_ms"), row.get("timeseries")
    if not starts or not ttfts or not series:
        return ("This row keeps no timeline (it was measured before timelines were stored): set FORCE = True in "
                "the set-up cell and run again.")

    def held(t: float) -> float:  # the last sample at or before t
        before = [x for x in series if x["t_s"] <= t] or series[:1]
        return (before[-1].get("running") or 0) + (before[-1].get("waiting") or 0)

    order = [t for _, t in sorted(zip(starts, ttfts))]
    q = max(1, len(order) // 4)
    first, last = statistics.median(order[:q]), statistics.median(order[-q:])
    r = last / first if first else math.inf
    judged = (f"×{r:.2f}: longer, as the page reads a rate past the knee" if r > 1 + verdicts.DEFAULT_NOISE else
              f"×{r:.2f}, within the ±{100 * verdicts.DEFAULT_NOISE:.0f} % noise: no queue building up here"
              if r >= 1 - verdicts.DEFAULT_NOISE else f"×{r:.2f}: shorter, so the page's reading **did not hold** here")
    state = {True: "its queue still growing when the last request was sent: **over-saturated**, its latencies "
                   "describe a queue that had not stopped growing, not a steady state",
             False: "not growing by the time the last request was sent: a steady state",
             None: "too few or too scattered /metrics samples while requests were sent to tell whether its queue "
                   "still grew"}
    middle = (min(starts) + max(starts)) / 2
    return (f"At **{row['load_request_rate']:g} req/s**, the highest rate offered, the engine held "
            f"{held(middle):.0f} request(s) halfway through the sending and {held(max(starts)):.0f} when the last "
            f"was sent, {state[over_saturated(row)]}. The first quarter of the requests sent waited a median "
            f"{first:.0f} ms for their first token, the last quarter {last:.0f} ms: {judged}.")


def front_points(sweep_rows: list[dict], path: list[dict], best: dict, rate: float) -> tuple[dict[str, dict], str]:
    """The Pareto chart's points: the baseline at every rate of the sweep (more requests per second: more
    throughput, a slower stream for each user, the trade-off the front shows) and each configuration of the
    tuning path at the tuning rate (at one offered rate the same work only finishes sooner or later, so
    those points move along both axes together); and the name of the tuned one's point."""
    points = {f"baseline at {r['load_request_rate']:g} req/s": r for r in sweep_rows}
    seen = {r.get("run_id") for r in sweep_rows}
    names = {}
    for step in path:
        name = f"baseline at {rate:g} req/s" if step is path[0] else f"{step['step']} at {rate:g} req/s"
        names[id(step)] = name
        if step["row"].get("run_id") not in seen or step is not path[0]:
            points[name] = step["row"]
    return points, names[id(best)]


def front_sentence(rows: dict[str, dict], tuned: str, tpot_limit_ms: float) -> str:
    """Which of the named rows the front holds (`tables.per_user`, as the chart draws it), where the tuned
    one lies, and which meet the TPOT target at the median."""
    points = tables.per_user(rows)
    on = list(points.loc[points["on the front"], "config"])
    row = points.loc[points["config"] == tuned]
    if row.empty:
        return f"On the front: {', '.join(on)}."
    p = row.iloc[0]
    x, y = points["tokens/s per user"], points["total output tokens/s"]
    better = points.loc[(x >= p["tokens/s per user"]) & (y >= p["total output tokens/s"])
                        & ((x > p["tokens/s per user"]) | (y > p["total output tokens/s"])), "config"]
    where = ("on the front: no other point is at least as good on both axes and better on one" if p["on the front"]
             else f"inside the front: {', '.join(better)} did at least as well on both axes and better on one "
             "(goodput, which chose it, counts requests within both targets, TTFT's too, which neither axis shows)")
    fast = points.loc[points["tokens/s per user"] >= 1000 / tpot_limit_ms, "config"]
    return (f"On the front: {', '.join(on)}. The tuned configuration ({tuned}) is {where}. At the median, "
            f"the TPOT target ({tpot_limit_ms:g} ms) is met by " + (", ".join(fast) if len(fast) else "none of them")
            + ".")
