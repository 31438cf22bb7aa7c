"""This machine's two roofs, measured: memory bandwidth (STREAM-like copy and triad) and matmul
throughput in the compute dtype. Decode reads every weight once per step, so bandwidth bounds
the time per token from below; compute bounds it once the batch is large enough.

Two independent bandwidth methods are measured, so their agreement says how far to trust
either: numpy (one copy per Python thread over its own slice; numpy releases the GIL while it
copies) and torch (`Tensor.copy_` parallelised over `threads` OpenMP threads). Arrays are many
times the last-level cache, so the figures are main memory's, not a cache's. Each kernel runs
`repeats` times; the best run is the roof (what the memory can do), the median and spread say
how much a shared machine moved it. Nothing here imports vLLM.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from helpers import hardware

PROBE_VERSION = 1  # bumped when the method changes, so cached roofs are measured again


def array_mib() -> int:
    """Each array: at least 8× the largest CPU cache and 256 MiB."""
    return int(max(256, 8 * (hardware.last_level_cache_mib() or 32)))


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


def probe(threads: int, dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """Both bandwidth methods and the matmul at `threads`: one record (a store row's figures).
    The bandwidth roof is the *read* kernel's best run with torch: decode reads weights and KV
    and writes little, and a read has no write-allocate traffic for the two methods to count
    differently (a numpy copy of large arrays may use streaming stores, a torch copy does not)."""
    np_bw, torch_bw = numpy_bandwidth(threads, repeats), torch_bandwidth(threads, repeats)
    mm = matmul_flops(dtype, *shape, threads, repeats)
    read = torch_bw["read"]
    return {"threads": threads, "array_mib": array_mib(), "probe_version": PROBE_VERSION,
            "numpy": np_bw, "torch": torch_bw, "bandwidth_gbs": read["best_gbs"],
            "bandwidth_median_gbs": read["median_gbs"], "bandwidth_min_gbs": read["min_gbs"],
            "methods_ratio": np_bw["read"]["best_gbs"] / read["best_gbs"],
            "matmul": mm, "compute_gflops": mm["best_gflops"]}


def cuda_probe(dtype: str, shape: tuple[int, int, int], repeats: int = 5) -> dict:
    """A GPU's roofs in the same record as `probe`: device-to-device copy bandwidth and a matmul
    on the GPU. Written from torch's CUDA API; not run on the guide's CPU machines."""
    import torch
    copy = cuda_bandwidth(repeats)["copy"]
    dt = getattr(torch, dtype)
    x, w = torch.randn(shape[0], shape[1], device="cuda", dtype=dt), torch.randn(shape[1], shape[2], device="cuda", dtype=dt)

    def mm():
        torch.mm(x, w)
        torch.cuda.synchronize()
    rates = sorted(2 * shape[0] * shape[1] * shape[2] / t / 1e9 for t in _timed(mm, repeats))
    return {"threads": 0, "probe_version": PROBE_VERSION, "cuda": {"copy": copy}, "bandwidth_gbs": copy["best_gbs"],
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
