"""A room's results: pack this machine's rows into one file to hand in, read a folder of
everyone's files, and compare each machine with the room.

Machines in a workshop differ several-fold in speed, so absolute figures say little about a
setting. What a room can compare is each machine's figure as a ratio to its *own* baseline
row in the same experiment ("tuned ÷ stock, on my laptop"). Rows measured with another
measurement version, model or vLLM version are never pooled silently: `room` puts them in
another `group` and marks them `compatible=False`.

    bash guide.sh pack                  # or: python -m helpers.results.workshop pack
    bash guide.sh pack --as vllm-bench  # the same rows as vllm bench serve result files
    python -m helpers.results.workshop unpack results-….guide.json.gz room/
"""
from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

import pandas as pd

from helpers.results import other_tools
from helpers.results.fingerprint import fingerprint
from helpers.results.gaps import AIPERF, GUIDELLM
from helpers.results.store import default_dir, jsonable, load_all, read_rows

FORMAT = "vllm-guide-results"
SUFFIX = ".guide.json.gz"
# Columns that may hold log text, local paths or credentials: never packed.
DROP = re.compile(r"^startup_lines$|api_?key|secret|passw|credential|authoriz|token_value|"
                  r"(^|_)(logs?|log_path|log_lines)$",
                  re.I)
ABS_PATH = re.compile(r"(?<![\w:/.~])(?:~|[A-Za-z]:)?[/\\](?:[^\s/\\'\"]+[/\\])+([^\s/\\'\"]*)")
SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|Bearer\s+\S+)")


def clean(row: dict) -> dict:
    """A row fit to leave this machine: no log lines, no credentials, and a model or any other
    path reduced to its last part (`/home/ana/models/Qwen3-0.6B` → `Qwen3-0.6B`)."""
    return {k: _clean_value(v) for k, v in row.items() if not DROP.search(k)}


def _clean_value(v):
    if isinstance(v, str):
        if os.path.isabs(os.path.expanduser(v)) or (len(v) < 300 and "/" in v and Path(v).expanduser().exists()):
            return Path(v.rstrip("/\\")).name
        return SECRET_VALUE.sub("[removed]", ABS_PATH.sub(lambda m: m.group(1) or "[path]", v))
    if isinstance(v, list):
        return [_clean_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _clean_value(x) for k, x in v.items() if not DROP.search(str(k))}
    return v


def my_rows(folder: str | Path | None = None) -> list[dict]:
    """Every stored row measured on this machine (also under an earlier vLLM, whose rows sit
    in another file of the folder), and no one else's rows copied there."""
    me = fingerprint()["machine_id"]
    folder = Path(folder) if folder else default_dir()
    return [r for p in sorted(folder.glob("*.jsonl")) for r in read_rows(p) if r.get("env_machine_id") == me]


def pack(path: str | Path | None = None, folder: str | Path | None = None, style: str = "guide") -> Path:
    """Write this machine's rows, cleaned, into one gzipped JSON file to hand to a workshop leader.
    `style="vllm-bench"`: instead, a folder with one `vllm bench serve --save-result` file per
    measured load (helpers/results/other_tools.to_vllm_bench), for a team's own tooling."""
    fp = fingerprint()
    rows = [clean(r) for r in my_rows(folder)]
    if not rows:
        raise FileNotFoundError(f"No stored results of this machine in {Path(folder) if folder else default_dir()}: "
                                "run a notebook first (chapter 0 measures one row in about a minute).")
    if style not in ("guide", "vllm-bench"):
        raise ValueError(f"pack(style={style!r}): the styles are 'guide' (one file for a room) and 'vllm-bench'.")
    if style == "vllm-bench":
        path = (Path(path) if path
                else (Path(folder) if folder else default_dir()) / "hand-in" / f"vllm-bench-{fp['env_id']}")
        other_tools.write_vllm_bench(rows, path)
        return path
    # Beside the results, in a subfolder: `room` of this folder does not read it back as another file.
    path = (Path(path) if path
            else (Path(folder) if folder else default_dir()) / "hand-in" / f"results-{fp['env_id']}{SUFFIX}")
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": FORMAT, "format_version": 1, "packed": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "fingerprint": clean({k: v for k, v in fp.items() if k != "python"}), "rows": rows}
    with gzip.open(path, "wt") as f:
        json.dump(blob, f, default=jsonable)
    return path


def read_pack(path: str | Path) -> list[dict]:
    """The rows of a packed file; a clear error for any other file."""
    try:
        with gzip.open(path, "rt") as f:
            blob = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a packed results file ({e}); make one with `bash guide.sh pack`.") from e
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise ValueError(f"{path} is not a packed results file (no '{FORMAT}' marker); "
                         "make one with `bash guide.sh pack`.")
    return blob["rows"]


