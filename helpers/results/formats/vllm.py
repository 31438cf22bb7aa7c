"""vLLM's own result files: `vllm bench serve --save-result` (one run; `--append-result` grows one file
a line per run), vLLM's older `benchmarks/benchmark_serving.py`, a `vllm bench sweep serve` folder, and
the way back (`to_vllm_bench`). Their figures are vLLM's own (`calculate_metrics` in
vllm/benchmarks/serve.py), read as written."""
from __future__ import annotations

import difflib
import hashlib
import json
import re
import statistics
from pathlib import Path

from helpers.config import BY_NAME
from helpers.load.workloads import PERCENTILE_KEYS, SUMMARY_KEYS, summarize
from helpers.results.formats.common import (
    LATENCY_KEY,
    NOTHING_COMPLETED,
    ImportFileError,
    Source,
    as_float,
    date,
    load_label,
    model_name,
)
from helpers.results.gaps import VLLM_BENCH, VLLM_SWEEP
from helpers.results.store import jsonable

# Fields every `vllm bench serve --save-result` file has (vllm/benchmarks/serve.py: main_async, benchmark).
VLLM_REQUIRED = ("model_id", "duration", "completed", "total_input_tokens", "total_output_tokens",
                 "request_throughput", "output_throughput", "max_concurrency", "request_rate")
# What vllm bench serve writes besides the figures: the rest of a file's top-level keys are
# --metadata KEY=VALUE (and, in a sweep's run files, the sweep's parameters).
VLLM_OWN = set(VLLM_REQUIRED) | set(SUMMARY_KEYS) | {
    "date", "endpoint_type", "backend", "label", "tokenizer_id", "num_prompts", "burstiness", "request_goodput",
    "input_lens", "output_lens", "start_times", "ttfts", "itls", "latencies", "queue_times", "generated_texts",
    "errors", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx", "ramp_up_strategy", "ramp_up_start_rps",
    "ramp_up_end_rps", "rps_change_events", "run_number", "_benchmark_name", "best_of", "use_beam_search",
    "input_throughput"}
# vllm bench serve's --backend values that talk to a vLLM server (or say nothing of the server)
VLLM_BACKENDS = ("vllm", "openai", "openai-chat", "openai-audio", "openai-embeddings", "vllm-chat")
VLLM_OWN_PATTERN = re.compile(r"^(mean|median|std|p[\d.]+)_\w+_ms$|^probe_|^spec_decode_|^diffusion_|^guide_")


def json_lines(data: bytes) -> list[dict] | None:
    """The results of a file `vllm bench serve --append-result` grew, one JSON object per line
    (vllm/benchmarks/serve.py opens it with mode "a+" and writes a newline between results);
    None where it is not that."""
    try:
        lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return lines if len(lines) > 1 and all(isinstance(x, dict) and "completed" in x for x in lines) else None


def appended(path: Path, data: bytes) -> list[dict]:
    """The rows of an --append-result file: each run's id and key from its own line, the file's from its first
    line, so the file imported again after it grew keeps its earlier rows' ids and adds only the new runs."""
    raw = [x for x in data.splitlines() if x.strip()]
    source = Source(path, hashlib.sha256(raw[0]).hexdigest(), VLLM_BENCH)
    rows = []
    for i, line in enumerate(raw):
        row = result_row(json.loads(line), source, i)
        own = hashlib.sha256(line).hexdigest()
        rows.append({**row, "run_id": f"{own[:10]}-{i}", "key": f"imported-{own[:16]}-{i}"})
    return rows


# vLLM's benchmarks/benchmark_serving.py before it had --max-concurrency (2024 and earlier) wrote the same
# figures without `max_concurrency` (every request was sent as it arrived), with `best_of` and
# `use_beam_search`, and without `latencies` (per-request TPOT then comes from TTFT and the chunk gaps).
OLD_SCRIPT = ("vLLM's benchmarks/benchmark_serving.py from before --max-concurrency (2024 and earlier): no "
              "concurrency cap, every request sent as it arrived")


def _old_script(blob: dict) -> bool:
    return "max_concurrency" not in blob and ("best_of" in blob or "use_beam_search" in blob)


