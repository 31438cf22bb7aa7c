import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _processes(matches) -> list[str]:
    """"pid: command line" of every other process on this machine whose command line `matches`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if matches(cmd):
            found.append(f"{d.name}: {cmd[:120]}")
    return found


def vllm_processes() -> list[str]:
    """Any vLLM server/engine process on this machine."""
    return _processes(lambda cmd: "helpers/engine/_launch.py" in cmd or "vllm.entrypoints" in cmd
                      or cmd.startswith(("VLLM::", "VllmWorker")))


RAY_MARKS = ("/ray/core/src/ray/", "/ray/dashboard/", "/ray/_private/log_monitor.py",
             "/ray/autoscaler/_private/monitor.py", "/ray/_private/workers/")


def ray_processes() -> list[str]:
    """Any Ray process (gcs_server, raylet, agents, workers) on this machine."""
    return _processes(lambda cmd: cmd.startswith("ray::") or any(mark in cmd for mark in RAY_MARKS))


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"
