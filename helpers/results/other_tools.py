"""Results written by other tools, read as the guide's rows; and the guide's rows written in theirs.

Teams that benchmark GPU servers already keep the JSON of vLLM's `vllm bench serve --save-result`
(one run), of `vllm bench sweep serve` (a folder: one run file per repeat of each combination of
server and benchmark settings), of GuideLLM (`benchmarks.json`) or of AIPerf
(`profile_export_aiperf.json`, with its per-request records beside it). `from_file(path)` turns each into
rows of the guide's schema, so verdict rules, goodput at a latency target, the knee, the room and
the charts work on them as on a local run. `to_vllm_bench(row)` is the way back.

What a file does not record stays empty, never guessed, and `missing(row, figure)` says why:

| in the file | vllm bench serve | + `--save-detailed` | vllm bench sweep | GuideLLM |
|---|---|---|---|---|
| throughput, request counts, token totals | yes | yes | yes, per repeat | yes |
| TTFT / TPOT / ITL mean, median, p99 | the `--percentile-metrics` and `--metric-percentiles` asked for | same | same | TTFT, TPOT, E2E from its requests; no ITL |
| per-request TTFT and TPOT (goodput at any target) | no | yes | no (the sweep does not pass `--save-detailed`) | yes, when it kept every request |
| load: requests, concurrency, rate | yes | yes | yes | from its strategy |
| prompt and answer lengths | means only | each request's | means only | the data it was asked for |
| server settings | `--metadata KEY=VALUE` named like a guide setting (`max_num_seqs=64`); other keys as `meta_*` | same | the sweep's server parameters | none |
| the tool's version | not recorded | not recorded | not recorded | `metadata.guidellm_version` |

TPOT is vLLM's everywhere: (latency - TTFT) / (output tokens - 1) per request
(`calculate_metrics` in vllm/benchmarks/serve.py). GuideLLM calls that `inter_token_latency_ms`;
its own `time_per_output_token_ms` counts the first token too, and its summary distributions weight
each token, not each request, so the guide recomputes every figure from GuideLLM's requests.

    bash guide.sh import FILE_OR_FOLDER… [--room FOLDER]
"""  # noqa: E501 - the table's rows are Markdown table rows, one line each
from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.config import BY_NAME
from helpers.load.workloads import PERCENTILE_KEYS, SUMMARY_KEYS, summarize
from helpers.results import roofline
from helpers.results.gaps import AIPERF, GUIDELLM, VLLM_BENCH, VLLM_SWEEP, missing  # noqa: F401 - missing: the importer's reasons
from helpers.results.rows import combine
from helpers.results.store import default_dir, jsonable, read_rows

# GenerativeBenchmarkMetadata.version in guidellm 0.7 and 0.8 (guidellm/benchmark/schemas/report.py)
GUIDELLM_SCHEMA = 2
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
# a run in which no request completed has no rate to compare: 0 tokens/s is not a measurement of the
# server's speed, and a ratio against it reads ×inf (gaps.missing then gives the reason)
# vllm bench serve's --backend values that talk to a vLLM server (or say nothing of the server)
VLLM_BACKENDS = ("vllm", "openai", "openai-chat", "openai-audio", "openai-embeddings", "vllm-chat")
NOTHING_COMPLETED = {"request_throughput": None, "output_throughput": None, "total_token_throughput": None}
LATENCY_KEY = re.compile(r"^(mean|median|std|p[\d.]+)_(ttft|tpot|itl|e2el)_ms$")
VLLM_OWN_PATTERN = re.compile(r"^(mean|median|std|p[\d.]+)_\w+_ms$|^probe_|^spec_decode_|^diffusion_|^guide_")


class ImportFileError(ValueError):
    """A file the guide cannot read: which file, which field, and what to try."""

    def __init__(self, path, what: str, fix: str):
        super().__init__(f"{Path(path).name}: {what}\nTry: {fix}")
        self.path = Path(path)


