"""Chapter 5's claims (weight quantization, the KV-cache dtype, offload, tensor parallelism) and
the rule that judges each one from the rows the notebook measured.

The notebook passes its tables indexed by name:
  weights   5.1: "bf16", "int8", "int4": capacity + speed figures (one load each), plus the
                 columns `perplexity` (of the reference text) and `token_agreement` (greedy, vs bf16)
  kv        5.2: "auto", "fp8" at the same fixed KV memory: capacity and the cache-filling load
  drift     5.2: correctness.drift rows against the bf16 reference, with the column `kv`: "fp8" for the
                 fp8 engine, "auto" for the control (the bf16 cache at the same fixed memory)
  parallel  5.3: "TP=1", "TP=2" on the synthetic model (capacity + the same load), with the
                 column `same_tokens` (greedy answers equal to TP=1's); a split this machine cannot
                 start is left out, and its claims say why (`tp2_why`)
  offload   5.3: {"no offload": row, "offloaded": row} on a CUDA GPU (the same load), else None
"""
from __future__ import annotations

import re
from typing import Callable

import pandas as pd

from helpers import correctness, experiment, verdicts
from helpers.config import EngineConfig
from helpers.i18n import heading_, tr
from helpers.results import roofline, rows
from helpers.verdicts import Claim

BF16, INT8, INT4 = "bf16", "int8", "int4"
AUTO, FP8 = "auto", "fp8"
TP1, TP2 = "TP=1", "TP=2"
LITTLE = 0.10  # "a little accuracy": perplexity of the reference text up by at most 10 %
NO_OFFLOAD, OFFLOADED = "no offload", "offloaded"
SLOWER = 1.0  # "slows decoding" gives no size: any slowing beyond the noise holds, and the factor is reported


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
        rows[name] = {heading_("weights (MB)"): weights / 1e6, heading_("of which lm_head (MB)"): lm_head / 1e6,
                      heading_("KV cache read (MB)"): (total - weights) / 1e6,
                      heading_("total per step (MB)"): total / 1e6}
    table = pd.DataFrame(rows).T
    table[heading_("bytes vs bf16")] = table["total per step (MB)"] / table.loc["bf16", "total per step (MB)"]
    return table


def weight_claims(weights: pd.DataFrame) -> list[Claim]:
    ref = weights.loc[BF16]
    quant = [n for n in (INT8, INT4) if n in weights.index]
    more_kv = {n: weights.loc[n].kv_cache_tokens / ref.kv_cache_tokens for n in quant}
    # a decode step's time (chapter 7's step_metric): mean TPOT also carries the other requests' prefills
    m = roofline.step_metric(ref, *(weights.loc[n] for n in quant))
    paced = all(roofline.positive(r, m) for r in (ref, *(weights.loc[n] for n in quant)))
    faster = {n: ref[m] / weights.loc[n][m] if paced else 1.0 for n in quant}
    beyond = {n: not verdicts.within_noise(ref, weights.loc[n], m) for n in quant}
    cost = {n: weights.loc[n].perplexity / ref.perplexity - 1 for n in quant}

    def each(d, fmt):
        return ", ".join(f"{n} {fmt(v)}" for n, v in d.items())

    return [
        _memory_claim(weights, quant, each, more_kv),
        verdicts.untested("5.1 …and decode faster", tr("a step time ({metric_name}) of 0 or none: the tokens "
                                                       "arrived in one chunk, no pace seen",
                                                       metric_name=roofline.metric_name(m))) if not paced else
        verdicts.judge(
            "5.1 …and decode faster", all(faster[n] > 1 and beyond[n] for n in quant),
            tr("{metric_name} (a decode step's time) {ref:.1f} ms in bf16; ", metric_name=roofline.metric_name(m),
               ref=ref[m]) + each(
                {n: weights.loc[n][m] for n in quant}, lambda v: f"{v:.1f} ms"),
            # partly: one faster beyond noise, and none slower beyond it (chapter 0: the other part did not go the
            # wrong way)
            partly=any(faster[n] > 1 and beyond[n] for n in quant) and not any(faster[n] < 1 and beyond[n]
                                                                               for n in quant),
            cannot_tell=not any(beyond.values()),
            rule=tr("held: every quantized model's decode step (median gap between tokens) shorter beyond noise; "
                    "partly: one of them, and none slower beyond noise; did not hold: one slower beyond noise, or "
                    "none faster while one is slower; none beyond noise: cannot tell")),
        verdicts.judge(
            "5.1 …at the cost of a little accuracy", all(c <= LITTLE for c in cost.values()),
            tr("perplexity of the reference text {perplexity:.2f} in bf16 (itself dequantized from the package's "
               "Q4_1 GGUF: the accuracy lost here comes on top of that; the INT8 copy is W8A8, so its loss also "
               "carries each activation's rounding, and so does the INT4 copy's on an AMX CPU, W4A8 by default "
               "there); ", perplexity=ref.perplexity) + each(
                {n: weights.loc[n].perplexity for n in quant}, lambda v: f"{v:.2f}")
            + tr("; greedy tokens matching bf16: ") + each(
                {n: weights.loc[n].token_agreement for n in quant}, lambda v: f"{100 * v:.0f} %")
            + (tr("; no cost seen for ") + ", ".join(n for n, c in cost.items() if c <= 0)
               + tr(" (a perplexity at or below bf16's: rounding noise in a short text)")
               if any(c <= 0 for c in cost.values()) else ""),
            partly=any(c <= LITTLE for c in cost.values()),
            rule=tr("held: every quantized model's perplexity at most {value:.0f} % above bf16's (a cost, but a "
                    "little, or none seen); partly: one of them", value=100 * LITTLE)),
        verdicts.untested(
            "5.1 INT4 hurts math and code more than prose",
            tr("cannot be judged here, because the chapter's greedy answers (correctness.PROMPTS) hold one "
               "arithmetic question and no code prompt, and its perplexity is of an English paragraph: agreement "
               "by task type would rest on a single answer"),
            rule=tr("would be held: INT4's greedy agreement with bf16 lower on math and code prompts than on "
                    "prose, over several prompts of each kind")),
    ]


