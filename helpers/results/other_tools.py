"""Results written by other tools, read as the guide's rows; and the guide's rows written in theirs.

Teams that benchmark GPU servers already keep the JSON of vLLM's `vllm bench serve --save-result`
(one run, or one per line with `--append-result`), of `vllm bench sweep serve` (a folder: one run file
per repeat of each combination of server and benchmark settings), of GuideLLM (`benchmarks.json`) or
of AIPerf (`profile_export_aiperf.json`, with its per-request records beside it). `from_file(path)`
turns each into rows of the guide's schema, so verdict rules, goodput at a latency target, the knee,
the room and the charts work on them as on a local run. `to_vllm_bench(row)` is the way back.

Each figure is the tool's own, as its file records it; where the tool defines a figure otherwise than
vLLM does (GuideLLM's throughput counts only what fell inside its measured window, after any warm-up;
AIPerf counts output tokens with its own tokenizer), vLLM's definition sits beside it as
`vllm_rule_<figure>`, computed from the tool's own requests (helpers/results/formats/: one module per
tool family). A sweep's figures are medians over each combination's run files. What a file does not
record stays empty, never guessed, and `missing(row, figure)` says why:

| in the file | vllm bench serve | + `--save-detailed` | vllm bench sweep | GuideLLM | AIPerf |
|---|---|---|---|---|---|
| throughput, request counts, token totals | yes | yes | yes, per repeat | yes (and vLLM's definition beside) | yes |
| TTFT / TPOT / ITL / E2E percentiles | the `--percentile-metrics` and `--metric-percentiles` asked for | same | same | p0.1 … p99.9; no ITL | p1 … p99 |
| per-request TTFT and TPOT (goodput at any target) | no | yes | no (the sweep does not pass `--save-detailed`) | yes, unless it kept a sample | with `--export-level records` |
| load: requests, concurrency, rate | yes | yes | yes | from its strategy | from its phase |
| prompt and answer lengths | means only | each request's | means only | the data it was asked for | the data it was asked for |
| server settings | `--metadata KEY=VALUE` named like a guide setting (`max_num_seqs=64`); other keys as `meta_*` | same | the sweep's server parameters | none | none |
| the tool's version | not recorded | not recorded | not recorded | `metadata.guidellm_version` | `aiperf_version` |

    bash guide.sh import FILE_OR_FOLDER… [--room FOLDER]
"""  # noqa: E501 - the table's rows are Markdown table rows, one line each
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

from helpers.results.formats import aiperf, guidellm, vllm
from helpers.results.formats.common import ImportFileError, Source, model_name  # noqa: F401 - the importer's API
from helpers.results.formats.vllm import to_vllm_bench, write_vllm_bench  # noqa: F401 - the way back
from helpers.results.gaps import AIPERF, GUIDELLM, VLLM_BENCH, missing  # noqa: F401 - missing: the importer's reasons
from helpers.results.store import default_dir, jsonable, read_rows


def _aiperf_records(data: bytes) -> bool:
    """Whether a file that is not one JSON document is AIPerf's per-request records: its first line is a
    record of its own, with the request's metadata (x_request_id, benchmark_phase) and a metrics dict. A
    GuideLLM report cut short also starts with {"metadata": …, but is one document, not a line."""
    try:
        first = json.loads(data.split(b"\n", 1)[0])
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    meta = first.get("metadata") if isinstance(first, dict) else None
    return (isinstance(meta, dict) and isinstance(first.get("metrics"), dict)
            and ("x_request_id" in meta or "benchmark_phase" in meta))


def _not_json(data: bytes) -> str | None:
    """What a file that is not JSON at all is, so the refusal names it: empty, not text, a CSV (a sweep's
    summary, or another tool's), or GuideLLM's HTML or YAML report."""
    if not data.strip():
        return "empty"
    if b"\0" in data[:4096]:
        return "not text (binary)"
    try:
        head = data[:4096].decode("utf-8").lstrip()
    except UnicodeDecodeError:
        return "not text (not UTF-8)"
    first = head.splitlines()[0] if head else ""
    if head[:15].lower().startswith(("<!doctype", "<html")):
        return "an HTML page (GuideLLM's benchmarks.html report: give its benchmarks.json, `--output kind=json`)"
    if not head.startswith(("{", "[")) and first.count(",") >= 2:
        if {"completed", "output_throughput"} <= set(first.split(",")):
            return "a vllm bench sweep's summary.csv (give the sweep's experiment folder: its run files)"
        return "a CSV table (GuideLLM and AIPerf also write CSV; export JSON instead)"
    if re.match(r"^[A-Za-z_][\w-]*:(\s|$)", first):
        return "a YAML document (GuideLLM's benchmarks.yaml: give its benchmarks.json, `--output kind=json`)"
    return None