@dataclass(frozen=True)
class Source:
    """One file (or a sweep's folder) as read: its name, a hash of its bytes, its tool."""

    path: Path
    sha: str
    tool: str

    def base(self, index: int, version: str | None, when: str | None) -> dict:
        """What every imported row starts with. Its run id and key come from the file's bytes,
        so importing the same file twice adds nothing."""
        tag = f"imported · {self.tool}" + (f" · {self.path.name}" if self.tool == VLLM_SWEEP else "")
        return {"run_id": f"{self.sha[:10]}-{index}", "key": f"imported-{self.sha[:16]}-{index}", "kind": "load",
                "engine_location": "imported", "measurement_version": None, "tag": tag,
                "time": when or time.strftime("%Y-%m-%dT%H:%M:%S"), "import_tool": self.tool,
                "import_tool_version": version, "import_file": self.path.name,
                "env_env_id": f"imported-{self.sha[:10]}", "env_machine_id": None,
                **dict.fromkeys(roofline.COLUMNS)}  # a floor needs the serving machine's roofs: empty


def _not_json(data: bytes) -> str | None:
    """What a file that is not JSON at all is, so the refusal names it: empty, not text, or a CSV."""
    if not data.strip():
        return "empty"
    if b"\0" in data[:4096]:
        return "not text (binary)"
    try:
        head = data[:4096].decode("utf-8").lstrip()
    except UnicodeDecodeError:
        return "not text (not UTF-8)"
    first = head.splitlines()[0] if head else ""
    if not head.startswith(("{", "[")) and first.count(",") >= 2:
        return "a CSV table (GuideLLM and AIPerf also write CSV; export JSON instead)"
    return None


def from_file(path: str | Path) -> list[dict]:
    """The rows in one `vllm bench serve` result, `vllm bench sweep` folder or GuideLLM report."""
    path = Path(path)
    if path.is_dir():
        for name in ("benchmarks.json", AIPERF_SUMMARY):  # GuideLLM's output folder; AIPerf's artifact folder
            if (path / name).exists():
                return from_file(path / name)
        return _sweep(path)
    if not path.exists():
        raise ImportFileError(path, "no such file or folder.", "the path of a result file or a sweep's folder.")
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    try:
        blob = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        if (lines := _json_lines(data)) is not None:  # vllm bench serve --append-result: one result per line
            return [_vllm_row(b, Source(path, sha, VLLM_BENCH), i) for i, b in enumerate(lines)]
        if data.lstrip().startswith(b'{"metadata"') and b'"metrics"' in data[:4000]:
            raise ImportFileError(path, "holds AIPerf's per-request records, not its summary.",
                                  f"the {AIPERF_SUMMARY} beside it (or their folder): "
                                  "the records are read with it.") from e
        if what := _not_json(data):
            raise ImportFileError(path, f"is {what}, not a result file.",
                                  "the JSON file the tool wrote (vllm bench serve --save-result, GuideLLM's "
                                  "--output kind=json, AIPerf's profile_export_aiperf.json).") from e
        ended = data.strip()[-1:] in (b"}", b"]")
        cut = "" if ended else " (it ends mid-way: was it still being written, or copied in part?)"
        raise ImportFileError(path, f"is not complete JSON{cut}: {e}.",
                              "the whole file as the tool wrote it (vllm bench serve --save-result, GuideLLM's "
                              "--output kind=json).") from e
    if isinstance(blob, dict) and "benchmarks" in blob:
        return _guidellm(blob, Source(path, sha, GUIDELLM))
    if isinstance(blob, dict) and ("aiperf_version" in blob or "time_to_first_token" in blob):
        return [_aiperf(blob, Source(path, sha, AIPERF))]
    if isinstance(blob, dict) and ("completed" in blob or "model_id" in blob):
        return [_vllm_row(blob, Source(path, sha, VLLM_BENCH), 0)]
    if isinstance(blob, list) and blob and all(isinstance(x, dict) and "completed" in x for x in blob):
        raise ImportFileError(path, "is one combination's summary.json of a vllm bench sweep.",
                              "the sweep's experiment folder (it holds each combination's run files).")
    what = f"a JSON {type(blob).__name__}" + (f" with keys {sorted(blob)[:6]}" if isinstance(blob, dict) else "")
    raise ImportFileError(path, f"is {what}: neither a vllm bench serve result (no 'completed', 'model_id'), "
                          "nor a GuideLLM report (no 'benchmarks'), nor an AIPerf summary (no 'aiperf_version').",
                          "a file written by `vllm bench serve --save-result`, a `vllm bench sweep serve` folder, "
                          f"GuideLLM's benchmarks.json, or AIPerf's {AIPERF_SUMMARY} (or its artifact folder).")


