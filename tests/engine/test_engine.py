"""Real-engine tests on the embedded model: eager, small loads, directions not timings."""
import dataclasses
import json
import os
import socket
import time

import pytest

from helpers import EngineBusyError, EngineConfig, EngineStartError, Load, LoadError, correctness, experiment
from helpers.config import ConfigError
from helpers.engine import Server, reported
from tests.conftest import ROOT

pytestmark = pytest.mark.engine


def test_server_starts_answers_and_reports_kv(results_dir):
    from openai import OpenAI

    from helpers import correctness

    cfg = EngineConfig()
    server = experiment.engine_for(cfg, progress=False)
    assert experiment.engine_for(cfg) is server, "an unchanged config must reuse the running server"
    client = OpenAI(base_url=server.base_url + "/v1", api_key="none")
    reply = client.chat.completions.create(
        model=server.model_path, messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=16, temperature=0)
    assert reply.choices[0].message.content.strip()
    rep = server.report
    assert rep.kv_cache_tokens and rep.kv_cache_tokens > 1000
    assert rep.max_concurrency and rep.max_concurrency > 1
    live = reported.from_metrics(reported.fetch_metrics(server.base_url))
    assert live["kv_cache_tokens"] == rep.kv_cache_tokens, "log and /metrics must agree"
    record = reported.read(server)
    assert record["kv_cache_tokens"] == rep.kv_cache_tokens and record["engine_max_num_seqs"]
    # A private second engine (not handed over through helpers.engine.shared) is refused clearly.
    os.environ.pop("GUIDE_LOCK_WAIT", None)
    with pytest.raises(EngineBusyError, match="Only one runs at a time"):
        Server(cfg.replace(max_model_len=1024), progress=False).start()
    # Loads and answers go through the same server.
    row = experiment.measure(cfg, Load(num_prompts=4, input_len=64, output_len=8, max_concurrency=2), progress=False)
    assert row["completed"] == 4 and row["failed"] == 0
    assert row["mean_ttft_ms"] > 0 and row["output_throughput"] > 0
    assert row["env_vllm"] and row["env_cpu_cores"] >= 1
    again = experiment.measure(cfg, Load(num_prompts=4, input_len=64, output_len=8, max_concurrency=2), progress=False)
    assert again["reused"] and again["run_id"] == row["run_id"], "a stored result is reused"
    answers = correctness.greedy_answers(cfg, prompts=("What is 2 plus 2?",), max_tokens=8, progress=False)
    assert answers[0].strip()


def test_n_samples_run_as_sequences(results_dir):
    """The same requests with n=4 show at least three times the running sequences of n=1."""
    one = Load(num_prompts=4, input_len=64, output_len=24, max_concurrency=4, temperature=1.0)
    cfg = EngineConfig()
    single = experiment.measure(cfg, one, progress=False)
    four = experiment.measure(cfg, dataclasses.replace(one, n=4), progress=False)
    assert single["completed"] == four["completed"] == 4 and four["failed"] == 0
    assert four["peak_running"] >= 3 * single["peak_running"], (single["peak_running"], four["peak_running"])
    assert four["total_output_tokens"] == 4 * single["total_output_tokens"]


IMPORT_LOAD = Load(num_prompts=8, input_len=96, output_len=16, max_concurrency=4)