def unpack(path: str | Path, folder: str | Path) -> list[Path]:
    """Add a packed file's rows to a room folder, one `<env_id>.jsonl` per environment, so
    that `load_all(folder)` reads them; rows already there (same run id) are not added twice."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    by_env: dict[str, list[dict]] = {}
    for r in read_pack(path):
        by_env.setdefault(str(r.get("env_env_id") or "unknown"), []).append(r)
    written = []
    for env, rows in by_env.items():
        target = folder / f"{env}.jsonl"
        seen = {r.get("run_id") for r in read_rows(target)}
        with open(target, "a") as f:
            for r in rows:
                if r.get("run_id") is None or r["run_id"] not in seen:
                    f.write(json.dumps(r, default=jsonable) + "\n")
        written.append(target)
    return written


def machine_label(row) -> str:
    """The fingerprint a learner recognises: CPU, cores, instruction sets, RAM, GPU, vLLM. An
    imported file's rows name the file and the tool instead: the machine is not in the file."""
    if row.get("engine_location") == "imported":
        version = row.get("import_tool_version")  # vllm bench files do not record one
        version = f" {version}" if isinstance(version, str) and version else ""
        return f"imported: {row.get('import_file')} ({row.get('import_tool')}{version})"
    gpu = row.get("env_gpu")
    gpu = gpu if isinstance(gpu, str) and gpu else "no GPU"
    ram = row.get("env_ram_gib")
    ram = f"{float(ram):.0f} GiB" if ram is not None and ram == ram else "? GiB"
    return (f"{row.get('env_cpu_model') or '?'} · {row.get('env_cpu_cores') or '?'} cores · "
            f"{row.get('env_cpu_isa') or '?'} · {ram} · {gpu} · vLLM {row.get('env_vllm') or '?'} "
            f"#{str(row.get('env_machine_id') or '?')[:4]}")


def room(folder: str | Path | None = None, me: str | None = None) -> pd.DataFrame:
    """Every machine's rows in a folder (`*.jsonl` and packed `*.guide.json.gz` files), with
    `machine` (its fingerprint), `model`, `group` (measurement version · model · vLLM version),
    `you` (this machine's rows) and `compatible` (in the same group as yours; where you have no
    rows there, the group with most machines)."""
    folder = Path(folder) if folder else default_dir()
    df = load_all(folder)
    packs = [r for p in sorted(folder.glob(f"*{SUFFIX}")) for r in read_pack(p)]
    if packs:
        df = pd.concat([df, pd.DataFrame(packs)], ignore_index=True)
    if df.empty:
        return pd.DataFrame(columns=["env_env_id", "machine", "model", "group", "you", "compatible"])
    if "run_id" in df:
        df = df.drop_duplicates(subset=["env_env_id", "run_id"], keep="last")
    me = me or fingerprint()["env_id"]
    if "measurement_version" not in df:
        df["measurement_version"] = None
    version = df["measurement_version"].map(lambda v: f"v{int(v)}" if v == v and v is not None else "v?")
    model = df.get("cfg_model", pd.Series(index=df.index, dtype=object))
    model = model.where(model.notna(), df.get("endpoint_model", pd.Series(index=df.index, dtype=object)))
    df["model"] = model.map(lambda m: Path(str(m).rstrip("/")).name if isinstance(m, str) else "?")
    df["machine"] = [machine_label(r) for r in df.to_dict("records")]
    vllm = df.get("env_vllm", pd.Series(index=df.index, dtype=object)).fillna("?").astype(str)
    df["group"] = "measurement " + version + " · " + df["model"] + " · vLLM " + vllm
    imported = df.get("engine_location", pd.Series(index=df.index, dtype=object)) == "imported"
    if imported.any():  # measured elsewhere, by another tool: a group per tool and model, never mixed in
        df.loc[imported, "group"] = ("imported · " + df.loc[imported, "import_tool"].astype(str) + " · "
                                     + df.loc[imported, "model"])
    df["you"] = df["env_env_id"] == me
    mine = df.loc[df["you"]].sort_values("time")["group"]
    measured = df.loc[~imported] if (~imported).any() else df
    ref = mine.iloc[-1] if len(mine) else measured.groupby("group")["env_env_id"].nunique().idxmax()
    df["compatible"] = df["group"] == ref
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def experiments(df: pd.DataFrame) -> pd.Series:
    """What makes rows comparable as one experiment: the notebook's tag and the load, with its offered rate and
    concurrency where the load's label leaves them out (a prefix load's does: chapter 6a's sweep offers one load
    at several rates, and each rate is an experiment of its own)."""
    load = df.get("load_label", pd.Series(index=df.index, dtype=object)).fillna("").astype(str)
    rate = df.get("load_request_rate", pd.Series(index=df.index, dtype=object))
    conc = df.get("load_max_concurrency", pd.Series(index=df.index, dtype=object))
    kind = df.get("load_kind", pd.Series(index=df.index, dtype=object))
    conc = conc.where(kind != "mixed")  # the mixed load sends with no cap: its label says what it is
    extra = [(f" @ {float(r):g} req/s" if isinstance(r, (int, float)) and r == r and "req/s" not in lbl else "")
             + (f" @ conc {int(c)}" if isinstance(c, (int, float)) and c == c and "conc" not in lbl else "")
             for lbl, r, c in zip(load, rate, conc)]
    return (df["tag"].fillna("").astype(str) + pd.Series([f" · {x}{e}" if x else e for x, e in zip(load, extra)],
                                                          index=df.index))


