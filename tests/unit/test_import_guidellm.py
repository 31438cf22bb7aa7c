"""GuideLLM's reports read as rows (helpers/results/formats/guidellm.py). Every expected figure is GuideLLM's
own, read from the report's metrics block, never one the importer computed."""
import json

import pytest

from helpers import slo
from helpers.results import other_tools
from helpers.results.other_tools import ImportFileError
from tests.unit.import_files import DATA, GUIDELLM


def by_rule(b: dict) -> tuple[float, float]:
    """vLLM's definitions from the report's own timestamps, for a run without a warm-up: the successful requests'
    count and output tokens ÷ the span from the first request sent to the last one's end (calculate_metrics in
    vllm/benchmarks/serve.py counts successful requests; its duration runs from its first request to its last)."""
    sent = b["requests"]["successful"] + (b["requests"].get("errored") or [])
    span = max(r["request_end_time"] for r in sent) - min(r["request_start_time"] for r in sent)
    done = b["requests"]["successful"]
    return len(done) / span, sum(r["output_tokens"] for r in done) / span


def gl_counts(b: dict) -> int:
    """The requests GuideLLM's rates and goodput count: those that ended inside its window (its
    rate_distribution_from_timings keeps events between start_time and end_time)."""
    return sum(b["start_time"] <= r["request_end_time"] <= b["end_time"] for r in b["requests"]["successful"])


def own(b: dict, metric: str, stat: str = "mean"):
    """GuideLLM's own figure: the benchmark's metrics block, successful requests."""
    d = b["metrics"][metric]["successful"]
    return d["percentiles"][stat] if stat.startswith("p") else d[stat]