def result_row(blob: dict, source: Source, index: int, bench_keys: frozenset = frozenset()) -> dict:
    """One `vllm bench serve` result as a row. `bench_keys`: in a sweep's run file, the parameters
    that are `vllm bench serve` arguments (the load); the others are the server's."""
    old = _old_script(blob)
    if "run_number" in blob and not bench_keys:  # a sweep's run file given on its own: its load is not the server's
        bench_keys = BENCH_ARGUMENTS
    for field in VLLM_REQUIRED:
        if field not in blob and not (old and field == "max_concurrency"):
            raise ImportFileError(source.path, f"has no '{field}', which every vllm bench serve result has "
                                  "(another tool's file, or a format this guide does not know).",
                                  "a file written by vllm bench serve --save-result.")
    row = source.base(index, blob.get("guide_vllm_version"), date(blob.get("date")))
    if blob.get("run_number") == -1:  # sweep/serve.py run_comb: the warm-up is run -1, written as warmup.json
        row["import_note"] = "a vllm bench sweep's warm-up run (run_number -1, --warmup-num-prompts), not a measurement"
    figures = summarize(blob)
    detailed = "ttfts" in blob and "output_lens" in blob
    if "guide_runs" in blob:  # written by to_vllm_bench: each repeat's per-request figures, for goodput
        runs = blob["guide_runs"]
        figures.update(request_ttft_ms=runs[0]["request_ttft_ms"], request_tpot_ms=runs[0]["request_tpot_ms"])
        row.update(repeats=len(runs), runs=runs)
    elif not detailed:  # without --save-detailed a file keeps no per-request TTFT: goodput can't be judged
        figures.update(request_ttft_ms=None, request_tpot_ms=None, max_itl_ms=None, first_error=None)
    row.update(figures)
    for k in PERCENTILE_KEYS:  # vLLM writes p50 as median_*; a percentile not asked for stays empty
        row[k] = as_float(blob.get(k))
    for k, v in blob.items():  # every other percentile the run asked for (p90, p99.9, std)
        if LATENCY_KEY.match(k):
            row[k] = as_float(v)
    total = (blob.get("num_prompts") or blob["completed"] + (blob.get("failed") or 0))
    inferred = blob.get("failed") is None and blob.get("num_prompts")
    if inferred:  # older scripts write no `failed`: what was asked for and did not complete failed
        row["failed"] = float(max(int(blob["num_prompts"]) - int(blob["completed"]), 0))
    if not blob["completed"]:  # vLLM writes 0.0 for every latency when nothing completed: not a measurement
        row.update({k: None for k in row if LATENCY_KEY.match(k)}, request_ttft_ms=None, request_tpot_ms=None,
                   max_itl_ms=None, **NOTHING_COMPLETED)
        row["import_failures"] = f"no request completed: 0 of {total}"
    elif blob.get("failed"):
        row["import_failures"] = f"{blob['failed']} of {total} requests failed; the figures are the others'"
    elif inferred and row["failed"]:
        row["import_failures"] = (f"{row['failed']:.0f} of {total} requests did not complete (num_prompts − completed: "
                                  "the file has no 'failed' key); the figures are the others'")
    row["import_detail"] = "per request" if detailed or "guide_runs" in blob else "summary"
    if old:
        row["import_format"] = OLD_SCRIPT + ("" if "latencies" in blob else "; per-request TPOT from TTFT and the "
                                             "gaps between streamed chunks (the file keeps no latencies)")
    row["import_duration_covers"] = ("vllm bench serve's measured run, from its first request to its last answer "
                                     "(warm-up requests, --num-warmups, come before it and are not in the file)")
    row.update(_load(blob, detailed))
    row.update(_server(blob, bench_keys))
    row["config_label"] = (blob.get("label") or row.get("import_settings") or source.path.stem)
    backend = blob.get("backend")
    if isinstance(backend, str) and backend not in VLLM_BACKENDS:  # one file can hold runs against two servers
        row["config_label"] += f" ({backend})"
    return row


