"""Chapter 7's figures and claims: this machine's roofs, the decode floor of each measured row,
and what the gap between floor and measurement is made of. Lab 5 checks its answers here too.

The notebook passes rows indexed by name:
  sweep     7.2: the default engine at 1, 2, 4, 8… requests in flight (chapter 3's loads)
  weights   7.3: "base" and "int8" on chapter 5's speed load
  layouts   7.3: "merged" and "vllm" on one load
  binding   7.3: "auto", "all cores" (and "nobind" at full size) in vLLM's layout, on one load
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from helpers import verdicts
from helpers.verdicts import Claim
from helpers.results import roofline

AGREE = 0.15  # the two bandwidth methods "agree" within 15 %
NEAR_FLOOR = roofline.NEAR_FLOOR  # MBU at which decode counts as running at the bandwidth floor
BASE, INT8 = "base", "int8"
MERGED, VLLM = "merged", "vllm"
AUTO, ALL = "auto", "all cores"


def roof_table(roof: dict) -> pd.DataFrame:
    """GB/s of each kernel by each method: the best run (the roof), the median and the slowest."""
    out = {(method, kernel): {"best (GB/s)": k["best_gbs"], "median (GB/s)": k["median_gbs"],
                              "slowest (GB/s)": k["min_gbs"]}
           for method in ("numpy", "torch", "cuda") if method in roof for kernel, k in roof[method].items()}
    return pd.DataFrame(out).T.rename_axis(["method", "kernel"])


def probe_claim(roof: dict) -> Claim:
    r = roof["methods_ratio"]
    if r is None:  # a GPU's roof: one method (a device-to-device copy)
        return verdicts.untested("7.1 Two ways of measuring bandwidth agree", "a GPU's roof is measured one way here "
                               "(torch's device-to-device copy)")
    return verdicts.judge(
        "7.1 Two ways of measuring bandwidth agree", abs(r - 1) <= AGREE,
        f"read kernel at {roof['threads']} thread(s): numpy {roof['numpy']['read']['best_gbs']:.1f} GB/s, torch "
        f"{roof['torch']['read']['best_gbs']:.1f} GB/s (×{r:.2f}); torch's runs spread from "
        f"{roof['bandwidth_min_gbs']:.1f} to {roof['bandwidth_gbs']:.1f} GB/s",
        partly=abs(r - 1) <= 2 * AGREE, rule=f"held: within {AGREE:.0%} of each other; partly: within {2 * AGREE:.0%}")


def floors(folder, dtype, kv_per_token: float, roof: dict, batches=(1, 8), context: float = 144) -> pd.DataFrame:
    """Bytes one decode step reads and the floor TPOT, per batch, for one model copy."""
    weights = roofline.weight_bytes(folder, dtype)
    rows = {}
    for b in batches:
        nbytes = roofline.step_bytes(weights, b, context, kv_per_token)
        rows[b] = {"weights read (MB)": weights / 1e6, "KV read (MB)": (nbytes - weights) / 1e6,
                   "bytes per step (MB)": nbytes / 1e6, "floor TPOT (ms)": roofline.floor_ms(nbytes, roof["bandwidth_gbs"])}
    return pd.DataFrame(rows).T.rename_axis("sequences in a step")


def crossover(folder, dtype, kv_per_token: float, roof: dict, context: float) -> float | None:
    """The batch past which this machine's decode would be compute-bound (None: never)."""
    c = roofline.linear_params(folder)
    cfg = json.loads((Path(folder) / "config.json").read_text())
    attention = 4 * context * cfg["num_hidden_layers"] * cfg["num_attention_heads"] * (
        cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])
    return roofline.crossover_batch(roofline.weight_bytes(folder, dtype), 2 * c + attention, context * kv_per_token,
                                    roof["bandwidth_gbs"], roof["compute_gflops"])


def sweep_frame(rows: dict, roof: dict, folder) -> pd.DataFrame:
    """Per concurrency: measured TPOT, the bandwidth floor and the compute floor (the batch's
    multiply-adds at the compute roof), in ms, long-form for the roofline chart."""
    flops = 2 * roofline.linear_params(folder)
    out = []
    for c, r in rows.items():
        batch = roofline.decode_batch(r)
        compute = batch * flops / (roof["compute_gflops"] * 1e9) * 1e3
        for line, ms in (("measured mean TPOT", r["mean_tpot_ms"]), ("bandwidth floor", r["roofline_tpot_ms"]),
                         ("compute floor", compute)):
            out.append({"requests in flight": c, "sequences in a step": batch, "line": line, "ms per token": ms})
    return pd.DataFrame(out)


def gap(row) -> float:
    """Measured TPOT minus the floor, in ms: what is not reading bytes."""
    return row["mean_tpot_ms"] - row["roofline_tpot_ms"]


