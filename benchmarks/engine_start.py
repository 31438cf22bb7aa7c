"""How fast does an engine start through the harness, and does its process layout change what a learner measures?

One run, on the embedded model with `EngineConfig()` (eager), alternating so the machine's drift hits every kind alike:

  (a) start to healthy: a bare `python -m vllm.entrypoints.openai.api_server` (vLLM's own three-process layout)
      against `Server(cfg).start()` in vLLM's layout and in the harness's "merged" layout
      (helpers/engine/server.py, LAYOUTS). Target: merged ≤ 0.5 × bare.
  (b) fidelity: on each harness server, one warm-up load (not counted), then the same load shape `--load-repeats`
      times, each on new prompts (another seed), so no run finds its prompts in the prefix cache. Target: output
      throughput and mean TTFT of "merged" within 5 % of vLLM's layout.
  (d) where each start's time goes, from its log's timestamps (helpers/engine/startup_log.phases: import,
      config, engine-core import, worker import, model, KV cache + warm-up, API routes), median per kind,
      and each kind's total as a ratio to the bare start of the same run.
  (c) with --compiled: two compiled starts (enforce_eager=False) of one config with an empty compile cache
      (a private VLLM_CACHE_ROOT), so the second one finds the first one's cache. Target: second ≤ 0.5 × first.

Usage:  .venv/bin/python benchmarks/engine_start.py [--repeats 2] [--load-repeats 2] [--compiled]
Results: a table on stdout, figures in benchmarks/results/engine_start.json.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("GUIDE_LOCK_WAIT", "3600")

from harness_overhead import bare_start  # noqa: E402

from helpers import models  # noqa: E402
from helpers.config import EngineConfig  # noqa: E402
from helpers.engine import Server  # noqa: E402
from helpers.engine import server as server_module  # noqa: E402
from helpers.engine.startup_log import PHASES, phases  # noqa: E402
from helpers.load import Load, run_load  # noqa: E402
from helpers.results import fingerprint  # noqa: E402
from tests.run import zygote  # noqa: E402 - the test run's forked starts

RESULTS = ROOT / "benchmarks" / "results" / "engine_start.json"
LOAD = Load(kind="random", num_prompts=32, input_len=256, output_len=64, max_concurrency=8, seed=0)
FIGURES = ("output_throughput", "mean_ttft_ms", "mean_tpot_ms")


def say(msg: str) -> None:
    print(f"[engine_start {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def harness_run(cfg: EngineConfig, kind: str, load_repeats: int) -> dict:
    """Start one kind ("vllm", "merged", or "forked": merged, its API server forked from a process
    that imported vLLM once), warm up, run the load, stop; the start time and every load's figures."""
    layout = "merged" if kind == "forked" else kind
    os.environ["GUIDE_ENGINE_LAYOUT"] = layout
    server_module.start_processes_with(zygote.fork_start if kind == "forked" else None)
    server = Server(cfg, progress=False)
    try:
        server.start()
        rec = {"start_s": server.start_seconds, "log": str(server.log_path), "loads": [],
               "phases": phases(server.log_text(), server.spawned_at, server.spawned_at + server.start_seconds)}
        if load_repeats:
            run_load(server.base_url, server.model_path, LOAD.warmup(), progress=False)  # not counted
            for i in range(load_repeats):  # new prompts each time: none is found in the prefix cache
                row = run_load(server.base_url, server.model_path, LOAD.repeat(i + 1), progress=False)
                rec["loads"].append({k: row[k] for k in FIGURES})
        return rec
    finally:
        server.stop()
        os.environ.pop("GUIDE_ENGINE_LAYOUT", None)


