"""Row helpers that notebooks used to copy into themselves."""
import socket

import pytest

from helpers.tables import numbered, samples, table


def rows():
    return [{"config_label": "guide default", "output_throughput": 10.0, "runs": [{}], "timeseries": [{"t_s": 0.0}],
             "run_id": "a"},
            {"config_label": "guide default", "output_throughput": 11.0, "runs": [{}], "timeseries": [], "run_id": "b"}]


def test_table_drops_bulky_lists_but_keeps_the_series_the_verdicts_read():
    df = table([{**r, "request_ttft_ms": [1.0, 2.0]} for r in rows()])
    assert "request_ttft_ms" not in df and list(df.output_throughput) == [10.0, 11.0]
    assert "runs" in df  # each repeat, with its requests: the intervals of a comparison are drawn from them
    assert ("timeseries" in df) == any("timeseries" in r for r in rows())


def test_named_rows_become_the_index():
    a, b = rows()
    df = table({"default budget": a, "chunking off": b})
    assert df.loc["chunking off"].run_id == "b"
    assert list(df.config_label) == ["default budget · guide default", "chunking off · guide default"]


def test_numbered_tells_repeated_configs_apart():
    assert list(numbered(rows()).config_label) == ["1. guide default", "2. guide default"]


def test_samples_stack_each_rows_series():
    df = samples(rows())
    assert list(df.run_id) == ["a"] and list(df.config_label) == ["guide default"]


def test_answer_rows_carry_run_id_time_and_machine(tmp_path, monkeypatch):
    from helpers import EngineConfig, correctness, experiment
    from helpers.results import ResultStore

    class FakeServer:
        base_url, model_path = "http://127.0.0.1:9", "/m"

    monkeypatch.setattr(experiment, "engine_for", lambda cfg, progress=True: FakeServer())
    monkeypatch.setattr(correctness, "_chat", lambda url, model, prompt, n, headers=None: "Paris.")
    store = ResultStore(tmp_path)
    assert correctness.greedy_answers(EngineConfig(), prompts=("Capital?",), store=store) == ["Paris."]
    row = store.rows()[0]
    for key in ("run_id", "time", "key", "env_env_id", "env_cpu_isa", "cfg_dtype"):
        assert row.get(key), key
    assert row["kind"] == "answers"
    monkeypatch.setattr(correctness, "_chat", lambda *a: "changed")
    assert correctness.greedy_answers(EngineConfig(), prompts=("Capital?",), store=store) == ["Paris."], "reused"


def test_goodput_counts_requests_within_both_targets():
    from helpers.slo import goodput
    runs = [{"duration": 2.0, "request_ttft_ms": [100, 900, 200, 150], "request_tpot_ms": [20, 20, 80, 30]},
            {"duration": 4.0, "request_ttft_ms": [100, 100], "request_tpot_ms": [10, 10]}]
    assert goodput({"runs": runs[:1]}, 500, 50) == 1.0          # 2 of 4 requests in 2 s
    assert goodput({"runs": runs}, 500, 50) == 0.75             # median of 1.0 and 0.5
    assert goodput({"runs": [{"duration": 1.0}]}, 500, 50) is None  # stored before per-request figures


def test_summarize_keeps_per_request_latencies():
    from helpers.load.workloads import summarize
    # The first request streamed 3 tokens in 2 chunks after its first (gaps 20 and 40 ms) and ended at 200 ms:
    # vLLM's TPOT is (200 - 100) / (4 - 1) = 33.33 ms, not the mean chunk gap of 30 ms.
    out = summarize({"ttfts": [0.1, 0.2, 0.0], "itls": [[0.02, 0.04], [], []], "output_lens": [4, 1, 0],
                     "latencies": [0.2, 0.2, 0.0], "duration": 1.0})
    assert out["request_ttft_ms"] == [100.0, 200.0] and out["request_tpot_ms"] == [33.33, 0.0]


def test_fraction_for_inverts_the_start_up_report():
    from helpers.chapters.ch1 import fraction_for
    row = {"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": 20.0, "non_kv_gib": 3.0}
    assert fraction_for(row, 100_000) == 0.25 and fraction_for(row, 50_000) == 0.2
    assert fraction_for({"kv_cache_gib": 2.0}, 10) is None


def test_a_fraction_is_exact_for_a_check_and_rounded_up_for_a_start():
    """On a 200 GiB node a third decimal is 0.2 GiB: rounding to it moved exercise 3's answer by more
    than the check allows, and rounding down could leave less cache than a start needs."""
    from helpers.chapters.ch1 import fraction_for, start_fraction
    from helpers.exercises import Question
    row = {"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": 200.0, "non_kv_gib": 1.0}
    exact = (1.0 + 15_000 * 2.0 / 100_000) / 200.0  # 0.0065
    assert fraction_for(row, 15_000) == pytest.approx(exact)
    assert Question("q", lambda: fraction_for(row, 15_000), 0.03, "", "x.py").check(exact)
    assert start_fraction(row, 15_000) == 0.0065 == pytest.approx(exact)  # five decimals, up, never down
    assert start_fraction(row, 15_001) == 0.00651 > fraction_for(row, 15_001)
    assert start_fraction(row, 100_000) == 0.015  # already five decimals: unchanged


