"""Result rows as pandas DataFrames for notebooks and charts: named, numbered, or as the stacked
/metrics samples of live-usage charts. Presentation only: rows come from `helpers.experiment`."""
from __future__ import annotations

import pandas as pd

from helpers.i18n import N_, heading, language, tr

# each request's figures and place in time (helpers/load/workloads.py): kept in the rows, not in tables
BULKY = ("request_ttft_ms", "request_tpot_ms", "request_start_s", "request_e2el_ms", "request_max_itl_ms",
         "request_kind")


def table(rows: list[dict] | dict[str, dict]) -> pd.DataFrame:
    """Rows as a DataFrame, without the bulky per-request lists at the top level. The /metrics series
    stays (one `timeseries` column): the verdict rules read it to tell a sampled peak from a reading
    (`rows.too_few_samples`, `rows.full_while_waiting`); so do the repeats (one `runs` column, each with
    its requests' lists), from which a comparison draws its interval (`results.intervals`); charts leave
    both out. Given a dict
    of named rows ({"chunking off": row, ...}), the names become the index, so a notebook
    picks a row by what it is (`df.loc["chunking off"]`) instead of matching settings, and
    each label starts with its name, so chart legends read "stock · …" and "tuned · …"."""
    names = list(rows) if isinstance(rows, dict) else None
    rows = list(rows.values()) if isinstance(rows, dict) else rows
    bulky = lambda k: k.endswith(BULKY)

    def kept(r: dict) -> dict:
        out = {k: v for k, v in r.items() if not bulky(k)}
        if not isinstance(r.get("runs"), list) and any(bulky(k) for k in r):  # an imported row: its lists are its
            out["runs"] = [{k: v for k, v in r.items() if k != "timeseries"}]  # one run, kept for the intervals
        return out

    df = pd.DataFrame([kept(r) for r in rows], index=names)
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


WAITING, DECODING = N_("sent → first token"), N_("first → last token")  # shown with tr() (charts)


def timeline(row: dict) -> pd.DataFrame:
    """One row per request and phase of a row's first repeat: sent → first token (queued, then
    prefilled) and first → last token (decoding), in seconds on the /metrics samples' axis (an
    imported file's: since its first request), with the request's kind where the load mixed two.
    Empty where the row keeps no timeline (measured before timelines were stored, or a file
    without --save-detailed)."""
    run = (row.get("runs") or [row])[0]
    starts, ttfts, e2els = run.get("request_start_s"), run.get("request_ttft_ms"), run.get("request_e2el_ms")
    if not starts or not ttfts or not e2els:
        return pd.DataFrame(columns=["request", "kind", "phase", "start_s", "end_s", "ttft_ms", "e2el_ms",
                                     "max_itl_ms"])
    origin = 0.0 if row.get("timeseries") else min(starts)
    kinds = run.get("request_kind") or ["request"] * len(starts)
    gaps = run.get("request_max_itl_ms") or [None] * len(starts)
    order = sorted(range(len(starts)), key=lambda i: starts[i])
    out = []
    for n, i in enumerate(order):
        t0, first, last = starts[i] - origin, starts[i] - origin + ttfts[i] / 1000, starts[i] - origin + e2els[i] / 1000
        common = {"request": n + 1, "kind": kinds[i], "ttft_ms": ttfts[i], "e2el_ms": e2els[i], "max_itl_ms": gaps[i]}
        out += [{**common, "phase": WAITING, "start_s": t0, "end_s": first},
                {**common, "phase": DECODING, "start_s": first, "end_s": last}]
    return pd.DataFrame(out)


SERVER_VIEW = {"running": N_("requests running"), "waiting": N_("requests waiting"),
               "kv_cache_usage_pct": N_("KV cache used (%)"), "preemptions": N_("preemptions (count so far)"),
               "prefix_cache_hits": N_("prefix-cache hits (tokens so far)")}  # shown with tr() (charts)


