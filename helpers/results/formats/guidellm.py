"""GuideLLM's report (`benchmarks.json`, schema version 2: GuideLLM 0.7 and 0.8), one row per benchmark.

Every figure is GuideLLM's own, read from the benchmark's `metrics` block over its successful requests
(`GenerativeMetrics.compile` in guidellm/benchmark/schemas/metrics.py):

| row | GuideLLM's metric | how GuideLLM computes it |
|---|---|---|
| request / output / total throughput | `requests_per_second`, `output_tokens_per_second`, `tokens_per_second`: `mean` | the requests ended, or tokens made, inside its measured window ÷ the window (`rate_distribution_from_timings` drops what came before its start) |
| TTFT | `time_to_first_token_ms` | the requests whose first token came inside the window |
| TPOT | `inter_token_latency_ms` | (last token − first token) ÷ (output tokens − 1) per request, as vLLM's TPOT, its mean, median and percentiles weighted by each request's output tokens − 1 (vLLM's are over requests) |
| E2E latency | `request_latency` (seconds, here ms) | per request |
| ITL | none | GuideLLM's report writes no gap between streamed chunks |

Its percentiles p0.1 … p99.9 are kept under vLLM's names (`p90_ttft_ms`). GuideLLM's console prints
its throughputs over all requests (`status="total"`); the row's count only the successful ones, as
vLLM's do: the same where none failed or was cut off. GuideLLM's rates also leave out what ended
after its recorded window end (its last completion as its scheduler saw it), so even without a warm-up
its request rate can count one request fewer than its totals. Beside them, for a run without a warm-up
or a cool-down, the row keeps vLLM's definitions (`vllm_rule_*`): the successful requests' count and
tokens ÷ the span from the first request sent to the last one's end, as `vllm bench serve` times a run,
and the plain mean, median and p99 of their TPOT over requests. After a warm-up there are none:
GuideLLM's warm-up runs beside the requests it counts, while `vllm bench serve` finishes its warm-up
before it starts its clock, so no span holds only the counted requests. Each request's TTFT and TPOT
(for goodput) are those GuideLLM's rates and goodput count (`_window`).
"""  # noqa: E501 - the table's rows are Markdown table rows, one line each
from __future__ import annotations

from helpers.results.formats.common import ImportFileError, Source, date, failures, load_label, model_name, stats

# GenerativeBenchmarkMetadata.version in guidellm 0.7 and 0.8 (guidellm/benchmark/schemas/report.py)
SCHEMA = 2
# GuideLLM's percentile names (guidellm/schemas/base/statistics.py, Percentiles) → vLLM's
PERCENTILES = {"p001": "p0.1", "p01": "p1", "p05": "p5", "p10": "p10", "p25": "p25", "p75": "p75", "p90": "p90",
               "p95": "p95", "p99": "p99", "p999": "p99.9"}
# the row's figure → GuideLLM's metric and the factor to milliseconds
LATENCIES = {"ttft": ("time_to_first_token_ms", 1), "tpot": ("inter_token_latency_ms", 1),
             "e2el": ("request_latency", 1000)}
FIGURES = ("GuideLLM's own, from its metrics block, over the successful requests (its console's throughputs count all "
           "requests: the same where none failed or was cut off): throughputs count what fell inside its measured "
           "window ÷ the window; TPOT is its ITL column, inter_token_latency_ms, weighted by tokens (its TPOT column "
           "counts the first token too). vllm_rule_* beside them, for a run without a warm-up: the successful "
           "requests ÷ their span from first start to last end, as vllm bench serve times a run, and their TPOT "
           "over requests")


def report(blob: dict, source: Source) -> list[dict]:
    """The rows of one GuideLLM report."""
    meta = blob.get("metadata") or {}
    if meta.get("version") != SCHEMA:
        what = (f"a GuideLLM report of schema version {meta['version']!r} (field metadata.version)" if "version" in meta
                else "a report from GuideLLM before 0.5 (it has no metadata.version)")
        raise ImportFileError(source.path, f"is {what}; the guide reads schema version {SCHEMA}, which "
                              "GuideLLM 0.7 and 0.8 write.",
                              "a report written by GuideLLM 0.7 or 0.8 (`guidellm --version`): run the benchmark "
                              "again with it.")
    if not blob["benchmarks"]:
        raise ImportFileError(source.path, "is a GuideLLM report with no benchmarks in it (field benchmarks).",
                              "a report of a run that finished at least one benchmark.")
    spec = (blob.get("config") or {}).get("spec") or {}
    data = (spec.get("data") or [{}])[0]
    labels = ((blob.get("config") or {}).get("metadata") or {}).get("labels") or {}
    return [_row(b, i, source, meta.get("guidellm_version"), spec, data, labels)
            for i, b in enumerate(blob["benchmarks"])]