def _json_lines(data: bytes) -> list[dict] | None:
    """The results of a file `vllm bench serve --append-result` grew, one JSON object per line
    (vllm/benchmarks/serve.py opens it with mode "a+" and writes a newline between results);
    None where it is not that."""
    try:
        lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return lines if len(lines) > 1 and all(isinstance(x, dict) and "completed" in x for x in lines) else None


# -- vllm bench serve -----------------------------------------------------------------------

# vLLM's benchmarks/benchmark_serving.py before it had --max-concurrency (2024 and earlier) wrote the same
# figures without `max_concurrency` (every request was sent as it arrived), with `best_of` and
# `use_beam_search`, and without `latencies` (per-request TPOT then comes from TTFT and the chunk gaps).
OLD_SCRIPT = ("vLLM's benchmarks/benchmark_serving.py from before --max-concurrency (2024 and earlier): no "
              "concurrency cap, every request sent as it arrived")


def _old_script(blob: dict) -> bool:
    return "max_concurrency" not in blob and ("best_of" in blob or "use_beam_search" in blob)


def _vllm_row(blob: dict, source: Source, index: int, bench_keys: frozenset = frozenset()) -> dict:
    """One `vllm bench serve` result as a row. `bench_keys`: in a sweep's run file, the parameters
    that are `vllm bench serve` arguments (the load); the others are the server's."""
    old = _old_script(blob)
    for field in VLLM_REQUIRED:
        if field not in blob and not (old and field == "max_concurrency"):
            raise ImportFileError(source.path, f"has no '{field}', which every vllm bench serve result has "
                                  "(another tool's file, or a format this guide does not know).",
                                  "a file written by vllm bench serve --save-result.")
    row = source.base(index, blob.get("guide_vllm_version"), _date(blob.get("date")))
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
        row[k] = _float(blob.get(k))
    for k, v in blob.items():  # every other percentile the run asked for (p90, p99.9, std)
        if LATENCY_KEY.match(k):
            row[k] = _float(v)
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
    row.update(_vllm_load(blob, detailed))
    row.update(_vllm_server(blob, bench_keys))
    row["config_label"] = (blob.get("label") or row.get("import_settings") or source.path.stem)
    backend = blob.get("backend")
    if isinstance(backend, str) and backend not in VLLM_BACKENDS:  # one file can hold runs against two servers
        row["config_label"] += f" ({backend})"
    return row


def _vllm_load(blob: dict, detailed: bool) -> dict:
    rate = blob.get("request_rate")
    done = blob["completed"] or 1
    same = lambda xs: xs[0] if xs and all(x == xs[0] for x in xs) else None  # noqa: E731
    ins, outs = (same(blob.get("input_lens")), same(blob.get("output_lens"))) if detailed else (None, None)
    load = {"load_num_prompts": blob.get("num_prompts"), "load_max_concurrency": blob.get("max_concurrency"),
            "load_request_rate": None if rate in (None, "inf") else float(rate),
            "load_input_len": ins, "load_output_len": outs, "load_kind": None,
            "mean_input_tokens": blob["total_input_tokens"] / done,
            "mean_output_tokens": blob["total_output_tokens"] / done}
    load["load_label"] = _load_label(load)
    return load