def med(xs):
    return statistics.median(xs) if xs else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2, help="rounds of (bare, vllm layout, merged layout, forked)")
    ap.add_argument("--load-repeats", type=int, default=2, help="counted loads per harness server")
    ap.add_argument("--compiled", action="store_true", help="also time two compiled starts (about 5 minutes)")
    opts = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks

    cfg = EngineConfig()
    model_path = models.resolve(cfg.model)
    starts = {"bare": [], "vllm": [], "merged": [], "forked": []}
    breakdown = {"bare": [], "vllm": [], "merged": [], "forked": []}
    loads = {"vllm": [], "merged": [], "forked": []}
    if opts.repeats:
        harness_run(cfg, "forked", 0)  # the zygote's own import, once: later forked starts are what a test run sees
    for i in range(opts.repeats):
        order = ("bare", "vllm", "merged", "forked") if i % 2 == 0 else ("forked", "merged", "vllm", "bare")
        for kind in order:
            say(f"round {i + 1}/{opts.repeats}: {kind}")
            if kind == "bare":
                rec = bare_start(cfg, model_path)
            else:
                rec = harness_run(cfg, kind, opts.load_repeats)
                loads[kind] += rec["loads"]
            starts[kind].append(rec["start_s"])
            if rec.get("phases"):
                breakdown[kind].append(rec["phases"])
            say(f"  healthy after {rec['start_s']:.1f} s" + "".join(
                f"; {r['output_throughput']:.1f} tok/s, TTFT {r['mean_ttft_ms']:.0f} ms" for r in rec.get("loads", [])))

    compiled = None
    if opts.compiled:
        ccfg = cfg.replace(enforce_eager=False)
        with tempfile.TemporaryDirectory(prefix="guide-compile-cache-") as cache:
            os.environ["VLLM_CACHE_ROOT"] = cache  # empty: the first start compiles, the second reuses
            compiled = []
            for n in (1, 2):
                say(f"compiled start {n}/2 (cache {cache})")
                compiled.append(harness_run(ccfg, "merged", 0)["start_s"])  # spawned: a fresh import each
                say(f"  healthy after {compiled[-1]:.1f} s")
            os.environ.pop("VLLM_CACHE_ROOT")

    m = {k: med(v) for k, v in starts.items()}
    phase_m = {k: {p: med([b[p] for b in v]) for p in PHASES} for k, v in breakdown.items() if v}
    lm = {lay: {f: med([r[f] for r in rs]) for f in FIGURES} for lay, rs in loads.items()}
    out = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": fingerprint(), "config": cfg.as_dict(),
        "load": LOAD.as_dict(), "starts_s": starts, "median_start_s": m,
        "ratio_merged_over_bare": m["merged"] / m["bare"], "ratio_vllm_layout_over_bare": m["vllm"] / m["bare"],
        "ratio_forked_over_bare": m["forked"] / m["bare"],
        "loads": loads, "median_load": lm, "phases": breakdown, "median_phases_s": phase_m,
        "ratio_merged_over_vllm": {f: lm["merged"][f] / lm["vllm"][f] for f in FIGURES if lm["vllm"][f]},
        "ratio_forked_over_merged": {f: lm["forked"][f] / lm["merged"][f] for f in FIGURES if lm["merged"][f]},
        "compiled_starts_s": compiled,
        "ratio_second_compiled_over_first": compiled[1] / compiled[0] if compiled else None,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2, default=str))

    fp = out["machine"]
    print(f"\nengine_start on {fp['cpu_model']} ({fp.get('cpu_isa', '?')}), {fp['cpu_cores']} cores, vLLM {fp['vllm']}")
    print(f"{'start to /health, median s':36s} " + "  ".join(f"{k} {v:.1f}" for k, v in m.items()))
    print(f"{'  each start, s':36s} " + "  ".join(f"{k} " + "/".join(f"{x:.0f}" for x in v) for k, v in starts.items()))
    print(f"{'merged / bare':36s} {out['ratio_merged_over_bare']:.3f}")
    print(f"{'forked (merged, zygote) / bare':36s} {out['ratio_forked_over_bare']:.3f}   (target <= 0.5)")
    print(f"\n{'phase, median s (ratio to bare total)':40s}" + "".join(f"{k:>16s}" for k in phase_m))
    for p in PHASES:
        print(f"{p:40s}" + "".join(f"{v[p]:>9.1f} ({v[p] / m['bare']:.2f})" for v in phase_m.values()))
    print()
    print(f"{'vLLM layout through harness / bare':36s} {out['ratio_vllm_layout_over_bare']:.3f}")
    for f in FIGURES:
        if lm["vllm"][f]:
            print(f"{f + ', merged / vllm layout':36s} {out['ratio_merged_over_vllm'][f]:.3f}   "
                  f"({lm['merged'][f]:.1f} vs {lm['vllm'][f]:.1f}; each: "
                  + "/".join(f"{r[f]:.0f}" for r in loads["merged"]) + " vs "
                  + "/".join(f"{r[f]:.0f}" for r in loads["vllm"]) + ")")
    for f in FIGURES:
        if lm["merged"][f]:
            print(f"{f + ', forked / merged':36s} {out['ratio_forked_over_merged'][f]:.3f}   "
                  f"({lm['forked'][f]:.1f} vs {lm['merged'][f]:.1f})")
    if compiled:
        print(f"{'compiled starts, s':36s} {compiled[0]:.1f} then {compiled[1]:.1f}: "
              f"ratio {out['ratio_second_compiled_over_first']:.3f} (target <= 0.5)")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
