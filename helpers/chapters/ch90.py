"""Notebook 90 · the workshop room: which of the pooled experiments its chart can compare.

Pooling, ratios to each machine's baseline, the room's spread and imported files are generic
(`helpers.results.workshop`, `helpers.results.other_tools`); this is the notebook's own choice of rows.
"""
from __future__ import annotations

import pandas as pd

from helpers import tables
from helpers.i18n import tr
from helpers.results import workshop


def compared(ratios: pd.DataFrame) -> pd.DataFrame:
    """The experiments measured with more than one configuration: one configuration alone is
    its own baseline, a ratio of 1 that says nothing."""
    if not len(ratios):
        return ratios
    return ratios.loc[ratios.groupby("experiment")["config_label"].transform("nunique") > 1]


def measured(room: pd.DataFrame) -> pd.DataFrame:
    """The room's measured rows in your group: imported files never enter the room's ratios, fronts or
    rankings, even in a room that holds nothing else (there the group falls to an imported one)."""
    if room.empty:
        return room
    here = room.get("engine_location", pd.Series("local", index=room.index)) != "imported"
    return room.loc[here & room["compatible"]] if (here & room["compatible"]).any() else room.loc[here]


def room_front(room: pd.DataFrame) -> tuple[str | None, dict[str, dict]]:
    """The experiment (a chapter's tag and its load) that the most machine-and-configuration pairs measured,
    among the room's compatible load rows with a throughput and a TPOT, and its rows named "machine ·
    configuration": the points of the room's Pareto front. (None, {}) where no experiment has two."""
    if room.empty or "output_throughput" not in room or "median_tpot_ms" not in room:
        return None, {}
    d = measured(room)
    d = d.loc[d["output_throughput"].notna() & d["median_tpot_ms"].notna()].copy()
    if "kind" in d:
        d = d.loc[d["kind"].fillna("load") == "load"]
    if d.empty:
        return None, {}
    d["experiment"] = workshop.experiments(d)
    d["point"] = [f"{_machine(r)} · {r['config_label']}" for r in d.to_dict("records")]
    d = d.sort_values("time", kind="stable").drop_duplicates(["experiment", "env_env_id", "config_label"], keep="last")
    counts = d.groupby("experiment")["point"].nunique()
    if counts.max() < 2:
        return None, {}
    best = counts.idxmax()
    return best, {r["point"]: r for r in d.loc[d["experiment"] == best].to_dict("records")}


def _machine(r: dict) -> str:
    """A point's machine: its GPU where it has one, else its CPU, and a short id (the full fingerprint is the
    room table's `machine`)."""
    gpu = r.get("env_gpu")
    name = str(gpu if isinstance(gpu, str) and gpu else r.get("env_cpu_model") or "?")
    return f"{name[:22]}{'…' if len(name) > 22 else ''} #{str(r.get('env_env_id') or '?')[:6]}"


def front_text(experiment: str, rows: dict[str, dict]) -> str:
    """Which machines' configurations the room's front holds, counted from the points the chart draws."""
    points = tables.per_user(rows)
    on = points.loc[points["on the front"], "config"]
    machines = {name.split(" · ")[0] for name in rows}
    front_machines = {name.split(" · ")[0] for name in on}
    return (tr("Experiment **{experiment}**: {n_points} points from {n_machines} machine(s). On the front: {on}, "
               "from {n_front_machines} of the {n_machines} machine(s). A faster machine moves all its points "
               "right (and up too, where the load is not capped by an offered rate), so the room's front says "
               "which hardware and settings together serve best; each machine's own points say what its settings "
               "traded.", experiment=experiment, n_points=len(points), n_machines=len(machines), on=', '.join(on),
               n_front_machines=len(front_machines)))


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("compared", "measured", "room_front")
PANELS = ()
CHECKS = ()
CLAIMS = ("front_text",)
