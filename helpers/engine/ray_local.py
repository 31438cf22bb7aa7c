"""The local Ray instance a server with distributed_executor_backend="ray" starts, and its end.

With no RAY_ADDRESS, vLLM's engine core calls `ray.init()`, which starts a whole local Ray
instance (gcs_server, raylet, dashboard, agents, idle workers) as children of the engine.
The harness gives each such server a Ray folder of its own (RAY_TMPDIR, inherited by every Ray
process), so that after a stop, or a failed start, it can find exactly those processes, end
them, and remove the folder. With RAY_ADDRESS set the server joins that cluster instead, and
the cluster is the learner's to stop: nothing is started or ended here.
"""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

from helpers.config import EngineConfig


def owns_ray(config: EngineConfig) -> bool:
    """True when a server for this config would start its own local Ray instance."""
    return config.distributed_executor_backend == "ray" and not os.environ.get("RAY_ADDRESS")


def make_folder() -> Path:
    # Short, under /tmp: Ray puts unix sockets in it, and socket paths are limited to 107 bytes.
    return Path(tempfile.mkdtemp(prefix="guide-ray-"))


def env_for(folder: Path) -> dict[str, str]:
    return {"RAY_TMPDIR": str(folder), "RAY_USAGE_STATS_ENABLED": "0"}


def processes(folder: Path) -> list[int]:
    """Process ids whose environment has RAY_TMPDIR=folder: this server's Ray processes."""
    marker = f"RAY_TMPDIR={folder}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in env:
            found.append(int(d.name))
    return found


def end(folder: Path) -> None:
    """Kill what is left of this server's Ray instance and remove its folder."""
    for pid in processes(folder):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(folder, ignore_errors=True)
