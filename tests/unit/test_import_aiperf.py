"""AIPerf's exports read as rows (helpers/results/formats/aiperf.py). Every expected figure is AIPerf's own,
read from its summary, never one the importer computed."""
import json
import shutil
from datetime import datetime

import pytest

from helpers import verdicts
from helpers.results import other_tools
from helpers.results.other_tools import ImportFileError
from tests.unit.import_files import AIPERF_DIR, DATA


def test_an_aiperf_export_gives_aiperfs_own_figures_and_vllms_tpot_beside_them():
    """tests/data/imports/aiperf/: AIPerf 0.13.0 in a venv of its own against the guide's default engine, the
    guide's import load (8 requests of 96 → 16 tokens at concurrency 4, streamed completions, ignore_eos), with
    --export-level records (tests/data/imports/README.md has the command). Every expected figure is the summary's."""
    summary = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    own = lambda metric, stat="avg": summary[metric][stat]  # noqa: E731
    records = [json.loads(x) for x in (AIPERF_DIR / "profile_export.jsonl").read_text().splitlines()]
    [row] = other_tools.from_file(AIPERF_DIR)  # the artifact folder, or the summary file itself
    assert other_tools.from_file(AIPERF_DIR / "profile_export_aiperf.json")[0]["run_id"] == row["run_id"]
    assert row["import_tool"] == "aiperf" and row["import_tool_version"] == "0.13.0"
    assert row["completed"] == own("request_count") == 8
    # the duration AIPerf's throughputs divide by: its profiling phase, start_time to end_time (M5 of the reader)
    phase = datetime.fromisoformat(summary["end_time"]) - datetime.fromisoformat(summary["start_time"])
    phase = phase.total_seconds()
    assert row["duration"] == phase and own("request_throughput") == pytest.approx(8 / phase)
    for figure, metric in (("request_throughput", "request_throughput"),
                           ("output_throughput", "output_token_throughput"),
                           ("total_token_throughput", "total_token_throughput")):
        assert row[figure] == own(metric), figure
    for name, metric in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency"),
                         ("e2el", "request_latency"), ("itl", "inter_chunk_latency")):
        for stat, figure in (("avg", "mean"), ("p50", "median"), ("p90", "p90"), ("p99", "p99"), ("std", "std")):
            assert row[f"{figure}_{name}_ms"] == own(metric, stat), (name, stat)
    assert row["max_itl_ms"] == own("inter_chunk_latency", "max")
    assert other_tools.missing(row, "p90_tpot_ms") is None, "issue 48.6: AIPerf writes p90"
    assert "AIPerf writes the percentiles" in other_tools.missing(row, "p99.9_ttft_ms")
    assert row["load_label"] == "8 requests 96→16 tokens @ conc 4" and row["import_detail"] == "per request"
    # Beside AIPerf's TPOT (its tokenizer's count), vLLM's rule with the server's count, per request for goodput
    for rec, tpot in zip(records, row["request_tpot_ms"]):
        m = {k: v["value"] for k, v in rec["metrics"].items()}
        assert tpot == pytest.approx(
            (m["request_latency"] - m["time_to_first_token"]) / (m["usage_completion_tokens"] - 1))
    assert row["vllm_rule_mean_tpot_ms"] == pytest.approx(sum(row["request_tpot_ms"]) / 8)
    recounted = [r for r in records if r["metrics"]["output_sequence_length"]["value"]
                 != r["metrics"]["usage_completion_tokens"]["value"]]
    assert recounted, "this export has requests whose text AIPerf's tokenizer counted differently"
    assert row["total_output_tokens"] == own("total_output_tokens")
    # the server's tokens over AIPerf's own benchmark duration, first request to last response, as vLLM times a run
    assert row["vllm_rule_output_throughput"] == pytest.approx(
        own("total_usage_completion_tokens") / own("benchmark_duration"))


def test_an_aiperf_summary_alone_keeps_its_own_statistics_and_says_what_it_lacks(tmp_path):
    shutil.copy(AIPERF_DIR / "profile_export_aiperf.json", tmp_path)
    [row] = other_tools.from_file(tmp_path)
    summary = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    assert row["import_detail"] == "summary" and row["request_ttft_ms"] is None
    assert row["median_tpot_ms"] == pytest.approx(summary["inter_token_latency"]["p50"])
    assert row["p90_ttft_ms"] == pytest.approx(summary["time_to_first_token"]["p90"])
    assert "--export-level records" in other_tools.missing(row, "request_ttft_ms")


def test_aiperf_files_the_guide_cannot_read_are_named(tmp_path):
    with pytest.raises(ImportFileError, match="per-request records, not its summary"):
        other_tools.from_file(AIPERF_DIR / "profile_export.jsonl")
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    (tmp_path / "v2.json").write_text(json.dumps({**blob, "schema_version": "2.0"}))
    with pytest.raises(ImportFileError, match="schema version '2.0'"):
        other_tools.from_file(tmp_path / "v2.json")


