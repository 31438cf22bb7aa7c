"""AIPerf's `profile_export_aiperf.json` (schema 1.x; aiperf 0.13 writes 1.4), with its per-request
records (`profile_export.jsonl`, written with `--export-level records`) read from beside it.

Every figure is AIPerf's own, read from its summary, where each metric is a block of `avg`, `p50`,
`p90`, `std`… in its `unit` (aiperf/metrics/types/):

| row | AIPerf's metric |
|---|---|
| request / output / total throughput | `request_throughput`, `output_token_throughput`, `total_token_throughput` |
| TTFT | `time_to_first_token` |
| TPOT | `inter_token_latency`: (latency - TTFT) / (output tokens - 1) per request, as vLLM's TPOT, with the output tokens AIPerf counted with its tokenizer |
| E2E latency | `request_latency` |
| ITL | `inter_chunk_latency`: the gaps between streamed chunks, as vLLM's ITL |

The row's duration is AIPerf's profiling phase, `end_time` − `start_time`, which its throughputs divide
by. Beside them the row keeps vLLM's rule where the server's own token count (`usage_completion_tokens`)
gives another figure: `vllm_rule_output_throughput` (the server's output tokens ÷ that duration) and
`vllm_rule_mean_tpot_ms` (from the records, with the server's count). The records also give each
request's TTFT and TPOT, for goodput at any latency target.
"""  # noqa: E501 - the table's rows are Markdown table rows, one line each
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from helpers.results.formats.common import ImportFileError, Source, failures, load_label, model_name

SUMMARY, RECORDS = "profile_export_aiperf.json", "profile_export.jsonl"
LATENCIES = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "e2el": "request_latency",
             "itl": "inter_chunk_latency"}
FIGURES = ("AIPerf's own, from its summary, over its profiling phase (start_time to end_time); vllm_rule_* beside "
           "them count output tokens as the server did (usage_completion_tokens) over AIPerf's own benchmark "
           "duration, first request to last response, as vllm bench serve does")


