"""Issue 22's "done when": the same load on the same local engine, sent by the guide's own client,
by `vllm bench serve --save-result --save-detailed` (a process of its own) and by GuideLLM, each
file imported (helpers/results/other_tools.py), gives the same headline figures within 5 %.

One engine start (the guide's default, vLLM's layout), a warm-up, then `--rounds` rounds, each
running the three tools one after another, each peer after its own warm-up of one wave (vllm bench
serve --num-warmups, GuideLLM's profile warm-up; neither counted) (interleaved, so a slow minute of this shared machine
falls on all three); the prefix cache is emptied before every run. Per tool: the median over the
rounds of output tokens/s, median TTFT and median TPOT (vLLM's: (latency - TTFT) / (tokens - 1)),
and its ratio to the guide's. Throughput is compared by vLLM's definition where the row has one
(`vllm_rule_output_throughput`); after GuideLLM's warm-up it has none (its warm-up runs beside the
requests it counts), so GuideLLM's own figure, the tokens made inside its window ÷ the window, is compared.

Usage:  .venv/bin/python benchmarks/imports.py [--rounds 3] [--prompts 32] [--concurrency 4]
        (about 6 minutes on 2 cores; figures in benchmarks/results/other_tools.json)
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
os.environ["GUIDE_RESULTS"] = tempfile.mkdtemp(prefix="imports-")
os.environ.pop("GUIDE_ENGINE_LAYOUT", None)  # vLLM's own layout, as a learner runs it

from helpers import EngineConfig, Load, experiment  # noqa: E402
from helpers.engine.server import reset_prefix_cache  # noqa: E402
from helpers.load import peers, run_load  # noqa: E402
from helpers.results import fingerprint, other_tools  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "imports.json"
FIGURES = ("output_throughput", "median_ttft_ms", "median_tpot_ms")


def by_rule(row: dict, figure: str) -> float:
    """The figure by vLLM's definition: the tool's own where it is vLLM's, else the one kept beside it."""
    rule = row.get(f"vllm_rule_{figure}")
    return rule if rule is not None else row[figure]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--input", type=int, default=128)
    p.add_argument("--output", type=int, default=64)
    args = p.parse_args()
    cfg = EngineConfig()
    server = experiment.engine_for(cfg, progress=False)
    url, model = server.base_url, server.model_path
    load = Load(num_prompts=args.prompts, input_len=args.input, output_len=args.output,
                max_concurrency=args.concurrency)
    run_load(url, model, load.warmup(), progress=False)  # not counted: the first requests after a start are slower
    work = Path(tempfile.mkdtemp(prefix="imports-files-"))
    rows: dict[str, list[dict]] = {"guide": [], "vllm bench serve": [], "guidellm": []}
    for i in range(args.rounds):
        this = load.repeat(i + 1)  # fresh prompts each round
        reset_prefix_cache(url)
        rows["guide"].append(experiment.measure(cfg, this, repeats=1, force=True, progress=False))
        reset_prefix_cache(url)
        # Each peer warms up first as it offers to (not counted), as the guide's client did once after the start.
        rows["vllm bench serve"].append(other_tools.from_file(peers.vllm_bench(
            url, model, this, work / f"bench-{i}.json", warmups=args.concurrency))[0])
        reset_prefix_cache(url)
        rows["guidellm"].append(other_tools.from_file(peers.guidellm(
            url, model, this, work / f"guidellm-{i}.json", warmup=args.concurrency))[0])
        print(f"round {i + 1}: "
              + "; ".join(f"{tool} {by_rule(r[-1], 'output_throughput'):.1f} tok/s" for tool, r in rows.items())
              + f" (GuideLLM's own {rows['guidellm'][-1]['output_throughput']:.1f})",
              flush=True)
    experiment.stop(now=True)
    table = {tool: {f: statistics.median(by_rule(r, f) for r in rs) for f in FIGURES} for tool, rs in rows.items()}
    spread = {tool: {f: [min(by_rule(r, f) for r in rs), max(by_rule(r, f) for r in rs)] for f in FIGURES}
              for tool, rs in rows.items()}
    print(f"\n{load.label()}, {args.rounds} interleaved rounds, medians (lowest–highest); ratio to the guide's row")
    for tool, figs in table.items():
        cells = [f"{f} {figs[f]:.1f} ({spread[tool][f][0]:.1f}–{spread[tool][f][1]:.1f}) "
                 f"×{figs[f] / table['guide'][f]:.3f}"
                 for f in FIGURES]
        print(f"  {tool:17s} " + " · ".join(cells))
    for tool in ("vllm bench serve", "guidellm"):
        print(f"  {tool}'s duration: {rows[tool][-1]['import_duration_covers']}")
    print("  every client runs on the engine's cores: its own processes (GuideLLM starts one per stream) take CPU "
          "time from the engine on a small host, and nothing here tunes that away")
    worst = max(abs(table[t][f] / table["guide"][f] - 1) for t in table for f in FIGURES)
    print(f"largest difference from the guide's row: {100 * worst:.1f} %")
    fp = fingerprint()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"fingerprint": fp, "load": load.as_dict(), "rounds": args.rounds, "medians": table,
                                   "spread": spread, "largest_difference": worst}, indent=1, default=str))
    print(f"measured on {fp['cpu_model']} ({fp['cpu_isa']}), {fp['cpu_cores']} cores, vLLM {fp['vllm']}")


if __name__ == "__main__":
    main()