def test_an_aiperf_run_in_which_some_requests_failed_counts_only_the_successful(tmp_path):
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    some = {**blob, "request_count": {"unit": "requests", "avg": 6.0},
            "error_summary": [{"error_details": {"code": 500, "message": "boom"}, "count": 2}]}
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(some))
    [row] = other_tools.from_file(tmp_path / "profile_export_aiperf.json")
    assert row["completed"] == 6 and row["import_failures"].startswith("2 of 8 requests failed")


def test_an_aiperf_run_in_which_every_request_failed_is_never_held(tmp_path):
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    # as AIPerf writes it: no request_count (no success), completed_request_count counting the failures too
    failed = {k: v for k, v in blob.items() if k != "request_count"}
    failed["error_summary"] = [{"error_details": {"code": 500, "message": "boom"}, "count": 8}]
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(failed))
    [row] = other_tools.from_file(tmp_path / "profile_export_aiperf.json")
    assert row["median_ttft_ms"] is None and row["import_failures"] == "no request completed: 0 of 8"
    [good] = other_tools.from_file(AIPERF_DIR)
    claim = verdicts.judge_change("cuts median TTFT", good, row, "median_ttft_ms", "lower", 1.2)
    assert claim.verdict == verdicts.UNTESTED and "no request completed" in claim.evidence


def test_aiperf_files_cut_short_stale_incomplete_or_not_streamed_say_so(tmp_path):
    """The reader's W3, N3, M4 and W6: a torn records file is named, not a crash that loses the other files; a
    records file of another run is not used; a run AIPerf marked incomplete says so; a run without --streaming
    says why it has no TTFT, TPOT or ITL."""
    torn = tmp_path / "torn"
    shutil.copytree(AIPERF_DIR, torn)
    records = torn / "profile_export.jsonl"
    records.write_text(records.read_text()[:5000])
    added, failed = other_tools.add([torn, DATA / "vllm_bench_summary.json"], tmp_path / "room")
    assert "line 2 is not complete JSON" in failed[torn] and len(added) == 1
    stale = tmp_path / "stale"
    shutil.copytree(AIPERF_DIR, stale)
    lines = (stale / "profile_export.jsonl").read_text().splitlines()
    (stale / "profile_export.jsonl").write_text("\n".join(lines[:5]) + "\n")
    [row] = other_tools.from_file(stale)
    assert row["request_ttft_ms"] is None and "another run's" in other_tools.missing(row, "request_ttft_ms")
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "profile_export_aiperf.json").write_text(json.dumps(
        {**blob, "is_complete": False, "was_cancelled": True, "incomplete_reason": "stopped by the user"}))
    [row] = other_tools.from_file(cut)
    assert "AIPerf marked this run incomplete: stopped by the user" in row["import_failures"]
    plain = tmp_path / "plain"
    plain.mkdir()
    unstreamed = {k: v for k, v in blob.items() if k not in ("time_to_first_token", "inter_token_latency",
                                                           "inter_chunk_latency", "time_to_second_token")}
    unstreamed["input_config"] = {**blob["input_config"], "endpoint": {**blob["input_config"]["endpoint"],
                                                                       "streaming": False}}
    (plain / "profile_export_aiperf.json").write_text(json.dumps(unstreamed))
    [row] = other_tools.from_file(plain)
    for figure in ("p99_ttft_ms", "median_tpot_ms", "p90_itl_ms"):
        assert "only for streamed runs (--streaming)" in other_tools.missing(row, figure), figure
    assert other_tools.missing(row, "p99_e2el_ms") is None


def test_an_unstreamed_run_with_its_records_imports_without_per_request_figures(tmp_path):
    """Pass 18's W4: records without a time to first token (a run without --streaming) crashed the import."""
    folder = tmp_path / "ns"
    shutil.copytree(AIPERF_DIR, folder)
    lines = []
    for line in (folder / "profile_export.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for k in ("time_to_first_token", "inter_token_latency", "inter_chunk_latency", "time_to_second_token"):
            rec["metrics"].pop(k, None)
        lines.append(json.dumps(rec))
    (folder / "profile_export.jsonl").write_text("\n".join(lines) + "\n")
    [row] = other_tools.from_file(folder)
    assert row["request_ttft_ms"] is None and "not streamed" in other_tools.missing(row, "request_ttft_ms")
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    assert row["import_tool_duration"] == blob["benchmark_duration"]["avg"], "AIPerf's own duration kept beside"


def test_pass_19_a_prefixed_export_finds_its_records(tmp_path):
    """Pass 19's U2: with --profile-export-prefix foo AIPerf writes foo.json and foo.jsonl."""
    shutil.copy(AIPERF_DIR / "profile_export_aiperf.json", tmp_path / "foo.json")
    shutil.copy(AIPERF_DIR / "profile_export.jsonl", tmp_path / "foo.jsonl")
    [row] = other_tools.from_file(tmp_path / "foo.json")
    assert row["import_detail"] == "per request" and len(row["request_ttft_ms"]) == 8