def _load(blob: dict, detailed: bool) -> dict:
    rate = blob.get("request_rate")
    done = blob["completed"] or 1
    same = lambda xs: xs[0] if xs and all(x == xs[0] for x in xs) else None  # noqa: E731
    ins, outs = (same(blob.get("input_lens")), same(blob.get("output_lens"))) if detailed else (None, None)
    load = {"load_num_prompts": blob.get("num_prompts"), "load_max_concurrency": blob.get("max_concurrency"),
            "load_request_rate": None if rate in (None, "inf") else float(rate),
            "load_input_len": ins, "load_output_len": outs, "load_kind": None,
            "mean_input_tokens": blob["total_input_tokens"] / done,
            "mean_output_tokens": blob["total_output_tokens"] / done}
    load["load_label"] = load_label(load)
    return load


def _server(blob: dict, bench_keys: frozenset) -> dict:
    """The model, and the settings a file recorded (--metadata KEY=VALUE, a sweep's server
    parameters) as `engine_<name>` columns; a sweep's benchmark parameters as text."""
    out = {"endpoint_model": model_name(blob.get("model_id")), "import_tokenizer": blob.get("tokenizer_id")}
    recorded = {k: v for k, v in blob.items() if k not in VLLM_OWN and not VLLM_OWN_PATTERN.match(k)}
    # A key one letter off vLLM's own (a third-party writer's typo) is not a setting: named, not kept.
    typos = {k: close[0] for k in recorded if (close := difflib.get_close_matches(k, VLLM_OWN, 1, 0.9))}
    recorded = {k: v for k, v in recorded.items() if k not in typos}
    if typos:
        out["import_ignored"] = ", ".join(f"{k} (like vLLM's {v})" for k, v in typos.items())
    if "run_number" not in blob:  # a single file: only --metadata named like a guide setting is the server's
        server = {k: v for k, v in recorded.items() if k.replace("-", "_") in BY_NAME}
    else:  # a sweep's run file: every parameter that is not a benchmark argument is a server argument
        server = {k: v for k, v in recorded.items() if k.replace("-", "_") not in bench_keys}
    for k, v in server.items():
        out[f"engine_{k.replace('-', '_')}"] = _value(v)
    if server:
        out["import_settings"] = ", ".join(f"{k}={v}" for k, v in server.items())
    for k, v in recorded.items():
        if k not in server:
            out[f"meta_{k.replace('-', '_')}"] = _value(v)
    return out