def _row(b: dict, i: int, source: Source, version, spec: dict, data: dict, labels: dict) -> dict:
    try:
        metrics, totals = b["metrics"], b["metrics"]["request_totals"]
        done, duration = b["requests"]["successful"], float(b["duration"])
        strategy = b["config"]["strategy"]
        own = {k: metrics[k]["successful"] for k in ("requests_per_second", "output_tokens_per_second",
                                                     "tokens_per_second", "prompt_token_count", "output_token_count",
                                                     *(m for m, _ in LATENCIES.values()))}
    except (KeyError, TypeError) as e:
        raise ImportFileError(source.path, f"benchmark {i} has no field {e} (GuideLLM schema {SCHEMA} has "
                              "metrics.request_totals, metrics.output_tokens_per_second …, requests.successful, "
                              "duration, config.strategy).",
                              "a report written by GuideLLM 0.7 or 0.8 (`guidellm --version`).") from e
    completed, failed = totals["successful"], totals["errored"]
    n_in, n_out = own["prompt_token_count"]["total_sum"], own["output_token_count"]["total_sum"]
    row = source.base(i, version, date(b.get("start_time")))
    row.update(duration=duration, completed=completed, failed=failed, incomplete=totals["incomplete"],
               total_input_tokens=n_in, total_output_tokens=n_out,
               request_throughput=own["requests_per_second"]["mean"],
               output_throughput=own["output_tokens_per_second"]["mean"],
               total_token_throughput=own["tokens_per_second"]["mean"],
               max_itl_ms=None, first_error=_first_error(b), import_figures=FIGURES,
               **{f"{s}_itl_ms": None for s in ("mean", "median", "p99")})
    streamed = any(r.get("time_to_first_token_ms") is not None for r in done) or not done
    for name, (metric, scale) in LATENCIES.items():
        d = own[metric]
        # GuideLLM writes 0.0 for a distribution of no values, and for TPOT without a first token it counts a 0.0
        # per request (metrics.py: `req.inter_token_latency_ms or 0.0`): neither is a measurement
        if not d.get("count") or (name != "e2el" and not streamed):
            row.update({f"{s}_{name}_ms": None for s in ("mean", "median", "std", *PERCENTILES.values())})
            row["import_no_first_token"] = True  # not streamed, or no first token inside the window
            continue
        row.update({f"mean_{name}_ms": d["mean"] * scale, f"median_{name}_ms": d["median"] * scale,
                    f"std_{name}_ms": d["std_dev"] * scale,
                    **{f"{PERCENTILES[p]}_{name}_ms": v * scale for p, v in (d.get("percentiles") or {}).items()
                       if p in PERCENTILES}})
    kept, covers, gap = _window(b, done, completed)
    if kept is not None and any(r.get("time_to_first_token_ms") is None for r in kept):
        kept, gap = None, "GuideLLM recorded no first token for some of its requests (a run that was not streamed)"
    warm, cool = float(b.get("warmup_duration") or 0), float(b.get("cooldown_duration") or 0)
    errored = (b.get("requests") or {}).get("errored") or []
    if warm or cool:  # its warm-up runs beside the requests it counts: no span holds only those
        rule, rule_gap = _by_vllms_rule(None, None), (
            "GuideLLM's warm-up or cool-down ran beside the requests it counted, so no span holds only those: "
            "vllm bench serve finishes its warm-up before it starts its clock, and its definition cannot be applied")
    elif len(done) != completed:
        rule, rule_gap = _by_vllms_rule(None, None), "the report does not list every request GuideLLM counted"
    else:  # every request listed, none in a warm-up: vLLM's count, tokens and span (TPOT only where streamed)
        rule, rule_gap = _by_vllms_rule(done, [*done, *errored]), None
    row.update(rule, import_duration_covers=covers, import_rule_gap=rule_gap,
               import_requests_kept=len(kept) if kept is not None else None)
    if kept:  # each request's TTFT and TPOT (vLLM's: GuideLLM's inter_token_latency_ms), for goodput
        row.update(request_ttft_ms=[r["time_to_first_token_ms"] for r in kept], import_detail="per request",
                   request_tpot_ms=[r["inter_token_latency_ms"] or 0.0 for r in kept])
    else:
        row.update(request_ttft_ms=None, request_tpot_ms=None, import_detail="summary", import_requests_gap=gap)
    failures(row, completed, failed, totals["total"])
    if totals["incomplete"]:  # cut off when the benchmark ended: GuideLLM's console counts them apart
        row["import_failures"] = "; ".join(x for x in (row.get("import_failures"), (
            f"{totals['incomplete']} of {totals['total']} requests were cut off unfinished when the benchmark ended "
            "(GuideLLM's incomplete)")) if x)
    row.update(_load(strategy, data, totals["total"], n_in, n_out, completed))
    backend = spec.get("backend") or {}
    row.update(endpoint_model=model_name(backend.get("model")), endpoint_url=backend.get("target"),
               config_label=" ".join(f"{k}={v}" for k, v in labels.items()) or f"GuideLLM {strategy.get('type_')}")
    return row


