"""How much does the guide's harness cost, compared with running vLLM by hand?

One run measures two things on the embedded model with `EngineConfig()` defaults:

  (a) start-up: seconds from process start to a healthy /health, through the harness
      (`Server(cfg).start()`, its `start_seconds`) and for a bare
      `python -m vllm.entrypoints.openai.api_server` with the same arguments and environment
      (timed from Popen until GET /health returns 200). Bare and harness starts alternate.
  (b) load fidelity, in either order: on a freshly started server, the harness's
      `experiment.measure` (which warms a fresh engine up itself) and then
      `vllm.benchmarks.serve.main_async` called directly as a person would (with vLLM's own
      `--num-warmups` when it runs first on a fresh engine); then on a second fresh server the
      other way round. Every run gets its own seed, so no run finds its prompts in the prefix
      cache. The load: random 256 in / 64 out, 32 prompts, concurrency 8.

Usage:  .venv/bin/python benchmarks/harness_overhead.py [--repeats 3] [--load-repeats 2]

Only one vLLM engine runs at a time on a machine; the bare starts take the harness's lock
too, and every start queues behind another engine for GUIDE_LOCK_WAIT seconds (default
here: 3600). Results: a table on stdout, figures in benchmarks/results/harness_overhead.json.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import io
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GUIDE_LOCK_WAIT", "3600")

from helpers import experiment, models  # noqa: E402
from helpers.config import EngineConfig  # noqa: E402
from helpers.engine import EngineLock, Server  # noqa: E402
from helpers.engine.server import free_port, healthy, log_dir  # noqa: E402
from helpers.engine.startup_log import phases  # noqa: E402
from helpers.load import Load  # noqa: E402
from helpers.results import ResultStore  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "harness_overhead.json"
LOAD = Load(kind="random", num_prompts=32, input_len=256, output_len=64, max_concurrency=8, seed=0)
BARE_POLL_S = 0.1
START_TIMEOUT_S = 900


def say(msg: str) -> None:
    print(f"[harness_overhead {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- (a) start-up ---------------------------------------------------------------------------
def _stop_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # engine core / workers left in the group


def bare_start(cfg: EngineConfig, model_path: str) -> dict:
    """Start vLLM's api_server directly (no harness), time Popen → /health 200, stop it."""
    lock = EngineLock().acquire("bare vLLM start (benchmarks/harness_overhead.py)",
                                wait_s=float(os.environ["GUIDE_LOCK_WAIT"]))
    proc = None
    try:
        port = free_port()
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
               *cfg.server_args(model_path, port)]
        env = {**os.environ, **cfg.server_env()}
        log_path = log_dir() / f"bare-{time.strftime('%Y%m%d-%H%M%S')}-{port}.log"
        with open(log_path, "wb") as log:
            t0, spawned_at = time.monotonic(), time.time()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True, cwd=str(ROOT))
            url = f"http://127.0.0.1:{port}"
            while not healthy(url):
                if proc.poll() is not None:
                    raise RuntimeError(f"bare vLLM exited with code {proc.returncode}; log: {log_path}")
                if time.monotonic() - t0 > START_TIMEOUT_S:
                    raise RuntimeError(f"bare vLLM not healthy after {START_TIMEOUT_S} s; log: {log_path}")
                time.sleep(BARE_POLL_S)
            seconds = time.monotonic() - t0
        t1 = time.monotonic()
        _stop_group(proc)
        return {"start_s": seconds, "stop_s": time.monotonic() - t1, "log": str(log_path),
                "phases": phases(log_path.read_text(errors="replace"), spawned_at, spawned_at + seconds)}
    finally:
        if proc is not None:
            _stop_group(proc)
        lock.release()


def harness_start(cfg: EngineConfig) -> tuple[Server, dict]:
    """Start through the harness; the caller stops the server (or keeps it for the load)."""
    server = Server(cfg, progress=False)
    t0 = time.monotonic()
    server.start()
    wall = time.monotonic() - t0
    return server, {"start_s": server.start_seconds,
                    # config checks, model resolve, lock (incl. any wait for another engine), spawn
                    "before_spawn_s": wall - server.start_seconds,
                    "log": str(server.log_path)}


def harness_stop(server: Server) -> float:
    t0 = time.monotonic()
    server.stop()
    return time.monotonic() - t0


# -- (b) load ---------------------------------------------------------------------------------
def direct_load(base_url: str, model_path: str, load: Load, warmups: int = 0) -> dict:
    """The same load through vllm.benchmarks.serve, as a person would call it."""
    from vllm.benchmarks.serve import add_cli_args, main_async
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args([
        "--backend", "vllm", "--base-url", base_url, "--endpoint", "/v1/completions",
        "--model", model_path, "--tokenizer", model_path,
        "--dataset-name", "random", "--num-prompts", str(load.num_prompts),
        "--random-input-len", str(load.input_len), "--random-output-len", str(load.output_len),
        "--max-concurrency", str(load.max_concurrency), "--seed", str(load.seed),
        "--temperature", "0", "--ignore-eos", "--disable-tqdm", "--num-warmups", str(warmups)])
    with contextlib.redirect_stdout(io.StringIO()):  # the harness hides the report too
        result = asyncio.run(main_async(args))
    return {k: float(result[k]) for k in ("output_throughput", "mean_ttft_ms", "mean_tpot_ms", "duration",
                                          "completed", "total_output_tokens")}