def _value(v):
    """--metadata values are text: "2" → 2, "true" → True, "0.9" → 0.9; anything else as written."""
    if not isinstance(v, str):
        return v
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def sweep(folder: Path) -> list[dict]:
    """The `vllm bench sweep serve` experiments under `folder`: one row per combination, its run files
    as repeats. A combination's folder is SERVE--<server name>-BENCH--<benchmark name> inside the
    experiment's folder (sweep/serve.py: _get_comb_base_path); each run=N.json is a vllm bench serve
    result with the sweep's parameters, run=N.failure.json a run that failed (--continue-on-error),
    warmup.json the warm-up (--warmup-num-prompts, not a measurement), and SERVE-<name>-failure.json in
    the experiment's folder a server combination that never served. Runs are found by their own files
    wherever they lie below `folder`; a run found twice (the sweep kept beside a copy of it, even a partial
    one, under another name, with other line endings or indentation) counts once, and the folders that
    share a run are one combination. A combination's row id comes from its experiment and its own name,
    each experiment's rows go to a file of their own, so the folder given, its parent or a folder three
    levels up give the same rows, and a sweep re-imported after it grew replaces its rows."""
    found = sorted((p for p in folder.rglob("run=*.json") if RUN_FILE.fullmatch(p.name)), key=_run_order)
    # a failure record left beside its run's file (vLLM's --resume ran it again) is no failure
    failures = sorted(p for p in folder.rglob("run=*.failure.json")
                      if not (p.parent / p.name.replace(".failure.json", ".json")).exists())
    servers = sorted(folder.rglob("SERVE-*-failure.json"))
    if not found and not failures and servers:
        said = "; ".join(_server_failure(p) for p in servers[:4])
        raise ImportFileError(folder, f"is a vllm bench sweep in which no server combination served: {said}.",
                              "the server's own error above; run the sweep again once it starts (vLLM's --resume).")
    if not found and not failures:
        raise ImportFileError(folder, "holds no run=N.json files: not a vllm bench sweep experiment folder"
                              + _results_below(folder) + ".",
                              "the folder `vllm bench sweep serve -o OUT` wrote (OUT/<experiment name>), or a "
                              "single result file.")
    where: dict[bytes, list[Path]] = {}  # a run's content (parsed, so reformatted copies are one) → where found
    for p in found:
        data = p.read_bytes()
        try:
            key = json.dumps(json.loads(data), sort_keys=True).encode()
        except (json.JSONDecodeError, UnicodeDecodeError):
            key = data  # refused below, naming the file
        where.setdefault(key, []).append(p)
    combs = _combinations(where, failures)
    # An experiment is its folder's name and what a grown sweep keeps: its model and its first run's date, so two
    # teams' sweeps both named "baseline" stay apart, and the same sweep grown or seen from above stays one.
    first: dict[str, tuple] = {}
    for data, paths in where.items():
        try:
            blob = json.loads(data)
        except json.JSONDecodeError:
            continue
        if not isinstance(blob, dict):
            continue  # refused below, naming the file
        exp = str(paths[0].parent.parent)
        first[exp] = min(first.get(exp, ("~", "")), (str(blob.get("date") or "~"), str(blob.get("model_id") or "")))
    rows = []
    for (where_exp, comb), (files, failed_runs) in sorted(combs.items()):
        experiment = Path(where_exp).name  # keyed by its folder's path: two teams' "baseline" folders stay apart
        identity = f"{experiment}|{first.get(where_exp, ('', ''))[1]}|{first.get(where_exp, ('', ''))[0]}"
        source = Source(folder, hashlib.sha256(identity.encode()).hexdigest(), VLLM_SWEEP)
        serve_name, bench_name = comb_names(comb) if comb.startswith(("SERVE-", "BENCH-")) else (None, None)
        repeats = []
        for p, data in sorted(files, key=lambda f: _run_order(f[0])):
            try:
                blob = json.loads(data)
            except json.JSONDecodeError as e:
                raise ImportFileError(p, f"is not complete JSON ({e}).", "the sweep's folder as it wrote it.") from e
            if not isinstance(blob, dict):
                raise ImportFileError(p, f"is a JSON {type(blob).__name__}, not a vllm bench serve result.",
                                      "the sweep's folder as it wrote it (its run=N.json files).")
            repeats.append({**result_row(blob, source, 0, BENCH_ARGUMENTS), "run_number": blob.get("run_number")})
        if not repeats:  # every run of this combination failed: a row that says so, with no figure
            rows.append({**source.base(0, None, None), "config_label": serve_name or comb, "completed": 0.0,
                         "repeats": 0, "load_label": bench_name or comb, "import_detail": "summary",
                         "import_failures": "no request completed: every run failed (" + "; ".join(failed_runs) + ")",
                         **NOTHING_COMPLETED})
        else:
            done = next((r for r in repeats if r.get("completed")), repeats[0])  # a run that served: its load
            rows.append({**done, **_over_repeats(repeats, failed_runs)})
        named = serve_name is not None or bench_name is not None
        ident = hashlib.sha256(f"{identity}/{comb}".encode()).hexdigest()
        rows[-1].update(config_label=serve_name or rows[-1].get("import_settings") or "default",
                        load_label=(f"{bench_name} · " if bench_name else "") + rows[-1]["load_label"]
                        if repeats else rows[-1]["load_label"],
                        import_file=f"{experiment}/{comb}" if named else comb, tag=f"imported · {VLLM_SWEEP} · "
                        + (experiment if named else comb), run_id=f"{ident[:10]}-0",
                        key="imported-" + hashlib.sha256(b"".join(sorted(d for _, d in files))
                                                         + "".join(failed_runs).encode()).hexdigest()[:16],
                        import_figures=f"the guide's median over the combination's {len(repeats)} run file(s): counts "
                        "and throughputs over every run file (0 for one that completed nothing; runs vLLM recorded as "
                        "failed, run=N.failure.json, are not in it), latencies over the runs that completed; the "
                        "lowest and highest beside each (each run's own in runs; vLLM's sweep plot shows their mean "
                        "± sd)")
    notes = _sweep_notes(folder, [p for ps in where.values() for p in ps])
    for row in rows:
        row.update(notes)
    return rows


