"""Where do two engine settings start to give different greedy answers?

For each named config it starts one engine through the harness and records
  * the greedy chat answers of helpers.correctness.PROMPTS, and
  * for "What is the capital of France?" (chat template applied here, sent to
    /v1/completions), the first generated tokens with their top-5 logprobs,
so the first diverging token and the margin between the top two candidates can be compared.

Usage:  GUIDE_LOCK_WAIT=3600 .venv/bin/python benchmarks/correctness_probe.py eager_bf16 eager_fp32 ...
Writes benchmarks/results/correctness_probe.json (merged with earlier runs).
"""
from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers import correctness, experiment  # noqa: E402
from helpers.config import EngineConfig  # noqa: E402
from helpers.results import ResultStore  # noqa: E402

CONFIGS = {
    "eager_bf16": EngineConfig(),
    "eager_fp32": EngineConfig(dtype="float32"),
    "compiled_bf16": EngineConfig(enforce_eager=False),
    # eager, but every CustomOp uses its PyTorch forward_native instead of a CPU C++ kernel
    "eager_bf16_native_ops": EngineConfig(compilation_config={"custom_ops": ["none"]}),
    "eager_bf16_native_rope": EngineConfig(compilation_config={"custom_ops": ["all", "-rotary_embedding"]}),
    "eager_bf16_native_silu": EngineConfig(compilation_config={"custom_ops": ["all", "-silu_and_mul"]}),
    # compiled, but with the CPU C++ kernels kept as opaque custom ops
    "compiled_bf16_c_ops": EngineConfig(enforce_eager=False, compilation_config={"custom_ops": ["all"]}),
}
QUESTION = "What is the capital of France?"
OUT = ROOT / "benchmarks" / "results" / "correctness_probe.json"


def first_tokens(base_url: str, model_path: str, n: int = 12) -> list[dict]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    prompt = tok.apply_chat_template([{"role": "user", "content": QUESTION}], tokenize=False,
                                     add_generation_prompt=True)
    body = {"model": model_path, "prompt": prompt, "max_tokens": n, "temperature": 0, "logprobs": 5,
            "seed": 0}
    req = urllib.request.Request(base_url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        lp = json.loads(r.read())["choices"][0]["logprobs"]
    return [{"token": t, "logprob": logprob, "top5": top} for t, logprob, top in
            zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])]


def main() -> None:
    names = sys.argv[1:] or ["eager_bf16", "eager_fp32"]
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    store = ResultStore(tempfile.mkdtemp(prefix="probe-store-"))  # do not touch the guide's store
    try:
        for name in names:
            cfg = CONFIGS[name]
            server = experiment.engine_for(cfg, progress=False)
            answers = correctness.greedy_answers(cfg, store=store, progress=False)
            toks = first_tokens(server.base_url, server.model_path)
            results[name] = {"label": cfg.label(), "start_s": server.start_seconds,
                             "answers": dict(zip(correctness.PROMPTS, answers)), "first_tokens": toks}
            print(f"== {name} ({cfg.label()}), started in {server.start_seconds:.0f} s")
            for p, a in zip(correctness.PROMPTS, answers):
                print(f"   {p!r} -> {a[:70]!r}")
            for i, t in enumerate(toks[:6]):
                top = sorted(t["top5"].items(), key=lambda kv: -kv[1])[:3]
                print(f"   token {i}: {t['token']!r:10}  top3 " + ", ".join(f"{k!r} {v:.3f}" for k, v in top))
            OUT.parent.mkdir(parents=True, exist_ok=True)
            OUT.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    finally:
        experiment.stop(now=True)


if __name__ == "__main__":
    main()