def _memory_claim(weights: pd.DataFrame, quant: list[str], each, more_kv: dict) -> Claim:
    """5.1's memory half, judged on what the engine holds: its non-KV memory (the weights live there,
    beside the runtime), which must fall by at least half of what the checkpoint saves; the checkpoint
    sizes are shown beside it. A GPU's log prints no non-KV figure but the memory the loaded weights took
    ("Model loading took", `weights_gib`): judged on that there. Without either: the checkpoints."""
    ref, text = weights.loc[BF16], "5.1 Quantized weights take less memory"
    checkpoints = tr("checkpoint {checkpoint_gib:.2f} GiB in bf16; ", checkpoint_gib=ref.checkpoint_gib) + each(
        {n: weights.loc[n].checkpoint_gib for n in quant}, lambda v: f"{v:.2f} GiB")
    kv_line = tr("; KV tokens at the same memory fraction: ") + each(more_kv, lambda v: f"×{v:.2f}")
    held_mem = {n: verdicts.number(weights.loc[n], "non_kv_gib") for n in [BF16, *quant]}
    what = tr("non-KV memory")
    if any(v is None for v in held_mem.values()):  # a GPU: its log's "Model loading took X GiB" is the weights'
        held_mem = {n: verdicts.number(weights.loc[n], "weights_gib") for n in [BF16, *quant]}
        what = tr("weights memory")
    if any(v is None for v in held_mem.values()):
        smaller = {n: ref.checkpoint_gib / weights.loc[n].checkpoint_gib for n in quant}
        return verdicts.judge(text, all(v >= 1.5 for v in smaller.values()),
                              checkpoints + kv_line + tr(" (the engine's non-KV memory is not reported here)"),
                              partly=any(v > 1 for v in smaller.values()),
                              rule=tr("held: every quantized checkpoint at least 1.5× smaller; partly: one of them "
                                      "smaller (judged on the checkpoints: the engine reported no non-KV memory)"))
    saved = {n: held_mem[BF16] - held_mem[n] for n in quant}
    expected = {n: ref.checkpoint_gib - weights.loc[n].checkpoint_gib for n in quant}
    ok = {n: expected[n] > 0 and saved[n] >= 0.5 * expected[n] for n in quant}
    return verdicts.judge(
        text, all(ok.values()),
        tr("the engine's {what} {held_mem:.2f} GiB in bf16; ", what=what, held_mem=held_mem[BF16]) + each(
            {n: held_mem[n] for n in quant}, lambda v: f"{v:.2f} GiB") + "; " + checkpoints + kv_line,
        partly=any(saved[n] > 0 for n in quant),
        rule=tr("held: each quantized engine's {what} (as its start-up log reports it) lower than bf16's by at "
                "least half of what its checkpoint saves; partly: one of them lower at all", what=what))