def ratios(df: pd.DataFrame, metric: str = "output_throughput", baseline: str | dict | None = None) -> pd.DataFrame:
    """Each machine's `metric` as a ratio to its own baseline row in the same experiment and
    group. `baseline`: a config label, {tag: config label}, or None for the configuration most
    machines measured first in that experiment (chapter 1's "stock", for example). Machines
    without the baseline row are left out of that experiment."""
    cols = ["group", "experiment", "config_label", "machine", "env_env_id", "you", "compatible", "value",
            "baseline", "ratio", "is_baseline"]
    if df.empty or metric not in df:
        return pd.DataFrame(columns=cols)
    d = df.loc[df[metric].notna()].copy()
    d["experiment"] = experiments(d)
    d["value"] = d[metric].astype(float)
    d = d.sort_values("time", kind="stable").drop_duplicates(["env_env_id", "experiment", "config_label"], keep="last")
    out = []
    for (group, exp), e in d.groupby(["group", "experiment"], sort=False):
        base = _baseline(e, baseline)
        if base is None:
            continue
        ref = e.loc[e["config_label"] == base].set_index("env_env_id")["value"]
        e = e.loc[e["env_env_id"].isin(ref.index)].copy()
        e["baseline"] = base
        e["ratio"] = e["value"] / e["env_env_id"].map(ref)
        e["is_baseline"] = e["config_label"] == base
        out.append(e[cols])
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def _baseline(e: pd.DataFrame, baseline: str | dict | None) -> str | None:
    if isinstance(baseline, dict):
        baseline = baseline.get(e["tag"].iloc[0])
    if baseline is not None:
        return baseline if (e["config_label"] == baseline).any() else None
    firsts = e.sort_values("time", kind="stable").groupby("env_env_id")["config_label"].first()
    return firsts.value_counts(sort=True).index[0]