def test_peak_kv_tokens_rounds_each_request_to_blocks():
    from helpers.load import Load
    assert Load(num_prompts=16, input_len=1024, output_len=64, max_concurrency=16).peak_kv_tokens(128) == 16 * 1152
    assert Load(num_prompts=4, input_len=100, output_len=28, max_concurrency=2).peak_kv_tokens(16) == 2 * 128


def test_prefix_cache_reset_reports_a_server_without_the_endpoint():
    from helpers.engine.server import reset_prefix_cache

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert reset_prefix_cache(f"http://127.0.0.1:{port}") is False


def test_a_load_whose_every_request_failed_is_not_stored(tmp_path, monkeypatch):
    import contextlib

    import pytest

    from helpers import EngineConfig, Load, experiment
    from helpers.results import ResultStore

    class FakeServer:
        base_url, model_path, warmed_up = "http://127.0.0.1:9", "/m", True

        def log_text(self):
            return "ERROR 11-30 [core.py:1] RuntimeError: \"cpu_gemm_wna16\" not implemented for 'Float'\n"

    class NoSampler(contextlib.nullcontext):
        def __init__(self, *a):
            super().__init__()

    monkeypatch.setattr(experiment, "engine_for", lambda cfg, progress=True: FakeServer())
    monkeypatch.setattr(experiment, "reset_prefix_cache", lambda *a: True)
    monkeypatch.setattr(experiment.reported, "read", lambda server: {})
    monkeypatch.setattr(experiment, "MetricsSampler", NoSampler)
    monkeypatch.setattr(experiment, "run_load",
                        lambda *a, **k: {"completed": 0.0, "first_error": "Server disconnected"})
    store = ResultStore(tmp_path)
    with pytest.raises(experiment.LoadFailedError) as err:
        experiment.measure(EngineConfig(), Load(num_prompts=2), store=store, progress=False)
    assert "Server disconnected" in str(err.value) and "cpu_gemm_wna16" in str(err.value)
    assert store.rows() == []


def test_measure_each_starts_each_configuration_once_running_engine_first(monkeypatch):
    """A comparison written default / other / default runs as default, default, other (one
    start fewer), the running engine's configuration first, rows back in the order given."""
    from helpers import experiment
    from helpers.config import EngineConfig
    from helpers.engine import shared
    from helpers.load import Load

    base, other, third = EngineConfig(), EngineConfig(max_num_seqs=4), EngineConfig(max_num_seqs=2)
    ran = []
    monkeypatch.setattr(experiment, "measure", lambda cfg, load, **kw: ran.append((cfg, load.num_prompts)) or
                        {"cfg": cfg, "n": load.num_prompts})
    monkeypatch.setattr(shared, "live_record", lambda: {"key": shared.key_for(third)})
    plan = {"a": (base, Load(num_prompts=1)), "b": (other, Load(num_prompts=2)),
            "c": (base, Load(num_prompts=3)), "d": (third, Load(num_prompts=4))}
    rows = experiment.measure_each(plan)
    assert [n for _, n in ran] == [4, 1, 3, 2]  # running engine's, then base twice, then other
    assert list(rows) == ["a", "b", "c", "d"] and rows["b"]["n"] == 2
    assert [r["n"] for r in experiment.measure_each(list(plan.values()))] == [1, 2, 3, 4]


def test_a_refused_start_is_stored_and_read_back_instead_of_starting_again(results_dir, monkeypatch):
    """Chapter 2 refuses two starts on purpose; each costs a whole start, so the outcome is stored."""
    from pathlib import Path

    from helpers import experiment
    from helpers.config import EngineConfig
    from helpers.engine import EngineStartError
    calls = []

    def refuse(config, *a, **k):
        calls.append(config)
        raise EngineStartError("The engine did not start: too much memory asked.", "ValueError: Free memory on device "
                               "is less than desired", "gpu_memory_utilization", Path("/tmp/log"))
    monkeypatch.setattr(experiment, "engine_for", refuse)
    cfg = EngineConfig(gpu_memory_utilization=0.95)
    first = experiment.try_start(cfg, tag="ch2")
    again = experiment.try_start(cfg, tag="ch2")
    assert len(calls) == 1 and again.engine_line == first.engine_line and again.setting == "gpu_memory_utilization"
    assert "read back from this machine's attempt" in str(again)
    experiment.try_start(cfg, force=True, tag="ch2")
    assert len(calls) == 2
    monkeypatch.setattr(experiment, "engine_for", lambda config, *a, **k: calls.append(config))
    monkeypatch.setattr(experiment, "stop", lambda *a, **k: None)
    started = EngineConfig(gpu_memory_utilization=0.5)
    assert experiment.try_start(started) is None and experiment.try_start(started) is None and len(calls) == 3
