"""Chapter 5's claims (weight quantization, the KV-cache dtype, offload, tensor parallelism) and
the rule that judges each one from the rows the notebook measured.

The notebook passes its tables indexed by name:
  weights   5.1: "bf16", "int8", "int4": capacity + speed figures (one load each), plus the
                 columns `perplexity` (of the reference text) and `token_agreement` (greedy, vs bf16)
  kv        5.2: "auto", "fp8" at the same fixed KV memory: capacity and the cache-filling load
  drift     5.2: correctness.drift rows of the fp8 engine against the bf16 reference
  parallel  5.3: "TP=1", "TP=2" on the synthetic model (capacity + the same load), with the
                 column `same_tokens` (greedy answers equal to TP=1's)
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from helpers import correctness, experiment, verdicts
from helpers.config import EngineConfig
from helpers.verdicts import Claim
from helpers.results import roofline

BF16, INT8, INT4 = "bf16", "int8", "int4"
AUTO, FP8 = "auto", "fp8"
TP1, TP2 = "TP=1", "TP=2"
LITTLE = 0.10  # "a little accuracy": perplexity of the reference text up by at most 10 %
DOUBLE = (1.8, 2.2)  # "about twice the KV tokens"


def bytes_per_step(folders: dict, shape: dict, running: int, context: int, kv_bytes_per_token: int,
                   compute_bytes: int = 2) -> pd.DataFrame:
    """What one decode step must read from memory, per checkpoint (helpers/results/roofline.py,
    which chapter 7 turns into a floor): every weight once as the engine holds it (float32 on an
    AVX2 CPU doubles the unquantized tensors; the tied embedding table is the output layer and is
    read whole every step), plus the KV cache of `running` sequences of `context` tokens. A lower
    bound: activations and the runtime's own reads come on top."""
    dtype = "float32" if compute_bytes == 4 else "bfloat16"
    lm_head = shape["vocab_size"] * shape["hidden_size"] * compute_bytes  # never quantized in the guide's copies
    rows = {}
    for name, folder in folders.items():
        weights = roofline.weight_bytes(folder, dtype)
        total = roofline.step_bytes(weights, running, context, kv_bytes_per_token)
        rows[name] = {"weights (MB)": weights / 1e6, "of which lm_head (MB)": lm_head / 1e6,
                      "KV cache read (MB)": (total - weights) / 1e6, "total per step (MB)": total / 1e6}
    table = pd.DataFrame(rows).T
    table["bytes vs bf16"] = table["total per step (MB)"] / table.loc["bf16", "total per step (MB)"]
    return table


def weight_claims(weights: pd.DataFrame) -> list[Claim]:
    ref = weights.loc[BF16]
    quant = [n for n in (INT8, INT4) if n in weights.index]
    smaller = {n: ref.checkpoint_gib / weights.loc[n].checkpoint_gib for n in quant}
    more_kv = {n: weights.loc[n].kv_cache_tokens / ref.kv_cache_tokens for n in quant}
    faster = {n: ref.mean_tpot_ms / weights.loc[n].mean_tpot_ms for n in quant}
    beyond = {n: not verdicts.within_noise(ref, weights.loc[n], "mean_tpot_ms") for n in quant}
    cost = {n: weights.loc[n].perplexity / ref.perplexity - 1 for n in quant}

    def each(d, fmt):
        return ", ".join(f"{n} {fmt(v)}" for n, v in d.items())

    return [
        verdicts.judge(
            "5.1 Quantized weights take less memory", all(v >= 1.5 for v in smaller.values()),
            f"checkpoint {ref.checkpoint_gib:.2f} GiB in bf16; " + each(
                {n: weights.loc[n].checkpoint_gib for n in quant}, lambda v: f"{v:.2f} GiB")
            + "; KV tokens at the same memory fraction: " + each(more_kv, lambda v: f"×{v:.2f}"),
            partly=any(v > 1 for v in smaller.values()),
            rule="held: every quantized checkpoint at least 1.5× smaller; partly: one of them smaller"),
        verdicts.judge(
            "5.1 …and decode faster", all(faster[n] > 1 and beyond[n] for n in quant),
            f"mean TPOT {ref.mean_tpot_ms:.1f} ms in bf16; " + each(
                {n: weights.loc[n].mean_tpot_ms for n in quant}, lambda v: f"{v:.1f} ms"),
            partly=any(faster[n] > 1 and beyond[n] for n in quant),
            within_noise=not any(beyond.values()),
            rule="held: every quantized model's TPOT lower beyond noise; partly: one of them"),
        verdicts.judge(
            "5.1 …at the cost of a little accuracy", all(0 <= c <= LITTLE for c in cost.values()),
            f"perplexity of the reference text {ref.perplexity:.2f} in bf16 (itself dequantized from the package's "
            "Q4_1 GGUF: the accuracy lost here comes on top of that); " + each(
                {n: weights.loc[n].perplexity for n in quant}, lambda v: f"{v:.2f}")
            + "; greedy tokens matching bf16: " + each(
                {n: weights.loc[n].token_agreement for n in quant}, lambda v: f"{100 * v:.0f} %"),
            partly=any(0 <= c <= LITTLE for c in cost.values()),
            rule=f"held: every quantized model's perplexity at most {100 * LITTLE:.0f} % above bf16's "
                 "(a cost, but a little); partly: one of them"),
    ]