def _vllm_server(blob: dict, bench_keys: frozenset) -> dict:
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


def model_name(model_id):
    """`org/name` for a Hugging Face cache path (…/models--org--name/snapshots/<hash>/), whose last
    part is a commit hash that names nothing; any other model id as written."""
    m = re.search(r"models--([^/]+?)--([^/]+)/snapshots/[0-9a-f]+/?$", str(model_id or ""))
    return f"{m[1]}/{m[2]}" if m else model_id


def _sweep(folder: Path) -> list[dict]:
    """A `vllm bench sweep serve` experiment folder: one row per combination, its run files as repeats.
    A combination's folder is SERVE--<server name>-BENCH--<benchmark name> (sweep/serve.py:
    _get_comb_base_path); each run=N.json is a vllm bench serve result with the sweep's parameters."""
    runs = sorted(p for p in folder.rglob("run=*.json") if not p.name.endswith(".failure.json"))
    if not runs:
        raise ImportFileError(folder, "holds no run=N.json files: not a vllm bench sweep experiment folder.",
                              "the folder `vllm bench sweep serve -o OUT` wrote (OUT/<experiment name>), or a "
                              "single result file.")
    sha = hashlib.sha256(b"".join(p.relative_to(folder).as_posix().encode() + p.read_bytes() for p in runs)).hexdigest()
    source = Source(folder, sha, VLLM_SWEEP)
    bench_keys = BENCH_ARGUMENTS
    rows = []
    for i, (comb, files) in enumerate(_by_folder(runs).items()):
        serve_name, bench_name = _comb_names(comb.name) if comb != folder else (None, None)
        repeats = []
        for p in files:
            try:
                blob = json.loads(p.read_bytes())
            except json.JSONDecodeError as e:
                raise ImportFileError(p, f"is not complete JSON ({e}).", "the sweep's folder as it wrote it.") from e
            repeats.append(_vllm_row(blob, source, i, bench_keys))
        row = {**repeats[0], **combine([_figures(r) for r in repeats])}
        row.update(config_label=serve_name or repeats[0].get("import_settings") or "default",
                   load_label=(f"{bench_name} · " if bench_name else "") + repeats[0]["load_label"],
                   import_file=f"{folder.name}/{comb.name}")
        rows.append(row)
    return rows


def _figures(row: dict) -> dict:
    return {k: row[k] for k in [*SUMMARY_KEYS, "max_itl_ms", "request_ttft_ms", "request_tpot_ms"] if k in row}


def _by_folder(paths: list[Path]) -> dict[Path, list[Path]]:
    out: dict[Path, list[Path]] = {}
    for p in paths:
        out.setdefault(p.parent, []).append(p)
    return out


def _comb_names(name: str) -> tuple[str | None, str | None]:
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


# -- GuideLLM -------------------------------------------------------------------------------

def _guidellm_window(b: dict, done: list, counted: int) -> tuple[list, str]:
    """The requests GuideLLM counted, and what its `duration` covers. With a warm-up or cool-down,
    `requests.successful` lists every request (nothing on one marks its phase) while the figures
    (`metrics`, `duration` = end_time - start_time) count the requests that overlap the measured window
    (`get_within_range` in guidellm/benchmark/schemas/accumulator.py, used by metrics.py). The window
    opens at a moment the report does not keep exactly, but `counted` says how many: after a warm-up
    those are the last to finish, before a cool-down the first."""
    warm, cool = float(b.get("warmup_duration") or 0), float(b.get("cooldown_duration") or 0)
    if not (warm or cool):
        return done, "GuideLLM's whole run, from its first request's start to its last answer"
    by_end = sorted(done, key=lambda r: r.get("request_end_time") or 0)
    if (warm and cool) or not 0 < counted <= len(done):  # where the cut falls at both ends is not known
        return done, (f"GuideLLM's measured window ({counted} requests) between a warm-up and a cool-down, which "
                      f"this guide cannot match to its request list of {len(done)}")
    kept = by_end[-counted:] if warm else by_end[:counted]
    start = b.get("start_time") or 0
    early = sum((r.get("request_start_time") or 0) < start for r in kept)
    left = f"a {warm:.1f} s warm-up before it" if warm else f"a {cool:.1f} s cool-down after it"
    return kept, (f"GuideLLM's measured window, not counting {left} ({len(done) - len(kept)} request(s)): "
                  f"the {len(kept)} requests that finished in it, {early} of them started before it")


