"""A tuning advisor: from one measured row (its figures, the engine's resolved settings and the
/metrics peaks) name the limit the run hit and propose the next change, with the evidence.

The rules follow chapters 2 to 5, most pressing first:
  1. the KV cache is full (preemptions, or usage at the top)        → more KV memory, or fp8 KV
  2. requests queue at max_num_seqs while the cache has room          → more seats
  3. long prefills stall running decodes (one huge token gap)         → a smaller prefill budget
  4. a repeated prompt start that the prefix cache does not reuse      → caching on, or smaller blocks
  5. many requests share each step and TPOT is what missed            → fewer seats
  6. none of those: each decode step itself costs the time             → compile, then fewer weight bytes
     (fewer bytes first where the row carries chapter 7's floor, `with_floor`, and runs near it)
Given a latency target (`slo`), the diagnosis first names the half of it that was missed (TTFT,
TPOT or both) and keeps only the rules whose change works on that half: more seats and prefix
reuse shorten the wait for a first token; room in the cache, fewer seats and cheaper steps shorten the time per
token (fewer seats lengthen the queue, so they are offered only when TTFT held); a smaller
budget works on both, since a short request that arrives during a long prefill waits for that
step too.
The advice is a change to an EngineConfig; a notebook measures the changed config and the
chapter's verdict says whether the advice helped, so the advisor is checked against the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from helpers import hardware
from helpers.config import EngineConfig
from helpers.i18n import N_, tr
from helpers.results import roofline, rows

KV_FULL_PCT = 90.0  # peak KV-cache usage (%) that counts as full
STALL_FACTOR = 10.0  # worst token gap this many times the median gap: something stalled decoding
STALL_MIN_MS = 300.0  # …and long enough for a reader to notice
LOW_HIT_RATE = 0.10
SMALL_BUDGET = 256  # tokens per step that kept decodes smooth in chapter 3
CPU_MAX_FRACTION = 0.5  # a memory fraction the advisor will go up to on a CPU (chapter 2)


@dataclass
class Advice:
    limit: str  # what the run hit, in a few words
    evidence: str  # the figures that show it
    change: dict = field(default_factory=dict)  # settings for EngineConfig.replace; {} when there is nothing to try
    why: str = ""  # why the change should help
    chapter: int = 0  # where the lever is explained

    def apply(self, config: EngineConfig) -> EngineConfig:
        return config.replace(**self.change)

    def text(self) -> str:
        """The advice in the learner's language (its limit is a fixed name, matched in English elsewhere, so it
        is translated here, where it is shown)."""
        change = ", ".join(f"{k}={v!r}" for k, v in self.change.items()) or tr("no setting to change")
        return tr("{limit}: {evidence}. Try {change}: {why} (chapter {chapter}).", limit=tr(self.limit),
                  evidence=self.evidence, change=change, why=self.why, chapter=self.chapter)


def _num(row: dict, key: str, default: float = 0.0) -> float:
    value = row.get(key)
    try:
        return default if value is None else float(value)
    except (TypeError, ValueError):
        return default


def _cpu_fraction_ceiling(row: dict) -> float:
    """The largest fraction the advisor proposes on a CPU: CPU_MAX_FRACTION, or less where the node has not that
    much free (vLLM's CPUWorker refuses a fraction above the node's available memory at start-up): nine tenths of
    what is free now plus what the row's own engine held, over the node's memory the row reports."""
    node, budget = _num(row, "node_memory_gib"), _num(row, "memory_budget_gib")
    if not node:
        return CPU_MAX_FRACTION
    return min(CPU_MAX_FRACTION, 0.9 * (hardware.available_ram_gib() + budget) / node)


def _kv_full(row: dict, config: EngineConfig) -> Advice | None:
    usage, preempted = _num(row, "peak_kv_cache_usage_pct"), _num(row, "preemptions")
    if usage < KV_FULL_PCT and preempted == 0:
        return None
    evidence = tr("KV cache usage peaked at {usage:.0f} %, {preempted:.0f} preemption(s)", usage=usage,
                  preempted=preempted)
    if config.num_gpu_blocks_override is not None or config.kv_cache_memory_bytes is not None:
        return Advice(tr("KV cache full"), evidence + tr(" on a cache fixed in size"),
                      {"num_gpu_blocks_override": None, "kv_cache_memory_bytes": None},
                      tr("size the cache from the memory fraction instead of a fixed number of blocks or bytes"), 2)
    fraction = config.memory_fraction
    if config.device == "cpu" and (more := round(min(_cpu_fraction_ceiling(row), fraction * 1.5), 2)) > fraction:
        return Advice(N_("KV cache full"), evidence,
                      {"gpu_memory_utilization": more},
                      tr("a larger memory fraction leaves more room for KV blocks, so fewer requests are preempted"), 2)
    if config.kv_cache_dtype == "auto" and config.runs_here("kv_cache_dtype", ["fp8"]):
        return Advice(N_("KV cache full"), evidence, {"kv_cache_dtype": "fp8"},
                      tr("an fp8 cache holds about twice the tokens in the same memory"), 5)
    return Advice(N_("KV cache full"), evidence, {"max_num_seqs": max(1, int(_num(row, "peak_running", 2)) // 2)},
                  tr("no more memory to give: fewer sequences at once avoids recomputing preempted ones"), 3)


def _queueing(row: dict, config: EngineConfig) -> Advice | None:
    seats = float(rows.setting(row, "max_num_seqs") or 0)
    running, waiting = _num(row, "peak_running"), _num(row, "peak_waiting")
    if not seats or running < seats or waiting == 0 or _num(row, "peak_kv_cache_usage_pct") >= KV_FULL_PCT:
        return None  # a full cache is the other rule's: more seats would only wait for blocks
    return Advice(N_("Requests queue for a seat"), tr("{running:.0f} running = max_num_seqs, up to {waiting:.0f} "
                                                  "waiting, KV cache at most {num:.0f} % full", running=running,
                                                  waiting=waiting, num=_num(row, 'peak_kv_cache_usage_pct')),
                  {"max_num_seqs": int(seats * 2)}, tr("the cache has room for more sequences than the cap lets in"), 3)


def _stalls(row: dict, config: EngineConfig) -> Advice | None:
    worst = _num(row, "short_max_itl_ms") or _num(row, "max_itl_ms")
    typical = _num(row, "short_median_itl_ms") or _num(row, "median_itl_ms")
    if not typical or worst < STALL_FACTOR * typical or worst < STALL_MIN_MS:
        return None
    evidence = tr("the worst gap between two tokens was {worst:,.0f} ms against a median of {typical:.0f} ms",
                  worst=worst, typical=typical)
    budget = config.max_num_batched_tokens
    if config.enable_chunked_prefill is False:
        return Advice(N_("Long prefills stall decoding"), evidence, {"enable_chunked_prefill": True},
                      tr("with chunking on, a long prompt is cut into pieces that share steps with running decodes"), 3)
    seats = rows.setting(row, "max_num_seqs") or config.effective("max_num_seqs") or 0  # as the engine ran it
    # not below the seats the engine ran: a smaller budget would lower them too (vLLM does for an unset cap)
    small = max(SMALL_BUDGET, int(seats))
    if budget is None or budget > small:
        return Advice(N_("Long prefills stall decoding"), evidence, {"max_num_batched_tokens": small},
                      tr("a smaller token budget per step caps how much prefill rides along with each decode step"), 3)
    if config.long_prefill_token_threshold is None:
        return Advice(N_("Long prefills stall decoding"), evidence, {"long_prefill_token_threshold": SMALL_BUDGET // 2},
                      tr("caps the prompt tokens one request may take per step while others run"), 3)
    return None


def _prefix(row: dict, config: EngineConfig) -> Advice | None:
    if row.get("load_kind") != "prefix" or _num(row, "load_num_prefixes") >= _num(row, "load_num_prompts"):
        return None
    rate = _num(row, "prefix_cache_hit_rate")
    if rate >= LOW_HIT_RATE:
        return None
    evidence = (tr("{num:.0f} requests share {num_2:.0f} prompt start(s), yet the hit rate was {value:.0f} %",
                   num=_num(row, 'load_num_prompts'), num_2=_num(row, 'load_num_prefixes'), value=100 * rate))
    if row.get("engine_enable_prefix_caching") is False or config.enable_prefix_caching is False:
        return Advice(N_("A repeated prefix is computed again"), evidence, {"enable_prefix_caching": True},
                      tr("the cache reuses the KV blocks of a prompt start that an earlier request computed"), 4)
    block, prefix = _num(row, "block_size", 128), _num(row, "load_prefix_len")
    if prefix < block:
        said = evidence + tr(" ({prefix:.0f}-token prefix, {block:.0f}-token blocks)", prefix=prefix, block=block)
        smallest = 32 if config.device == "cpu" else 16  # the CPU kernel works in 32-token tiles
        fits = 1 << (int(prefix).bit_length() - 1) if prefix >= 1 else 0  # largest power of two <= prefix
        if fits < smallest:
            return Advice(N_("A repeated prefix is shorter than one KV block"), said, {},
                          tr("only whole blocks are cached, and no block size is that small: lengthen the shared "
                             "prefix"), 4)
        return Advice(N_("A repeated prefix is shorter than one KV block"), said, {"block_size": fits},
                      tr("only whole blocks are cached; with smaller blocks the prefix fills at least one"), 4)
    return None


def _crowded(row: dict, config: EngineConfig) -> Advice | None:
    """Offered only when TPOT is the half that missed: fewer sequences per step make each step
    shorter, and the queue (TTFT) pays for it."""
    running = _num(row, "peak_running")
    if running < 4:
        return None
    return Advice(
        N_("Many requests share each decode step"),
        tr(
            "up to {running:.0f} requests ran at once, median TPOT {num:.1f} ms",
            running=running,
            num=_num(row, "median_tpot_ms"),
        ),
        {"max_num_seqs": max(2, int(running) // 2)},
        tr(
            "each step carries one token per running request, so fewer seats make a step, and the time "
            "per token, shorter; the requests held back wait longer for their first token"
        ),
        3,
    )


def _step_cost(row: dict, config: EngineConfig) -> Advice:
    """Chapter 7's MBU, where the row has it, picks the lever: near the bandwidth floor only fewer
    bytes help; far from it the time goes to per-step overhead, which compiling cuts."""
    evidence = tr(
        "no seat limit hit (peak running {num:.0f}, peak waiting {num_2:.0f}), KV cache at most "
        "{num_3:.0f} % full, mean TPOT {num_4:.1f} ms",
        num=_num(row, "peak_running"),
        num_2=_num(row, "peak_waiting"),
        num_3=_num(row, "peak_kv_cache_usage_pct"),
        num_4=_num(row, "mean_tpot_ms"),
    )
    mbu = row.get("mbu")
    if mbu is not None:
        evidence += tr(
            " against a bandwidth floor of {num:.1f} ms (MBU {mbu:.2f})", num=_num(row, "roofline_tpot_ms"), mbu=mbu
        )
        if mbu >= roofline.NEAR_FLOOR and config.model == "embedded":
            return Advice(
                N_("Each decode step costs the time"),
                evidence,
                {"model": "embedded-int8"},
                tr(
                    "the step runs near the floor its bytes set (chapter 7), so only fewer bytes make it "
                    "shorter: INT8 weights read fewer (the lm_head stays unquantized)"
                ),
                5,
            )
    if config.enforce_eager:
        return Advice(
            N_("Each decode step costs the time"),
            evidence,
            {"enforce_eager": False},
            tr(
                "compiling (torch.compile; CUDA graphs on a GPU) fuses operators and removes per-operator "
                "overhead, so each step is cheaper, for a longer start"
            ),
            4,
        )
    if config.model == "embedded":
        return Advice(
            N_("Each decode step costs the time"),
            evidence,
            {"model": "embedded-int8"},
            tr(
                "a decode step reads every weight once for few tokens, so it is bound by the bytes it "
                "reads more than by arithmetic; INT8 weights are half the bytes (measure it: on this "
                "small model the unquantized lm_head stays, in the compute dtype, and the CPU's INT8 path "
                "also quantizes every activation)"
            ),
            5,
        )
    return Advice(
        N_("Each decode step costs the time"),
        evidence,
        {},
        tr("the engine is doing all it can with these cores: a smaller model or more hardware is next"),
        5,
    )


RULES = (_kv_full, _queueing, _stalls, _prefix)
HELPS = {"TTFT": (_kv_full, _queueing, _stalls, _prefix), "TPOT": (_kv_full, _stalls, _crowded)}


def missed(row: dict, slo) -> str | None:
    """Which half of the target the row missed: "TTFT", "TPOT", "TTFT and TPOT", or None when the
    required share of the requests sent met both at once (`SLO.met_share`: a failed request is a
    miss), or the row has no per-request figures. Where the row missed, the half named is each half
    whose own share fell short, else the one more requests missed."""
    share = slo.met_share(row)
    if share is None or share >= slo.share:
        return None
    halves, misses = [], {}
    for name, key, limit in (("TTFT", "request_ttft_ms", slo.ttft_ms), ("TPOT", "request_tpot_ms", slo.tpot_ms)):
        shares = []
        for run in row.get("runs") or [row]:
            if run.get(key):
                sent = len(run[key]) + int(run.get("failed") or 0)
                shares.append(sum(v <= limit for v in run[key]) / sent)
        if shares:
            misses[name] = 1 - sorted(shares)[len(shares) // 2]
            if sorted(shares)[len(shares) // 2] < slo.share:
                halves.append(name)
    if not halves and misses:  # each half alone met the share, but not both together
        halves = [max(misses, key=misses.get)]
    return " and ".join(halves) or None


def _said(half: str) -> str:
    """`missed()`'s answer in the learner's language ("TTFT and TPOT" is compared as it is, in English)."""
    first, _, second = half.partition(" and ")
    return tr("{first} and {second}", first=first, second=second) if second else half


def diagnose(row: dict, config: EngineConfig, slo=None) -> list[Advice]:
    """Every limit the row shows, most pressing first; the last resort (the step's own cost) only
    when no other rule fires. With `slo`, each diagnosis names the half of the target that was
    missed, and only rules that work on that half are kept."""
    half = missed(row, slo) if slo is not None else None
    if half is None:
        found = [a for rule in RULES if (a := rule(row, config)) is not None]
        if slo is not None and not found:
            return [
                Advice(
                    N_("The target was met"),
                    tr(
                        "{value:.0f} % of the requests met {label}",
                        value=100 * (slo.met_share(row) or 0),
                        label=slo.label(),
                    ),
                    {},
                    tr("nothing to fix at this rate: offer more load to find where it stops"),
                    6,
                )
            ]
        return found or [_step_cost(row, config)]
    rules = [
        r
        for r in (_kv_full, _queueing, _stalls, _prefix, _crowded)
        if any(r in HELPS[h] for h in half.split(" and ")) and not (r is _crowded and "TTFT" in half)
    ]
    found = [a for rule in rules if (a := rule(row, config)) is not None]
    if "TPOT" in half and not any(a.limit == "Each decode step costs the time" for a in found):
        found.append(_step_cost(row, config))
    for a in found:
        a.limit = tr("{half} missed · {limit}", half=_said(half), limit=tr(a.limit))
    if not found:  # TTFT alone missed and nothing above explains it: the steps themselves are slow
        found = [_step_cost(row, config)]
        found[0].limit = tr("{half} missed · {limit}", half=_said(half), limit=tr(found[0].limit))
    return found


def advise(row: dict, config: EngineConfig, slo=None) -> Advice:
    """The first diagnosis: the change to measure next."""
    return diagnose(row, config, slo)[0]