def kv_claims(kv: pd.DataFrame, drift: pd.DataFrame) -> list[Claim]:
    auto, fp8 = kv.loc[AUTO], kv.loc[FP8]
    gain = fp8.kv_cache_tokens / auto.kv_cache_tokens
    # The article's "twice" assumes a 16-bit cache: fp8 holds (auto's bytes per number) ÷ 1 times the tokens,
    # ×4 where the guide computes in float32 (a CPU without bf16 instructions).
    want = rows.kv_bytes_per_number(auto)
    # The memory both caches were given: the setting itself (a GPU's log names it in another line, a CPU's as
    # "Explicitly set"), so the sentence never depends on which line the engine printed.
    fixed = verdicts.number(auto, "cfg_kv_cache_memory_bytes")
    gib = fixed / 2**30 if fixed else verdicts.number(auto, "kv_cache_gib")
    memory = f"{gib:.2f} GiB" if gib else tr("KV memory")
    return [
        verdicts.judge(
            "5.2 An fp8 KV cache holds about twice the tokens (of a 16-bit cache)", abs(gain / want - 1) <= 0.1,
            tr("{kv_cache_tokens:,.0f} → {kv_cache_tokens_2:,.0f} KV tokens in the same {memory} (×{gain:.2f}; the "
               "auto cache stores {want} bytes a number, fp8 1, so ×{want} is expected); max concurrency "
               "{max_concurrency:.1f} → {max_concurrency_2:.1f}", kv_cache_tokens=auto.kv_cache_tokens,
               kv_cache_tokens_2=fp8.kv_cache_tokens, memory=memory, gain=gain, want=want,
               max_concurrency=auto.max_concurrency, max_concurrency_2=fp8.max_concurrency),
            partly=gain > 1.2, rule=tr("held: the KV tokens at equal KV memory grow by the ratio of bytes per "
                                       "number (×2 from a 16-bit cache, ×4 from float32), within 10 %; partly: "
                                       "over ×1.2")),
        verdicts.untested("5.2 …so more requests run at once when the cache is the limit", few)
        if (few := rows.too_few_samples(auto, fp8)) else verdicts.judge_change(
            "5.2 …so more requests run at once when the cache is the limit", auto, fp8, "peak_running",
            better="higher", held_at=1.5,
            evidence=tr("peak running {peak_running:.0f} → {peak_running_2:.0f}, peak waiting {peak_waiting:.0f} → "
                        "{peak_waiting_2:.0f}, preemptions {preemptions:.0f} → {preemptions_2:.0f}, "
                        "{output_throughput:.0f} → {output_throughput_2:.0f} output tokens/s",
                        peak_running=auto.peak_running, peak_running_2=fp8.peak_running,
                        peak_waiting=auto.peak_waiting, peak_waiting_2=fp8.peak_waiting, preemptions=auto.preemptions,
                        preemptions_2=fp8.preemptions, output_throughput=auto.output_throughput,
                        output_throughput_2=fp8.output_throughput), null_refutes=True),
        drift_claim(drift),
    ]


# "Moved more": fp8's mean log-probability gap at least this factor of the control's, and this many nats above it
# (a gap of 0.01 nats is a 1 % change in a token's probability: below that, rounding in one kernel differs)
GAP_FACTOR, GAP_MIN_NATS = 1.5, 0.01
DRIFT_RULE = ("held: fp8's answer left the bf16 reference on at least one prompt on which the control (the auto cache "
              "at the same fixed memory) did not, so the difference is the dtype's; held partly: none left, but on "
              f"those prompts fp8's mean log-probability gap was at least ×{GAP_FACTOR:g} the control's and "
              f"{GAP_MIN_NATS:g} nats above it; cannot be judged: no control rows, the control left the reference on "
              "every prompt (the engine's own differences hide the dtype's), or no gap could be computed; cannot "
              "tell: nothing drifted or moved (answers this short cannot refute \"may\")")