def _same_load_as_the_guides(row: dict, guide: dict, requests: int = 8) -> None:
    """The same requests, tokens and concurrency as the guide's row (`requests` of them counted), and a
    file consistent with itself. No figure is compared with the guide's: two clients' timings differ by
    host and moment (benchmarks/imports.py compares them, warmed, interleaved and repeated)."""
    per_request = guide["total_output_tokens"] / guide["completed"]
    assert row["completed"] == requests and row["failed"] == 0
    assert row["load_max_concurrency"] == 4 and row["mean_input_tokens"] == 96
    assert row["duration"] > 0 and row["output_throughput"] > 0 and row["request_throughput"] > 0  # the tool's own
    # every answer's tokens, as the server counted them: AIPerf's own count is its tokenizer's, so the server's
    # is read from vLLM's rule beside it (its output tokens ÷ AIPerf's benchmark duration)
    served = (row["vllm_rule_output_throughput"] * row["import_tool_duration"] if row.get("import_tool") == "aiperf"
              else row["total_output_tokens"])
    assert served == pytest.approx(requests * per_request)
    if row.get("import_tool") in (None, "vllm bench serve"):  # vLLM's own figures: count ÷ its duration
        assert row["request_throughput"] == pytest.approx(requests / row["duration"])
    else:  # GuideLLM's and AIPerf's own throughputs, with vLLM's definition beside them where it applies
        assert row.get("vllm_rule_output_throughput") is not None or "warm-up" in row.get("import_rule_gap", "")
    for m in ("ttft", "tpot"):
        lo, mid, hi = row[f"median_{m}_ms"], row[f"mean_{m}_ms"], row[f"p99_{m}_ms"]
        assert all(x is not None and x == x and x >= 0 for x in (lo, mid, hi)), (m, lo, mid, hi)
        assert row[f"median_{m}_ms"] <= row[f"p99_{m}_ms"], (m, row[f"median_{m}_ms"], row[f"p99_{m}_ms"])


def test_vllm_bench_files_of_the_guides_load_import_as_its_row(results_dir, tmp_path):
    """The same load on the same (running, warmed) engine, sent by the guide and by `vllm bench serve
    --save-result` with and without --save-detailed: each file imports as a row of the same load with
    the same requests and tokens, figures in the same range (the 5 % agreement is benchmarks/imports.py's,
    interleaved and repeated), and the guide's row written out as a vllm bench file reads back
    unchanged. No start: the default engine of the tests above."""
    from helpers import slo
    from helpers.engine.server import reset_prefix_cache
    from helpers.load import peers
    from helpers.results import other_tools, workshop

    cfg, load = EngineConfig(), IMPORT_LOAD
    server = experiment.engine_for(cfg, progress=False)
    url, model = server.base_url, server.model_path
    guide = experiment.measure(cfg, load, progress=False)
    reset_prefix_cache(url)
    detailed = other_tools.from_file(peers.vllm_bench(url, model, load.repeat(1), tmp_path / "detailed.json",
                                                      warmups=4))[0]
    reset_prefix_cache(url)
    summary = other_tools.from_file(peers.vllm_bench(url, model, load.repeat(2), tmp_path / "summary.json",
                                                     detailed=False))[0]
    for row in (detailed, summary):
        _same_load_as_the_guides(row, guide)
    assert "--num-warmups" in detailed["import_duration_covers"]  # its 4 warm-up requests are not among the 8
    assert len(detailed["request_tpot_ms"]) == 8
    assert slo.goodput(detailed, 1e5, 1e4) == pytest.approx(8 / detailed["duration"])
    assert summary["request_ttft_ms"] is None and "--save-detailed" in other_tools.missing(summary, "request_ttft_ms")
    # The guide's row as a vllm bench serve file, and back: the same figures, the same goodput.
    [path] = other_tools.write_vllm_bench([guide], tmp_path / "out")
    [back] = other_tools.from_file(path)
    for figure in ("output_throughput", "median_ttft_ms", "p99_tpot_ms", "p99_itl_ms"):
        assert back[figure] == pytest.approx(guide[figure]), figure
    assert slo.goodput(back, 2000, 200) == pytest.approx(slo.goodput(guide, 2000, 200))
    # Into a room: one load shape, the measured row beside the imported ones.
    other_tools.add([tmp_path / "detailed.json", tmp_path / "summary.json"], results_dir)
    side = workshop.beside(workshop.room(results_dir))
    assert side["load"].nunique() == 1 and len(side) == 3, side[["load", "source"]]