def _guidellm(blob: dict, source: Source) -> list[dict]:
    meta = blob.get("metadata") or {}
    if meta.get("version") != GUIDELLM_SCHEMA:
        what = (f"a GuideLLM report of schema version {meta['version']!r} (field metadata.version)" if "version" in meta
                else "a report from GuideLLM before 0.5 (it has no metadata.version)")
        raise ImportFileError(source.path, f"is {what}; the guide reads schema version {GUIDELLM_SCHEMA}, which "
                              "GuideLLM 0.7 and 0.8 write.",
                              "a report written by GuideLLM 0.7 or 0.8 (`guidellm --version`): run the benchmark "
                              "again with it.")
    if not blob["benchmarks"]:
        raise ImportFileError(source.path, "is a GuideLLM report with no benchmarks in it (field benchmarks).",
                              "a report of a run that finished at least one benchmark.")
    spec = (blob.get("config") or {}).get("spec") or {}
    data = (spec.get("data") or [{}])[0]
    labels = ((blob.get("config") or {}).get("metadata") or {}).get("labels") or {}
    return [_guidellm_row(b, i, source, meta.get("guidellm_version"), spec, data, labels)
            for i, b in enumerate(blob["benchmarks"])]


def _guidellm_row(b: dict, i: int, source: Source, version, spec: dict, data: dict, labels: dict) -> dict:
    try:
        totals = b["metrics"]["request_totals"]
        done, duration = b["requests"]["successful"], float(b["duration"])
        strategy = b["config"]["strategy"]
    except (KeyError, TypeError) as e:
        raise ImportFileError(source.path, f"benchmark {i} has no field {e} (GuideLLM schema {GUIDELLM_SCHEMA} "
                              "has metrics.request_totals, requests.successful, duration, config.strategy).",
                              "a report written by GuideLLM 0.7 or 0.8 (`guidellm --version`).") from e
    row = source.base(i, version, _date(b.get("start_time")))
    done, covers = _guidellm_window(b, done, totals["successful"])
    every = len(done) == totals["successful"]  # GuideLLM keeps a sample when --metrics sets a sample size
    ttft = [r["time_to_first_token_ms"] for r in done]
    tpot = [r["inter_token_latency_ms"] or 0.0 for r in done]  # vLLM's TPOT; None for one-token answers
    e2el = [1000 * r["request_latency"] for r in done]
    n_in, n_out = sum(r["prompt_tokens"] or 0 for r in done), sum(r["output_tokens"] or 0 for r in done)
    completed = totals["successful"]
    row.update(duration=duration, completed=completed, failed=totals["errored"], incomplete=totals["incomplete"],
               total_input_tokens=n_in if every else None, total_output_tokens=n_out if every else None,
               request_throughput=completed / duration,
               output_throughput=n_out / duration if every else None,
               total_token_throughput=(n_in + n_out) / duration if every else None,
               request_ttft_ms=ttft if every else None, request_tpot_ms=tpot if every else None,
               max_itl_ms=None, first_error=_first_error(b), import_detail="per request" if every else "a sample",
               import_requests_kept=len(done), import_duration_covers=covers)
    many = [t for t, r in zip(tpot, done) if r["inter_token_latency_ms"] is not None]  # vLLM: one-token answers out
    for name, values in (("ttft", ttft), ("tpot", many), ("e2el", e2el)):
        row.update(_stats(name, values if every else []))
    row.update({f"{s}_itl_ms": None for s in ("mean", "median", "p99")})
    rate = strategy.get("rate")
    conc = (strategy.get("streams") or strategy.get("max_concurrency")
            or (1 if strategy.get("type_") == "synchronous" else None))
    load = {"load_num_prompts": totals["total"], "load_max_concurrency": conc,
            "load_request_rate": float(rate) if isinstance(rate, (int, float)) else None,
            "load_input_len": data.get("prompt_tokens") if not data.get("prompt_tokens_stdev") else None,
            "load_output_len": data.get("output_tokens") if not data.get("output_tokens_stdev") else None,
            "load_kind": None, "import_dataset": data.get("kind"), "import_strategy": strategy.get("type_"),
            "mean_input_tokens": n_in / len(done) if done else None,
            "mean_output_tokens": n_out / len(done) if done else None}
    load["load_label"] = _load_label(load)
    backend = spec.get("backend") or {}
    if totals["errored"] or not completed:
        row["import_failures"] = (f"no request completed: 0 of {totals['total']}" if not completed else
                                  f"{totals['errored']} of {totals['total']} requests failed; "
                                  "the figures are the others'")
        if not completed:
            row.update(NOTHING_COMPLETED)
    row.update(load, endpoint_model=model_name(backend.get("model")), endpoint_url=backend.get("target"),
               config_label=" ".join(f"{k}={v}" for k, v in labels.items()) or f"GuideLLM {strategy.get('type_')}")
    return row


