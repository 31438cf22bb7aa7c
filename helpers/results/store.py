"""An append-only store of result rows (JSON lines), keyed by config + load + environment.

Each machine writes its own file, `results/<env_id>.jsonl`; a row is written and flushed
as soon as it is measured, so a crash loses nothing already stored. A workshop leader can
copy everyone's files into one folder and `load_all` them together.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from helpers.results.fingerprint import fingerprint


def default_dir() -> Path:
    return Path(os.environ.get("GUIDE_RESULTS") or Path(__file__).resolve().parents[2] / "results")


# Bumped whenever the way a figure is measured changes, so older stored rows stop matching.
# 3: warm-up after each start, repeats with fresh prompts; 4: prefix cache emptied before each run;
# 5: per-request TPOT as vLLM's benchmark computes it ((latency - TTFT) / (tokens - 1)), not the mean chunk gap;
# 6: a mixed load's duration from its first request, not from the clients' start-up
# 7: a mixed load's long prompts start once every short request decodes (/metrics), and the row records
# when they came and how many short answers were still streaming then
MEASUREMENT_VERSION = 7


def result_key(config: dict, load: dict | None, env_id: str, kind: str = "load") -> str:
    blob = json.dumps({"config": config, "load": load, "env": env_id, "kind": kind, "v": MEASUREMENT_VERSION},
                      sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


class ResultStore:
    def __init__(self, folder: str | Path | None = None):
        self.folder = Path(folder) if folder else default_dir()

    @property
    def path(self) -> Path:
        return self.folder / f"{fingerprint()['env_id']}.jsonl"

    def append(self, row: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        line = json.dumps({k: v for k, v in row.items() if k not in HOW_TAKEN}, default=jsonable)
        with open(self.path, "ab+") as f:
            f.seek(0, os.SEEK_END)
            if f.tell():  # after a torn last line (a crash mid-write), start a fresh line
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write((line + "\n").encode())
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[dict]:
        """This machine's rows, oldest first; a torn last line (a crash mid-write) is skipped."""
        return read_rows(self.path)

    def get(self, key: str) -> dict | None:
        """The newest stored row for a key, or None."""
        found = None
        for row in self.rows():
            if row.get("key") == key:
                found = row
        return found

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows())

    def why_none_matches(self, row: dict) -> str:
        """Why no stored row has `row`'s key, in a reader's words: the closest stored row of the same
        kind and what differs (a setting, the load, the machine's software, the measurement version)."""
        fields = [k for k in row if k.startswith(_KEYED) and k not in _NOT_KEYED]
        same_kind = [r for r in self.rows() if r.get("kind") == row.get("kind")]
        if not same_kind:
            return f"nothing of kind {row.get('kind')!r} is stored in {self.path.parent} for this machine yet"
        closest = min(same_kind, key=lambda r: sum(r.get(k) != row.get(k) for k in fields))
        differ = [k for k in fields if closest.get(k) != row.get(k)]
        if not differ:
            return "a stored row of this config and load was taken with another number of repeats"
        said = ", ".join(f"{k} ({_short(closest.get(k))} stored, {_short(row.get(k))} now)" for k in differ[:3])
        return f"no stored row matches; the closest differs in {said}{' and more' if len(differ) > 3 else ''}"


# Not stored: how a row returned by reuse_or_measure was taken (this call's, not the measurement's).
HOW_TAKEN = ("reused", "measured_because")
_KEYED = ("cfg_", "load_", "env_env_id", "measurement_version", "engine_layout", "repeats", "kind")
_NOT_KEYED = ("load_label",)


def _short(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def reuse_or_measure(row: dict, take: Callable[[], dict], *, force: bool = False,
                     store: ResultStore | None = None) -> dict:
    """The one way the guide reuses a measurement or takes it: the newest stored row with `row`'s key
    (`result_key`: the same config, load, kind, machine and measurement version) unless `force`; else
    `row` with the figures `take()` returns, stored at once and returned. Either way the row says how
    it was taken: `reused` (True/False) and `measured_because` (None when reused; else "force=True" or
    what no stored row matched, from `why_none_matches`)."""
    store = store or ResultStore()
    if not force and (old := store.get(row["key"])) is not None:
        return {**old, "reused": True, "measured_because": None}
    why = "force=True" if force else store.why_none_matches(row)
    row = {**row, **take()}
    store.append(row)
    return {**row, "reused": False, "measured_because": why}


def load_all(folder: str | Path | None = None) -> pd.DataFrame:
    """Every machine's rows in a folder, for pooling a workshop's results."""
    folder = Path(folder) if folder else default_dir()
    rows = [r for p in sorted(folder.glob("*.jsonl")) for r in read_rows(p)]
    return pd.DataFrame(rows)


def read_rows(path: Path) -> list[dict]:
    """The rows of one store file, oldest first; a torn line (a crash mid-write) is skipped. A run
    stored again (`experiment.with_floor` adds its floor to the same `run_id`) counts once, as its
    newest record, where that record was written."""
    if not path.exists():
        return []
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    newest = {r["run_id"]: i for i, r in enumerate(rows) if r.get("run_id")}
    return [r for i, r in enumerate(rows) if not r.get("run_id") or newest[r["run_id"]] == i]


def jsonable(x):
    """json.dump's `default` for rows: numpy/pandas numbers and arrays as plain values, anything else as text."""
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "item"):
        return x.item()
    return str(x)