def _guide_row_then_a_peer(tool: str, executable):
    """Skip where the peer tool's venv is missing; else the default engine (no start when it is up), the
    guide's own row of the import load on it, and a reset prefix cache for the peer's turn."""
    from helpers.engine.server import reset_prefix_cache
    if not executable.exists():
        pytest.skip(f"{tool} is not installed at {executable} (`bash guide.sh test` installs it; it said "
                    "why if it could not)")
    cfg = EngineConfig()
    server = experiment.engine_for(cfg, progress=False)
    guide = experiment.measure(cfg, IMPORT_LOAD, progress=False)  # the guide's own row, on the same engine
    reset_prefix_cache(server.base_url)
    return server, guide


def test_a_guidellm_report_of_the_guides_load_imports_as_its_row(results_dir, tmp_path):
    """GuideLLM 0.8 (its own venv) sends the same load to the same engine after its own warm-up of one
    wave; its report imports as a row of that load (the requests GuideLLM counted after the warm-up), with
    GuideLLM's own figures, vLLM's definitions beside them, no ITL, and what its duration covers. No start."""
    from helpers import slo
    from helpers.load import peers
    from helpers.results import other_tools

    server, guide = _guide_row_then_a_peer("GuideLLM", peers.GUIDELLM)
    path = peers.guidellm(server.base_url, server.model_path, IMPORT_LOAD.repeat(3), tmp_path / "benchmarks.json",
                          warmup=4)
    [row] = other_tools.from_file(path)
    assert row["import_tool"] == "guidellm" and row["import_tool_version"].startswith("0.8")
    counted = json.loads(path.read_text())["benchmarks"][0]["metrics"]["request_totals"]["successful"]
    assert 0 < counted < 12 and "warm-up" in row["import_duration_covers"], row["import_duration_covers"]
    _same_load_as_the_guides(row, guide, requests=counted)
    assert (row["load_input_len"], row["load_output_len"]) == (96, 16)
    assert row["p99_itl_ms"] is None and "GuideLLM" in other_tools.missing(row, "p99_itl_ms")
    # every request within a loose target: GuideLLM's own request rate, the requests that ended inside its window
    assert slo.goodput(row, 1e5, 1e4) == pytest.approx(row["request_throughput"])


def test_an_aiperf_export_of_the_guides_load_imports_as_its_row_beside_the_others(results_dir, tmp_path):
    """AIPerf 0.13 (its own venv) sends the same load to the same engine after a warm-up of four requests;
    its export imports as a row of that load, with AIPerf's own figures (its ITL: the chunk gaps, as vLLM's)
    and vLLM's TPOT beside them from its records, and the room shows the guide's, vllm bench's and AIPerf's
    rows of that load side by side. No start."""
    from helpers.engine.server import reset_prefix_cache
    from helpers.load import peers
    from helpers.results import other_tools, workshop

    server, guide = _guide_row_then_a_peer("AIPerf", peers.AIPERF)
    folder = peers.aiperf(server.base_url, server.model_path, IMPORT_LOAD.repeat(1), tmp_path / "aiperf", warmup=4)
    [row] = other_tools.from_file(folder)
    assert row["import_tool"] == "aiperf" and row["import_tool_version"].startswith("0.13")
    _same_load_as_the_guides(row, guide)
    assert (row["load_input_len"], row["load_output_len"]) == (96, 16) and len(row["request_tpot_ms"]) == 8
    assert row["p99_itl_ms"] > 0 and row["max_itl_ms"] >= row["p99_itl_ms"]  # its chunk gaps, pooled as vLLM's
    reset_prefix_cache(server.base_url)
    bench = peers.vllm_bench(server.base_url, server.model_path, IMPORT_LOAD.repeat(1), tmp_path / "bench.json")
    other_tools.add([folder, bench], results_dir)
    side = workshop.beside(workshop.room(results_dir))
    same = side.loc[side["load"] == "8 requests 96→16 @ conc 4"]
    assert same["source"].str.contains("aiperf").sum() == 1 and same["source"].str.contains("vllm bench").sum() == 1
    assert same["source"].str.startswith("measured").sum() >= 1, side[["load", "source"]]


