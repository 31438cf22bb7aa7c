"""An append-only store of result rows (JSON lines), keyed by config + load + environment.

Each machine writes its own file, `results/<env_id>.jsonl`; a row is written and flushed
as soon as it is measured, so a crash loses nothing already stored. A workshop leader can
copy everyone's files into one folder and `load_all` them together.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd

from helpers.results.fingerprint import fingerprint


def default_dir() -> Path:
    return Path(os.environ.get("GUIDE_RESULTS") or Path(__file__).resolve().parents[2] / "results")


# Bumped whenever the way a figure is measured changes, so older stored rows stop matching.
MEASUREMENT_VERSION = 5  # 3: warm-up after each start, repeats with fresh prompts; 4: prefix cache emptied before each run;
# 5: per-request TPOT as vLLM's benchmark computes it ((latency - TTFT) / (tokens - 1)), not the mean chunk gap


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
        line = json.dumps(row, default=jsonable)
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
