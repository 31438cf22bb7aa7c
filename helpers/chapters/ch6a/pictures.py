"""What chapter 6a's two pictures show, in sentences computed from the rows they draw: a run past the
knee from the inside (its timeline), and the configurations of the tuning path as a Pareto front."""
from __future__ import annotations

import statistics

from helpers import tables
from helpers.results.rows import over_saturated


def busiest(sweep_rows: list[dict]) -> dict:
    """The sweep's row at the highest rate offered: the one whose queue grows most."""
    return max(sweep_rows, key=lambda r: r["load_request_rate"])


def inside_the_busiest(row: dict) -> str:
    """The requests in the engine (running + waiting, /metrics) when the first and the last request were
    sent, whether they were still growing then (`rows.over_saturated`), and the median wait for a first
    token of the first and the last quarter of the requests, in the order sent."""
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
    state = {True: "still growing when the last request was sent: **over-saturated**, its latencies describe a "
                   "queue that had not stopped growing, not a steady state",
             False: "no longer growing by the time the last request was sent: a steady state",
             None: "too few /metrics samples while requests were sent to tell whether they still grew"}
    return (f"At **{row['load_request_rate']:g} req/s**, the highest rate offered, the engine held "
            f"{held(min(starts)):.0f} request(s) when the first was sent and {held(max(starts)):.0f} when the last "
            f"was, {state[over_saturated(row)]}. The first quarter of the requests sent waited a median "
            f"{first:.0f} ms for their first token; the last quarter, {last:.0f} ms.")


def front_sentence(rows: dict[str, dict], tuned: str, tpot_limit_ms: float) -> str:
    """Which of the named rows the front holds (`tables.per_user`, as the chart draws it), where the tuned
    one lies, and which meet the TPOT target at the median."""
    points = tables.per_user(rows)
    on = list(points.loc[points["on the front"], "config"])
    row = points.loc[points["config"] == tuned]
    if row.empty:
        return f"On the front: {', '.join(on)}."
    p = row.iloc[0]
    better = points.loc[(points["tokens/s per user"] >= p["tokens/s per user"])
                        & (points["total output tokens/s"] >= p["total output tokens/s"])
                        & (points["config"] != tuned), "config"]
    where = ("on the front: no configuration measured beat it on both axes" if p["on the front"] else
             f"inside the front: {', '.join(better)} beat it on both axes (goodput, which chose it, counts "
             "requests within the target, which neither axis does)")
    fast = points.loc[points["tokens/s per user"] >= 1000 / tpot_limit_ms, "config"]
    return (f"On the front: {', '.join(on)}. The tuned configuration ({tuned}) is {where}. At the median, "
            f"the TPOT target ({tpot_limit_ms:g} ms) is met by " + (", ".join(fast) if len(fast) else "none of them")
            + ".")
