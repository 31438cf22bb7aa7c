"""This machine's two roofs, measured: memory bandwidth and matmul throughput in the compute dtype.
Decode reads every weight once per step, so bandwidth bounds the time per token from below;
compute bounds it once the batch is large enough.

Bandwidth is measured by two methods that share no code, numpy (one Python thread per slice;
numpy releases the GIL in its loops) and torch (OpenMP threads), each with three kernels: read
(a sum), copy and triad. Bytes are counted as STREAM counts them: what the kernel reads and
writes, not the write-allocate read that a cached store adds (glibc's memcpy, under numpy's copy
of arrays this large, may use non-temporal stores that skip it, and nothing here tells which kernel
did). So each figure, and the roof, the best of all six, is a lower bound of the rate the memory
can move: the floor it gives may be a little high, never low. Arrays are at least 8× the L3 of
the CPUs this process may use, summed over its instances (`hardware.total_l3_mib`), so the
figures are main memory's. Each kernel runs `repeats` times; the best run counts, and the median
and spread say how much a shared machine moved it. Nothing here imports vLLM.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from helpers import hardware

PROBE_VERSION = 2  # bumped when the method changes, so cached roofs are measured again


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


def probe(threads: int, dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """Both bandwidth methods and the matmul at `threads`: one record (a store row's figures).
    The bandwidth roof is the fastest of the six kernels' best runs; `methods_ratio` compares each
    method's best kernel (numpy ÷ torch), so a library's slow kernel does not read as disagreement."""
    found = {"numpy": numpy_bandwidth(threads, repeats), "torch": torch_bandwidth(threads, repeats)}
    mm = matmul_flops(dtype, *shape, threads, repeats)
    best = {m: best_kernel(k) for m, k in found.items()}
    method = max(best, key=lambda m: best[m][1])
    top = found[method][best[method][0]]
    return {"threads": threads, "array_mib": array_mib(), "probe_version": PROBE_VERSION, **found,
            "bandwidth_gbs": top["best_gbs"], "bandwidth_kernel": f"{method} {best[method][0]}",
            "bandwidth_median_gbs": top["median_gbs"], "bandwidth_min_gbs": top["min_gbs"],
            "methods_ratio": best["numpy"][1] / best["torch"][1], "matmul": mm, "compute_gflops": mm["best_gflops"]}


def cuda_probe(dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """A GPU's roofs in the same record as `probe`: device-to-device copy bandwidth and a matmul
    on the GPU. Written from torch's CUDA API; not run on the guide's CPU machines."""
    import torch
    copy = cuda_bandwidth(repeats)["copy"]
    dt = getattr(torch, dtype)
    x, w = (torch.randn(shape[0], shape[1], device="cuda", dtype=dt),
            torch.randn(shape[1], shape[2], device="cuda", dtype=dt))

    def mm():
        torch.mm(x, w)
        torch.cuda.synchronize()
    rates = sorted(2 * shape[0] * shape[1] * shape[2] / t / 1e9 for t in _timed(mm, repeats))
    return {"threads": 0, "probe_version": PROBE_VERSION, "cuda": {"copy": copy}, "bandwidth_gbs": copy["best_gbs"],
            "bandwidth_kernel": "cuda copy",
            "bandwidth_median_gbs": copy["median_gbs"], "bandwidth_min_gbs": copy["min_gbs"], "methods_ratio": None,
            "matmul": {"best_gflops": rates[-1], "dtype": dtype, "shape": list(shape)}, "compute_gflops": rates[-1]}


def cuda_bandwidth(repeats: int = 5, mib: int = 1024) -> dict:
    """A GPU's device-to-device copy (2 bytes moved per byte), for the roof of a CUDA engine.
    Written from torch's API; not run on the guide's CPU machines."""
    import torch
    n = mib * 2**20 // 4
    a, b = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")

    def copy():
        b.copy_(a)
        torch.cuda.synchronize()
    return {"copy": _summary(_timed(copy, repeats), 2 * a.element_size() * n)}