def profile(blob: dict, source: Source) -> dict:
    """One AIPerf profile as a row."""
    if not str(blob.get("schema_version", "")).startswith("1."):
        raise ImportFileError(source.path, f"is an AIPerf summary of schema version {blob.get('schema_version')!r} "
                              "(field schema_version); the guide reads 1.x, which AIPerf 0.13 writes.",
                              "a summary written by AIPerf 0.13 (`aiperf --version`).")
    get = lambda name, stat="avg": (blob.get(name) or {}).get(stat)  # noqa: E731
    cfg = blob.get("input_config") or {}
    # request_count counts the successful requests; completed_request_count, successful plus failed
    # (aiperf/metrics/types/); a run in which none succeeded has no request_count at all.
    completed, duration = int(get("request_count") or 0), _window(blob) or get("benchmark_duration")
    if not duration:
        raise ImportFileError(source.path, "has no benchmark_duration (every AIPerf profile summary has it).",
                              f"the {SUMMARY} an `aiperf profile` run wrote.")
    failed = sum(int(e.get("count") or 0) for e in blob.get("error_summary") or []) or max(
        0, int(get("completed_request_count") or 0) - completed)
    row = source.base(0, blob.get("aiperf_version"), str(blob.get("start_time") or "")[:19] or None)
    n_in, n_out = get("total_isl"), get("total_output_tokens") or get("total_osl")
    served = get("total_usage_completion_tokens")  # the server's own count, where AIPerf asked for the usage
    spent = get("benchmark_duration")  # first request to last response: the span vllm bench serve times
    row.update(duration=duration, completed=completed, failed=failed, total_input_tokens=n_in,
               total_output_tokens=n_out, request_throughput=get("request_throughput"),
               output_throughput=get("output_token_throughput"), total_token_throughput=get("total_token_throughput"),
               vllm_rule_output_throughput=served / spent if served is not None and spent else None,
               vllm_rule_request_throughput=completed / spent if spent else None,
               vllm_rule_total_token_throughput=(served + (get("total_usage_prompt_tokens") or n_in or 0)) / spent
               if served is not None and spent else None,
               max_itl_ms=get("inter_chunk_latency", "max"), import_figures=FIGURES,
               first_error=_error_text((blob.get("error_summary") or [{}])[0].get("error_details")),
               import_tool_duration=get("benchmark_duration"),
               import_duration_covers="AIPerf's profiling phase, from its start_time to its end_time, which its "
               "throughputs divide by (its warm-up requests are not in it); AIPerf's own Benchmark Duration, from "
               "its first request to its last response, is kept as import_tool_duration")
    if (cfg.get("endpoint") or {}).get("streaming") is False or "time_to_first_token" not in blob:
        row["import_not_streamed"] = True  # AIPerf measures TTFT, TPOT and chunk gaps of streamed runs only
    for name, metric in LATENCIES.items():
        d = blob.get(metric) or {}
        row.update({f"mean_{name}_ms": d.get("avg"), f"median_{name}_ms": d.get("p50"), f"std_{name}_ms": d.get("std"),
                    **{f"{p}_{name}_ms": v for p, v in d.items() if re.fullmatch(r"p\d+", p) and p != "p50"}})
    records = _records(next((p for p in (source.path.parent / RECORDS, source.path.with_suffix(".jsonl"))
                             if p.exists()), source.path.parent / RECORDS))  # --profile-export-prefix: <prefix>.jsonl
    if records is not None and len(records) != completed:  # another run's records, left beside this summary
        row["import_requests_gap"] = (f"the {RECORDS} beside it holds {len(records)} successful profiling records, "
                                      f"not this summary's {completed}: another run's")
        records = None
    if records and any(r["ttft"] is None for r in records):  # AIPerf times a first token only when streamed
        row["import_requests_gap"] = ("AIPerf's records hold no time to first token: the run was not streamed "
                                      "(--streaming), so no request's TTFT or TPOT is known")
        records = None
    if records:  # vLLM's rule on each request: TPOT = (latency - TTFT) / (output tokens - 1), 0 for one token
        tpot = [(r["latency"] - r["ttft"]) / (r["tokens"] - 1) if r["tokens"] > 1 else 0.0 for r in records]
        many = [t for t, r in zip(tpot, records) if r["tokens"] > 1]
        row.update(request_ttft_ms=[r["ttft"] for r in records], request_tpot_ms=tpot, import_detail="per request",
                   import_requests_kept=len(records), vllm_rule_mean_tpot_ms=sum(many) / len(many) if many else None)
    else:
        row.update(request_ttft_ms=None, request_tpot_ms=None, vllm_rule_mean_tpot_ms=None, import_detail="summary")
    failures(row, completed, failed, completed + failed)
    if blob.get("is_complete") is False or blob.get("was_cancelled"):  # AIPerf: tooling should not compare it
        row["import_failures"] = "; ".join(x for x in (row.get("import_failures"), "AIPerf marked this run incomplete"
                                                       + (f": {blob['incomplete_reason']}" if blob.get(
                                                           "incomplete_reason") else " (was_cancelled)")) if x)
    row.update(_load(cfg, completed + failed, n_in, n_out, completed))
    model = ((cfg.get("models") or {}).get("items") or [{}])[0].get("name")
    row.update(endpoint_model=model_name(model), endpoint_url=((cfg.get("endpoint") or {}).get("urls") or [None])[0],
               config_label=f"AIPerf {row['import_strategy'] or 'profile'}")
    return row


def _records(path: Path) -> list[dict] | None:
    """The profiling phase's successful requests from AIPerf's records file: TTFT and latency in ms and
    the output tokens (the server's count where AIPerf recorded the usage). None where there is no file."""
    if not path.exists():
        return None
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ImportFileError(path, f"line {n} is not complete JSON ({e}): the records were cut short.",
                                  f"the records file as AIPerf wrote it, or the {SUMMARY} alone in a folder of "
                                  "its own (its figures, without each request's).") from e
        meta, m = rec.get("metadata") or {}, rec.get("metrics") or {}
        value = lambda k: (m.get(k) or {}).get("value")  # noqa: E731
        if (meta.get("benchmark_phase", "profiling") != "profiling" or rec.get("error")
                or value("request_latency") is None):
            continue
        tokens = value("usage_completion_tokens") or value("output_sequence_length") or 0
        out.append({"ttft": value("time_to_first_token"), "latency": value("request_latency"), "tokens": int(tokens)})
    return out


def _error_text(details) -> str | None:
    """AIPerf's error_details ({type, code, message}) as one line."""
    if not details:
        return None
    if isinstance(details, dict):
        return " ".join(str(details[k]) for k in ("type", "code", "message") if details.get(k) is not None)[-500:]
    return str(details)[-500:]


def _window(blob: dict) -> float | None:
    """AIPerf's profiling phase in seconds, `end_time` - `start_time`: what its throughputs divide by
    (observation_duration in aiperf's metric dicts); None where either is missing."""
    try:
        return (datetime.fromisoformat(blob["end_time"]) - datetime.fromisoformat(blob["start_time"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _load(cfg: dict, total: int, n_in, n_out, completed) -> dict:
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
    load["load_label"] = load_label(load)
    return load