def _combinations(where: dict[bytes, list[Path]], failures: list[Path]) -> dict:
    """Each combination, (experiment folder name, combination folder name) → (its run files once each, the
    runs vLLM recorded as failed). Folders that hold the same run are one combination (a copy kept beside the
    sweep, even a partial one under another name), named by the folder that holds the most of its runs."""
    loc = lambda p: (str(p.parent.parent), p.parent.name)  # noqa: E731
    parent: dict[tuple, tuple] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for paths in where.values():  # folders that share a run are one
        for p in paths[1:]:
            parent[root(loc(p))] = root(loc(paths[0]))
    groups: dict[tuple, list[tuple[Path, bytes]]] = {}
    for data, paths in where.items():
        groups.setdefault(root(loc(paths[0])), []).append((paths[0], data))
    failed: dict[tuple, list[str]] = {}
    for p in failures:
        failed.setdefault(root(loc(p)), []).extend(_failed_runs_in(p))
    out = {}
    for g in dict.fromkeys([*groups, *failed]):
        files = groups.get(g, [])
        members = [loc(p) for p, _ in files] or [g]
        name = max(set(members), key=lambda m: (members.count(m), m))
        out[name] = (files, failed.get(g, []))
    return out


def _server_failure(p: Path) -> str:
    """What one SERVE-<name>-failure.json says: the server combination that never served, and why."""
    name = p.name[len("SERVE-"):-len("-failure.json")]
    try:
        f = json.loads(p.read_text())
        return f"server combination {name} never served: {f.get('error_type')}: {str(f.get('error'))[:200]}"
    except (json.JSONDecodeError, OSError):
        return f"{p.name}: a server combination that failed"


def _failed_runs_in(p: Path) -> list[str]:
    """What one run=N.failure.json says: the run that failed, and why."""
    try:
        f = json.loads(p.read_text())
        return [f"run {f.get('run_number')} failed: {f.get('error_type')}: {str(f.get('error'))[:200]}"]
    except (json.JSONDecodeError, OSError):
        return [f"{p.name}: a failed run (its record is unreadable)"]


RUN_FILE = re.compile(r"run=-?\d+\.json")  # not run=N.failure.json, nor run=N.pytorch.json (vLLM's CI format)


def _run_order(p: Path) -> tuple:
    """Run files in their run numbers' order (run=10 after run=2), then by path."""
    m = re.search(r"run=(-?\d+)", p.name)
    return (str(p.parent), int(m[1]) if m else 0, p.name)


def _results_below(folder: Path) -> str:
    """Other tools' result folders found under `folder`, to name in a refusal."""
    below = sorted({p.parent.relative_to(folder).as_posix() or "." for p in folder.rglob("*")
                    if p.name in ("benchmarks.json", "profile_export_aiperf.json")})
    other = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.name in (
        "benchmarks.yaml", "benchmarks.html", "benchmarks.csv", "profile_export.jsonl") or (
        p.suffix == ".json" and b'"aiperf_version"' in p.read_bytes()[:2000]))
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.json*") if p.suffix in (".json", ".jsonl")
                   and p.name not in ("benchmarks.json", "profile_export_aiperf.json") and _looks_like_a_result(p))
    said = f"; it holds other tools' results in {', '.join(below[:6])}: give those folders one by one" if below else ""
    said += f"; it holds vllm bench serve results ({', '.join(files[:6])}): give them as files" if files else ""
    return said + (f"; it holds GuideLLM's or AIPerf's other files ({', '.join(other[:6])}): give GuideLLM's "
                   "benchmarks.json or AIPerf's summary JSON" if other else "")


def _looks_like_a_result(p: Path) -> bool:
    """Whether a JSON file's first bytes name a vllm bench serve result's fields."""
    try:
        head = p.read_bytes()[:4000]
    except OSError:
        return False
    return b'"completed"' in head or b'"model_id"' in head


