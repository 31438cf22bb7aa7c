"""What chapter 6a's two pictures show, in sentences computed from the rows they draw: a run past the
knee from the inside (its timeline), and the configurations of the tuning path as a Pareto front."""
from __future__ import annotations

import re

from helpers import run_size, tables
from helpers.i18n import tr
from helpers.results.rows import over_saturated, queue_growth, queue_unread


def busiest(sweep_rows: list[dict]) -> dict:
    """The sweep's row at the highest rate offered."""
    return max(sweep_rows, key=lambda r: r["load_request_rate"])


def unread_text(why: str) -> str:
    """`rows.queue_unread`'s reason (English, compared by its callers) in the learner's language."""
    if m := re.fullmatch(r"too few requests sent after the ramp \((\d+) of (\d+)\) to tell", why):
        return tr("too few requests sent after the ramp ({after} of {sent}) to tell", after=m[1], sent=m[2])
    if m := re.fullmatch(r"too few requests \((\d+)\) to tell", why):
        return tr("too few requests ({sent}) to tell", sent=m[1])
    return tr(why)  # a fixed reason: the catalog has it (N_ in rows.py)


def inside_the_busiest(row: dict) -> str:
    """The busiest run read from its own requests (`rows.queue_growth`, exact, where the /metrics panels lag):
    the requests in the engine once the ramp from an idle engine was over and when the last request was sent,
    the two halves' waits for a first token, and what `rows.over_saturated` makes of them."""
    q = queue_growth(row)
    if q is None:
        why = queue_unread(row)
        if why == "no timeline":
            return (tr("This row keeps no timeline (it was measured before timelines were stored): set FORCE = "
                       "True in the set-up cell and run again."))
        more = tr(" (the full size sends more)") if why.startswith("too few") and run_size.size() != "full" else ""
        return tr("At **{load_request_rate:g} req/s** the over-saturation rule reads nothing: {why}{more}.",
                  load_request_rate=row['load_request_rate'], why=unread_text(why), more=more)
    state = {True: tr("the queue grew while requests were sent: it looks **over-saturated**, its latencies those "
                      "of a queue that had not stopped growing (a stable load at 70-85 % of capacity reads this "
                      "way in 6-18 % of simulated runs, up to about one in five: `rows.over_saturated`)"),
             False: tr("the queue did not grow in this run, so what the page reads into an over-saturated rate was "
                       "not tested here (a short run of a load just past capacity reads this way in about one run "
                       "in ten)"),
             None: tr("between the two, so whether the queue would have kept growing cannot be told from a run "
                      "this short")}[over_saturated(row)]
    return (tr("At **{load_request_rate:g} req/s**, the highest rate offered, the engine held {held_after_ramp} "
               "request(s) once the ramp from an idle engine was over and {held_at_last_send} when the last "
               "request was sent (counted from the requests' own times). The first half of the {requests} requests "
               "sent after the ramp waited a median {first_half_wait_ms:.0f} ms for their first token, the second "
               "half {second_half_wait_ms:.0f} ms: {state}.", load_request_rate=row['load_request_rate'],
               held_after_ramp=q['held_after_ramp'], held_at_last_send=q['held_at_last_send'], requests=q['requests'],
               first_half_wait_ms=q['first_half_wait_ms'], second_half_wait_ms=q['second_half_wait_ms'], state=state))


def front_points(sweep_rows: list[dict], path: list[dict], best: dict, rate: float) -> tuple[dict[str, dict], str]:
    """The Pareto chart's points: the baseline at every rate of the sweep (more requests per second: more
    throughput, a slower stream for each user, the trade-off the front shows) and each configuration of the
    tuning path at the tuning rate (at one offered rate the same work finishes sooner or later, capped by the
    rate: an engine faster at everything rises on both axes, a setting that trades one for the other, such as
    fewer seats, moves them apart); and the name of the tuned one's point."""
    at = lambda name, r: tr("{name} at {rate:g} req/s", name=name, rate=r)  # noqa: E731 - a point's name
    points = {at(tr("baseline"), r["load_request_rate"]): r for r in sweep_rows}
    seen = {r.get("run_id") for r in sweep_rows}
    names = {}
    for step in path:
        name = at(tr("baseline"), rate) if step is path[0] else at(step["step"], rate)
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
        return tr("On the front: {on}.", on=tr(", ").join(on))
    p = row.iloc[0]
    x, y = points["tokens/s per user"], points["total output tokens/s"]
    better = points.loc[(x >= p["tokens/s per user"]) & (y >= p["total output tokens/s"])
                        & ((x > p["tokens/s per user"]) | (y > p["total output tokens/s"])), "config"]
    chose = (tr("goodput, which chose it") if not tuned.startswith(tr("baseline")) else
             tr("goodput, which no step beat from it"))
    where = (tr("on the front: no other point is at least as good on both axes and better on one") if p["on the front"]
             else tr("inside the front: {better} did at least as well on both axes and better on one ({chose}, "
                     "counts requests within both targets, TTFT's too, which neither axis shows)",
                     better=tr(", ").join(better), chose=chose))
    fast = points.loc[points["tokens/s per user"] >= 1000 / tpot_limit_ms, "config"]
    who = (tr("The baseline (the path kept no step)") if tuned.startswith(tr("baseline")) else
           tr("The tuned configuration ({tuned})", tuned=tuned))
    return (
        tr(
            "On the front: {on}. {who} is {where}. At the median, the TPOT target ({tpot_limit_ms:g} ms) is met by ",
            on=tr(", ").join(on),
            who=who,
            where=where,
            tpot_limit_ms=tpot_limit_ms,
        )
        + (tr(", ").join(fast) if len(fast) else tr("none of them"))
        + tr(".")
    )
