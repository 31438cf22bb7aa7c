"""This machine's two roofs, measured: memory bandwidth and matmul throughput in the compute dtype.
Decode reads every weight once per step, so bandwidth bounds the time per token from below;
compute bounds it once the batch is large enough.

Bandwidth is measured by two methods that share no code, numpy (one Python thread per slice;
numpy releases the GIL in its loops) and torch (OpenMP threads), each with three kernels: read
(a sum), copy and triad. Bytes are counted as STREAM counts them: what the kernel reads and
writes, not the write-allocate read that a cached store adds. Decode only *reads* (weights and KV
cache), so the roof is the best *read* rate of the two methods (a read-only stream; a kernel that
also writes shares the bus with its stores and reads slower or faster depending on the memory
controller); the best triad is kept beside it, named as the machine's mixed-traffic figure. Arrays
are at least 8× the L3 of the CPUs this process may use, summed over its instances
(`hardware.total_l3_mib`), so the figures are main memory's. Each kernel runs `repeats` times; the
best run counts, and the median and spread say how much a shared machine moved it. Nothing here
imports vLLM.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from helpers import hardware

PROBE_VERSION = 3  # bumped when the method changes, so cached roofs are measured again (3: the roof reads)


def array_mib() -> int:
    """Each array: at least 8× the L3 of the allowed CPUs (every instance counted) and 256 MiB."""
    return int(max(256, 8 * (hardware.total_l3_mib() or 32)))


def _summary(seconds: list[float], moved: int) -> dict:
    rates = sorted(moved / s / 1e9 for s in seconds)
    return {"best_gbs": rates[-1], "median_gbs": statistics.median(rates), "min_gbs": rates[0], "runs": len(rates)}


def _timed(fn, repeats: int) -> list[float]:
    fn()  # first touch: page faults and lazy allocation are not bandwidth
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def numpy_bandwidth(threads: int, repeats: int = 5, mib: int | None = None) -> dict:
    """read (a sum: 1 byte moved per byte), copy (b = a: 2) and triad (a = b + s·c: 3, STREAM's
    count; numpy needs two passes for it, so 5 arrays are counted) with numpy, `threads` Python
    threads each on its own slice."""
    import numpy as np
    n = (mib or array_mib()) * 2**20 // 8
    a, b, c = np.ones(n), np.full(n, 2.0), np.full(n, 0.5)
    cuts = [slice(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    kernels = {"read": (lambda s: a[s].sum(), 1), "copy": (lambda s: np.copyto(b[s], a[s]), 2),
               "triad": (lambda s: np.add(b[s], np.multiply(c[s], 3.0, out=a[s]), out=a[s]), 5)}  # two passes: 5 arrays
    with ThreadPoolExecutor(threads) as pool:
        return {name: _summary(_timed(lambda: list(pool.map(op, cuts)), repeats), k * a.nbytes)
                for name, (op, k) in kernels.items()}


def torch_bandwidth(threads: int, repeats: int = 5, mib: int | None = None) -> dict:
    """The same three kernels with torch over `threads` OpenMP threads (restored afterwards)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        n = (mib or array_mib()) * 2**20 // 8
        a, b, c = (torch.full((n,), v, dtype=torch.float64) for v in (1.0, 2.0, 0.5))
        nbytes = a.element_size() * n
        kernels = {"read": (a.sum, 1), "copy": (lambda: b.copy_(a), 2),
                   "triad": (lambda: torch.add(b, c, alpha=3.0, out=a), 3)}
        return {name: _summary(_timed(op, repeats), k * nbytes) for name, (op, k) in kernels.items()}
    finally:
        torch.set_num_threads(before)


def matmul_flops(dtype: str, m: int, k: int, n: int, threads: int, repeats: int = 5) -> dict:
    """[m × k] @ [k × n] in `dtype` ("bfloat16", "float32"), FLOP/s = 2·m·k·n / time: the shape
    of a model's linear layer for a batch of m tokens."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        dt = getattr(torch, dtype)
        x, w = torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)
        seconds = _timed(lambda: torch.mm(x, w), repeats)
        rates = sorted(2 * m * k * n / s / 1e9 for s in seconds)
        return {"best_gflops": rates[-1], "median_gflops": statistics.median(rates), "min_gflops": rates[0],
                "dtype": dtype, "shape": [m, k, n], "threads": threads}
    finally:
        torch.set_num_threads(before)


def best_kernel(method: dict) -> tuple[str, float]:
    """The kernel that moved bytes fastest in one method's results, and its best rate (GB/s)."""
    name = max(method, key=lambda k: method[k]["best_gbs"])
    return name, method[name]["best_gbs"]