def test_a_guidellm_report_gives_guidellms_own_figures_and_vllms_definition_beside_them():
    """tests/data/imports/guidellm_benchmarks.json: GuideLLM 0.8.1, concurrent profile, no warm-up. Issue 48.2: the
    throughput was total ÷ duration; GuideLLM's console prints its own mean of rates, which differs."""
    blob = json.loads(GUIDELLM.read_text())
    [row] = other_tools.from_file(GUIDELLM)
    b = blob["benchmarks"][0]
    assert row["import_tool"] == "guidellm" and row["import_tool_version"] == blob["metadata"]["guidellm_version"]
    assert row["completed"] == b["metrics"]["request_totals"]["successful"] == 16 and row["duration"] == b["duration"]
    for figure, metric in (("request_throughput", "requests_per_second"),
                           ("output_throughput", "output_tokens_per_second"),
                           ("total_token_throughput", "tokens_per_second")):
        assert row[figure] == own(b, metric), figure
    assert row["total_output_tokens"] == own(b, "output_token_count", "total_sum") == 512
    for stat, figure in (("mean", "mean"), ("median", "median"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9")):
        assert row[f"{figure}_ttft_ms"] == own(b, "time_to_first_token_ms", stat), stat
        assert row[f"{figure}_tpot_ms"] == own(b, "inter_token_latency_ms", stat), stat  # vLLM's TPOT, GuideLLM's ITL
        assert row[f"{figure}_e2el_ms"] == pytest.approx(1000 * own(b, "request_latency", stat)), stat
    # vLLM's definition beside GuideLLM's, from GuideLLM's own totals
    assert (row["vllm_rule_request_throughput"], row["vllm_rule_output_throughput"]) == pytest.approx(by_rule(b))
    assert row["vllm_rule_request_throughput"] != pytest.approx(row["request_throughput"], rel=0.01), \
        "in this file one request ended just after GuideLLM's window: its rate counts 15 of 16, the span all 16"
    line = other_tools.summary_line([row], set())
    assert "GuideLLM's own" in line and "by vLLM's rule" in line
    assert row["p99_itl_ms"] is None and "GuideLLM" in other_tools.missing(row, "p99_itl_ms")
    assert other_tools.missing(row, "p90_ttft_ms") is None, "issue 48.6: GuideLLM writes p90"
    assert "GuideLLM writes the percentiles" in other_tools.missing(row, "p98_ttft_ms")
    assert (row["load_max_concurrency"], row["load_input_len"], row["load_output_len"]) == (4, 128, 32)
    # goodput where every request meets the target is GuideLLM's own request rate: the 15 requests that ended inside
    # its window (one ended 0.17 ms after its recorded end), as its goodput counts them
    assert len(row["request_ttft_ms"]) == gl_counts(b) == 15
    assert slo.goodput(row, 10_000, 1_000) == pytest.approx(own(b, "requests_per_second"))


@pytest.mark.parametrize("strategy, conc, rate", [
    ({"type_": "constant", "rate": 2.0, "max_concurrency": None}, None, 2.0),
    ({"type_": "poisson", "rate": 1.5, "max_concurrency": 8}, 8, 1.5),
    ({"type_": "synchronous"}, 1, None),
    ({"type_": "throughput", "max_concurrency": 16}, 16, None),
])
def test_a_guidellm_strategy_becomes_the_rows_concurrency_and_rate(tmp_path, strategy, conc, rate):
    blob = json.loads(GUIDELLM.read_text())
    blob["benchmarks"][0]["config"]["strategy"] = strategy
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(blob))
    [row] = other_tools.from_file(path)
    assert (row["load_max_concurrency"], row["load_request_rate"]) == (conc, rate)
    assert (f"({strategy['type_']})" in row["load_label"]) == (strategy["type_"] in ("constant", "poisson"))


def test_a_guidellm_warm_up_is_left_out_as_guidellm_leaves_it_out():
    """A real GuideLLM 0.8.1 report (tests/data/imports/guidellm_warmup.json: `--profile
    kind=concurrent,streams=4,warmup=4 --constraint kind=max_requests,count=12`: a 4 s warm-up, GuideLLM 0.8.1's
    default mode prefer_duration; 96 → 16 tokens, against
    the guide's default engine): its request list holds all 12 requests, its figures the 7 that ended
    after the warm-up. The row's figures are GuideLLM's; its per-request lists, for goodput, those 7."""
    path = DATA / "guidellm_warmup.json"
    b = json.loads(path.read_text())["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert len(b["requests"]["successful"]) == 12 and b["metrics"]["request_totals"]["successful"] == 7
    assert row["completed"] == row["import_requests_kept"] == 7 and row["import_detail"] == "per request"
    assert row["duration"] == b["duration"] and row["total_output_tokens"] == own(b, "output_token_count", "total_sum")
    assert row["output_throughput"] == own(b, "output_tokens_per_second")
    assert row["median_ttft_ms"] == own(b, "time_to_first_token_ms", "median")
    assert row["vllm_rule_output_throughput"] is None and "finishes its warm-up before it starts its clock" in \
        other_tools.missing(row, "vllm_rule_output_throughput"), "pass 18: no span holds only the counted requests"
    assert "4 of them had their first token in it" in row["import_duration_covers"]
    assert len(row["request_ttft_ms"]) == 7
    assert "warm-up before it (5 request(s))" in row["import_duration_covers"], row["import_duration_covers"]
    [whole] = other_tools.from_file(GUIDELLM)  # no warm-up: the whole run
    assert whole["import_duration_covers"].startswith("GuideLLM's whole run")


def test_a_warm_up_and_a_cool_down_or_a_sample_keep_guidellms_figures_and_say_why_requests_are_missing(tmp_path):
    """Issue 48.2: with both a warm-up and a cool-down (or GuideLLM's sample_size) the figures were dropped as
    "a sample". They are GuideLLM's own and stay. GuideLLM's own rule on its window finds the counted requests
    whatever was cut at either end; only a sample that left some out loses the per-request lists, saying so."""
    blob = json.loads((DATA / "guidellm_warmup.json").read_text())
    b = blob["benchmarks"][0]
    b["cooldown_duration"] = 1.5
    (tmp_path / "both.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "both.json")
    assert row["output_throughput"] == own(b, "output_tokens_per_second") and len(row["request_ttft_ms"]) == 7
    assert "warm-up before it and a 1.5 s cool-down after it" in row["import_duration_covers"]
    blob = json.loads(GUIDELLM.read_text())
    b = blob["benchmarks"][0]
    b["requests"]["successful"] = b["requests"]["successful"][:5]
    b["config"]["sample_size"] = 5
    (tmp_path / "sample.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "sample.json")
    assert row["median_ttft_ms"] == own(b, "time_to_first_token_ms", "median") and row["completed"] == 16
    assert row["request_ttft_ms"] is None and row["vllm_rule_output_throughput"] is None
    assert "counted 16 requests in its window, but its report lists 5 there (it kept a sample: sample_size 5)" \
        in other_tools.missing(row, "request_ttft_ms")


def test_a_request_that_finished_as_the_warm_up_ended_is_counted_as_guidellm_counted_it():
    """Another real report (tests/data/imports/guidellm_warmup_edge.json: benchmarks/imports.py's load, 32
    requests of 128 → 64 tokens at 4 streams plus `warmup=4`, GuideLLM 0.8.1 against the guide's
    default engine): GuideLLM counted 31 of 36. The fifth request to finish ended 6 ms before the window's
    recorded start and is not among them; GuideLLM's own rule on the recorded start and end finds the 31."""
    path = DATA / "guidellm_warmup_edge.json"
    b = json.loads(path.read_text())["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert b["metrics"]["request_totals"]["successful"] == row["completed"] == 31
    assert row["import_requests_kept"] == len(row["request_ttft_ms"]) == gl_counts(b) == 30  # one ended late
    assert row["total_output_tokens"] == 31 * 64
    assert row["output_throughput"] == own(b, "output_tokens_per_second")
    assert row["p95_tpot_ms"] == own(b, "inter_token_latency_ms", "p95")
    edge = [r for r in b["requests"]["successful"] if b["start_time"] - 0.01 < r["request_end_time"] < b["start_time"]]
    assert len(edge) == 1 and edge[0]["time_to_first_token_ms"] not in row["request_ttft_ms"]


def test_a_guidellm_report_without_a_version_is_called_older(tmp_path):
    blob = json.loads(GUIDELLM.read_text())
    blob["metadata"].pop("version")
    (tmp_path / "old.json").write_text(json.dumps(blob))
    with pytest.raises(ImportFileError, match="before 0.5"):
        other_tools.from_file(tmp_path / "old.json")


def test_a_guidellm_0_7_report_reads_as_0_8s_and_names_its_version():
    """A real GuideLLM 0.7.4 report (tests/data/imports/guidellm07_warmup.json: helpers.load.peers.guidellm with
    GuideLLM 0.7.4 in a venv of its own, `warmup=2`, 8 requests of 96 → 16 tokens at 4 streams, against the
    guide's default engine on an AMD EPYC Zen 4). 0.7 writes schema version 2 too: same fields, same rules."""
    path = DATA / "guidellm07_warmup.json"
    blob = json.loads(path.read_text())
    b = blob["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert blob["metadata"]["version"] == 2 and row["import_tool_version"] == "0.7.4"
    counted = b["metrics"]["request_totals"]["successful"]
    assert row["completed"] == row["import_requests_kept"] == counted == 8 and len(b["requests"]["successful"]) == 10
    assert row["total_output_tokens"] == 8 * 16 and row["output_throughput"] == own(b, "output_tokens_per_second")
    assert row["p99_ttft_ms"] == own(b, "time_to_first_token_ms", "p99")
    assert "warm-up before it (2 request(s))" in row["import_duration_covers"]
    assert (row["load_input_len"], row["load_output_len"], row["load_max_concurrency"]) == (96, 16, 4)


def test_requests_cut_off_when_the_benchmark_ended_are_named(tmp_path):
    """The reader's M3: GuideLLM's incomplete requests were never reported."""
    from helpers.results import workshop

    blob = json.loads(GUIDELLM.read_text())
    blob["benchmarks"][0]["metrics"]["request_totals"].update(incomplete=4, total=20)
    (tmp_path / "cut.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "cut.json")
    assert "4 of 20 requests were cut off unfinished" in row["import_failures"]
    assert workshop._failed(row) == "0 of 20, 4 cut off"


def test_a_report_without_first_tokens_leaves_ttft_and_tpot_empty_and_says_why(tmp_path):
    """The reader's W4 (pass 17): GuideLLM writes 0.0 for a distribution of no values (a run not streamed, or no
    first token inside the window); those are no measurement, and goodput cannot be computed from them."""
    blob = json.loads(GUIDELLM.read_text())
    b = blob["benchmarks"][0]
    for metric in ("time_to_first_token_ms", "inter_token_latency_ms"):
        for status in b["metrics"][metric].values():
            status.update(count=0, mean=0.0, median=0.0, percentiles={k: 0.0 for k in status["percentiles"]})
    for r in b["requests"]["successful"]:
        r.update(time_to_first_token_ms=None, inter_token_latency_ms=None)
    (tmp_path / "plain.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "plain.json")
    assert row["median_ttft_ms"] is None and row["p99_tpot_ms"] is None and row["request_ttft_ms"] is None
    assert "recorded no first token" in other_tools.missing(row, "median_ttft_ms")
    assert slo.goodput(row, 1000, 100) is None
    assert row["mean_e2el_ms"] == pytest.approx(1000 * own(b, "request_latency"))
    assert "kept as median_e2el_ms" in other_tools.missing(row, "p50_e2el_ms")


def test_an_errored_request_is_in_vllms_span_but_not_in_its_counts(tmp_path):
    """Pass 18's W2: vLLM counts only successful requests (calculate_metrics); an errored one with tokens is timed."""
    blob = json.loads(GUIDELLM.read_text())
    b = blob["benchmarks"][0]
    b["requests"]["errored"] = [b["requests"]["successful"].pop()]
    b["metrics"]["request_totals"].update(successful=15, errored=1)
    (tmp_path / "err.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "err.json")
    assert (row["vllm_rule_request_throughput"], row["vllm_rule_output_throughput"]) == pytest.approx(by_rule(b))
    assert row["vllm_rule_request_throughput"] * row["import_requests_kept"] > 0 and by_rule(b)[1] == pytest.approx(
        15 * 32 * by_rule(b)[0] / 15), "15 successful requests of 32 tokens over a span that also holds the errored one"


def test_pass_19_an_unstreamed_report_as_guidellm_writes_it(tmp_path):
    """Pass 19's W1 and U3: without streaming GuideLLM counts a 0.0 TPOT per request (its ITL distribution has a
    count, all zeros); the row leaves TTFT and TPOT empty, and keeps vLLM's throughput, which needs no first token."""
    blob = json.loads(GUIDELLM.read_text())
    b = blob["benchmarks"][0]
    for metric in ("time_to_first_token_ms", "inter_token_latency_ms"):
        for status in b["metrics"][metric].values():
            status.update(mean=0.0, median=0.0, percentiles={k: 0.0 for k in status["percentiles"]})
    b["metrics"]["time_to_first_token_ms"]["successful"]["count"] = 0
    for r in b["requests"]["successful"]:
        r.update(time_to_first_token_ms=None, inter_token_latency_ms=None)
    (tmp_path / "plain.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "plain.json")
    assert row["median_tpot_ms"] is None and row["p99_tpot_ms"] is None
    assert "recorded no first token" in other_tools.missing(row, "p99_tpot_ms")
    assert (row["vllm_rule_request_throughput"], row["vllm_rule_output_throughput"]) == pytest.approx(by_rule(b))
    assert row["vllm_rule_mean_tpot_ms"] is None