def _sweep_notes(folder: Path, run_files) -> dict:
    """What else the experiment folders hold: server combinations that never served (SERVE-<name>-failure.json),
    warm-ups (not measurements) and other result files (to give on their own)."""
    notes, others = {}, []
    used = {p.resolve() for p in run_files}
    for p in sorted(folder.rglob("*.json")) + sorted(folder.rglob("*.jsonl")):
        if p.resolve() in used or p.name == "summary.json" or (p.name.startswith("run=")
                                                                 and not p.name.endswith(".failure.json")):
            continue
        if p.name == "warmup.json":
            continue  # the sweep's warm-up (--warmup-num-prompts): not a measurement
        if p.name.endswith("-failure.json") and p.name.startswith("SERVE-"):
            name = p.name[len("SERVE-"):-len("-failure.json")]
            served = [c for c in p.parent.iterdir() if c.is_dir() and any(c.glob("run=*.json"))
                      and (comb_names(c.name)[0] == name if c.name.startswith("SERVE-")
                           else name == "default" and c.name.startswith("BENCH-"))]
            if not served:  # a server combination that served after vLLM's --resume left its failure: no failure
                notes.setdefault("import_server_failures", []).append(_server_failure(p))
            continue
        if p.name == "warmup.failure.json":
            notes.setdefault("import_server_failures", []).append(
                f"the warm-up of {p.parent.name} failed: " + _failed_runs_in(p)[0].split(": ", 1)[-1])
            continue
        if p.name.startswith("run=") and p.name.endswith(".failure.json"):
            continue
        others.append(p.relative_to(folder).as_posix())
    if notes.get("import_server_failures"):
        notes["import_server_failures"] = "; ".join(notes["import_server_failures"])
    if others:
        notes["import_skipped"] = ", ".join(others[:8]) + (f" and {len(others) - 8} more" if len(others) > 8 else "")
    return notes


def _over_repeats(repeats: list[dict], failed_runs: list[str]) -> dict:
    """A combination's figures over its run files, as a measured row's repeats are combined: each the median of
    the runs that have it (a run in which nothing completed has no latency); every failed run said, those vLLM
    recorded as failed (run=N.failure.json) too."""
    out = {"repeats": len(repeats), "runs": [_figures(r) for r in repeats]}
    keys = dict.fromkeys([*SUMMARY_KEYS, "max_itl_ms", *(k for r in repeats for k in r if LATENCY_KEY.match(k))])
    for key in keys:
        zero = key in NOTHING_COMPLETED  # a run that completed nothing served at a rate of 0, not at no rate
        values = [r[key] if r.get(key) is not None else 0.0 for r in repeats if zero or (
            isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool))]
        out[key] = float(statistics.median(values)) if values else None
        out[f"{key}_min"], out[f"{key}_max"] = (float(min(values)), float(max(values))) if values else (None, None)
    for key in ("request_ttft_ms", "request_tpot_ms"):
        out[key] = next((r[key] for r in repeats if r.get(key)), None)
    said = [f"run {r.get('run_number', i)}: {r['import_failures']}" for i, r in enumerate(repeats)
            if r.get("import_failures")]
    out["import_failures"] = "; ".join(said + failed_runs) or None
    if not max(r.get("completed") or 0 for r in repeats):
        out["import_failures"] = f"no request completed in any run ({out['import_failures']})"
        out.update(NOTHING_COMPLETED)
    return out


def _figures(row: dict) -> dict:
    return {k: row[k] for k in [*SUMMARY_KEYS, "max_itl_ms", "request_ttft_ms", "request_tpot_ms"] if k in row}


def comb_names(name: str) -> tuple[str | None, str | None]:
    m = re.match(r"^(?:SERVE--(?P<serve>.*?))?-?(?:BENCH--(?P<bench>.*))?$", name)
    return (m["serve"], m["bench"]) if m and (m["serve"] or m["bench"]) else (name, None)