def best_of(found: dict, kernel: str) -> tuple[str, dict]:
    """The method whose `kernel` ran fastest, and that kernel's summary."""
    method = max(found, key=lambda m: found[m][kernel]["best_gbs"])
    return method, found[method][kernel]


def probe(threads: int, dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """Both bandwidth methods and the matmul at `threads`: one record (a store row's figures).
    The bandwidth roof is the faster of the two read kernels' best runs (decode traffic is reads);
    `mixed_gbs` is the best triad, the machine's figure for traffic that also writes. `methods_ratio`
    compares like with like: numpy's read ÷ torch's read."""
    found = {"numpy": numpy_bandwidth(threads, repeats), "torch": torch_bandwidth(threads, repeats)}
    mm = matmul_flops(dtype, *shape, threads, repeats)
    method, top = best_of(found, "read")
    mixed_method, mixed = best_of(found, "triad")
    return {"threads": threads, "array_mib": array_mib(), "probe_version": PROBE_VERSION, **found,
            "bandwidth_gbs": top["best_gbs"], "bandwidth_kernel": f"{method} read",
            "bandwidth_median_gbs": top["median_gbs"], "bandwidth_min_gbs": top["min_gbs"],
            "mixed_gbs": mixed["best_gbs"], "mixed_kernel": f"{mixed_method} triad",
            "methods_ratio": found["numpy"]["read"]["best_gbs"] / found["torch"]["read"]["best_gbs"],
            "matmul": mm, "compute_gflops": mm["best_gflops"]}


def cuda_probe(dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """A GPU's roofs in the same record as `probe`: read bandwidth (a sum; the copy kept as mixed
    traffic) and a matmul on the GPU. Written from torch's CUDA API; not run on the guide's CPU machines."""
    import torch
    found = cuda_bandwidth(repeats)
    read, copy = found["read"], found["copy"]
    dt = getattr(torch, dtype)
    # The CPU's shape is far too small for a GPU: one launch and a synchronize would outlast it. A large
    # square product, 10 launches between synchronizes, measures the matmul units instead.
    shape, launches = (8192, 8192, 8192), 10
    rates = _cuda_matmul_rates(dt, shape, launches, repeats)
    # hand the memory back: torch's caching allocator would keep it in this (the notebook's) process, and
    # vLLM's start checks the device's free memory against the fraction (`request_memory`)
    torch.cuda.empty_cache()
    return {"threads": 0, "probe_version": PROBE_VERSION, "cuda": found, "bandwidth_gbs": read["best_gbs"],
            "bandwidth_kernel": "cuda read", "bandwidth_median_gbs": read["median_gbs"],
            "bandwidth_min_gbs": read["min_gbs"], "mixed_gbs": copy["best_gbs"], "mixed_kernel": "cuda copy",
            "methods_ratio": None,
            "matmul": {"best_gflops": rates[-1], "dtype": dtype, "shape": list(shape)}, "compute_gflops": rates[-1]}


def _cuda_matmul_rates(dt, shape: tuple[int, int, int], launches: int, repeats: int) -> list[float]:
    """GFLOP/s of `launches` products per synchronize, sorted; the matrices are freed on return."""
    import torch
    x, w = (torch.randn(shape[0], shape[1], device="cuda", dtype=dt),
            torch.randn(shape[1], shape[2], device="cuda", dtype=dt))

    def mm():
        for _ in range(launches):
            torch.mm(x, w)
        torch.cuda.synchronize()
    return sorted(launches * 2 * shape[0] * shape[1] * shape[2] / t / 1e9 for t in _timed(mm, repeats))


def cuda_bandwidth(repeats: int = 5, mib: int = 1024) -> dict:
    """A GPU's read (a sum: 1 byte moved per byte; the roof of a CUDA engine's decode) and its
    device-to-device copy (2). Written from torch's API; not run on the guide's CPU machines."""
    import torch
    n = mib * 2**20 // 4
    a, b = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")

    def read():
        a.sum()
        torch.cuda.synchronize()

    def copy():
        b.copy_(a)
        torch.cuda.synchronize()
    nbytes = a.element_size() * n
    return {"read": _summary(_timed(read, repeats), nbytes), "copy": _summary(_timed(copy, repeats), 2 * nbytes)}
