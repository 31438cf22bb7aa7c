"""Chapter 6's claims (reading the start-up log, a tuning path toward a latency target, and
three combinations of settings that backfire) and the rule that judges each from the rows the
notebooks measured (6.1 and 6.2 in notebook 06a, 6.3 in 06b).

The notebooks pass:
  checks    6.1: explain(...) records (figure, engine, computed, agree)
  share     6.1: the KV cache's share of the device's memory (0–1; on a CPU, the NUMA node's memory the
                 fraction is taken of), and the service row measured on that engine (its peak KV usage and
                 preemptions say whether concurrency was short)
  records   6.2: walk(...) records (runs.py); `advised` the advisor's row and the baseline it changed;
                 `mixed` the final mixed-load rows {"baseline": row, "tuned": row}
  backfire  6.3: rows by name (ROOMY, TIGHT, HIGH_FRACTION; SEATS_HIGH, SEATS_DEFAULT; BUDGET, TINY)
"""
from __future__ import annotations

import math
from typing import NamedTuple

from helpers import models, tuning, verdicts
from helpers.config import ConfigError, EngineConfig
from helpers.load import Load
from helpers.verdicts import Claim
from helpers.slo import SLO
from helpers.tuning import Step

ROOMY, TIGHT, HIGH_FRACTION = "roomy cache", "tight cache", "high fraction"
SEATS_HIGH, SEATS_DEFAULT = "very many seats", "default seats"
BUDGET, TINY = "default budget", "tiny chunks"
FULL_PCT = 90.0  # peak KV usage that counts as "short of room"
HIT_DROP = 0.8  # "loses its hits": the hit rate falls below this share of the roomy cache's


def very_many_seats(engine_max_num_seqs: int, full: bool) -> int:
    """6.3b's "very high" max_num_seqs: twice the engine's default, and at least 256 (1,024 at full size)."""
    return max(2 * int(engine_max_num_seqs), 1024 if full else 256)


class BackfireLoads(NamedTuple):
    churn: Load  # 6.3a: many system prompts, each used a few times
    flood: Load  # 6.3b: short requests, all sent at once
    long_prompts: Load  # 6.3c: several long prompts at once


