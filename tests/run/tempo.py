"""The test run's tempo log: every engine start, reuse and measured load of the run, one JSON line
each, in GUIDE_TEMPO_LOG (every process of the run appends to the same file), and the `[tempo]`
line pytest prints at the end from it. It listens to helpers/engine/shared.py (`LISTENERS`)."""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path


def log_path() -> Path | None:
    return Path(os.environ["GUIDE_TEMPO_LOG"]) if os.environ.get("GUIDE_TEMPO_LOG") else None


def write(entry: dict) -> None:
    """A listener of helpers.engine.shared: append the event to the run's log."""
    where = log_path()
    if where is None:
        return
    with contextlib.suppress(OSError):
        where.parent.mkdir(parents=True, exist_ok=True)
        with open(where, "a") as f:
            f.write(json.dumps(entry) + "\n")


def started_in(path: Path) -> set[int]:
    """The server pids a tempo log saw start (a test run stops only the engine it started)."""
    try:
        return {json.loads(x).get("server_pid") for x in path.read_text().splitlines() if x.strip()} - {None}
    except (OSError, ValueError):
        return set()


def summary(path: Path) -> str | None:
    """One line: starts, distinct configurations, seconds starting, reuses, the notebooks that started most."""
    try:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    starts = [e for e in entries if e["event"] == "start"]
    if not entries:
        return None
    by_who: dict[str, int] = {}
    for e in starts:
        by_who[e["who"]] = by_who.get(e["who"], 0) + 1
    top = ", ".join(f"{w} {n}" for w, n in sorted(by_who.items(), key=lambda kv: -kv[1])[:3])
    layouts = sorted({e["layout"] for e in starts if e.get("layout")})
    return (f"engine starts: {len(starts)} of {len({e['key'] for e in starts})} distinct configurations, "
            f"{sum(e['seconds'] for e in starts):.0f} s starting (layout {'/'.join(layouts) or '-'}), "
            f"{sum(e['seconds'] for e in entries if e['event'] == 'work'):.0f} s measuring loads; "
            f"{sum(e['event'] == 'reuse' for e in entries)} reuses of an idle engine; most starts: {top or '-'}; "
            f"started again: {_repeats(starts) or 'none'}{_kernels(entries)}")


def _kernels(entries: list[dict]) -> str:
    """How many notebook kernels were forked from the run's kernel zygote (tests/run/kernels.py)."""
    kernels = [e for e in entries if e["event"] == "kernel"]
    return f"; notebook kernels forked: {sum(e['forked'] for e in kernels)} of {len(kernels)}" if kernels else ""


def _repeats(starts: list[dict]) -> str:
    """Each configuration started more than once: how often, and why each later start was needed
    (what ran before it, or how the engine before it ended), counted by reason."""
    seen: dict[str, list[dict]] = {}
    for e in starts:
        seen.setdefault(e["key"], []).append(e)
    parts = []
    for again in (v for v in seen.values() if len(v) > 1):
        whys: dict[str, int] = {}
        for e in again[1:]:
            why = f"{e['who'].split('::')[-1]}: {e.get('after') or 'no engine'}"
            whys[why] = whys.get(why, 0) + 1
        parts.append(f"{again[0]['label']} ×{len(again)} (" + "; ".join(
            w + (f" ×{n}" if n > 1 else "") for w, n in whys.items()) + ")")
    return " | ".join(parts)