def _stats(name: str, values: list[float]) -> dict:
    """Mean, median and p99 as vLLM's calculate_metrics computes them (numpy's linear percentile)."""
    if not values:
        return {f"{s}_{name}_ms": None for s in ("mean", "median", "p99")}
    import numpy as np

    return {f"mean_{name}_ms": float(np.mean(values)), f"median_{name}_ms": float(np.median(values)),
            f"p99_{name}_ms": float(np.percentile(values, 99))}


def _first_error(b: dict) -> str | None:
    for r in (b.get("requests") or {}).get("errored") or []:
        err = (r.get("info") or {}).get("error")
        if err:
            return str(err)[-500:]
    return None


# -- AIPerf --------------------------------------------------------------------------------------

AIPERF_SUMMARY, AIPERF_RECORDS = "profile_export_aiperf.json", "profile_export.jsonl"


def _aiperf(blob: dict, source: Source) -> dict:
    """AIPerf's `profile_export_aiperf.json` (schema 1.x; aiperf 0.13 writes 1.4): each metric a block of
    `avg`, `p50`, `p99`… in its `unit`. With `--export-level records` the per-request records lie beside
    it (`profile_export.jsonl`); from them the guide recomputes TTFT, TPOT, latency and ITL (its
    `inter_chunk_latency`: the gaps between content responses, as vLLM's client records them) by vLLM's
    rules, counting output tokens as the server did (`usage_completion_tokens`) where AIPerf recorded it."""
    if not str(blob.get("schema_version", "")).startswith("1."):
        raise ImportFileError(source.path, f"is an AIPerf summary of schema version {blob.get('schema_version')!r} "
                              "(field schema_version); the guide reads 1.x, which AIPerf 0.13 writes.",
                              "a summary written by AIPerf 0.13 (`aiperf --version`).")
    get = lambda name, stat="avg": (blob.get(name) or {}).get(stat)  # noqa: E731
    cfg = blob.get("input_config") or {}
    # request_count counts the successful requests; completed_request_count, successful plus failed
    # (aiperf/metrics/types/); a run in which none succeeded has no request_count at all.
    completed, duration = int(get("request_count") or 0), get("benchmark_duration")
    if not duration:
        raise ImportFileError(source.path, "has no benchmark_duration (every AIPerf profile summary has it).",
                              f"the {AIPERF_SUMMARY} an `aiperf profile` run wrote.")
    failed = sum(int(e.get("count") or 0) for e in blob.get("error_summary") or []) or max(
        0, (get("completed_request_count") or 0) - completed)
    records = _aiperf_records(source.path.parent / AIPERF_RECORDS)
    row = source.base(0, blob.get("aiperf_version"), str(blob.get("start_time") or "")[:19] or None)
    n_in = get("total_usage_prompt_tokens") or get("total_isl")
    n_out = get("total_usage_completion_tokens") or get("total_osl")
    row.update(duration=duration, completed=completed, failed=failed, total_input_tokens=n_in,
               total_output_tokens=n_out, request_throughput=completed / duration,
               output_throughput=n_out / duration if n_out is not None else None,
               total_token_throughput=(n_in + n_out) / duration if None not in (n_in, n_out) else None,
               max_itl_ms=None, first_error=str((blob.get("error_summary") or [{}])[0].get("error_details")
                                                or "")[-500:] or None,
               import_duration_covers="AIPerf's profiling phase (its warm-up requests are not in it)")
    if records:  # vLLM's rules on each request: TPOT = (latency - TTFT) / (output tokens - 1)
        ttft = [r["time_to_first_token"] for r in records]
        e2el = [r["request_latency"] for r in records]
        tpot = [(r["request_latency"] - r["time_to_first_token"]) / (r["tokens"] - 1) if r["tokens"] > 1 else 0.0
                for r in records]
        gaps = [g for r in records for g in r["gaps"]]  # vLLM pools every request's chunk gaps into its ITL
        for name, values in (("ttft", ttft), ("tpot", [t for t, r in zip(tpot, records) if r["tokens"] > 1]),
                             ("e2el", e2el), ("itl", gaps)):  # TPOT statistics leave one-token answers out, as vLLM
            row.update(_stats(name, values))
        row.update(request_ttft_ms=ttft, request_tpot_ms=tpot, import_detail="per request",
                   import_requests_kept=len(records), max_itl_ms=max(gaps) if gaps else None)
    else:  # the summary alone: its own statistics (TPOT with AIPerf's token count)
        for name, key in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency"), ("e2el", "request_latency"),
                          ("itl", "inter_chunk_latency")):
            row.update({f"mean_{name}_ms": get(key), f"median_{name}_ms": get(key, "p50"),
                        **{f"{p}_{name}_ms": v for p, v in (blob.get(key) or {}).items() if re.fullmatch(r"p\d+", p)
                           and p != "p50"}})
        row.update(request_ttft_ms=None, request_tpot_ms=None, import_detail="summary")
    if failed or not completed:
        row["import_failures"] = (f"no request completed: 0 of {failed}" if not completed else
                                  f"{failed} of {completed + failed} requests failed; the figures are the others'")
        if not completed:
            row.update({k: None for k in row if LATENCY_KEY.match(k)}, request_ttft_ms=None, request_tpot_ms=None,
                       **NOTHING_COMPLETED)
    row.update(_aiperf_load(cfg, completed + failed, n_in, n_out, completed))
    model = ((cfg.get("models") or {}).get("items") or [{}])[0].get("name")
    row.update(endpoint_model=model_name(model), endpoint_url=((cfg.get("endpoint") or {}).get("urls") or [None])[0],
               config_label=f"AIPerf {row['import_strategy'] or 'profile'}")
    return row


