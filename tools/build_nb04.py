"""Writes notebooks/04_server_side_settings.ipynb (authoring aid; the .ipynb is the source of truth)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nb import write  # noqa: E402

CELLS = []


def md(text):
    CELLS.append(("md", text))


def code(text):
    CELLS.append(("code", text))


md(r"""
# Chapter 4 · Server-side settings: parallel samples, prefix caching, compilation and logging

Chapters 2 and 3 sized the engine: how much memory the KV cache gets and how many tokens one step
may carry. This chapter turns to switches that change *what each request costs* without touching
those sizes:

* **`n`**, the number of answers a request asks for, and its costly cousin, **beam search**;
* **prefix caching**, which lets a request reuse the KV cache of a prompt start that an earlier
  request already computed;
* **compilation**: `torch.compile` on every device, and on a CUDA GPU also **CUDA graphs**. The one
  switch `enforce_eager` turns them off;
* **logging**: the engine's log level and its per-request log lines.

Each of the four is explained from the installed vLLM's source and then measured on a real engine on
this machine.

**Learning objectives.** After this chapter you can
- count the sequences a load really asks for, and say what vLLM V1 shares between the samples of one request and what it does not;
- predict how much prefill a prompt design saves with prefix caching, from the block size, the prefix length and the number of templates;
- read the prefix-cache hit rate from `/metrics` while a load runs;
- work out when compiling pays for its longer start, from measured start times and speeds;
- say which compilation settings exist on a GPU only, and why the CPU backend ignores them.

**Prerequisites.** Chapter 0 (prefill, decode, TTFT, TPOT, the noise rule) and chapter 2's KV-cache
*blocks*: prefix caching works block by block.

**Claims tested here**
1. `n` parallel samples: each sample is a sequence of its own, and `n=4` costs about as much as four times the requests; beam search costs more still (4.1).
2. A fixed system prompt saves a large share of prefill (the article says `30–40 %`); when the template changes often the saving vanishes and the cached blocks only take space (4.2).
3. Compiling (and, on a GPU, CUDA graphs) costs start-up time and cuts the time per token of small batches; debug logging costs throughput under load (4.3).

**What it needs.** A CPU is enough. Most engines here start with `enforce_eager=True`; section 4.3
starts one compiled engine, which takes longer (the set-up cell says how long starts have taken on
this machine). The CUDA-graph rows of section 4.3 need a CUDA GPU and skip with the reason
elsewhere. That GPU path was not run while this notebook was written, so read its numbers with care.
""")

code(r"""
import dataclasses
import math

import pandas as pd
from IPython.display import Markdown, display

import helpers as H
from helpers import EngineConfig, Load, charts, correctness, course, report, widgets
from helpers.claims import ch4
from helpers.exercises import Question
from helpers.sizes import pick

# The one place to switch model: "embedded" (SmolLM2-135M, ships with the guide, no download),
# a local Hugging Face folder, or a hub id you have cached.
MODEL = "embedded"
FORCE = False  # True: measure again even where a stored result for this machine matches

# The baseline: the guide's defaults (eager; vLLM's own prefix caching, which is on).
base = EngineConfig(model=MODEL)
print(f"size: {H.size()}   device: {base.device}   baseline: {base.label()}")
print(course.start_note())
print(course.start_note(eager=False))
""")

md(r"""
## 4.1 Parallel samples: count sequences, not requests

A request may ask for several answers to one prompt: `n` in the OpenAI API. vLLM V1 does not keep
them together inside the engine. Its front end splits such a request into `n` *child requests*
(`ParentRequest` in `vllm/v1/engine/parallel_sampling.py`), each with its own sampling seed, and
hands them to the scheduler one by one. From then on each child is an ordinary running sequence:
it takes a seat under `max_num_seqs`, gets its own KV blocks, and produces its own tokens.

What can the children share? Only what **prefix caching** shares between any two requests: the full
KV blocks of their common prompt. A prompt shorter than one block shares nothing, and with prefix
caching off the prompt is computed once per child. So the honest way to count a load is in
sequences: a request with `n=4` is four of them.