def server_view(row: dict) -> pd.DataFrame:
    """The /metrics samples of the same repeat, long: one row per sample and series, on the timeline's axis."""
    ts = pd.DataFrame(row.get("timeseries") or [])
    cols = [c for c in SERVER_VIEW if c in ts]
    if ts.empty or not cols:
        return pd.DataFrame(columns=["t_s", "series", "value"])
    long = ts.melt(id_vars=["t_s"], value_vars=cols, var_name="series", value_name="value")
    long["series"] = long["series"].map(SERVER_VIEW)
    return long


def pareto(points: pd.DataFrame, x: str, y: str) -> pd.Series:
    """Which points lie on the Pareto front of two figures where more is better: no other point is at
    least as good on both and better on one. vLLM's `_pareto_frontier` (benchmarks/sweep/plot_pareto.py)
    draws the same front except for ties: it keeps a point tied on y with a smaller x, this drops it."""
    on = []
    for _, p in points.iterrows():
        beaten = ((points[x] >= p[x]) & (points[y] >= p[y]) & ((points[x] > p[x]) | (points[y] > p[y]))).any()
        on.append(not beaten)
    return pd.Series(on, index=points.index, name="on the front")


def per_user(rows: dict[str, dict]) -> pd.DataFrame:
    """Each named row as a point of the Pareto chart: output tokens per second in all (the server's
    throughput) and for one user while their answer streams (1000 ÷ median TPOT), and whether it is
    on the front. vLLM's plot_pareto divides the throughput by a user count instead; 1000 ÷ TPOT is what
    a TPOT target promises one user, so the target is a line on this axis."""
    out = pd.DataFrame([{"config": name, "total output tokens/s": r.get("output_throughput"),
                         "tokens/s per user": 1000 / r["median_tpot_ms"] if r.get("median_tpot_ms") else None}
                        for name, r in rows.items()], columns=["config", "total output tokens/s", "tokens/s per user"])
    out = out.dropna()
    out["on the front"] = pareto(out, "tokens/s per user", "total output tokens/s")
    return out


def in_language(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` to show in the learner's language: each heading (column, index names) the `guide`
    catalog has as a heading (`heading()`), and each column or index of labels every one of which the
    catalog has (chapter 6a's figure names, the tuning path's effects), translated; numbers, field names
    (`mean_tpot_ms`, `preemptions`) and setting labels stay as they are. The notebook keeps its English
    frame, so code that picks a column by name works in every language."""
    def label(v):
        return (heading(v) if heading(v) != v else tr(v)) if isinstance(v, str) and v else v

    def labels(values) -> list | None:  # all translated, or None (an empty label does not count)
        said = [label(v) for v in values]
        named = [(v, w) for v, w in zip(values, said) if isinstance(v, str) and v]
        plain = all(isinstance(v, str) or v is None or (isinstance(v, float) and v != v) for v in values)
        return said if plain and named and all(v != w for v, w in named) else None

    out = df.rename(columns=lambda v: heading(v) if isinstance(v, str) and v else v)
    out.columns.names = [heading(n) if isinstance(n, str) else n for n in out.columns.names]
    out.index.names = [heading(n) if isinstance(n, str) else n for n in out.index.names]
    if out.index.nlevels == 1 and (said := labels(list(out.index))) is not None:
        out.index = pd.Index(said, name=out.index.name)
    for i in range(out.shape[1]):
        if pd.api.types.is_object_dtype(out.dtypes.iloc[i]) and (said := labels(list(out.iloc[:, i]))) is not None:
            out.iloc[:, i] = said
    return out


def show_in_language() -> None:
    """In a notebook whose learner reads another language than English (GUIDE_LANG), every DataFrame a cell
    shows is shown through `in_language` (IPython's display formatters); an English notebook is untouched."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or language() == "en" or not hasattr(shell, "display_formatter"):
        return
    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, lambda df: in_language(df)._repr_html_())
    formatters["text/plain"].for_type(pd.DataFrame, lambda df, p, cycle: p.text(repr(in_language(df))))