def _aiperf_records(path: Path) -> list[dict] | None:
    """The profiling phase's successful requests from AIPerf's records file: TTFT and latency in ms and
    the output tokens (the server's count where AIPerf recorded the usage). None where there is no file."""
    if not path.exists():
        return None
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        meta, m = rec.get("metadata") or {}, rec.get("metrics") or {}
        value = lambda k: (m.get(k) or {}).get("value")  # noqa: E731
        if (meta.get("benchmark_phase", "profiling") != "profiling" or rec.get("error")
                or value("request_latency") is None):
            continue
        tokens = value("usage_completion_tokens") or value("output_sequence_length") or 0
        out.append({"time_to_first_token": value("time_to_first_token"), "request_latency": value("request_latency"),
                    "tokens": int(tokens), "gaps": value("inter_chunk_latency") or []})
    return out


def _aiperf_load(cfg: dict, total: int, n_in, n_out, completed) -> dict:
    phase = next((p for p in cfg.get("phases") or [] if p.get("kind", "profiling") == "profiling"), {})
    prompts = ((cfg.get("datasets") or [{}])[0].get("prompts") or {})
    fixed = lambda d: int(d["mean"]) if d and not d.get("stddev") and d.get("mean") is not None else None  # noqa: E731
    rate = phase.get("rate") or phase.get("request_rate")
    load = {"load_num_prompts": phase.get("requests") or total, "load_max_concurrency": phase.get("concurrency"),
            "load_request_rate": float(rate) if isinstance(rate, (int, float)) else None,
            "load_input_len": fixed(prompts.get("isl")), "load_output_len": fixed(prompts.get("osl")),
            "load_kind": None, "import_strategy": phase.get("type"),
            "mean_input_tokens": n_in / completed if completed and n_in is not None else None,
            "mean_output_tokens": n_out / completed if completed and n_out is not None else None}
    load["load_label"] = _load_label(load)
    return load