def backfire_loads(engine_max_num_seqs: int, full: bool) -> BackfireLoads:
    """6.3's three loads, in one place: chapter 6a's tuning walk measures them on the baseline while
    its engine is up, and chapter 6b reads those rows back, which only identical loads find. Sized from
    the baseline engine's resolved `max_num_seqs` (`cap["engine_max_num_seqs"]`) and the run size. The
    flood is a quarter more than `very_many_seats` allows (at the smoke size, a quarter more than the
    engine's default allows: enough for the high value to run more at once)."""
    seats = very_many_seats(engine_max_num_seqs, full) if full else int(engine_max_num_seqs)
    return BackfireLoads(
        churn=Load(kind="prefix", num_prompts=48 if full else 24, prefix_len=512, input_len=32, output_len=16,
                   num_prefixes=16 if full else 8, max_concurrency=4),
        flood=Load(num_prompts=seats * 5 // 4, input_len=32, output_len=16, max_concurrency=None),
        long_prompts=Load(num_prompts=12 if full else 4, input_len=1536, output_len=8, max_concurrency=None))


def tuning_steps(base: EngineConfig, seats: int, engine_max_num_seqs: int, longest_prompt: int, full: bool,
                 gpu_count: int) -> list[Step]:
    """6.2's path, one setting a step, in the order the article gives. A smoke run leaves out the
    max_model_len, memory-fraction and fp8-KV steps; a CUDA machine adds CUDA graphs (the guide's
    baseline is eager, far from vLLM's GPU default) and, with several GPUs, a parallel split."""
    steps = [Step("max_num_seqs", {"max_num_seqs": seats}, 3),
             Step("batch budget", {"max_num_batched_tokens": max(256, int(engine_max_num_seqs))}, 3),
             Step("prefix caching off", {"enable_prefix_caching": False}, 4),
             Step("INT8 weights", {"model": "embedded-int8"}, 5)]
    if full:
        steps = [Step("max_model_len", {"max_model_len": 1 << (longest_prompt - 1).bit_length()}, 2),
                 Step("memory fraction", {"gpu_memory_utilization": base.more_memory(0.4)}, 2), *steps]
        if base.runs_here("kv_cache_dtype", ["fp8"]):
            steps.append(Step("fp8 KV cache", {"kv_cache_dtype": "fp8"}, 5))
    if base.device == "cuda":  # written from vLLM's source; not run where this guide was built
        steps.append(Step("CUDA graphs", {"enforce_eager": False}, 4))
        if (layout := parallel_step(base, gpu_count)) is not None:
            steps.append(layout)
    return steps


def parallel_step(base: EngineConfig, gpu_count: int) -> Step | None:
    """The largest tensor-parallel size the GPUs and the model's heads allow (the embedded model's
    9 heads and 3 KV heads take 3, not 2), else two data-parallel replicas, else None."""
    shape = models.shape(models.resolve(base.model)) or {}
    heads, kv = shape.get("num_attention_heads", 1), shape.get("num_key_value_heads", 1)
    for tp in range(gpu_count, 1, -1):
        if heads % tp == 0 and (kv % tp == 0 or tp % kv == 0):
            return Step(f"{tp} GPUs (TP={tp})", {"tensor_parallel_size": tp}, 5)
    return Step("two GPUs (DP=2)", {"data_parallel_size": 2}, 5) if gpu_count >= 2 else None


_GOODPUT_VERDICT = {tuning.HELPED: verdicts.HELD, tuning.NOTHING: verdicts.NOISE, tuning.HURT: verdicts.NOT_HELD}


def startup_claims(checks: list[dict], share: float, loaded: dict, non_kv_share: float) -> list[Claim]:
    """`share` and `non_kv_share`: the KV cache's and the non-KV memory's shares of the device's
    memory (the NUMA node's on a CPU), as the article reads them."""
    agree = [c for c in checks if c["agree"]]
    off = [c["figure"] for c in checks if not c["agree"]]
    return [
        verdicts.judge("6.1 The start-up log's capacity figures follow from its memory figures", not off,
                     f"{len(agree)} of {len(checks)} figures agree with the harness's arithmetic"
                     + (f"; off: {', '.join(off)}" if off else ""),
                     partly=bool(agree), rule="held: every figure within its tolerance (tokens 1 %, the others 2 %)"),
        band_claim(share, non_kv_share, loaded),
    ]


def band_claim(share: float, non_kv_share: float, loaded: dict) -> Claim:
    """The article's three bands of the KV share of device memory, each judged by what it says."""
    peak, preempted = verdicts.number(loaded, "peak_kv_cache_usage_pct") or 0, verdicts.number(loaded, "preemptions") or 0
    short = peak >= FULL_PCT or preempted > 0
    ev = (f"KV cache {100 * share:.0f} % of the device's memory, non-KV memory {100 * non_kv_share:.0f} %; under the "
          f"service load the cache peaked at {peak:.1f} % with {preempted:.0f} preemption(s)")
    if share < 0.20:
        return verdicts.judge("6.1 A KV share under a fifth means the weights crowd the cache out", non_kv_share > share, ev,
                            rule="held: the non-KV memory (weights, runtime) is larger than the cache")
    if 0.40 <= share < 0.60:
        return verdicts.judge("6.1 A KV share of two to three fifths is a sound configuration", not short, ev,
                            rule=f"held: the service load never filled the cache (peak under {FULL_PCT:.0f} %, no preemption)")
    if share >= 0.70:
        return verdicts.judge("6.1 A KV share above seven tenths leaves plenty of room for concurrency", not short, ev,
                            rule=f"held: the service load never filled the cache (peak under {FULL_PCT:.0f} %, no preemption)")
    return verdicts.untested("6.1 The article's bands of the KV share (under a fifth, two to three fifths, over seven "
                           f"tenths)", f"{ev}: {100 * share:.0f} % lies between the bands, which say nothing about it")


GOODPUT_RULE = ("held: goodput at the target higher beyond noise and the share of requests within the target not "
                "lower beyond noise (the step helped); did not hold: either one lower beyond noise; from a reference "
                f"that met the target for no request, held needs {tuning.FROM_NONE_SHARE:.0%} of the requests (and "
                f"{tuning.FROM_NONE_COUNT}) within it; cannot be judged: no request met it on either side, or the rows "
                "lack per-request latencies")


def _goodput_claim(text: str, before: dict, after: dict, slo: SLO, evidence: str, rule: str = GOODPUT_RULE) -> Claim:
    """A claim that `after` raised goodput at the target over `before` (tuning.effect: goodput and
    the share of requests within the target), with both figures in the evidence."""
    try:
        judged, ratio = tuning.effect(before, after, slo)
    except ConfigError as why:
        return verdicts.untested(text, f"{evidence}: {why}", rule)
    g0, g1 = slo.goodput(before) or 0, slo.goodput(after) or 0
    s0, s1 = slo.met_share(before) or 0, slo.met_share(after) or 0
    times = f"×{ratio:.2f}" if ratio != float("inf") else "none met the target before"
    ev = (f"{evidence}: goodput {g0:.2f} → {g1:.2f} req/s ({times}); within the target {100 * s0:.0f} % → "
          f"{100 * s1:.0f} % of requests (the target asks {100 * slo.share:.0f} %)")
    if g0 == 0 and g1 == 0:
        return verdicts.untested(text, f"{ev}: no request met the target on either side, so goodput cannot tell "
                                       "them apart", rule)
    return Claim(text, _GOODPUT_VERDICT[judged], ev, rule)


def tuning_claims(records: list[dict], advised: dict, advice_text: str, mixed: dict, slo: SLO,
                  fresh: dict | None = None) -> list[Claim]:
    """`fresh`: the kept configuration measured again on prompts no step saw; the path's own row
    was chosen as the best of several noisy rows, so the claim is judged on this one when given."""
    base, kept = records[0], [r for r in records[1:] if r["kept"]]
    best = kept[-1] if kept else base
    steps = ", ".join(f"{r['step']} {r['effect']}" for r in records[1:]) or "no step ran"
    rule = GOODPUT_RULE
    judged_row, how = (fresh, "; judged on a fresh run of the kept configuration (new prompts)") if fresh else (best["row"], "")
    out = [
        _goodput_claim("6.2 One setting at a time, from a baseline, raises goodput at the target", base["row"],
                       judged_row, slo, f"{len(kept)} of {len(records) - 1} steps kept ({steps}){how}", rule),
        _goodput_claim("6.2 The advisor's first advice raises goodput", advised["baseline"], advised["row"], slo,
                       advice_text, rule),
    ]
    if mixed:
        out.append(_goodput_claim("6.2 The tuned configuration still wins on a mixed load", mixed["baseline"],
                                  mixed["tuned"], slo, "final run, long and short prompts together", rule))
    return out


def order_claim(forward: list[dict], reverse: list[dict] | None, slo: SLO) -> Claim:
    """The article's order (memory, scheduling, reuse, quantization last) against the same steps
    in the opposite order (quantization first), on the same load: each path's kept configuration."""
    text = "6.2 The order matters: quantize last, or a faster kernel hides a scheduling problem"
    if not reverse:
        return verdicts.untested(text, "the opposite order costs one engine start per step; it runs at full size "
                                     "(GUIDE_SIZE=full)")
    best = lambda path: next((r for r in reversed(path) if r["kept"]), path[0])  # noqa: E731
    a, b = best(forward), best(reverse)
    kept = lambda path: ", ".join(r["step"] for r in path[1:] if r["kept"]) or "none"  # noqa: E731
    return _goodput_claim(text, b["row"], a["row"], slo,
                          f"the article's order kept {kept(forward)}; quantization first kept {kept(reverse)}; "
                          "the opposite order's kept configuration against the article's",
                          "held: the article's order ends with a higher goodput than the opposite order beyond "
                          "noise, and no smaller share within the target; within noise: the order did not matter "
                          "here; cannot be judged: no request met the target on either path")


def prefix_room(row) -> tuple[int, int] | None:
    """(cache blocks left beside the running requests, blocks the load's distinct prefixes take), from
    the row's own figures: the engine's KV tokens and block size, and the load's prefixes, lengths
    and concurrency. Only whole blocks of a prefix are cached (vLLM hashes full blocks), and a running
    request shares those with the cache, so only its own blocks count against the room; one block is
    the block pool's null block (`BlockPool.__init__`), never handed out. None where the row lacks a
    figure."""
    g = lambda k: verdicts.number(row, k)  # noqa: E731
    tokens, block, prefixes, prefix = g("kv_cache_tokens"), g("block_size"), g("load_num_prefixes"), g("load_prefix_len")
    prompts = g("load_num_prompts")
    if None in (tokens, block, prefixes, prefix, prompts) or not block:
        return None
    running = min(g("load_max_concurrency") or prompts, prompts)
    shared = prefix // block  # the prefix's full blocks: the cache's, shared by every request that starts with it
    own = math.ceil((prefix + (g("load_input_len") or 0) + (g("load_output_len") or 0)) / block) - shared
    return int(tokens // block - 1 - running * own), int(prefixes * shared)


TIGHT_RULE = (f"a demonstration, not a test of the article: the notebook makes this cache short on purpose. Held: the "
              f"tight cache's hit rate under {HIT_DROP:.0%} of the roomy one's (it fails if the prefixes come back "
              "before vLLM evicts them); cannot be judged: the roomy cache had no hits or no room for every prefix, "
              "or the tight one had room for all of them")


def tight_cache_claim(roomy, tight) -> Claim:
    """6.3a's mechanism, shown on a cache made short on purpose: a demonstration, and its rule says so.
    Its premise is checked from the rows (`prefix_room`): the roomy cache holds every prefix beside the
    running requests and had hits; the tight one cannot hold them all."""
    text = "6.3a (demonstration) Prefix caching loses its hits when the cache is short of room"
    a, b = verdicts.number(roomy, "prefix_cache_hit_rate") or 0, verdicts.number(tight, "prefix_cache_hit_rate") or 0
    ev = (f"hit rate {100 * a:.0f} % with room, {100 * b:.0f} % in the tight cache; median TTFT "
          f"{verdicts.number(roomy, 'median_ttft_ms') or 0:,.0f} → {verdicts.number(tight, 'median_ttft_ms') or 0:,.0f} ms")
    room, short = prefix_room(roomy), prefix_room(tight)
    if room is None or short is None:
        return verdicts.untested(text, f"{ev}; the rows lack the cache or load figures that say how much room there was",
                                 TIGHT_RULE)
    ev += (f"; blocks left beside the running requests: {room[0]} roomy, {short[0]} tight, for {short[1]} blocks of "
           "distinct prefixes")
    if a == 0 or room[0] < room[1]:
        return verdicts.untested(text, f"{ev}: the roomy cache " + ("had no hits to lose" if a == 0 else
                                                                   "was short of room too"), TIGHT_RULE)
    if short[0] >= short[1]:
        return verdicts.untested(text, f"{ev}: the tight cache had room for every prefix, so it was not short",
                                 TIGHT_RULE)
    return verdicts.judge(text, b < HIT_DROP * a, ev, partly=b < a, rule=TIGHT_RULE)


def backfire_claims(rows: dict) -> list[Claim]:
    out = []
    roomy, tight = rows.get(ROOMY), rows.get(TIGHT)
    if roomy is not None and tight is not None:
        out.append(tight_cache_claim(roomy, tight))
    if roomy is not None and (high := rows.get(HIGH_FRACTION)) is not None:
        a, b = verdicts.number(roomy, "prefix_cache_hit_rate") or 0, verdicts.number(high, "prefix_cache_hit_rate") or 0
        out.append(verdicts.judge(
            "6.3a …and a high memory fraction is what takes the room", b < HIT_DROP * a,
            f"hit rate {100 * a:.0f} % at the default fraction, {100 * b:.0f} % at "
            f"{verdicts.number(high, 'cfg_gpu_memory_utilization') or 0:g}; KV tokens "
            f"{verdicts.number(roomy, 'kv_cache_tokens') or 0:,.0f} → {verdicts.number(high, 'kv_cache_tokens') or 0:,.0f}",
            partly=b < a, rule=f"held: the higher fraction's hit rate under {HIT_DROP:.0%} of the default's"))
    elif roomy is not None:
        out.append(verdicts.untested("6.3a …and a high memory fraction is what takes the room",
                                   "runs at full size (GUIDE_SIZE=full)"))
    if (many := rows.get(SEATS_HIGH)) is not None and (few := rows.get(SEATS_DEFAULT)) is not None:
        text = "6.3b A very high max_num_seqs with a flood of short requests lowers throughput"
        seats = verdicts.number(few, "engine_max_num_seqs") or 0
        ran = verdicts.number(many, "peak_running") or 0
        evidence = (f"max_num_seqs {seats:.0f} (default) vs {verdicts.number(many, 'engine_max_num_seqs') or 0:.0f}: "
                    f"{verdicts.number(few, 'request_throughput'):.2f} vs {verdicts.number(many, 'request_throughput'):.2f} "
                    f"requests/s; peak running {verdicts.number(few, 'peak_running') or 0:.0f} vs {ran:.0f}")
        if ran <= seats:
            out.append(verdicts.untested(text, f"{evidence}: the flood never ran more at once than the default allows"))
        else:
            out.append(verdicts.judge_change(text, few, many, "request_throughput", better="lower", held_at=1.1,
                                           unit="req/s", evidence=evidence))
    if (budget := rows.get(BUDGET)) is not None and (tiny := rows.get(TINY)) is not None:
        out.append(verdicts.judge_change(
            "6.3c A tiny prefill chunk with many long prompts raises TTFT", budget, tiny, "median_ttft_ms",
            better="higher", held_at=1.1, unit="ms"))
    return out


# -- 6.1: each figure of the report, cross-checked ----------------------------------------------
# The article's reading of the KV cache's share of the engine's memory (its own rule of thumb,
# from load tests): (upper bound of the band, what it says). Chapter 6 tests it on this machine.
KV_SHARE_BANDS = ((0.20, "low: the weights take most of the memory; quantize, or add devices"),
                  (0.40, "between the article's bands"),
                  (0.60, "reasonable: tune max_model_len and the concurrency cap next"),
                  (0.70, "between the article's bands"),
                  (1.01, "high: plenty of concurrency; watch long sequences for overflow"))


def kv_share_band(share: float) -> str:
    """The article's reading of the KV cache's share of the device's memory (0–1)."""
    return next(text for top, text in KV_SHARE_BANDS if share < top)


def explain(row: dict, shape: dict, bytes_per_number: int, max_model_len: int, fraction: float) -> list[dict]:
    """Each capacity figure the engine reported, beside what the harness computes from the
    model's config.json and the settings, and whether the two agree (within `tolerance`).
    Figures the engine did not report (a GPU log has no node memory) are left out."""
    per_token = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * bytes_per_number
    g = lambda k: row.get(k)  # noqa: E731
    checks = []

    def add(figure, reported, computed, how, tolerance=0.02):
        if reported is None or computed is None:
            return
        ok = abs(float(reported) - float(computed)) <= tolerance * max(abs(float(computed)), 1e-9)
        checks.append({"figure": figure, "engine": reported, "computed": computed, "how": how, "agree": ok})

    if g("kv_cache_gib") is not None:
        blocks = int(g("kv_cache_gib") * 2**30 // (per_token * (g("block_size") or 1)))
        add("KV cache tokens", g("kv_cache_tokens"), blocks * (g("block_size") or 1),
            f"KV GiB ÷ {per_token:,} bytes per token, in whole blocks", tolerance=0.01)
    if g("num_blocks") and g("block_size"):
        add("KV cache tokens (blocks)", g("kv_cache_tokens"), g("num_blocks") * g("block_size"), "blocks × block size", 0)
    if g("kv_cache_tokens"):
        add("max concurrency", g("max_concurrency"), g("kv_cache_tokens") / max_model_len,
            f"KV tokens ÷ max_model_len ({max_model_len})")
    if g("node_memory_gib") is not None:
        add("memory budget (GiB)", g("memory_budget_gib"), fraction * g("node_memory_gib"),
            f"gpu_memory_utilization ({fraction}) × the node's memory")
    if g("memory_budget_gib") is not None and g("non_kv_gib") is not None:
        add("KV cache (GiB)", g("kv_cache_gib"), g("memory_budget_gib") - g("non_kv_gib"), "budget − non-KV memory")
    return checks