The experiment sends the same prompts three ways: once with `n=1`, once with `n=4`, and as four
times as many requests with `n=1`. All three sample at temperature `1.0` (greedy samples of one
prompt would all be the same answer). Each prompt is two blocks long, so the children of one
request can share its first block.

**Exercise 1 · predict first.** How many sequences will the engine run at once, at the peak, in the
`n=4` run? The cell below prints the load. Put a number in `answer`, run the measurement, then the check.
""")

code(r"""
block = int(H.capacity(base, force=FORCE, tag="ch4-samples")["block_size"])  # 128 on the CPU backend, 16 on CUDA
prompts = pick(4, 8)
one = Load(num_prompts=prompts, input_len=2 * block, output_len=pick(16, 32), max_concurrency=prompts, temperature=1.0)
sample_loads = {ch4.N1: one, ch4.N4: dataclasses.replace(one, n=4),
                ch4.MANY: dataclasses.replace(one, num_prompts=4 * prompts, max_concurrency=4 * prompts)}
for name, load in sample_loads.items():
    print(f"{name:12s} {load.label()}")

q1 = Question("peak running with n=4", expected=lambda: samples.loc[ch4.N4, "peak_running"], tolerance=0.0,
              hint="Each request of the n=4 load becomes four sequences, and all its requests are sent at once. "
                   "Is anything (max_num_seqs, the cache) small enough to stop them?",
              solution_file="ch04_q1.py", unit="sequences",
              known_wrong={"you counted requests, not sequences": lambda: prompts})
answer = ...  # a number of sequences
""")

code(r"""
sample_rows = {name: H.measure(base, load, force=FORCE, tag="ch4-samples") for name, load in sample_loads.items()}
samples = H.table(sample_rows)
samples[["load_num_prompts", "load_n", "peak_running", "peak_waiting", "output_throughput", "mean_ttft_ms",
         "mean_e2el_ms", "prefix_cache_hits"]].round(1)
""")

code(r"""
q1.check(answer)
""")

code(r"""
named = samples.assign(config_label=samples.index)
charts.compare(named, ["peak_running", "output_throughput", "mean_e2el_ms"], "Four samples per request vs four times the requests")
""")

code(r"""
four, many = samples.loc[ch4.N4], samples.loc[ch4.MANY]
assert four.peak_running > samples.loc[ch4.N1].peak_running  # the samples ran as sequences of their own
display(Markdown(
    f"The engine looked up {four.prefix_cache_queries:,.0f} prompt tokens for the `n=4` run (every sample's "
    f"prompt) and found {four.prefix_cache_hits:,.0f} of them in its cache: the first block of each prompt, "
    f"computed once and shared by its sister samples. The run with four times the requests has different "
    f"prompts, so it found {many.prefix_cache_hits:,.0f}. Its mean request latency was "
    f"{many.mean_e2el_ms:,.0f} ms against {four.mean_e2el_ms:,.0f} ms with `n=4`, and its output throughput "
    f"{many.output_throughput:,.0f} against {four.output_throughput:,.0f} tokens/s. Whatever gap the verdict "
    "at the end finds between the two comes from that sharing: without it, each sample is simply a request."))
""")

md(r"""
**The benchmark's own figures with `n` above one.** The streamed answer of an `n=4` request
interleaves its four samples, so the client sees four times as many chunks. vLLM's benchmark then
divides the time after the first token by all the tokens of all samples: its TPOT and ITL look four
times better than what each sample experienced. That is why this section compares the whole request
latency (`e2el`), which is the same for everyone.

### Beam search

Beam search keeps the `width` most likely partial answers and extends each by one token at every
step. vLLM serves it from the API server, not inside the engine: read `beam_search` in
`vllm/entrypoints/generate/beam_search/online.py`. For every output token it sends each beam to the
engine as a fresh request for *one* token with the top log-probabilities, waits for all of them, and
keeps the best `width` candidates. Each token costs a round trip through the server, and only prefix
caching spares the engine from recomputing each beam's prompt every time. The answers cannot be
streamed, so the harness times plain requests, one prompt after another: greedy, `width` sampled
answers, and beam search of the same width.
""")

code(r"""
width = pick(2, 4)
beam_prompts = ["The history of the printing press", "Explain how rain forms",
                "A short note to a neighbour about a parcel", "Three facts about the Moon"][:pick(2, 4)]