def drift_claim(drift: pd.DataFrame) -> Claim:
    """5.2's drift, judged against the control: only a prompt whose control answer kept to the
    reference can show a difference that is the fp8 cache's."""
    text = "5.2 Long outputs may drift with fp8 KV"
    kind = drift["kv"] if "kv" in drift else pd.Series(FP8, index=drift.index)
    fp8, control = drift[kind == FP8], drift[kind == AUTO]
    if fp8.empty or control.empty:
        return verdicts.untested(text, tr("cannot be judged here: the drift rows have no ") + (
            tr("fp8 answers") if fp8.empty else tr("control (auto) answers, so the engine's own differences cannot be "
                                               "told apart from the dtype's")), DRIFT_RULE)
    firsts = fp8.first_divergence.dropna()
    ev = (tr("{notna_sum} of {n_fp8} fp8 answers left the bf16 reference",
             notna_sum=int(fp8.first_divergence.notna().sum()), n_fp8=len(fp8))
          + (tr(" (first at token {firsts_min})", firsts_min=int(firsts.min())) if len(firsts) else "")
          + tr(", {notna_sum} of {n_control} of the control's", notna_sum=int(control.first_divergence.notna().sum()),
               n_control=len(control)))
    clean = set(control[control.first_divergence.isna()].prompt)
    if not clean:
        return verdicts.untested(text, tr("{ev}: the control left the reference on every prompt, so what fp8 did "
                                          "cannot be told apart from the engine's own differences", ev=ev), DRIFT_RULE)
    on_clean = fp8[fp8.prompt.isin(clean)]
    left = int(on_clean.first_divergence.notna().sum())
    gap, control_gap = on_clean.mean_logprob_gap.mean(), control[control.prompt.isin(clean)].mean_logprob_gap.mean()
    ev += (tr("; on the {n_clean} prompt(s) the control kept, fp8 left on {left}; mean log-probability gap "
              "{gap:.3f} with fp8, {control_gap:.3f} in the control", n_clean=len(clean), left=left, gap=gap,
              control_gap=control_gap))
    if not left and (pd.isna(gap) or pd.isna(control_gap)):
        return verdicts.untested(text, tr("{ev}: no log-probability gap to compare, so whether fp8 moved them more "
                                          "cannot be judged", ev=ev), DRIFT_RULE)
    moved = bool(gap >= GAP_FACTOR * control_gap and gap - control_gap >= GAP_MIN_NATS)
    if not left and not moved:
        # "may drift" cannot be refuted by answers that did not: say what was looked at, not "did not hold"
        tokens = int(verdicts.number(on_clean.iloc[0], "tokens") or 0) if "tokens" in on_clean else 0
        return Claim(text, verdicts.CANNOT_TELL, ev + tr(": no drift seen in {n_on_clean} answer(s)",
                                                         n_on_clean=len(on_clean))
                     + (f" of {tokens} tokens" if tokens else "") + tr("; a claim that they *may* drift is not "
                                                                       "refuted by answers this short"), DRIFT_RULE)
    return verdicts.judge(text, left > 0, ev, partly=moved, rule=DRIFT_RULE)


def offload_claim(offload: dict | None, device: str = "cpu", why: str | None = None) -> Claim:
    """5.3's offload claim on a CUDA GPU: the same load with and without part of the weights in host
    memory; held when the offloaded engine ran and its mean TPOT was longer beyond the noise."""
    text = "5.3 CPU offload lets a model run but slows decoding"
    rule = (tr("held: the offloaded engine served the load, at a mean TPOT longer beyond noise (the claim gives no "
               "size; the factor is in the evidence); the model here fits without offload, so only 'slows "
               "decoding' is judged, not that offload lets a model run that would not; cannot be judged: no CUDA "
               "GPU, or no offload rows"))
    if device == "cpu":
        return verdicts.untested(text, tr("no CUDA GPU here: cpu_offload_gb moves GPU weights into host memory; on "
                                          "the CPU backend they are in host memory already"), rule)
    rows = offload or {}
    before, after = rows.get(NO_OFFLOAD), rows.get(OFFLOADED)
    if before is None or after is None:
        return verdicts.untested(text, tr("cannot be judged here: {value}",
                                          value=why or 'the offload rows were not measured'), rule)
    moved = verdicts.number(after, "engine_cpu_offload_gb")
    if moved == 0:
        return verdicts.untested(text, tr("cannot be judged here: the engine reported no offloaded weights"), rule)
    x, y = verdicts.number(before, "mean_tpot_ms"), verdicts.number(after, "mean_tpot_ms")
    if x is None or y is None:
        return verdicts.untested(
            text, tr("cannot be judged here: a row has no mean TPOT (did every request fail?)"), rule
        )
    return verdicts.judge_change(
        text,
        before,
        after,
        "mean_tpot_ms",
        better="higher",
        held_at=SLOWER,
        rule=rule,
        evidence=tr(
            "mean TPOT {value:.1f} ms without offload, {y:.1f} ms with {value_2} GiB of weights in host "
            "memory (×{y_2:.2f})",
            value=x,
            y=y,
            value_2=moved if moved is not None else "some",
            y_2=y / x,
        ),
    )