def floor_claims(sweep: dict) -> list[Claim]:
    one, many = sweep[min(sweep)], sweep[max(sweep)]
    batch_cost = many["mean_tpot_ms"] / one["mean_tpot_ms"]
    return [
        verdicts.judge(
            "7.2 With one request in flight, decode runs near the bandwidth floor", one["mbu"] >= NEAR_FLOOR,
            f"floor {one['roofline_tpot_ms']:.1f} ms (reading {one['bytes_per_step_mb']:.0f} MB at "
            f"{one['roof_bandwidth_gbs']:.1f} GB/s), measured {one['mean_tpot_ms']:.1f} ms: MBU {one['mbu']:.2f}",
            partly=one["mbu"] >= NEAR_FLOOR / 2,
            rule=f"held: MBU ≥ {NEAR_FLOOR}; partly: ≥ {NEAR_FLOOR / 2}; else per-step overhead dominates"),
        verdicts.judge(
            "7.2 While decode is memory-bound, more sequences per step cost little more time per step",
            batch_cost <= 2, f"{min(sweep)} → {max(sweep)} in flight ({roofline.decode_batch(many):.1f} sequences a step): "
            f"mean TPOT {one['mean_tpot_ms']:.1f} → {many['mean_tpot_ms']:.1f} ms (×{batch_cost:.2f}); MBU "
            f"{one['mbu']:.2f} → {many['mbu']:.2f}",
            partly=batch_cost <= 4, rule="held: the step time at most doubles; partly: at most ×4"),
    ]


def bytes_claims(base: dict, int8: dict) -> list[Claim]:
    """Judges "quantization speeds decode by the bytes it saves" on one load, both engines."""
    by_bytes = int8["bytes_per_step_mb"] / base["bytes_per_step_mb"]
    by_time = int8["mean_tpot_ms"] / base["mean_tpot_ms"]
    noisy = verdicts.within_noise(base, int8, "mean_tpot_ms")
    level = verdicts.noise([base, int8], "mean_tpot_ms")
    gaps = gap(int8) / gap(base) if gap(base) > 0 else float("inf")
    return [
        verdicts.judge(
            "7.3 INT8 weights speed decode by the bytes they save", by_time <= by_bytes * (1 + level),
            f"INT8 reads ×{by_bytes:.2f} of the bytes per step and took ×{by_time:.2f} of the time per token "
            f"(MBU {base['mbu']:.2f} → {int8['mbu']:.2f})",
            partly=by_time < 1 and not noisy, within_noise=noisy and by_bytes > 1 - level,
            rule="held: the time fell at least as much as the bytes (within noise); partly: it fell, by less"),
        verdicts.judge(
            "7.3 What is left above the floor is a per-step cost that fewer bytes do not remove",
            0.75 <= gaps <= 1 / 0.75,
            f"time above the floor: {gap(base):.1f} ms ({base['config_label']}) vs {gap(int8):.1f} ms (INT8), ×{gaps:.2f}",
            partly=0.5 <= gaps <= 2, rule="held: the two gaps within ×0.75–1.33 of each other; partly: ×0.5–2"),
    ]


def layout_claims(layouts: dict, binding: dict, cores: int) -> list[Claim]:
    merged, split = layouts[MERGED], layouts[VLLM]
    out = [verdicts.judge_change(
        f"7.3 On {cores} cores the merged layout decodes faster than vLLM's three processes", split, merged,
        "output_throughput", better="higher", held_at=1.2,
        evidence=f"{split['output_throughput']:.0f} → {merged['output_throughput']:.0f} output tokens/s, mean TPOT "
                 f"{split['mean_tpot_ms']:.1f} → {merged['mean_tpot_ms']:.1f} ms; worker cores "
                 f"{roofline.worker_threads(split)} vs {roofline.worker_threads(merged)}")]
    auto, every = binding[AUTO], binding[ALL]
    out.append(verdicts.judge_change(
        "7.3 Binding the worker to every core beats vLLM's auto binding (one core kept free)", auto, every,
        "output_throughput", better="higher", held_at=1.2,
        evidence=f"{auto['output_throughput']:.0f} → {every['output_throughput']:.0f} output tokens/s, mean TPOT "
                 f"{auto['mean_tpot_ms']:.1f} → {every['mean_tpot_ms']:.1f} ms; worker cores "
                 f"{roofline.worker_threads(auto)} vs {roofline.worker_threads(every)}"))
    return out


def gpu_claim(device: str) -> Claim:
    if device == "cpu":
        return verdicts.untested("7.3 CUDA graphs remove the kernel-launch share of the gap",
                               "no CUDA GPU here: the CPU backend has no CUDA graphs (capture sizes emptied in "
                               "vllm/platforms/cpu.py)")
    return verdicts.untested("7.3 CUDA graphs remove the kernel-launch share of the gap",
                           "compare eager and graph rows against the floor in the GPU cells of 7.3")