beam = {name: H.experiment.timed(base, beam_prompts, 16, params, force=FORCE, tag="ch4-beam")
        for name, params in {"greedy": {"temperature": 0},
                             "sampled": {"n": width, "temperature": 1.0},
                             "beam": {"use_beam_search": True, "n": width}}.items()}
pd.DataFrame({name: {"seconds per request": r["mean_seconds"], "answers per request": len(r["texts"][0]),
                     "first answer": r["texts"][0][0][:60]} for name, r in beam.items()}).T
""")

md(r"""
## 4.2 Prefix caching

### How V1 finds a prefix (read from vLLM's source)

The KV cache is made of blocks of `block_size` tokens (chapter 2). With prefix caching on, every
*full* block gets a hash of its tokens chained with the hash of the block before it, so a block's
hash stands for the whole prompt up to its end. When a new request arrives, the scheduler calls
`KVCacheManager.get_computed_blocks` (`vllm/v1/core/kv_cache_manager.py`), which walks the prompt's
block hashes from the start and stops at the first one it cannot find. Three rules follow:

1. **Only whole blocks count.** A shared prefix shorter than one block is never reused, and the last,
   partial block of any prefix is computed again. The CPU backend's block is much larger than CUDA's
   (the set-up of 4.1 printed it), so a short system prompt that a GPU would share may share nothing on a CPU.
2. **The last prompt token is always computed**, because the engine needs its logits to pick the
   first output token; a hit is capped at the prompt length minus one.
3. **A cached block that no request uses is not lost space.** When the last request using a block
   finishes, the block goes back to the free queue *with its hash*. It can still be found by a later
   request, and it is the first to be evicted when the pool needs a fresh block
   (`BlockPool.get_new_blocks` → `_maybe_evict_cached_block` in `vllm/v1/core/block_pool.py`).

The article warns that when templates change often, cached blocks "only take space". Rule 3 says
vLLM V1 should not suffer from that; the last experiment of this section tests it.

The engine counts what it finds: `vllm:prefix_cache_queries` (prompt tokens looked up) and
`vllm:prefix_cache_hits` (tokens found), both in tokens. The harness samples them during every run
and empties the cache before each run, so no run profits from an earlier one.

### A fixed system prompt, a churning template, a prompt start under one block

Four runs with the same number of requests, each a prefix followed by a part of its own:

* **fixed prefix**: every request starts with the same prefix, four blocks long;
* **churning prefixes**: each request has a different prefix of the same length;
* **prefix under one block**: one shared prefix of half a block;
* **caching off**: the fixed-prefix load on an engine started with `enable_prefix_caching=False`.

**Exercise 2 · predict first.** In the *fixed prefix* run, what share of all prompt tokens will the
engine take from its cache instead of computing them? The cell prints the load. Use the three rules
above. Put a fraction between 0 and 1 in `answer`, run the measurement, then the check.
""")

code(r"""
requests = pick(6, 16)
fixed = Load(kind="prefix", num_prompts=requests, prefix_len=4 * block, input_len=64, output_len=16,
             num_prefixes=1, max_concurrency=4)
