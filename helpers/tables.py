"""Result rows as pandas DataFrames for notebooks and charts: named, numbered, or as the stacked
/metrics samples of live-usage charts. Presentation only: rows come from `helpers.experiment`."""
from __future__ import annotations

import pandas as pd


def table(rows: list[dict] | dict[str, dict]) -> pd.DataFrame:
    """Rows as a DataFrame, without the bulky per-repeat lists. The /metrics series stays (one
    `timeseries` column): the verdict rules read it to tell a sampled peak from a reading
    (`rows.too_few_samples`, `rows.full_while_waiting`); charts leave it out. Given a dict
    of named rows ({"chunking off": row, ...}), the names become the index, so a notebook
    picks a row by what it is (`df.loc["chunking off"]`) instead of matching settings, and
    each label starts with its name, so chart legends read "stock · …" and "tuned · …"."""
    names = list(rows) if isinstance(rows, dict) else None
    rows = list(rows.values()) if isinstance(rows, dict) else rows
    bulky = lambda k: k == "runs" or k.endswith(("request_ttft_ms", "request_tpot_ms"))
    df = pd.DataFrame([{k: v for k, v in r.items() if not bulky(k)} for r in rows], index=names)
    if names is not None and "config_label" in df:  # legends say what each row is: "tuned · len=2048, …"
        df["config_label"] = [lbl if str(n) == lbl else f"{n} · {lbl}" for n, lbl in zip(names, df.config_label)]
    return df


def numbered(rows: list[dict]) -> pd.DataFrame:
    """`table(rows)` with each config label numbered in run order ("1. guide default", "2. …"),
    so a panel's chart tells apart two runs of the same configuration."""
    df = table(rows).reset_index(drop=True)
    df["config_label"] = [f"{i + 1}. {label}" for i, label in enumerate(df["config_label"])]
    return df


def samples(rows: list[dict]) -> pd.DataFrame:
    """The /metrics samples of each row, stacked, labelled by config."""
    frames = []
    for r in rows:
        ts = pd.DataFrame(r.get("timeseries") or [])
        if not ts.empty:
            ts["config_label"], ts["run_id"] = r["config_label"], r["run_id"]
            frames.append(ts)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
