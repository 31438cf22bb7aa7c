"""What the GPU dry run installs in a notebook's kernel before its first cell (tests/gpu_dry/).

The environment (set by the test before the kernel starts) makes `helpers.hardware` report one
CUDA GPU. Here the engine layer's start seam (`server.start_processes_with`) starts the simulated
server instead of vLLM, after refusing any CPU-only setting that reached the server's arguments or
environment; the GPU roof probe returns made-up figures labelled simulated; every row the store
keeps says `simulated: True` (and the store is a temporary folder the test throws away).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).with_name("simulated_server.py")
# What only vLLM's CPU backend reads: none of it may reach a CUDA engine.
CPU_ONLY_ENV = (
    "VLLM_CPU_OMP_THREADS_BIND",
    "VLLM_CPU_NUM_OF_RESERVED_CPU",
    "VLLM_CPU_KVCACHE_SPACE",
    "VLLM_ENABLE_V1_MULTIPROCESSING",
)


def cpu_only(argv: list[str], env: dict) -> list[str]:
    """The CPU-only settings in a server's arguments and environment (empty: none)."""
    found = [k for k in CPU_ONLY_ENV if k in env]
    if (
        "--distributed-executor-backend" in argv
        and argv[argv.index("--distributed-executor-backend") + 1] == "uni"
        and env.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"
    ):
        found.append("the merged layout")
    return found


def start_simulated(argv, env, log_path, cwd, lock_fd, layout, ray) -> int:
    starts = os.environ.get("GUIDE_DRY_STARTS")
    bad = cpu_only(argv, env)
    if starts:
        with open(starts, "a") as f:
            f.write(
                json.dumps(
                    {"notebook": os.environ.get("GUIDE_NOTEBOOK"), "argv": argv, "layout": layout, "cpu_only": bad}
                )
                + "\n"
            )
    if bad:
        raise AssertionError(f"CPU-only settings reached a CUDA engine: {bad} (argv {argv})")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(lock_fd,),
        )
    return proc.pid


def simulated_probe(dtype: str, shape) -> dict:
    """`probes.cuda_probe`'s record with made-up figures of an H200's order (4.8 TB/s HBM3e)."""
    from helpers import probes

    read = {"best_gbs": 4100.0, "median_gbs": 4000.0, "min_gbs": 3900.0}
    copy = {"best_gbs": 3600.0, "median_gbs": 3500.0, "min_gbs": 3400.0}
    return {
        "threads": 0,
        "probe_version": probes.PROBE_VERSION,
        "cuda": {"read": read, "copy": copy},
        "bandwidth_gbs": read["best_gbs"],
        "bandwidth_kernel": "cuda read (simulated)",
        "bandwidth_median_gbs": read["median_gbs"],
        "bandwidth_min_gbs": read["min_gbs"],
        "mixed_gbs": copy["best_gbs"],
        "mixed_kernel": "cuda copy (simulated)",
        "methods_ratio": None,
        "matmul": {"best_gflops": 700000.0, "dtype": dtype, "shape": [8192, 8192, 8192]},
        "compute_gflops": 700000.0,
        "simulated": True,
    }


def install() -> None:
    from helpers import hardware, probes
    from helpers.engine import server
    from helpers.results import store

    assert hardware.default_device() == "cuda" and hardware.describe()["gpu_count"] == 1, hardware.describe()
    server.start_processes_with(start_simulated)
    probes.cuda_probe = simulated_probe
    append = store.ResultStore.append

    def labelled(self, row, *a, **k):
        return append(self, {**row, "simulated": True}, *a, **k)

    store.ResultStore.append = labelled