prefix_loads = {ch4.FIXED: fixed, ch4.CHURN: dataclasses.replace(fixed, num_prefixes=requests),
                ch4.SHORT: dataclasses.replace(fixed, prefix_len=block // 2)}
for name, load in prefix_loads.items():
    print(f"{name:24s} {load.label()}")
print(f"block_size: {block} tokens")

q2 = Question("share of prompt tokens saved", expected=lambda: ch4.share_saved(prefix.loc[ch4.FIXED]),
              tolerance=0.05, solution_file="ch04_q2.py", unit="of prompt tokens",
              hint="Which requests can find the prefix in the cache? How many tokens does each of them find? "
                   "Divide by all the prompt tokens the load sends.",
              known_wrong={"you let the first request hit too": lambda: fixed.prefix_len / (fixed.prefix_len + fixed.input_len)})
answer = ...  # a fraction between 0 and 1
""")

code(r"""
prefix_rows = {name: H.measure(base, load, force=FORCE, tag="ch4-prefix") for name, load in prefix_loads.items()}
caching_off = base.replace(enable_prefix_caching=False)
prefix_rows[ch4.OFF] = H.measure(caching_off, fixed, force=FORCE, tag="ch4-prefix")
prefix = H.table(prefix_rows)
prefix["share_saved"] = [ch4.share_saved(r) for _, r in prefix.iterrows()]
prefix[["load_prefix_len", "load_num_prefixes", "total_input_tokens", "prefix_cache_queries", "prefix_cache_hits",
        "prefix_cache_hit_rate", "share_saved", "median_ttft_ms", "p99_ttft_ms"]].round(3)
""")

code(r"""
q2.check(answer)
""")

code(r"""
live = H.samples([prefix_rows[ch4.FIXED], prefix_rows[ch4.CHURN]])
live["label"] = live["run_id"].map({prefix_rows[n]["run_id"]: n for n in (ch4.FIXED, ch4.CHURN)})
live["prefix_cache_hit_rate_pct"] = (100 * live.prefix_cache_hits / live.prefix_cache_queries.where(live.prefix_cache_queries > 0))
named = prefix.assign(config_label=prefix.index)
(charts.timeseries(live.dropna(subset=["prefix_cache_hit_rate_pct"]), "prefix_cache_hit_rate_pct", color="label",
                   chart_title="Hit rate so far, during each run")
 | charts.compare(named, ["median_ttft_ms", "p99_ttft_ms"], "Time to first token"))
""")

code(r"""
fixed_row, off_row = prefix.loc[ch4.FIXED], prefix.loc[ch4.OFF]
assert fixed_row.prefix_cache_hits > 0 and off_row.prefix_cache_hits == 0
display(Markdown(
    f"With one fixed prefix the engine found {fixed_row.prefix_cache_hits:,.0f} of "
    f"{fixed_row.total_input_tokens:,.0f} prompt tokens in its cache ({100 * fixed_row.share_saved:.0f} %), and "
    f"the median first token came after {fixed_row.median_ttft_ms:,.0f} ms instead of "
    f"{off_row.median_ttft_ms:,.0f} ms with caching off. The churning template found "
    f"{prefix.loc[ch4.CHURN].prefix_cache_hits:,.0f} tokens, the prefix under one block "
    f"{prefix.loc[ch4.SHORT].prefix_cache_hits:,.0f}."))
""")

md(r"""
### Do stale cached blocks take space?

To make blocks scarce, the next two engines get a KV cache of only a few blocks
(`num_gpu_blocks_override`, as in chapter 3), room for about two of these requests at once. Both get
the churning load, whose blocks are never reused: once with prefix caching on (every finished
request leaves hashed blocks behind) and once off. If stale blocks took space, the engine with
caching on would run fewer requests at once, wait more, preempt more or finish later.
""")

code(r"""
per_request = fixed.longest_prompt()
usable = 2 * math.ceil(per_request / block) + 2  # about two requests at a time
small_cache = base.replace(max_model_len=usable * block, num_gpu_blocks_override=usable + 1)
crowd = pick(4, 12)
churn_small = dataclasses.replace(fixed, num_prompts=crowd, num_prefixes=crowd, max_concurrency=crowd)
stale_rows = {"caching on": H.measure(small_cache, churn_small, force=FORCE, tag="ch4-stale"),
              "caching off": H.measure(small_cache.replace(enable_prefix_caching=False), churn_small, force=FORCE,
                                       tag="ch4-stale")}
stale = H.table(stale_rows)
stale[["num_blocks", "peak_running", "peak_waiting", "preemptions", "peak_kv_cache_usage_pct", "output_throughput",
       "duration"]].round(1)
""")

code(r"""
ts = H.samples(list(stale_rows.values()))
ts["label"] = ts["run_id"].map({r["run_id"]: n for n, r in stale_rows.items()})
charts.timeseries(ts, "running", color="label", chart_title=f"Requests running at once, {usable} usable blocks")
""")

md(r"""
### Try it yourself

The panel runs the same function as the cell below it: choose prefix caching on or off, the prefix
length in blocks, how many distinct prefixes the requests share, and how many requests, then press
**Run**. Starting an engine with the other caching setting takes a while (the set-up cell says how
long). Compare the hit rate and the first-token times of your runs side by side.
""")

code(r"""
def prefix_run(caching=True, prefix_blocks=4.0, prefixes=1, requests=requests, force=False, progress=True):
    cfg = base.replace(enable_prefix_caching=caching)
    load = dataclasses.replace(fixed, num_prompts=requests, prefix_len=max(1, int(prefix_blocks * block)),
                               num_prefixes=min(prefixes, requests))
    return H.measure(cfg, load, force=force, progress=progress, tag="ch4-panel")

def panel_chart(rows):
    df = H.numbered(rows)
    df["config_label"] = df.config_label + " · " + df.load_label
    return charts.compare(df, ["prefix_cache_hit_rate", "median_ttft_ms", "output_throughput"], "Your runs")

first_run = prefix_run()  # the panel's defaults: the fixed-prefix load above, read back from the store
panel = widgets.Panel(
    "Prefix caching lab",
    {"caching": widgets.toggle("prefix caching", True),
     "prefix_blocks": widgets.choice("prefix length (blocks)", [0.5, 1.0, 1.5, 2.0, 4.0, 8.0], 4.0),
     "prefixes": widgets.choice("distinct prefixes", [1, 2, 4, 8, 16], 1),
     "requests": widgets.number("requests", requests, 2, 64)},
    prefix_run, panel_chart, rows=[first_run])
panel
""")

md(r"""
## 4.3 Compilation and logging

### What `enforce_eager` switches off (read from vLLM's source)

`enforce_eager=True` makes `VllmConfig.__post_init__` (`vllm/config/vllm.py`) set the compilation
mode and the CUDA-graph mode to `NONE`: the model runs as plain PyTorch, one operator after the
other. With `enforce_eager=False` vLLM compiles. Its modes (`CompilationMode` in
`vllm/config/compilation.py`) are `0` none, `1` stock `torch.compile`, `2` one Dynamo trace, and `3`
vLLM's own piecewise compilation, the default. The two devices then differ:

* **CPU** (`CpuPlatform.check_and_update_config`, `vllm/platforms/cpu.py`): mode `3` is replaced by
  mode `2` with the Inductor backend, which turns the model into fused C++ kernels. The list of
  CUDA-graph capture sizes is emptied: there are no CUDA graphs on a CPU, so `cudagraph_mode` does
  nothing there. The harness refuses it before a start rather than let it pass silently.
* **CUDA GPU**: compilation as above, plus **CUDA graphs**: the GPU records the whole sequence of
  kernel launches for a batch size once and replays it with one launch. That removes the CPU-side
  launch overhead that dominates small decode batches. `cudagraph_mode` chooses `NONE`,
  `PIECEWISE` (graphs around the compiled pieces, attention left outside), `FULL` (one graph for the
  whole step), `FULL_DECODE_ONLY` or `FULL_AND_PIECEWISE` (full graphs for decode steps, piecewise for
  mixed ones); `cudagraph_capture_sizes` lists the batch sizes recorded.

Both cost time at start: compiling, and on a GPU capturing a graph per size. The compiled code is
kept on disk (under `~/.cache/vllm/torch_compile_cache`) so that a later start can load it instead
of compiling again. Whether that worked on this machine is read from this run's start-up log below.

The experiment: the same short requests at one, four and sixteen in flight, on an eager engine and
on a compiled one.
""")

code(r"""
concurrencies = [1, 4, 16]

def client_load(concurrency: int) -> Load:
    return Load(num_prompts=max(4, concurrency), input_len=64, output_len=pick(24, 64), max_concurrency=concurrency)

eager_rows = {c: H.measure(base, client_load(c), force=FORCE, tag="ch4-compile") for c in concurrencies}
# The eager engine's greedy answers, kept for the correctness check at the end of this section.
eager_answers = correctness.greedy_answers(base, force=FORCE)
compiled = base.replace(enforce_eager=False)
compiled_rows = {c: H.measure(compiled, client_load(c), force=FORCE, tag="ch4-compile") for c in concurrencies}
speed = H.table([*eager_rows.values(), *compiled_rows.values()])
speed["engine"] = ["eager" if e else "compiled" for e in speed.cfg_enforce_eager]
speed[["engine", "load_max_concurrency", "start_seconds", "mean_tpot_ms", "output_throughput",
       "engine_compilation_mode", "compile_cache"]].round(1)
""")

code(r"""
(charts.sweep(speed, "load_max_concurrency", "mean_tpot_ms", color="engine", chart_title="Time per output token", log_x=True)
 | charts.sweep(speed, "load_max_concurrency", "output_throughput", color="engine", chart_title="Output throughput", log_x=True))
""")

md(r"""
### When does compiling pay for itself?

A compiled engine starts later and then, if it is faster, catches up. After `T` output tokens at a
steady rate, an engine has spent `start + T / throughput` seconds. The two lines cross where the time
saved per token has paid back the extra start: `T = (start_compiled - start_eager) /
(1/throughput_eager - 1/throughput_compiled)`. The chart draws both lines at each concurrency
measured, and the table gives the crossing point; "never" means the compiled engine was not faster.
""")

code(r"""
break_even = {c: ch4.break_even_tokens(eager_rows[c], compiled_rows[c]) for c in concurrencies}
charts.catch_up(ch4.catch_up_lines(eager_rows, compiled_rows))
""")

code(r"""
display(pd.DataFrame({"extra start (s)": [compiled_rows[c]["start_seconds"] - eager_rows[c]["start_seconds"] for c in concurrencies],
                      "break-even (output tokens)": [break_even[c] for c in concurrencies]},
                     index=pd.Index(concurrencies, name="requests in flight")).round(0).replace(math.inf, "never"))
cache = compiled_rows[concurrencies[0]]["compile_cache"]
said = {None: "The start-up log said nothing about the compile cache.",
        "loaded": "This start loaded the compiled model from the cache, so it skipped compiling.",
        "saved": "This start compiled the model and saved it, so the next start can load it instead."}
display(Markdown(said.get(cache) or (
    f"This start found compiled code in the cache but could not load it (vLLM said: *{cache[len('load failed: '):]}*), "
    "so it compiled again. On this vLLM build a second start compiles again too: the cache does not shorten it.")))
""")

md(r"""
At full size the next cell starts the compiled engine a second time, to measure what the cache does
to the start; at smoke size it shows the compiled starts stored on this machine so far.
""")

code(r"""
if H.size() == "full":
    H.stop()
    second = H.capacity(compiled, force=True, tag="ch4-second-start")
    print(f"first compiled start {compiled_rows[1]['start_seconds']:.0f} s, second {second['start_seconds']:.0f} s "
          f"(compile cache: {second['compile_cache']})")
else:
    print(course.start_note(eager=False))
""")

md(r"""
### Do compiled answers differ?

Compilation should not change what the model says, but it may change the order of floating-point
operations, and with greedy decoding one flipped token changes everything after it
(`docs/correctness.md` explains the guard). The cell compares the compiled engine's greedy answers
with the eager engine's, token by token.
""")

code(r"""
agreement = correctness.compare(base, [compiled], force=FORCE)
same = int(agreement.identical.sum())
display(agreement[["prompt", "token_agreement", "first_divergence", "identical"]])
display(Markdown(
    f"{same} of {len(agreement)} answers are identical. " + (
    "" if same == len(agreement) else
    f"Where they differ, the first differing token is at position "
    f"{agreement.first_divergence.dropna().astype(int).tolist()}: the compiled kernels fuse operations and "
    f"round in a different order ({speed.cfg_dtype.iloc[0]} here), and greedy decoding amplifies a near-tie "
    "between two tokens into a different continuation. That is a numerical difference, not a bug.")))
""")

md(r"""
### The other compilation settings

The modes measured at full size on this device, and the CUDA-graph modes, each as a cell that runs
only where it can. On a machine without a CUDA GPU the GPU rows print the harness's reason instead.
""")

code(r"""
modes = {"mode 1 (stock torch.compile)": {"mode": 1}, "mode 2 (one Dynamo trace)": {"mode": 2}} if H.size() == "full" else {}
graphs = {f"cudagraph_mode={m}": {"cudagraph_mode": m} for m in ("NONE", "PIECEWISE", "FULL", "FULL_AND_PIECEWISE")}
mode_rows = {"eager": eager_rows[1], "default (vLLM's)": compiled_rows[1]}
for name, cc in {**modes, **graphs}.items():
    cfg = base.replace(enforce_eager=False, compilation_config=cc)
    why = cfg.cannot_run_here()
    if why is None and "cudagraph_mode" in cc and cfg.device != "cuda":  # NONE: what the CPU runs anyway
        print(f"skipped {name}: without a CUDA GPU this is the default compiled row above")
        continue
    if why is not None:
        print(f"skipped {name}: {why.problem}")
        continue
    try:
        mode_rows[name] = H.measure(cfg, client_load(1), force=FORCE, tag="ch4-modes")
    except Exception as e:  # a mode this build cannot run: show vLLM's reason and go on
        print(f"{name} did not run here: {str(e).splitlines()[0][:300]}")
modes_table = H.table(mode_rows)
modes_table[["start_seconds", "mean_tpot_ms", "output_throughput", "engine_compilation_mode"]].round(1)
""")

md(r"""
### Logging

Logging is the cheapest setting to forget. The engine's log level (`VLLM_LOGGING_LEVEL`, the
`log_level` setting here) and `--enable-log-requests` (a line per request with its parameters, and at
debug level its prompt) both run on the API server's event loop, the same loop that streams tokens
to clients. The experiment runs the busiest load of the speed test on an engine with debug logging
and per-request logs, and compares it with the eager row above.
""")

code(r"""
chatty = base.replace(log_level="debug", enable_log_requests=True)
logging_rows = {"info": eager_rows[16], "debug": H.measure(chatty, client_load(16), force=FORCE, tag="ch4-logging")}
if H.size() == "full":
    logging_rows["request logs only"] = H.measure(base.replace(enable_log_requests=True), client_load(16),
                                                  force=FORCE, tag="ch4-logging")
H.stop()
logs = H.table(logging_rows)
logs[["output_throughput", "mean_ttft_ms", "mean_tpot_ms", "p99_itl_ms"]].round(1)
""")

code(r"""
charts.compare(logs.assign(config_label=logs.index), ["output_throughput", "mean_tpot_ms"], "Logging under load")
""")

md(r"""
## What we measured

Each verdict below is computed from the rows measured (or read back) above, on this machine, by
the rules in `helpers/claims/ch4.py`; the last column says what "held" needs. Nothing in it was
typed in by hand.
""")

code(r"""
stage_rows = H.table({"eager": eager_rows[1], "compiled": compiled_rows[1]})
claims = ch4.claims(samples, beam, prefix, stale, stage_rows, logs, device=base.device)
report.show(claims)
""")

md(r"""
## Summary

- A request with `n` samples is `n` sequences inside vLLM V1; budget seats, KV blocks and latency for sequences, not requests. The samples share only the full blocks of their prompt, through prefix caching.
- Beam search runs in the API server, one engine request per beam and token, and is not streamed.
- Prefix caching works in whole blocks: a fixed prefix of several blocks saves most of its prefill after the first request; a churning template or a prefix under one block saves nothing. Freed cached blocks stay findable until the pool needs them.
- Compiling trades a longer start for faster steps; the break-even table says after how many output tokens it pays on this machine. CUDA graphs exist only on a GPU.
- Logging's cost under load is measured, not assumed.
""")

code(r"""
fixed_row, four = prefix.loc[ch4.FIXED], samples.loc[ch4.N4]
display(Markdown("\n".join([
    f"- `n=4`: up to {four.peak_running:.0f} sequences ran at once for {four.completed:.0f} requests "
    f"(`n=1`: {samples.loc[ch4.N1].peak_running:.0f}).",
    f"- Beam search of width {width}: {beam['beam']['mean_seconds']:.2f} s per request, against "
    f"{beam['sampled']['mean_seconds']:.2f} s for {width} sampled answers and {beam['greedy']['mean_seconds']:.2f} s greedy.",
    f"- A fixed prefix of {fixed.prefix_len} tokens saved {100 * fixed_row.share_saved:.0f} % of prompt tokens; "
    f"median TTFT {fixed_row.median_ttft_ms:.0f} ms vs {prefix.loc[ch4.OFF].median_ttft_ms:.0f} ms with caching off.",
    f"- Compiled start {compiled_rows[1]['start_seconds']:.0f} s vs eager {eager_rows[1]['start_seconds']:.0f} s; "
    f"mean TPOT at one in flight {compiled_rows[1]['mean_tpot_ms']:.1f} vs {eager_rows[1]['mean_tpot_ms']:.1f} ms; "
    "break-even " + ", ".join(f"{c} in flight: " + (f"{t:,.0f} tokens" if math.isfinite(t) else "never")
                              for c, t in break_even.items()) + ".",
    f"- Debug logging: {logs.loc['debug'].output_throughput:.0f} vs {logs.loc['info'].output_throughput:.0f} "
    "output tokens/s at info level.",
])))
""")

md(r"""
These runs are short, on a small, shared machine. Trust the ratios more than the absolute
milliseconds, and run the full size (`GUIDE_SIZE=full`, the default outside CI: each load three
times) before you draw a conclusion.

## Exercises

Exercises 1 and 2 are in sections 4.1 and 4.2 (predict, then measure). Each `q.check(answer)` compares
your answer with this run's measurements; `q.hint()` gives a nudge and `q.solution()` shows one way
(the files are in `notebooks/solutions/`). Lab 2 has more prefix-caching predictions.

**Exercise 3 · when does compiling pay?** Using only the speed table of section 4.3 (start times and
output throughput at one request in flight), compute after how many output tokens the compiled engine
has caught up with the eager one. Answer `math.inf` if it never does.
""")

code(r"""
q3 = Question("break-even output tokens at one in flight", expected=lambda: break_even[1], tolerance=0.02,
              hint="Extra start time ÷ time saved per token; the time per token is 1 / output_throughput.",
              solution_file="ch04_q3.py", unit="tokens")
answer = ...  # a number of output tokens, or math.inf
q3.check(answer)
""")

md(r"""
**Exercise 4 · a system prompt for a CPU server** (open). Your chat service puts the same system prompt
in front of every conversation. How long must it be before the CPU backend reuses any of it, and how
much of it is computed again every time? Would the answer change on a GPU? Check your answer in the
panel of section 4.2 with prefix lengths of half a block, one and a half blocks, and four blocks.

**Exercise 5 · `n` without caching** (open). Predict what happens to the prompt tokens computed in
the `n=4` run when prefix caching is off. Run `H.measure(base.replace(enable_prefix_caching=False),
sample_loads["n=4"])` and compare `prefix_cache_hits` and the mean TTFT with the table of 4.1.

**Exercise 6 · the compile cache** (open). Start the compiled engine twice (`H.stop()` between, and
`force=True`). Does the second start take less time here? Look for "AOT" in the newest log under
`.cache/logs/` to see what vLLM did with the cache.
""")


if __name__ == "__main__":
    write(Path(__file__).resolve().parent.parent / "notebooks" / "04_server_side_settings.ipynb", CELLS,
          {"chapter": 4, "accelerator": ["CPU", "GPU"], "minutes_smoke": 6, "minutes_full": 25, "engine_starts_smoke": 7})