def parallel_claims(
    parallel: pd.DataFrame,
    device: str = "cpu",
    offload: dict | None = None,
    offload_why: str | None = None,
    tp2_why: str | None = None,
) -> list[Claim]:
    split_text = "5.3 Tensor parallelism splits one model over ranks"
    slower_text = "5.3 …but adds communication, so more ranks are not always faster"
    out = [offload_claim(offload, device, offload_why)]
    if TP1 not in parallel.index or TP2 not in parallel.index:
        why = tr("cannot be judged here: {value}", value=tp2_why or "the TP=2 engine was not measured")
        return out + [verdicts.untested(split_text, why), verdicts.untested(slower_text, why)]
    one, two = parallel.loc[TP1], parallel.loc[TP2]
    p1, p2 = rows.paced(one), rows.paced(two)  # the median TPOT over the streams that showed a pace
    if p1 is None or p2 is None:
        return out + [
            _split_claim(split_text, one, two),
            verdicts.cannot_tell(
                slower_text,
                tr(
                    "over a quarter of a split's streams reached the client "
                    "in one chunk (the server fell behind), so its pace was "
                    "not seen"
                ),
            ),
        ]
    t1, t2, noisy = p1[SPEED], p2[SPEED], verdicts.within_noise(p1, p2, SPEED)
    if not (t1 > 0 and t2 > 0):  # NaN fails this too: a figure not measured
        why = (
            tr(
                "over half the streams reached the client in one chunk (the server fell behind), so their pace "
                "was not seen"
            )
            if t1 == 0 or t2 == 0
            else tr("a row has no median TPOT")
        )
        return out + [
            _split_claim(split_text, one, two),
            verdicts.untested(slower_text, f"median TPOT {t1:.1f} and {t2:.1f} ms: {why}"),
        ]
    out += [
        _split_claim(split_text, one, two),
        verdicts.cannot_tell(
            slower_text,
            tr(
                "two ranks were faster per token here (median TPOT {t1:.1f} → "
                "{t2:.1f} ms): one machine where they win cannot show that more ranks "
                "are *not always* faster",
                t1=t1,
                t2=t2,
            ),
        )
        if t2 < t1 and not noisy
        else verdicts.judge(
            slower_text,
            t2 > t1 and not noisy,
            tr(
                "median TPOT {t1:.1f} ms with one rank, {t2:.1f} ms with two; {output_throughput:.0f} vs "
                "{output_throughput_2:.0f} output tokens/s; {rstrip} (the run shows that more ranks were not "
                "faster, not that communication was the cause: the cores each layout computes on differ too)",
                t1=t1,
                t2=t2,
                output_throughput=one.output_throughput,
                output_throughput_2=two.output_throughput,
                rstrip=cores_sentence({TP1: one, TP2: two}).rstrip(".。"),
            ),
            cannot_tell=noisy,
            rule=tr(
                "held: two ranks slower per token than one (median TPOT), beyond noise (here, more ranks did "
                "not help); within noise of each other: cannot tell"
            ),
        ),
    ]
    return out