def test_the_stop_button_cancels_a_load_and_leaves_the_engine_idle(results_dir):
    """Jupyter's ■ sends SIGINT to the kernel: a real kernel (jupyter_client) measuring a load far
    longer than the wait below is interrupted; its cell ends with KeyboardInterrupt and the line
    saying what was kept, the engine's requests are aborted (fewer finished than were sent, none
    left running or waiting), and the same engine answers the next cell. No start: the default
    engine of the tests above."""
    from jupyter_client.manager import start_new_kernel

    from helpers.load.metrics import scrape

    server = experiment.engine_for(EngineConfig(), progress=False)
    finished = "vllm:request_success_total"
    done_before = _counter(server.base_url, finished)
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        # 64 requests of 512 tokens, 4 at a time: 16 waves of 512 decode steps, minutes on any CPU.
        cell = kc.execute("import helpers as H\nfrom helpers import EngineConfig, Load\n"
                   "H.measure(EngineConfig(), Load(num_prompts=64, input_len=64, output_len=512, max_concurrency=4), "
                   "progress=False)")
        deadline = time.monotonic() + 120
        while scrape(server.base_url)["running"] < 1 and time.monotonic() < deadline:
            time.sleep(0.5)  # the warm-up load first, if the engine had none, then the load itself
        time.sleep(3)
        assert scrape(server.base_url)["running"] >= 1, "the load never reached the engine"
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=60)  # the load alone would take minutes more
        out = _stream(kc, cell)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt", reply
        assert "[load] stopped after" in out and "nothing of this load is stored" in out, out
        left = scrape(server.base_url)
        deadline = time.monotonic() + 15
        while (left["running"] or left["waiting"]) and time.monotonic() < deadline:
            time.sleep(0.5)
            left = scrape(server.base_url)
        assert left["running"] == 0 and left["waiting"] == 0, left
        assert _counter(server.base_url, finished) - done_before < 64, "the load was cut, not run to its end"
        cell = kc.execute("print('ANSWER', H.measure(EngineConfig(), Load(num_prompts=2, input_len=32, output_len=4, "
                   "max_concurrency=2), progress=False)['completed'])")
        assert kc.get_shell_msg(timeout=120)["content"]["status"] == "ok"
        assert "ANSWER 2" in _stream(kc, cell)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert experiment.engine_for(EngineConfig(), progress=False).pid == server.pid, "the same engine, no restart"


def _counter(base_url: str, name: str) -> float:
    text = reported.fetch_metrics(base_url)
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def _stream(kc, cell: str) -> str:
    """Everything the kernel printed for one cell (until it went idle after it)."""
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != cell:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def test_prefix_caching_finds_the_shared_prefix(results_dir):
    load = Load(kind="prefix", num_prompts=12, prefix_len=768, input_len=32, output_len=8,
                num_prefixes=1, max_concurrency=4)
    # On first: the guide's default, which the tests above left running (no start); off is one start.
    on = experiment.measure(EngineConfig(enable_prefix_caching=True), load, progress=False)
    off = experiment.measure(EngineConfig(enable_prefix_caching=False), load, progress=False)
    assert on["prefix_cache_hits"] > 0 and on["prefix_cache_hit_rate"] > 0.3
    assert off["prefix_cache_hits"] == 0
    # Whole blocks only: a hit is a cached block of the shared prefix (768 tokens = 6 blocks of 128 on a CPU).
    assert on["prefix_cache_hits"] % on["block_size"] == 0, (on["prefix_cache_hits"], on["block_size"])


