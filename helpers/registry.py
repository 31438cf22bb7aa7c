"""Course furniture computed from data: the table of contents from each notebook's metadata,
and "how long does an engine take to start here" from this machine's stored rows.

Prose in the notebooks may not type such numbers (tests/test_prose.py); it asks this module.

The registry is each notebook's `metadata.guide`, the one place a chapter is described:
  chapter / lab        its number (90: the workshop notebook; `workshop: true`)
  part                 a letter ("a", "b", …) where one chapter spans several notebooks; each has its own home
  summary              what it measures, one line (the README's and the contents' tables)
  accelerator          ["CPU", "GPU"] or ["GPU"]: the test runner skips a GPU-only notebook on a CPU
  minutes_smoke/_full  the estimate at each size on a 2-core CPU
  engine_starts_smoke  engine starts at the smoke size when nothing is stored
  solution             true for a lab's worked solution (labs/solutions/)
Each entry's home is derived from its number and part (`home`): helpers/chapters/chN.py, chNa.py or
labN.py, tested by tests/chapters/test_<home>.py.
`readme_table()` is the README's chapter table: tests/test_environment.py fails, printing it, when the
README's copy differs, and fails when a notebook lacks a key.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from helpers.i18n import tr

ROOT = Path(__file__).resolve().parent.parent


def chapters() -> list[dict]:
    """One entry per notebook and lab: file, title (its first heading) and its metadata."""
    out = []
    for path in [*sorted(ROOT.glob("notebooks/[0-9]*.ipynb")), *sorted(ROOT.glob("labs/lab*.ipynb"))]:
        nb = json.loads(path.read_text())
        first = "".join(nb["cells"][0]["source"]).splitlines()[0] if nb["cells"] else path.stem
        out.append({"path": path, "title": first.lstrip("# ").strip(), **nb["metadata"].get("guide", {})})
    return out


def runs_here(entry: dict) -> bool:
    """False for a notebook whose accelerators leave out the CPU, on a machine without a CUDA GPU:
    the test runner skips it and the book marks it, for that reason."""
    from helpers import hardware
    return "CPU" in entry.get("accelerator", ["CPU"]) or bool(hardware.describe()["gpu_count"])


def home(entry: dict) -> str:
    """The notebook's home module under helpers/chapters/: "ch3", "ch4a", "lab4", "ch90" (one per notebook)."""
    return f"lab{entry['lab']}" if "lab" in entry else f"ch{entry['chapter']}{entry.get('part', '')}"


def contents(here: str = "notebooks") -> str:
    """A Markdown table of contents, linked relative to the folder `here`; minutes are the
    notebook's own estimate (metadata `minutes_smoke` / `minutes_full`, checked by CI's timings)."""
    entries = [ch for ch in chapters() if ch.get("chapter") != 0]
    labs = sum(ch["path"].parent.name == "labs" for ch in entries)
    starts = sum(int(ch.get("engine_starts_smoke") or 0) for ch in entries)
    minutes = sum(int(ch.get("minutes_smoke") or 0) for ch in entries)
    rows = [tr("{n_entries} notebooks after this one and {labs} labs; at the smoke size they start about {starts} "
               "engines and take about {minutes} minutes on a 2-core CPU.", n_entries=len(entries) - labs, labs=labs,
               starts=starts, minutes=minutes), "",
            tr("| notebook | needs | engine starts (smoke) | minutes, smoke / full (estimate) |"), "|---|---|---|---|"]
    for ch in entries:
        rel = Path("..") / ch["path"].relative_to(ROOT) if ch["path"].parent.name != here else ch["path"].name
        rows.append(f"| [{_title(ch)}]({rel}) | {' or '.join(ch.get('accelerator', ['CPU']))} | "
                    f"{ch.get('engine_starts_smoke', '?')} | "
                    f"{ch.get('minutes_smoke', '?')} / {ch.get('minutes_full', '?')} |")
    return "\n".join(rows)


def _title(entry: dict) -> str:
    """A notebook's title in the learner's language: its own catalog's entry for the heading (the title is
    the notebook's first heading), else the English."""
    from helpers.i18n import language
    if language() == "en":
        return entry["title"]
    from helpers.i18n.catalogs import lookup
    return lookup(entry["path"], language())(entry["title"]) or entry["title"]


def start_seconds(eager: bool | None = True, rows: list[dict] | None = None) -> list[float]:
    """Engine start times stored on this machine (eager or compiled engines; None: both)."""
    if rows is None:
        from helpers.results import ResultStore
        rows = ResultStore().rows()
    out = {}  # rows measured on the same engine share its start: count each start once
    for r in rows:
        s = r.get("start_seconds")
        if not s or s != s:
            continue
        if eager is not None and bool(r.get("cfg_enforce_eager", True)) != eager:
            continue
        out[float(s)] = None
    return list(out)


def start_note(eager: bool | None = True, rows: list[dict] | None = None) -> str:
    """One sentence for the learner: how long starts took on this machine so far."""
    seen = start_seconds(eager, rows)
    kind = {True: "eager", False: "compiled", None: ""}[eager]
    if not seen:
        return (tr("No {kind} engine has started on this machine yet, so the guide cannot say how long a start "
                   "takes here; the progress line shows it while it happens.", kind=kind))
    return (tr("On this machine {n_seen} {kind} engine start(s) so far took a median of {statistics_median:.0f} s "
               "(from {seen:.0f} to {seen_2:.0f} s).", n_seen=len(seen), kind=kind,
               statistics_median=statistics.median(seen), seen=min(seen), seen_2=max(seen)))


def readme_table() -> str:
    """The README's chapter table, from the registry (a test keeps the README's copy equal)."""
    rows = ["| notebook | what it measures | minutes, smoke / full | engine starts (smoke) |", "|---|---|---|---|"]
    for ch in chapters():
        rel = ch["path"].relative_to(ROOT)
        needs = "" if "CPU" in ch.get("accelerator", ["CPU"]) else " (GPU only)"
        rows.append(f"| [{rel.stem}]({rel}){needs} | {ch.get('summary', '?')} | "
                    f"{ch.get('minutes_smoke', '?')} / {ch.get('minutes_full', '?')} | "
                    f"{ch.get('engine_starts_smoke', '?')} |")
    return "\n".join(rows)