def from_file(path: str | Path) -> list[dict]:
    """The rows in one `vllm bench serve` result (or --append-result file), `vllm bench sweep` folder,
    GuideLLM report or AIPerf summary (or the folder either tool wrote)."""
    path = Path(path)
    if path.is_dir():
        for name in ("benchmarks.json", aiperf.SUMMARY):  # GuideLLM's output folder; AIPerf's artifact folder
            if (path / name).exists():
                rows = from_file(path / name)
                others = sorted(p.name for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.name not in (
                    name, aiperf.RECORDS) and p.is_file())
                if others:  # named, never dropped without a word
                    for r in rows:
                        r["import_skipped"] = ", ".join(others[:8]) + (" …" if len(others) > 8 else "")
                return rows
        return vllm.sweep(path)
    if not path.exists():
        raise ImportFileError(path, "no such file or folder.", "the path of a result file or a sweep's folder.")
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if path.name.endswith(".guide.json.gz") or (path.suffix == ".jsonl" and b'"env_env_id"' in data[:20000]):
        raise ImportFileError(path, "holds the guide's own rows (a results file, or a pack handed in), not another "
                              "tool's result.", "copy it into the room's folder (a pack: `python -m "
                              "helpers.results.workshop unpack FILE ROOM`); notebook 90 reads it there.")
    try:
        blob = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        if vllm.json_lines(data) is not None:  # vllm bench serve --append-result: one result per line
            return vllm.appended(path, data)
        if _aiperf_records(data):
            raise ImportFileError(path, "holds AIPerf's per-request records, not its summary.",
                                  f"the {aiperf.SUMMARY} beside it (or their folder): "
                                  "the records are read with it.") from e
        if what := _not_json(data):
            raise ImportFileError(path, f"is {what}, not a result file.",
                                  "the sweep's experiment folder." if "summary.csv" in what else
                                  "the JSON file the tool wrote (vllm bench serve --save-result, GuideLLM's "
                                  "--output kind=json, AIPerf's profile_export_aiperf.json).") from e
        ended = data.strip()[-1:] in (b"}", b"]")
        cut = "" if ended else " (it ends mid-way: was it still being written, or copied in part?)"
        raise ImportFileError(path, f"is not complete JSON{cut}: {e}.",
                              "the whole file as the tool wrote it (vllm bench serve --save-result, GuideLLM's "
                              "--output kind=json).") from e
    if isinstance(blob, dict) and "benchmarks" in blob:
        return guidellm.report(blob, Source(path, sha, GUIDELLM))
    if isinstance(blob, dict) and ("aiperf_version" in blob or "time_to_first_token" in blob):
        return [aiperf.profile(blob, Source(path, sha, AIPERF))]
    if isinstance(blob, dict) and ("completed" in blob or "model_id" in blob):
        return [vllm.result_row(blob, Source(path, sha, VLLM_BENCH), 0)]
    if isinstance(blob, dict) and {"error_type", "error"} <= set(blob):  # sweep/serve.py's failure records
        what = (f"run {blob['run_number']}" if "run_number" in blob else "a server combination")
        raise ImportFileError(path, f"is a vllm bench sweep's record that {what} failed ({blob['error_type']}: "
                              f"{str(blob['error'])[:200]}), not a result.",
                              "the sweep's experiment folder: its rows say which runs failed.")
    if isinstance(blob, list) and blob and all(isinstance(x, dict) and "completed" in x for x in blob):
        raise ImportFileError(path, "is one combination's summary.json of a vllm bench sweep.",
                              "the sweep's experiment folder (it holds each combination's run files).")
    what = f"a JSON {type(blob).__name__}" + (f" with keys {sorted(blob)[:6]}" if isinstance(blob, dict) else "")
    raise ImportFileError(path, f"is {what}: neither a vllm bench serve result (no 'completed', 'model_id'), "
                          "nor a GuideLLM report (no 'benchmarks'), nor an AIPerf summary (no 'aiperf_version').",
                          "a file written by `vllm bench serve --save-result`, a `vllm bench sweep serve` folder, "
                          f"GuideLLM's benchmarks.json, or AIPerf's {aiperf.SUMMARY} (or its artifact folder).")



# -- into a room ----------------------------------------------------------------------------------