# The `vllm bench serve` arguments (their `dest`s in vllm/benchmarks/serve.py, `add_cli_args`), by
# which a sweep's run file tells the load's parameters from the server's. Written out, so that reading
# JSON needs no vLLM import (about ten seconds); tests/unit/test_imports.py checks it against the
# installed vLLM's parser.
BENCH_ARGUMENTS = frozenset({"append_result", "asr_max_audio_len_sec", "asr_min_audio_len_sec", "backend",
    "base_url", "bfcl_categories", "blazedit_max_distance", "blazedit_min_distance", "burstiness",
    "chat_template_kwargs", "custom_ensure_client_side_data", "custom_output_len", "dataset_name",
    "dataset_path", "disable_shuffle", "disable_tqdm", "enable_multimodal_chat", "endpoint", "extra_body",
    "frequency_penalty", "goodput", "header", "hf_name", "hf_output_len", "hf_split", "hf_subset", "host",
    "ignore_eos", "input_len", "insecure", "label", "logprobs", "lora_assignment", "lora_modules",
    "max_concurrency", "metadata", "metric_percentiles", "min_p", "model", "no_oversample", "no_reranker",
    "no_stream", "num_prompts", "num_warmups", "output_len", "percentile_metrics", "plot_dataset_stats",
    "plot_timeline", "port", "prefix_repetition_num_prefixes", "prefix_repetition_output_len",
    "prefix_repetition_prefix_len", "prefix_repetition_suffix_len", "presence_penalty", "probe_request_rate",
    "profile", "ramp_up_end_rps", "ramp_up_start_rps", "ramp_up_strategy", "random_batch_size",
    "random_input_len", "random_mm_base_items_per_request", "random_mm_bucket_config",
    "random_mm_limit_mm_per_prompt", "random_mm_num_mm_items_range_ratio", "random_output_len",
    "random_prefix_len", "random_range_ratio", "ready_check_timeout_sec", "repetition_penalty",
    "request_id_prefix", "request_rate", "result_dir", "result_filename", "save_detailed", "save_result",
    "seed", "self_timed", "served_model_name", "sharegpt_output_len", "skip_chat_template",
    "skip_tokenizer_init", "spec_bench_category", "spec_bench_output_len", "speed_bench_category",
    "speed_bench_dataset_subset", "speed_bench_output_len", "temperature", "timed_trace_chunk_hash_size",
    "timed_trace_label_hash_ids", "timed_trace_label_input_length", "timed_trace_label_output_length",
    "timed_trace_label_timestamp", "timed_trace_sec_multiplier", "timeline_itl_thresholds", "tokenizer",
    "tokenizer_mode", "top_k", "top_p", "trust_remote_code", "use_beam_search"})



def to_vllm_bench(row: dict) -> dict:
    """A measured row in `vllm bench serve --save-result`'s format, for a team's own tooling
    (vLLM's plotting, their dashboards). The figures are the row's (medians over its repeats);
    `guide_*` keys carry what vLLM's format has no field for: each repeat's per-request TTFT and
    TPOT (so goodput survives a round trip), the configuration and the machine."""
    rate = row.get("load_request_rate")
    model = row.get("endpoint_model") or row.get("cfg_model")
    when = row.get("time") or ""
    out = {"date": re.sub(r"[-:]", "", when).replace("T", "-") if when else None, "endpoint_type": "vllm",
           "backend": "vllm", "label": row.get("config_label"), "model_id": model, "tokenizer_id": model,
           "num_prompts": row.get("load_num_prompts"), "request_rate": "inf" if rate is None else rate,
           "burstiness": 1.0, "max_concurrency": row.get("load_max_concurrency"), "request_goodput": None}
    out.update({k: row.get(k) for k in SUMMARY_KEYS})
    out = {k: v for k, v in out.items() if not (k.startswith("p50_"))}
    runs = row.get("runs") or [row]
    if all(r.get("request_ttft_ms") is not None for r in runs):
        out["guide_runs"] = [{k: r.get(k) for k in ("duration", "request_ttft_ms", "request_tpot_ms")} for r in runs]
    out.update(guide_run_id=row.get("run_id"), guide_load=row.get("load_label"), guide_tag=row.get("tag"),
               guide_vllm_version=row.get("server_version") or row.get("env_vllm"),
               guide_machine=row.get("env_cpu_model"),
               guide_config={k[4:]: v for k, v in row.items() if k.startswith("cfg_")})
    return out


def write_vllm_bench(rows: list[dict], folder: str | Path) -> list[Path]:
    """Each measured load row as `<folder>/guide-<run id>.json` in vllm bench serve's format."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r in rows:
        if r.get("kind") != "load" or r.get("completed") is None:
            continue
        path = folder / f"guide-{r['run_id']}.json"
        path.write_text(json.dumps(to_vllm_bench(r), default=jsonable))
        out.append(path)
    return out