# -- shared pieces ----------------------------------------------------------------------------

def _load_label(load: dict) -> str:
    n_in = load["load_input_len"] or (f"~{load['mean_input_tokens']:.0f}" if load.get("mean_input_tokens") else "?")
    n_out = load["load_output_len"] or (f"~{load['mean_output_tokens']:.0f}" if load.get("mean_output_tokens") else "?")
    conc = load["load_max_concurrency"]
    rate = load["load_request_rate"]
    arrivals = f" ({load['import_strategy']})" if load.get("import_strategy") in ("constant", "poisson") else ""
    return (f"{load['load_num_prompts']} requests {n_in}→{n_out} tokens @ conc {conc or '∞'}"
            + (f", {rate:g} req/s{arrivals}" if rate else ""))


def _date(value) -> str | None:
    if isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(value))
    if isinstance(value, str) and re.fullmatch(r"\d{8}-\d{6}", value):  # vllm bench serve: 20261203-072516
        return f"{value[:4]}-{value[4:6]}-{value[6:8]}T{value[9:11]}:{value[11:13]}:{value[13:15]}"
    return None


def _float(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


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


# -- why a figure is empty ------------------------------------------------------------------------

# -- the way back: a guide row as a vllm bench serve result ------------------------------------

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
        target = folder / f"{rows[0]['env_env_id']}.jsonl"
        seen = {r.get("run_id") for r in read_rows(target)}
        new = [r for r in rows if r["run_id"] not in seen]
        if new:
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
    if r.get("import_format"):
        text += f"\n  written by {r['import_format']}"
    if r.get("import_ignored"):
        text += f"\n  keys left out, spelled like vLLM's own: {r['import_ignored']}"
    gaps = [why.split(": ", 1)[1] for why in (missing(r, "request_ttft_ms"), missing(r, "p99_itl_ms")) if why]
    if gaps:
        text += "\n  not in this file: " + "; ".join(gaps)
    if room_models and model not in room_models:
        text += (f"\n  its model is not the room's ({', '.join(sorted(room_models))}): "
                 "its rows form a group of their own")
    return text


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
    models = {Path(str(r.get("cfg_model") or r.get("endpoint_model"))).name
              for p in where.glob("*.jsonl") for r in read_rows(p) if r.get("kind") == "load"} - {"None"}
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