def _window(b: dict, done: list, counted: int) -> tuple[list | None, str, str | None]:
    """The requests GuideLLM's figures count, what its `duration` covers, and why the requests are not known
    where they are not. GuideLLM's totals count a request that ended at or after its window's start and
    started at or before its end (`get_within_range` in guidellm/benchmark/schemas/accumulator.py); its rates
    and its goodput count those that ended inside the window (`rate_distribution_from_timings` drops events
    after `end_time`, its last completion as its scheduler saw it, a fraction of a millisecond before a
    request's own end). `requests.successful` lists every request, warm-up and cool-down too. Where the first
    rule does not give GuideLLM's own count (a report whose `sample_size` kept only some), the requests are
    not known. The per-request lists (goodput) keep the second set, as GuideLLM's goodput counts."""
    start, end = b.get("start_time") or 0.0, b.get("end_time") or float("inf")
    warm, cool = float(b.get("warmup_duration") or 0), float(b.get("cooldown_duration") or 0)
    within = [r for r in done
              if (r.get("request_end_time") or 0) >= start and (r.get("request_start_time") or 0) <= end]
    cut = " and ".join(x for x in (f"a {warm:.1f} s warm-up before it" if warm else "",
                                   f"a {cool:.1f} s cool-down after it" if cool else "") if x)
    covers = (f"GuideLLM's measured window, not counting {cut} ({len(done) - len(within)} request(s))" if cut
              else "GuideLLM's whole run, from its first request's start to its recorded end (its last completion "
              "as its scheduler saw it)")
    sample = (b.get("config") or {}).get("sample_size")
    if len(within) != counted:
        return None, covers, (f"GuideLLM counted {counted} requests in its window, but its report lists "
                              f"{len(within)} there" + (f" (it kept a sample: sample_size {sample})"
                                                        if sample is not None else ""))
    kept = [r for r in within if (r.get("request_end_time") or 0) <= end]
    ttft_in = sum((r.get("request_start_time") or 0) + (r.get("time_to_first_token_ms") or 0) / 1000 >= start
                  for r in within)
    covers += (f": {len(within)} requests ended in it (GuideLLM's totals), {ttft_in} of them had their first token "
               f"in it (its TTFT figures), and {len(kept)} ended before its recorded end (its rates, its goodput, "
               "and each request's figures here)")
    return kept, covers, None


def _by_vllms_rule(done: list | None, sent: list | None) -> dict:
    """vLLM's definitions for a run without a warm-up or a cool-down, where GuideLLM counted every request it
    sent: the successful requests' count and tokens ÷ the span from the first request sent (errored ones
    too) to the last one's end, as vllm bench serve times a run from its first request to its last answer,
    and their TPOT over requests (one-token answers left out, as vLLM does)."""
    names = ("vllm_rule_request_throughput", "vllm_rule_output_throughput", "vllm_rule_total_token_throughput",
             "vllm_rule_mean_tpot_ms", "vllm_rule_median_tpot_ms", "vllm_rule_p99_tpot_ms")
    timed = [r for r in sent or [] if r.get("request_start_time") and r.get("request_end_time")]
    if not done or not timed:
        return dict.fromkeys(names)
    span = max(r["request_end_time"] for r in timed) - min(r["request_start_time"] for r in timed)
    n_in, n_out = sum(r.get("prompt_tokens") or 0 for r in done), sum(r.get("output_tokens") or 0 for r in done)
    tpot = sorted(r["inter_token_latency_ms"] for r in done if r.get("inter_token_latency_ms") is not None)
    out = dict(zip(names[:3], (len(done) / span, n_out / span, (n_in + n_out) / span)))
    out.update(zip(names[3:], stats("tpot", tpot).values()) if tpot else dict.fromkeys(names[3:]))
    return out


def _load(strategy: dict, data: dict, total: int, n_in, n_out, completed: int) -> dict:
    rate = strategy.get("rate")
    conc = (strategy.get("streams") or strategy.get("max_concurrency")
            or (1 if strategy.get("type_") == "synchronous" else None))
    load = {"load_num_prompts": total, "load_max_concurrency": conc,
            "load_request_rate": float(rate) if isinstance(rate, (int, float)) else None,
            "load_input_len": data.get("prompt_tokens") if not data.get("prompt_tokens_stdev") else None,
            "load_output_len": data.get("output_tokens") if not data.get("output_tokens_stdev") else None,
            "load_kind": None, "import_dataset": data.get("kind"), "import_strategy": strategy.get("type_"),
            "mean_input_tokens": n_in / completed if completed else None,
            "mean_output_tokens": n_out / completed if completed else None}
    load["load_label"] = load_label(load)
    return load


def _first_error(b: dict) -> str | None:
    for r in (b.get("requests") or {}).get("errored") or []:
        err = (r.get("info") or {}).get("error")
        if err:
            return str(err)[-500:]
    return None