def harness_load(cfg: EngineConfig, load: Load, store) -> dict:
    """experiment.measure, as a notebook calls it (one repeat; it warms a fresh engine up)."""
    row = experiment.measure(cfg, load, repeats=1, force=True, store=store, progress=False)
    return {k: row[k] for k in ("output_throughput", "mean_ttft_ms", "mean_tpot_ms", "duration",
                                "completed", "total_output_tokens")}


# -- report -----------------------------------------------------------------------------------
def _median(xs):
    return statistics.median(xs) if xs else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="starts of each kind (default 3)")
    ap.add_argument("--load-repeats", type=int, default=2, help="load runs of each kind (default 2)")
    opts = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks

    cfg = EngineConfig()
    model_path = models.resolve(cfg.model)
    bare, harness = [], []
    server = None
    try:
        # (a) alternate bare / harness starts.
        for i in range(opts.repeats):
            say(f"start {i + 1}/{opts.repeats}: bare")
            bare.append(bare_start(cfg, model_path))
            say(f"  bare healthy after {bare[-1]['start_s']:.2f} s")
            say(f"start {i + 1}/{opts.repeats}: harness")
            server, rec = harness_start(cfg)
            harness.append(rec)
            say(f"  harness healthy after {rec['start_s']:.2f} s")
            rec["stop_s"] = harness_stop(server)
            server = None

        # (b) two fresh servers: harness then direct, then direct then harness; a new seed per run.
        store = ResultStore(tempfile.mkdtemp(prefix="guide-overhead-"))
        runs = {"harness": [], "direct": []}
        seed = 0
        for order in (("harness", "direct"), ("direct", "harness")):
            say(f"fresh server for the order {' then '.join(order)}")
            server = experiment.engine_for(cfg, progress=False)
            for kind in order:
                for i in range(opts.load_repeats):
                    seed += 1
                    load = dataclasses.replace(LOAD, seed=seed)
                    first_on_fresh = kind == order[0] and i == 0
                    say(f"load: {kind} (seed {seed})")
                    r = harness_load(cfg, load, store) if kind == "harness" else direct_load(
                        server.base_url, server.model_path, load, warmups=LOAD.max_concurrency if first_on_fresh else 0)
                    r["order"] = "first" if kind == order[0] else "second"
                    runs[kind].append(r)
                    say(f"  {r['output_throughput']:.1f} tok/s, mean TTFT {r['mean_ttft_ms']:.0f} ms")
            experiment.stop(now=True)
            server = None
    finally:
        if server is not None:
            server.stop()
        experiment.stop(now=True)

    med = {k: _median([r["start_s"] for r in v]) for k, v in (("bare", bare), ("harness", harness))}
    load_med = {kind: {m: _median([r[m] for r in rs]) for m in ("output_throughput", "mean_ttft_ms", "mean_tpot_ms")}
                for kind, rs in runs.items()}
    out = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "platform": platform.platform()},
        "config": cfg.as_dict(), "load": LOAD.as_dict(), "bare_poll_s": BARE_POLL_S,
        "startup": {"bare": bare, "harness": harness,
                    "median_bare_s": med["bare"], "median_harness_s": med["harness"],
                    "ratio_harness_over_bare": med["harness"] / med["bare"], "target_ratio_max": 1.05},
        "load_runs": {"runs": runs, "median": load_med,
                      "ratio_output_throughput": load_med["harness"]["output_throughput"]
                      / load_med["direct"]["output_throughput"],
                      "ratio_mean_ttft": load_med["harness"]["mean_ttft_ms"] / load_med["direct"]["mean_ttft_ms"],
                      "target": "ratios within 0.95-1.05",
                      "by_order": {o: {kind: {m: _median([r[m] for r in rs if r["order"] == o])
                                              for m in ("output_throughput", "mean_ttft_ms")}
                                       for kind, rs in runs.items()} for o in ("first", "second")}},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2))

    s, lr = out["startup"], out["load_runs"]
    print()
    print(f"{'measure':34s} {'bare / direct':>14s} {'harness':>10s} {'ratio':>7s}")
    print(f"{'start to /health, median s':34s} {s['median_bare_s']:14.2f} {s['median_harness_s']:10.2f} "
          f"{s['ratio_harness_over_bare']:7.3f}")
    each_bare = " ".join(f"{r['start_s']:.1f}" for r in bare)
    each_harness = " ".join(f"{r['start_s']:.1f}" for r in harness)
    print(f"{'  each start, s':34s} {each_bare:>14s} {each_harness:>10s}")
    print(f"{'output throughput, tok/s':34s} {load_med['direct']['output_throughput']:14.1f} "
          f"{load_med['harness']['output_throughput']:10.1f} {lr['ratio_output_throughput']:7.3f}")
    print(f"{'mean TTFT, ms':34s} {load_med['direct']['mean_ttft_ms']:14.0f} "
          f"{load_med['harness']['mean_ttft_ms']:10.0f} {lr['ratio_mean_ttft']:7.3f}")
    for o, per in lr["by_order"].items():
        print(f"{'  ran ' + o + ' on a fresh engine':34s} direct {per['direct']['output_throughput']:.1f} tok/s, "
              f"{per['direct']['mean_ttft_ms']:.0f} ms; harness {per['harness']['output_throughput']:.1f} tok/s, "
              f"{per['harness']['mean_ttft_ms']:.0f} ms")
    print(f"\n(ratio = harness / bare-or-direct; targets: start <= 1.05, load within 5%)\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