def kv_claims(kv: pd.DataFrame, drift: pd.DataFrame) -> list[Claim]:
    auto, fp8 = kv.loc[AUTO], kv.loc[FP8]
    gain = fp8.kv_cache_tokens / auto.kv_cache_tokens
    diverged = drift.first_divergence.notna()
    firsts = drift.first_divergence.dropna()
    return [
        verdicts.judge(
            "5.2 An fp8 KV cache holds about twice the tokens", DOUBLE[0] <= gain <= DOUBLE[1],
            f"{auto.kv_cache_tokens:,.0f} → {fp8.kv_cache_tokens:,.0f} KV tokens in the same "
            f"{auto.kv_cache_gib:.2f} GiB (×{gain:.2f}); max concurrency {auto.max_concurrency:.1f} → "
            f"{fp8.max_concurrency:.1f}",
            partly=gain > 1.2, rule=f"held: ×{DOUBLE[0]}–{DOUBLE[1]} the KV tokens at equal KV memory"),
        verdicts.judge_change(
            "5.2 …so more requests run at once when the cache is the limit", auto, fp8, "peak_running",
            better="higher", held_at=1.5,
            evidence=f"peak running {auto.peak_running:.0f} → {fp8.peak_running:.0f}, peak waiting "
                     f"{auto.peak_waiting:.0f} → {fp8.peak_waiting:.0f}, preemptions {auto.preemptions:.0f} → "
                     f"{fp8.preemptions:.0f}, {auto.output_throughput:.0f} → {fp8.output_throughput:.0f} output "
                     "tokens/s"),
        verdicts.judge(
            "5.2 Long outputs may drift with fp8 KV", bool(diverged.any()),
            f"{int(diverged.sum())} of {len(drift)} long greedy answers left the bf16 reference"
            + (f", first at token {int(firsts.min())} (median {firsts.median():.0f})" if len(firsts) else "")
            + f"; mean log-probability gap while still equal {drift.mean_logprob_gap.mean():.3f}",
            partly=bool((drift.mean_logprob_gap > 0).any()),
            rule="held: at least one answer diverged; partly: none diverged but the log-probabilities moved"),
    ]


def parallel_claims(parallel: pd.DataFrame, device: str = "cpu") -> list[Claim]:
    one, two = parallel.loc[TP1], parallel.loc[TP2]
    out = []
    if device == "cpu":
        out.append(verdicts.untested(
            "5.3 CPU offload lets a model run but slows decoding",
            "no CUDA GPU here: cpu_offload_gb moves GPU weights into host memory; on the CPU backend they are "
            "in host memory already"))
    out += [
        verdicts.judge(
            "5.3 Tensor parallelism splits one model over ranks", bool(two.same_tokens),
            f"TP=2 gave {'the same' if two.same_tokens else 'different'} greedy tokens as TP=1; KV tokens "
            f"{one.kv_cache_tokens:,.0f} → {two.kv_cache_tokens:,.0f} (each rank keeps its share of the heads)",
            rule="held: the same greedy tokens from two ranks as from one"),
        verdicts.judge(
            "5.3 …but adds communication, so more ranks are not always faster",
            two.mean_tpot_ms > one.mean_tpot_ms and not verdicts.within_noise(one, two, "mean_tpot_ms"),
            f"mean TPOT {one.mean_tpot_ms:.1f} ms with one rank, {two.mean_tpot_ms:.1f} ms with two; "
            f"{one.output_throughput:.0f} vs {two.output_throughput:.0f} output tokens/s",
            within_noise=verdicts.within_noise(one, two, "mean_tpot_ms"),
            rule="held: two ranks slower per token than one, beyond noise (here, more ranks did not help)"),
    ]
    return out


def claims(weights, kv, drift, parallel, device: str = "cpu") -> list[Claim]:
    return [*weight_claims(weights), *kv_claims(kv, drift), *parallel_claims(parallel, device)]


# -- the control panel's run function (widgets.Panel calls it with the controls' values) ------------

def kv_dtype_and_weights_panel(base: EngineConfig, weight_models: dict[str, str], reference_trace: dict,
                         drift_tokens: int, tag: str = "ch5-panel") -> Callable[..., dict]:
    """Chapter 5: one engine per (KV dtype, weights): its KV capacity, then its long greedy
    answers against the reference's (the share of tokens matched before the first difference)."""
    def run(kv_cache_dtype="auto", weights="bf16", force=False, progress=True) -> dict:
        cfg = base.replace(kv_cache_dtype=kv_cache_dtype, model=weight_models[weights])
        row = experiment.capacity(cfg, force=force, progress=progress, tag=tag)
        d = correctness.drift(reference_trace, correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=force))
        return {**row, "config_label": f"{weights} weights, kv={kv_cache_dtype}",
                "token_agreement": d.token_agreement.mean()}
    return run