def room_spread(r: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and configuration: how many machines, the room's lowest, median and
    highest ratio, and yours."""
    if r.empty:
        return pd.DataFrame(columns=["experiment", "config_label", "machines", "lowest", "median", "highest", "yours"])
    g = r.groupby(["experiment", "config_label"], sort=False)["ratio"]
    out = pd.DataFrame({"machines": g.size(), "lowest": g.min(), "median": g.median(), "highest": g.max()})
    out["yours"] = r.loc[r["you"]].set_index(["experiment", "config_label"])["ratio"]
    return out.reset_index()


def by_mbu(df: pd.DataFrame) -> pd.DataFrame:
    """Machines ranked by how close their decode came to their own bandwidth floor (chapter 7's
    MBU, floor ÷ measured TPOT): a ratio to the machine's own roof, so a laptop and a server
    compare where their tokens per second do not. Per machine: the median MBU of its rows that
    have one, how many, and its bandwidth roof."""
    cols = ["machine", "you", "rows", "median_mbu", "bandwidth_gbs"]
    if df.empty or "mbu" not in df or not df["mbu"].notna().any():
        return pd.DataFrame(columns=cols)
    d = df.loc[df["mbu"].notna()]
    g = d.groupby("machine")
    out = pd.DataFrame({"you": g["you"].any(), "rows": g.size(), "median_mbu": g["mbu"].median(),
                        "bandwidth_gbs": g["roof_bandwidth_gbs"].max()})
    return out.sort_values("median_mbu", ascending=False).reset_index()[cols]


def machines(df: pd.DataFrame) -> int:
    """How many machine environments measured the rows of a room (imported files are not machines)."""
    if df.empty:
        return 0
    measured = df.loc[df["engine_location"] != "imported"] if "engine_location" in df else df
    return int(measured["env_env_id"].nunique())


RULE = "output_throughput_vllm_rule"  # a plain field name: Vega-Lite reads quotes and dots in one as a path
HEADLINE = ("completed", "output_throughput", "median_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "p99_itl_ms")


def beside(df: pd.DataFrame, figures=HEADLINE) -> pd.DataFrame:
    """Imported rows next to the room's measured rows of the same load shape (requests,
    concurrency, rate, prompt and answer tokens), with their headline figures side by side. A
    figure a file does not record stays empty. Only shapes that have an imported row appear."""
    cols = ["load", "source", "config_label", "failed", *figures, RULE, "not in this file", "notes"]
    if df.empty or "engine_location" not in df or not (df["engine_location"] == "imported").any():
        return pd.DataFrame(columns=cols)
    d = df.loc[df.get("kind", pd.Series("load", index=df.index)).eq("load")].copy()
    d["load"] = [_shape(r) for r in d.to_dict("records")]
    d = d.loc[d["load"].isin(d.loc[d["engine_location"] == "imported", "load"])]
    d["source"] = [r["machine"] if r.get("engine_location") == "imported" else f"measured: {r['machine']}"
                   for r in d.to_dict("records")] if "machine" in d else d["engine_location"]
    for f in figures:
        if f not in d:
            d[f] = None
    records = d.to_dict("records")
    d["failed"] = [_failed(r) for r in records]
    # what the file said of its run beyond the counts: failed or cut-off runs, a run its tool marked incomplete
    d["notes"] = [r["import_failures"] if isinstance(r.get("import_failures"), str) else "" for r in records]
    # the one throughput every tool's row states alike: vLLM's own rows hold it as output_throughput; GuideLLM's
    # and AIPerf's define theirs otherwise and keep vLLM's beside it (helpers/results/formats/)
    d[RULE] = [_number(r.get("vllm_rule_output_throughput")) if r.get("import_tool") in (GUIDELLM, AIPERF)
               else _number(r.get("output_throughput")) for r in records]
    named = {**{f: f for f in figures}, "request_ttft_ms": "per-request latencies (goodput)",
             "vllm_rule_output_throughput": "throughput by vLLM's rule"}
    d["not in this file"] = [("" if r.get("engine_location") != "imported" else
                              r["import_failures"] if str(r.get("import_failures")).startswith("no request") else
                              ", ".join(n for f, n in named.items() if other_tools.missing(r, f) and (
                                  f != "vllm_rule_output_throughput" or r.get("import_tool") in (GUIDELLM, AIPERF)))
                              or "—")
                             for r in d.to_dict("records")]
    return d.sort_values(["load", "source"])[cols].reset_index(drop=True)


def _number(v):
    return float(v) if isinstance(v, (int, float)) and v == v else None


def _failed(r: dict) -> str:
    """How many of the run's requests failed: "2 of 16", with those cut off unfinished when the run ended
    (GuideLLM's incomplete) beside them; "—" where the row does not say."""
    failed, done, cut = _number(r.get("failed")), _number(r.get("completed")), _number(r.get("incomplete")) or 0
    if failed is None:
        return "—"
    said = f"{failed:.0f} of {failed + cut + (done or 0):.0f}" if done is not None else f"{failed:.0f}"
    return said + (f", {cut:.0f} cut off" if cut else "")


def _shape(r: dict) -> str:
    """A load's shape as every tool can state it: requests, prompt → answer tokens, concurrency, rate."""
    def tokens(exact, mean):
        v = r.get(exact)
        v = v if v is not None and v == v else r.get(mean)
        return f"{float(v):.0f}" if v is not None and v == v else "?"
    n = r.get("load_num_prompts")
    conc, rate = r.get("load_max_concurrency"), r.get("load_request_rate")
    conc = f"{int(conc)}" if conc is not None and conc == conc else "∞"
    rate = f", {float(rate):g} req/s" if rate is not None and rate == rate else ""
    return (f"{int(n) if n is not None and n == n else '?'} requests {tokens('load_input_len', 'mean_input_tokens')}→"
            f"{tokens('load_output_len', 'mean_output_tokens')} @ conc {conc}{rate}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pack"]:
        style = "guide"
        if "--as" in argv:
            i = argv.index("--as")
            style, argv = (argv[i + 1] if i + 1 < len(argv) else ""), argv[:i] + argv[i + 2:]
        try:
            path = pack(argv[1] if len(argv) > 1 else None, style=style)
        except (FileNotFoundError, ValueError) as e:
            print(e, file=sys.stderr)
            return 1
        if style == "vllm-bench":
            print(f"Wrote {len(list(path.glob('*.json')))} vllm bench serve result file(s) into {path}")
            return 0
        n = len(read_pack(path))
        print(f"Packed {n} result row(s) of this machine into {path}\n"
              "Hand that one file to the workshop leader (no logs, paths or keys are in it).")
        return 0
    if argv[:1] == ["unpack"] and len(argv) == 3:
        for p in unpack(argv[1], argv[2]):
            print(f"rows added to {p}")
        return 0
    print("usage: python -m helpers.results.workshop pack [FILE] [--as vllm-bench] | unpack FILE FOLDER",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