@pytest.mark.after_notebooks
def test_fp8_kv_cache_about_doubles_capacity():
    """The capacity readings of lab 1 (and lab 3): after the notebooks, read from the store; run
    alone, two starts."""
    if (problem := EngineConfig(kv_cache_dtype="fp8").cannot_run_here()) is not None:
        pytest.skip(str(problem))  # AVX2-only CPU; tests/unit/test_config.py checks the clear error
    auto = experiment.capacity(EngineConfig(), progress=False)
    fp8 = experiment.capacity(EngineConfig(kv_cache_dtype="fp8"), progress=False)
    per_gib = (fp8["kv_cache_tokens"] / fp8["kv_cache_gib"]) / (auto["kv_cache_tokens"] / auto["kv_cache_gib"])
    assert 1.9 < per_gib < 2.1, per_gib  # tokens per GiB: the dtype's effect alone
    assert 1.5 < fp8["kv_cache_tokens"] / auto["kv_cache_tokens"] < 2.6  # raw tokens (free memory varies)


@pytest.mark.after_notebooks
@pytest.mark.parametrize("model", ["embedded-int8", "embedded-int4"])
def test_quantized_checkpoint_loads_and_answers_sensibly(model):
    """The check: the locally quantized model's greedy answer to the capital of France names
    Paris (as the bf16 model's does), and the engine ran it on a quantized linear kernel.
    Chapter 5's answers and capacity readings (smoke size: 24 tokens), read from the store after
    the notebooks; run alone, one start each."""
    cfg = EngineConfig(model=model)
    if (problem := cfg.cannot_run_here()) is not None:
        pytest.skip(str(problem))  # INT4 in float32 (an AVX2-only CPU): refused before a start, with the reason
    answers = correctness.greedy_answers(cfg, max_tokens=24, progress=False)
    assert correctness.PROMPTS[0] == "What is the capital of France?" and "Paris" in answers[0], answers[0]
    row = experiment.capacity(cfg, progress=False)
    assert row["engine_quantization"] == "compressed-tensors"
    assert "Kernel" in (row["linear_kernel"] or ""), row["linear_kernel"]
    assert row["checkpoint_gib"] < 0.2  # the bf16 checkpoint is 0.25 GiB


def test_memory_fraction_too_high_surfaces_engine_error():
    with pytest.raises(EngineStartError) as err:
        experiment.engine_for(EngineConfig(gpu_memory_utilization=0.99), progress=False)
    e = err.value
    assert e.setting == "gpu_memory_utilization"
    assert "less than desired" in e.engine_line
    assert "Engine said:" in str(e) and "Try:" in str(e)


@pytest.mark.parametrize("make, setting", [
    (lambda: EngineConfig(gpu_memory_utilization=1.5), "gpu_memory_utilization"),
    (lambda: Server(EngineConfig(tensor_parallel_size=2)).start(), "tensor_parallel_size"),
    (lambda: Server(EngineConfig(model="/nonexistent/model")).start(), "model"),
    # A prefix the engine would reject, and CUDA graphs asked of the CPU backend (chapter 4).
    (lambda: experiment.measure(EngineConfig(max_model_len=512), Load(kind="prefix", prefix_len=600, input_len=32)),
     "max_model_len"),
    (lambda: Server(EngineConfig(device="cpu", enforce_eager=False,
                                 compilation_config={"cudagraph_mode": "FULL"})).start(), "compilation_config"),
    # Online fp8 weights have no CPU kernel (chapter 5).
    (lambda: Server(EngineConfig(device="cpu", quantization="fp8")).start(), "quantization"),
])
def test_bad_settings_fail_before_any_process(make, setting, no_new_process):
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.setting == setting and "Try:" in str(err.value)


def test_bad_sample_count_fails_before_any_process(no_new_process):
    with pytest.raises(LoadError, match=r"Load\.n .*Try: n=1"):
        experiment.measure(EngineConfig(), Load(n=0))


def test_port_in_use_is_refused_before_start(no_new_process):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(ConfigError, match="already in use"):
            Server(EngineConfig(), port=s.getsockname()[1]).start()

