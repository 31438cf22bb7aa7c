"""How long from stored results to the first chart of notebook 01? Target: at most 5 s.

A learner who reopens chapter 1 after a run, and every book rebuild, waits for a kernel to
start, `import helpers`, each `measure` to find its stored row (no engine starts), and Altair
to build the first chart. This runs notebook 01's code cells in a fresh kernel, in order,
until the first Vega-Lite output appears, and times that, in `--repeats` fresh kernels.

Chapter 1's rows must be stored first. `--prime` runs the same cells once with engines, at
the smoke size, into this benchmark's own results folder (four engine starts, about four
minutes on 2 cores; only one engine runs at a time, GUIDE_LOCK_WAIT makes a start queue).

Usage:  .venv/bin/python benchmarks/first_chart.py --prime     # once: store chapter 1's rows
        .venv/bin/python benchmarks/first_chart.py --repeats 5 # the timing

Results: a line per repeat on stdout, figures in benchmarks/results/first_chart.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_why_tuning_matters.ipynb"
RESULTS = ROOT / "benchmarks" / "results" / "first_chart"
TARGET_S = 5.0


def stored_rows() -> int:
    return sum(len(p.read_text().splitlines()) for p in RESULTS.glob("*.jsonl"))


def until_first_chart(timeout: int) -> dict:
    """Seconds to a ready kernel, then to the first chart; and whether any row was measured."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    rows_before = stored_rows()
    t0 = time.perf_counter()
    with client.setup_kernel():
        t_kernel = time.perf_counter()
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, i)
            if any("application/vnd.vegalite" in m for o in cell.get("outputs", []) for m in o.get("data", {})):
                t_chart = time.perf_counter()
                break
        else:
            raise RuntimeError(f"{NOTEBOOK.name} produced no chart")
    return {"kernel_s": round(t_kernel - t0, 2), "cells_s": round(t_chart - t_kernel, 2),
            "total_s": round(t_chart - t0, 2), "chart_cell": i, "rows_measured": stored_rows() - rows_before}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prime", action="store_true", help="measure chapter 1's first rows with engines (smoke size)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--timeout", type=int, default=1800)
    args = p.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    os.environ.update(GUIDE_RESULTS=str(RESULTS), GUIDE_SIZE="smoke",
                      PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    os.environ.setdefault("GUIDE_LOCK_WAIT", "3600")
    if args.prime:
        run = until_first_chart(args.timeout)
        print(f"primed: {run['rows_measured']} row(s) measured in {run['total_s']:.0f} s into {RESULTS}")
        return 0
    runs = []
    for n in range(args.repeats):
        run = until_first_chart(args.timeout)
        if run["rows_measured"]:
            print(f"{run['rows_measured']} row(s) were not stored yet and were measured now (engines): "
                  "that run is not a reuse; run --prime first.", file=sys.stderr)
            return 1
        runs.append(run)
        print(f"run {n + 1}: kernel ready {run['kernel_s']:.2f} s, "
              f"cells up to the first chart (cell {run['chart_cell']}) "
              f"{run['cells_s']:.2f} s, total {run['total_s']:.2f} s")
    median = statistics.median(r["total_s"] for r in runs)
    print(f"median total {median:.2f} s over {len(runs)} fresh kernels "
          f"(from {min(r['total_s'] for r in runs):.2f} to {max(r['total_s'] for r in runs):.2f} s); "
          f"target ≤ {TARGET_S:.0f} s: {'met' if median <= TARGET_S else 'not met'}")
    sys.path.insert(0, str(ROOT))
    from helpers.results import fingerprint
    out = ROOT / "benchmarks" / "results" / "first_chart.json"
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": fingerprint(), "runs": runs,
                               "median_total_s": median, "target_s": TARGET_S}, indent=1))
    print(f"figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
