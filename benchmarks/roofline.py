"""Chapter 7's figures with their spread: this machine's roofs, the floor against the measured TPOT
of the embedded model in its compute dtype and in INT8, and the effects of the process layout and
the thread binding, each load repeated (median, lowest and highest repeat).

  (a) the roofs: `--probes` probes of the bandwidth (six kernels, the fastest counts) and matmul, at 1 thread
      and at all cores, run back to back with no engine up;
  (b) the default engine (vLLM's layout, as a learner runs it) at 1 and 8 requests in flight, and the
      INT8 copy at 4, each `--repeats` times on fresh prompts: floor, mean TPOT, MBU (against every
      core's roof) and the worker's MBU (against its own cores');
  (c) the same load (4 in flight) in the merged layout and in vLLM's layout with every core bound
      (`cpu_threads_bind`): output tokens/s as ratios to vLLM's own layout with `auto` binding.

Usage:  .venv/bin/python benchmarks/roofline.py [--repeats 3] [--probes 3]     (about 12 minutes on 2 cores)
Rows go to a fresh results folder (nothing stored earlier is reused); a table on stdout, figures in
benchmarks/results/roofline.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GUIDE_LOCK_WAIT", "3600")
os.environ["GUIDE_RESULTS"] = tempfile.mkdtemp(prefix="roofline-")
os.environ.pop("GUIDE_ENGINE_LAYOUT", None)  # vLLM's own layout unless a measurement asks for another

from helpers import EngineConfig, Load, experiment, hardware, probes  # noqa: E402
from helpers.engine.server import process_layout  # noqa: E402
from helpers.results import fingerprint  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "roofline.json"
FIGURES = ("roofline_tpot_ms", "mean_tpot_ms", "mbu", "worker_mbu", "output_throughput")


def spread(row: dict, key: str) -> str:
    runs = [r[key] for r in row["runs"] if r.get(key) is not None] if key in row["runs"][0] else []
    if not runs:  # a figure computed from the median row (floor, MBU)
        return f"{row[key]:.2f}"
    return f"{statistics.median(runs):.2f} ({min(runs):.2f}–{max(runs):.2f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--probes", type=int, default=3)
    args = p.parse_args()
    cores, dtype = hardware.describe()["cpu_cores"], hardware.cpu_dtype()
    # The first probe at each thread count is stored (the rows' floors use it); the others show its spread.
    measured = {t: [experiment.roof(t, force=True)] + [probes.probe(t, dtype, experiment.ROOF_SHAPE, repeats=5)
                                                       for _ in range(args.probes - 1)] for t in sorted({1, cores})}
    out = {"fingerprint": fingerprint(), "probes": measured, "rows": {}}
    for t, found in measured.items():
        bw = [f["bandwidth_gbs"] for f in found]
        ratio = [f["methods_ratio"] for f in found]
        gf = [f["compute_gflops"] for f in found]
        print(f"{t} thread(s): roof {statistics.median(bw):.1f} GB/s ({min(bw):.1f}–{max(bw):.1f}), numpy/torch "
              f"×{statistics.median(ratio):.2f} ({min(ratio):.2f}–{max(ratio):.2f}), matmul {dtype} "
              f"{statistics.median(gf):.0f} GFLOP/s ({min(gf):.0f}–{max(gf):.0f})")
    base = EngineConfig()
    loads = {c: Load(num_prompts=max(8, 2 * c), input_len=128, output_len=32, max_concurrency=c) for c in (1, 4, 8)}
    speed = Load(num_prompts=8, input_len=256, output_len=32, max_concurrency=4)
    plan = {"default, 1 in flight": (base, loads[1], "vllm"), "default, 8 in flight": (base, loads[8], "vllm"),
            "default, 4 in flight": (base, loads[4], "vllm"),
            "bind every core, 4 in flight": (base.replace(cpu_threads_bind=",".join(map(str, hardware.allowed_cpus()))),
                                             loads[4], "vllm"),
            "merged layout, 4 in flight": (base, loads[4], "merged"),
            "default, speed load": (base, speed, "vllm"),
            "INT8, speed load": (base.replace(model="embedded-int8"), speed, "vllm")}
    for name, (cfg, load, layout) in plan.items():
        with process_layout(layout):
            row = experiment.with_floor(experiment.measure(cfg, load, repeats=args.repeats, progress=False,
                                                           tag="bench-roofline"))
        out["rows"][name] = {k: row.get(k) for k in (*FIGURES, "worker_cores", "worker_threads", "roof_threads",
                                                     "roof_kernel", "decode_batch", "bytes_per_step_mb")}
        out["rows"][name]["runs"] = [{k: r.get(k) for k in ("mean_tpot_ms", "output_throughput")} for r in row["runs"]]
        print(f"{name:32} " + "  ".join(f"{k} {spread(row, k)}" for k in FIGURES), flush=True)
    experiment.stop(now=True)
    r = out["rows"]
    ref = r["default, 4 in flight"]["output_throughput"]
    for name in ("merged layout, 4 in flight", "bind every core, 4 in flight"):
        print(f"{name}: ×{r[name]['output_throughput'] / ref:.2f} "
              "output tokens/s against vLLM's layout with auto binding")
    print("INT8: "
          f"×{r['INT8, speed load']['bytes_per_step_mb'] / r['default, speed load']['bytes_per_step_mb']:.2f} "
          "the bytes, "
          f"×{r['INT8, speed load']['mean_tpot_ms'] / r['default, speed load']['mean_tpot_ms']:.2f} the TPOT")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