def _split_claim(text: str, one, two) -> Claim:
    """Judged on what a split divides: each rank holds half of the KV heads, so a token's KV bytes per
    rank halve (the engine's own report: its KV GiB over its KV tokens, per rank). The same greedy
    tokens are a correctness note: a random-weight model can agree by chance."""
    a, b = (
        verdicts.number(r, "kv_cache_gib") and verdicts.number(r, "kv_cache_tokens") and rows.kv_bytes_per_token(r)
        for r in (one, two)
    )
    same = (tr("; greedy tokens the same as TP=1's (a correctness note)") if two.same_tokens
            else tr("; greedy tokens different from TP=1's (a correctness note)"))
    rule = tr("held: a token's KV bytes per rank with TP=2 half of TP=1's, within 5 %; partly: fewer at all")
    if not a or not b:
        return verdicts.untested(text, tr("cannot be judged here: a row lacks the KV memory or tokens") + same, rule)
    return verdicts.judge(
        text,
        abs(b / a - 0.5) <= 0.025,
        tr(
            "KV bytes per token per rank {a:,.0f} with TP=1, {b:,.0f} with TP=2 (×{b_2:.2f}); KV "
            "tokens {kv_cache_tokens:,.0f} → {kv_cache_tokens_2:,.0f}",
            a=a,
            b=b,
            b_2=b / a,
            kv_cache_tokens=one.kv_cache_tokens,
            kv_cache_tokens_2=two.kv_cache_tokens,
        )
        + same,
        partly=b < a,
        rule=rule,
    )


def claims(
    weights,
    kv,
    drift,
    parallel,
    device: str = "cpu",
    offload: dict | None = None,
    offload_why: str | None = None,
    tp2_why: str | None = None,
) -> list[Claim]:
    return [
        *weight_claims(weights),
        *kv_claims(kv, drift),
        *parallel_claims(parallel, device, offload, offload_why, tp2_why),
    ]


# -- exercise 2 and the cores each split computed on ---------------------------------------------


def tokens_per_mib_saved(weights: pd.DataFrame, small: str, key: str | None = None) -> float | None:
    """Exercise 2: the KV tokens the `small` engine gained over bf16 per MiB of non-KV memory it saved
    (both engines at the same memory fraction). None where it saved nothing (nothing to share out) or
    where a row has neither a non-KV figure nor (a GPU's) the weights' memory. `key`: another memory
    figure (the checkpoint sizes: exercise 2's named mistake)."""
    bf, q = weights.loc[BF16], weights.loc[small]
    # a GPU's log has no non-KV figure, but the weights' memory ("Model loading took"), which is what shrank
    key = key or ("non_kv_gib" if verdicts.number(bf, "non_kv_gib") is not None else "weights_gib")
    if verdicts.number(bf, key) is None or verdicts.number(q, key) is None:
        return None
    saved_mib = verdicts.number(bf, key) - verdicts.number(q, key)
    if saved_mib <= 0:
        return None
    saved_mib *= 1024
    return float((q.kv_cache_tokens - bf.kv_cache_tokens) / saved_mib)


def cores_computing(row) -> int | None:
    """Cores the engine's ranks computed on, from the binding each rank printed at start
    (`bound_ranks`: "… rank 0 on core(s) [0,1]"); None for a row without those lines."""
    lines = row.get("bound_ranks") if hasattr(row, "get") else None
    if not lines:
        return None
    cores = [c for line in lines for group in re.findall(r"\[([^\]]*)\]", line) for c in group.split(",") if c.strip()]
    return len(cores) or None


def cores_sentence(rows: dict) -> str:
    """What the binding gave each split, from its own start-up log: the cores it computed on and the
    cores vLLM kept free (logged only: nothing pins the server or the scheduler to them)."""
    said = []
    for name, row in rows.items():
        n, kept = cores_computing(row), row.get("cores_kept_free") or []
        if n is not None:
            said.append(
                tr("{name} computed on {n} core(s)", name=name, n=n)
                + (tr(" and kept core(s) {kept} free", kept=", ".join(kept)) if kept else "")
            )
    if not said:
        if any(row.get("device_kind") == "GPU" for row in rows.values()):
            return tr("GPU: no CPU thread binding (OMPProcessManager runs only on the CPU backend).")
        return tr(
            "These rows carry no binding lines (rows stored before they were kept), so the cores are not known here."
        )
    return "; ".join(said) + "."


# -- the control panel's run function (widgets.Panel calls it with the controls' values) ------------

