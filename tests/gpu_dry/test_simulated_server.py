"""The GPU dry run's own parts: the simulated server says what vLLM on one GPU says, and the start
seam refuses CPU-only settings. Fast (a second or two), so the quick tier runs them too."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import models
from helpers.engine import startup_log
from helpers.engine.server import free_port
from tests.gpu_dry import in_kernel

SERVER = Path(__file__).with_name("simulated_server.py")


def _start(tmp_path, *extra):
    model = models.resolve("embedded")
    port = free_port()
    log = tmp_path / f"sim-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(SERVER), "--model", model, "--port", str(port),
                                 "--max-model-len", "2048", *extra], stdout=out, stderr=subprocess.STDOUT,
                                env={"GUIDE_PARENT_PID": "1", "PATH": "/usr/bin:/bin"})
    return proc, port, log


def _wait(proc, port, log) -> bool:
    for _ in range(100):
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def test_it_starts_in_cuda_wording_and_serves_a_stream(tmp_path):
    proc, port, log = _start(tmp_path, "--kv-cache-memory-bytes", str(64 * 2**20))
    try:
        assert _wait(proc, port, log), log.read_text()
        report = startup_log.parse_startup(log.read_text())
        assert report.device_kind == "GPU" and report.kv_cache_tokens and report.weights_gib is not None
        assert report.kv_cache_gib == pytest.approx(64 / 1024, abs=0.01)  # the kv_cache_memory_bytes line
        body = json.dumps({"model": "m", "prompt": "hello there", "max_tokens": 5, "stream": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            events = [x for x in r.read().decode().split("\n\n") if x.startswith("data: ")]
        assert len(events) == 5 + 2 and events[-1] == "data: [DONE]"  # 5 tokens, the usage, the end
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            metrics = r.read().decode()
        assert "vllm:generation_tokens_total" in metrics and "vllm:cache_config_info" in metrics
        from helpers.load.metrics import parse
        read = parse(metrics)  # the counters read as the guide reads a real engine's (the 5-s settle needs them)
        assert read["generation_tokens"] == 5 and read["prefix_cache_queries"] == read["prompt_tokens"] > 0
    finally:
        proc.kill()
        proc.wait()


def test_two_gpus_on_one_are_refused_with_vllms_line(tmp_path):
    proc, port, log = _start(tmp_path, "--tensor-parallel-size", "2")
    assert proc.wait(timeout=30) != 0
    assert "World size (2) is larger than the number of available GPUs (1)" in startup_log.error_line(log.read_text())


def test_the_start_seam_names_cpu_only_settings():
    assert in_kernel.cpu_only(["--model", "m"], {"VLLM_CPU_OMP_THREADS_BIND": "0"}) == ["VLLM_CPU_OMP_THREADS_BIND"]
    assert in_kernel.cpu_only(["--model", "m"], {"HF_HUB_OFFLINE": "1"}) == []
