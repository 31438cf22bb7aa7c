import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def vllm_processes() -> list[str]:
    """Command lines of any vLLM server/engine process on this machine."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "helpers/engine/_launch.py" in cmd or "vllm.entrypoints" in cmd or cmd.startswith(("VLLM::", "VllmWorker")):
            found.append(f"{d.name}: {cmd[:120]}")
    return found


RAY_MARKS = ("/ray/core/src/ray/", "/ray/dashboard/", "/ray/_private/log_monitor.py",
             "/ray/autoscaler/_private/monitor.py", "/ray/_private/workers/")


def ray_processes() -> list[str]:
    """Command lines of any Ray process (gcs_server, raylet, agents, workers) on this machine."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("ray::") or any(mark in cmd for mark in RAY_MARKS):
            found.append(f"{d.name}: {cmd[:120]}")
    return found


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"