TOO_CLOSE = "too close to call"
# 5.3's speed per token: the median, as lab 3 reads it; a stream that reached the client in one chunk
# (the API server fell behind and vLLM's output collector merged its tokens) counts 0 ms in the mean
SPEED = "median_tpot_ms"


def faster_split(parallel: pd.DataFrame) -> str:
    """Exercise 3: the split with the lower median TPOT, or "too close to call" when the two differ by no
    more than the noise allowance (`verdicts.within_noise`), as lab 3 answers the same question."""
    one, two = rows.paced(parallel.loc[TP1]), rows.paced(parallel.loc[TP2])  # streams that showed a pace
    if one is None or two is None or not all(roofline.positive(r, SPEED) for r in (one, two)):
        return None  # a pace not seen (one-chunk streams) or not measured: the check says it cannot check
    if verdicts.within_noise(one, two, SPEED):
        return TOO_CLOSE
    return TP1 if one[SPEED] < two[SPEED] else TP2


def faster_split_why(parallel: pd.DataFrame) -> str:
    """Exercise 3's reason, from the figures `faster_split` judges: the median TPOT over the streams that
    showed a pace, with the interval of their ratio; or why the pace was not seen."""
    one, two = rows.paced(parallel.loc[TP1]), rows.paced(parallel.loc[TP2])
    if one is None or two is None:
        return tr("over a quarter of a split's streams reached the client in one chunk, so its pace was not seen")
    return tr(
        "median TPOT over the streams that showed a pace {one:.1f} vs {two:.1f} ms; TP=2 ÷ TP=1 ",
        one=one[SPEED],
        two=two[SPEED],
    ) + verdicts.change_text(one, two, SPEED)


def time_against_bytes(time_ratio: float, bytes_ratio: float) -> str:
    """5.1's sentence on one quantized copy: its decode step's time against bf16's beside its bytes per
    step against bf16's. Three cases: the time rose although the bytes fell (dequantizing costs more
    than the bytes saved), it fell less than the bytes, or at least as much."""
    if time_ratio > 1 + verdicts.DEFAULT_NOISE and bytes_ratio <= 1:  # past the floor the verdict uses (×÷)
        return tr(
            "the time rose although the bytes fell: the quantized path's own work (quantizing every "
            "activation for INT8, unpacking the weights for INT4) cost more than reading fewer bytes saved."
        )
    if time_ratio >= 1 / (1 + verdicts.DEFAULT_NOISE) and bytes_ratio <= 1:
        return tr("the time stayed within the noise of bf16's although the bytes fell.")
    if time_ratio > bytes_ratio:
        return tr("the time fell, but less than the bytes.")
    return tr("the time fell at least as much as the bytes.")


def kv_dtype_and_weights_panel(
    base: EngineConfig, weight_models: dict[str, str], reference_trace: dict, drift_tokens: int, tag: str = "ch5-panel"
) -> Callable[..., dict]:
    """Chapter 5: one engine per (KV dtype, weights): its KV capacity, then its long greedy
    answers against the reference's (the share of tokens matched before the first difference)."""

    def run(kv_cache_dtype="auto", weights="bf16", force=False, progress=True) -> dict:
        cfg = base.replace(kv_cache_dtype=kv_cache_dtype, model=weight_models[weights])
        row = experiment.capacity(cfg, force=force, progress=progress, tag=tag)
        d = correctness.drift(reference_trace, correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=force))
        return {
            **row,
            "config_label": f"{weights} weights, kv={kv_cache_dtype}",
            "token_agreement": d.token_agreement.mean(),
        }

    return run


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = (
    "BF16",
    "INT8",
    "INT4",
    "AUTO",
    "FP8",
    "TP1",
    "TP2",
    "LITTLE",
    "NO_OFFLOAD",
    "OFFLOADED",
    "bytes_per_step",
    "tokens_per_mib_saved",
    "cores_computing",
)
PANELS = ("kv_dtype_and_weights_panel",)
CHECKS = ("faster_split_why", "TOO_CLOSE", "SPEED", "faster_split")
CLAIMS = (
    "SLOWER",
    "time_against_bytes",
    "weight_claims",
    "kv_claims",
    "GAP_FACTOR",
    "GAP_MIN_NATS",
    "DRIFT_RULE",
    "drift_claim",
    "offload_claim",
    "parallel_claims",
    "claims",
    "cores_sentence",
)