def add(paths: list[str | Path], folder: str | Path | None = None) -> tuple[dict[Path, list[dict]], dict[Path, str]]:
    """Read every file and add its rows to a results folder (`imported-<hash>.jsonl`, one per file),
    where the room and the notebooks find them. A file that cannot be read is named with why and
    skipped; the others are still added. Rows already there are not added twice."""
    folder = Path(folder) if folder else default_dir()
    added, failed = {}, {}
    for p in map(Path, paths):
        try:
            rows = from_file(p)
        except ImportFileError as e:
            failed[p] = str(e)
            continue
        for env in dict.fromkeys(r["env_env_id"] for r in rows):  # a sweep's experiments each have their own
            target = folder / f"{env}.jsonl"
            seen = {r.get("key") for r in read_rows(target)}  # a row whose content changed (a sweep or an append
            new = [r for r in rows if r["env_env_id"] == env and r["key"] not in seen]  # file that grew) is added,
            if new:  # and the room keeps the last row of each run id
                folder.mkdir(parents=True, exist_ok=True)
                with open(target, "a") as f:
                    for r in new:
                        f.write(json.dumps(r, default=jsonable) + "\n")
        added[p] = rows
    return added, failed


def summary_line(rows: list[dict], room_models: set[str]) -> str:
    """Two lines on what one file gave: rows, tool, detail, and whether its model is the room's."""
    r = rows[0]
    model = Path(str(r.get("endpoint_model") or "?").rstrip("/")).name
    version = f" {r['import_tool_version']}" if r.get("import_tool_version") else ""
    text = f"{len(rows)} row(s) from {r['import_tool']}{version}, model {model}, {r['import_detail']} data"
    for note in dict.fromkeys(x.get("import_failures") for x in rows if x.get("import_failures")):
        text += f"\n  {note}"
    if r.get("import_note"):
        text += f"\n  {r['import_note']}"
    if r.get("import_format"):
        text += f"\n  written by {r['import_format']}"
    if r.get("import_figures"):
        text += f"\n  figures: {r['import_figures']}"
    for name, unit in (("output_throughput", "tok/s"), ("request_throughput", "req/s"), ("mean_tpot_ms", "ms")):
        own, rule = r.get(name), r.get(f"vllm_rule_{name}")
        if own is not None and rule is not None and len(rows) == 1:
            what = OWN_NAMES.get(r.get("import_tool"), {}).get(name, "the tool's own")
            text += f"\n  {name}: {own:.4g} {unit} ({what}), {rule:.4g} {unit} by vLLM's rule"
    if r.get("import_rule_gap") and len(rows) == 1:
        text += f"\n  no figure by vLLM's rule: {r['import_rule_gap']}"
    if r.get("import_server_failures"):
        text += f"\n  {r['import_server_failures']}"
    if r.get("import_skipped"):
        text += f"\n  also in the folder, not read (give them as files): {r['import_skipped']}"
    if r.get("import_ignored"):
        text += f"\n  keys left out, spelled like vLLM's own: {r['import_ignored']}"
    gaps = [why.split(": ", 1)[1] for why in (missing(r, "request_ttft_ms"), missing(r, "p99_itl_ms")) if why]
    if gaps:
        text += "\n  not in this file: " + "; ".join(gaps)
    if room_models and model not in room_models:
        text += (f"\n  its model is not the room's ({', '.join(sorted(room_models))}): "
                 "its rows form a group of their own")
    return text


# What each tool calls the figure the row keeps, as its console prints it, for the line printed at import.
OWN_NAMES = {GUIDELLM: {"output_throughput": "GuideLLM's output_tokens_per_second",
                        "request_throughput": "GuideLLM's requests_per_second",
                        "mean_tpot_ms": "GuideLLM's ITL column, inter_token_latency_ms; its TPOT column counts the "
                                        "first token too"},
             AIPERF: {"output_throughput": "AIPerf's output_token_throughput",
                      "request_throughput": "AIPerf's request_throughput",
                      "mean_tpot_ms": "AIPerf's Inter Token Latency, with its tokenizer's count"}}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = None
    if "--room" in argv:
        i = argv.index("--room")
        if i + 1 >= len(argv):
            print("--room needs a folder", file=sys.stderr)
            return 2
        folder, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    if not argv or any(a.startswith("-") for a in argv):
        print("usage: bash guide.sh import FILE_OR_FOLDER… [--room FOLDER]", file=sys.stderr)
        return 2
    where = Path(folder) if folder else default_dir()
    models = {Path(str(r.get("cfg_model") or r.get("endpoint_model"))).name  # the room's own, not imported rows
              for p in where.glob("*.jsonl") for r in read_rows(p)
              if r.get("kind") == "load" and r.get("engine_location") != "imported"} - {"None"}
    added, failed = add(argv, where)
    for p, rows in added.items():
        print(f"{p}: {summary_line(rows, models)}")
    for p, why in failed.items():
        print(f"{p}: NOT imported. {why}", file=sys.stderr)
    if added:
        print(f"Rows are in {where}: notebook 90 (the workshop room) shows them beside the room's.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
