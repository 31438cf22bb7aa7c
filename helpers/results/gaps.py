"""Why a row lacks a figure: an imported file records only what its tool wrote, and a verdict
that needs a missing figure says which file and why ("not in this file: …") instead of guessing.

The judging layer (`verdicts`, `slo`, `tuning`) asks this module; it needs nothing of the importer
(helpers/results/other_tools.py), which only writes the tool names that rows carry.
"""
from __future__ import annotations

import re

from helpers.results import roofline

VLLM_BENCH, VLLM_SWEEP, GUIDELLM, AIPERF = "vllm bench serve", "vllm bench sweep", "guidellm", "aiperf"
# the percentiles each tool writes for every latency (GuideLLM's Percentiles; AIPerf's metric blocks)
TOOL_PERCENTILES = {GUIDELLM: ("0.1", "1", "5", "10", "25", "50", "75", "90", "95", "99", "99.9"),
                    AIPERF: ("1", "5", "10", "25", "50", "75", "90", "95", "99")}


def missing(row, figure: str) -> str | None:
    """Why an imported row has no `figure` ("not in this file: …"), or None where the row has it
    or is not imported."""
    get = row.get if hasattr(row, "get") else (lambda k: None)
    if get("engine_location") != "imported":
        return None
    value = get(figure)
    if value is not None and value == value:
        return None
    # a room's table holds rows with and without these fields: pandas fills the gaps with NaN
    tool = _text(get("import_tool")) or "the tool"
    failures = _text(get("import_failures"))
    if failures.startswith("no request completed"):
        return f"not in this file ({get('import_file')}): {failures}, so it has no latency or rate to report"
    if figure in ("request_ttft_ms", "request_tpot_ms", "goodput") or figure.startswith("goodput"):
        why = ("it keeps per-request TTFT only with --save-detailed" if tool == VLLM_BENCH else
               "a sweep's run files keep no per-request TTFT (the sweep does not pass --save-detailed)"
               if tool == VLLM_SWEEP else
               _text(get("import_requests_gap")) or "AIPerf writes each request's figures only with --export-level "
               "records (profile_export.jsonl, read from beside the summary)" if tool == AIPERF else
               _text(get("import_requests_gap")) or "GuideLLM's report does not list the requests it counted")
    elif figure.startswith("vllm_rule_"):
        why = (_text(get("import_rule_gap")) or
               ("vLLM's own figures are by vLLM's rule (a sweep's: the guide's medians of them)" if tool in (
                   VLLM_BENCH, VLLM_SWEEP) else
                ("AIPerf's records (--export-level records) give it; this summary came without them"
                 if figure.endswith("_tpot_ms") else "the summary holds no server token count "
                 "(total_usage_completion_tokens: AIPerf records it where the server reports usage)")
                if tool == AIPERF else f"{tool}'s report does not give what it needs"))
    elif figure in roofline.COLUMNS:
        why = "a decode floor needs the memory bandwidth of the machine that served, which no such file records"
    elif "_itl_" in figure and tool == GUIDELLM:
        why = "GuideLLM's report writes no gap between streamed chunks"
    elif re.match(r"^(mean|median|std|p[\d.]+)_(ttft|tpot|itl)_ms$", figure) and get("import_not_streamed"):
        why = "AIPerf measures TTFT, TPOT and the gaps between chunks only for streamed runs (--streaming)"
    elif re.match(r"^(mean|median|std|p[\d.]+)_(ttft|tpot)_ms$", figure) and get("import_no_first_token"):
        why = ("GuideLLM recorded no first token for these requests (a run that was not streamed, or none inside "
               "its measured window), so it wrote 0.0 for every such figure, which is not a measurement")
    elif (m := re.match(r"^p50_(\w+)_ms$", figure)) and get(f"median_{m[1]}_ms") is not None:
        why = f"the 50th percentile is kept as median_{m[1]}_ms"
    elif (m := re.match(r"^p([\d.]+)_\w+_ms$", figure)) and m[1] not in TOOL_PERCENTILES.get(tool, (m[1],)):
        why = (f"{'GuideLLM' if tool == GUIDELLM else 'AIPerf'} writes the percentiles "
               f"{', '.join(TOOL_PERCENTILES[tool])} only")
    elif re.match(r"^(mean|median|p[\d.]+)_\w+_ms$", figure) and get("import_format"):
        why = ("it was not among the percentiles the 2024 script was asked for (its --metric-percentiles, or p99 "
               "alone in its earlier versions)")
    elif re.match(r"^(mean|median|p[\d.]+)_\w+_ms$", figure) and tool in (VLLM_BENCH, VLLM_SWEEP):
        why = "the run's --percentile-metrics / --metric-percentiles left it out"
    else:
        why = f"the file has no '{figure}' field (older versions of {tool} may not write it)"
    return f"not in this file ({get('import_file')}): {why}"


def _text(value) -> str:
    """A row's text field, or "" where it is absent (None, or NaN in a table mixing rows)."""
    return value if isinstance(value, str) else ""
