"""Chapter 1: stock vs tuned settings, and one chain of settings (memory fraction → KV space →
sequences that fit → throughput)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from helpers import verdicts
from helpers.exercises import Question
from helpers.i18n import N_, tr
from helpers.load import Load
from helpers.results import rows

ARTICLE_FACTOR = 2.0  # the article: P99 latency more than twice as bad with the stock settings
FULL_PCT = 80  # a cache this full (peak KV usage, %) is what limits admission
RULE_TESTED = (f"tested only when the smallest cache filled (≥ {FULL_PCT} %) and ran fewer sequences than the largest "
               "or preempted more")


def serve_dtype(config_dtype: str | None, device: str = "cpu") -> str | None:
    """The dtype `vllm serve` computes in with its default `--dtype auto`, on an x86 or Arm Linux CPU.

    vLLM's `_resolve_auto_dtype` (vllm/config/model.py) keeps the model's own dtype when the
    platform lists it, and turns a float32 model into the platform's first choice. The CPU
    platform (`CpuPlatform.supported_dtypes`, vllm/platforms/cpu.py) lists bf16, fp16, fp32 on
    every x86 CPU, whether or not it has bf16 instructions. None on a GPU (its compute capability
    decides) or where the model's config names no dtype."""
    if device != "cpu" or not config_dtype:
        return None
    dtype = str(config_dtype).replace("torch.", "")
    return "bfloat16" if dtype == "float32" else dtype


def dtype_note(stock_dtype: str, config_dtype: str | None, device: str = "cpu") -> str:
    """One line: the dtype stock runs in here, beside the one `vllm serve` would pick."""
    serve = serve_dtype(config_dtype, device)
    if serve is None or serve == stock_dtype:
        return tr("dtype: stock runs in {stock_dtype}, as `vllm serve` would here.", stock_dtype=stock_dtype)
    return (tr("dtype: stock runs in {stock_dtype}; `vllm serve` would run in {serve} (its `--dtype auto`). "
               "{stock_dtype} is the guide's pick for this CPU (chapter 0), and tuned keeps it too.",
               stock_dtype=stock_dtype, serve=serve))


def fraction_for(row, kv_tokens: float) -> float | None:
    """The memory fraction that would give a KV cache of `kv_tokens`, from what an engine with
    the same model and settings reported: its non-KV memory, its bytes per KV token and the
    memory the fraction applies to (CPU: the NUMA node). None where the row lacks those figures.
    Exact, not rounded: on a node of 100 GiB a third decimal is 0.1 GiB, several per cent of the
    fraction, more than an exercise's tolerance; `start_fraction` rounds for a start, upwards."""
    try:
        per_token = float(row["kv_cache_gib"]) / float(row["kv_cache_tokens"])
        node, non_kv = float(row["node_memory_gib"]), float(row["non_kv_gib"])
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not node or any(v != v for v in (node, non_kv, per_token)):  # NaN: a GPU's report, an imported row
        return None
    return (non_kv + kv_tokens * per_token) / node


def start_fraction(row, kv_tokens: float) -> float | None:
    """`fraction_for` rounded up to five decimals, the value an engine is started with: rounding
    down could leave less cache than asked for, and refuse the start. Five, not three: a thousandth
    of a 256 GiB node is a quarter of a GiB, more than the whole cache the chain's load needs."""
    exact = fraction_for(row, kv_tokens)
    return None if exact is None else math.ceil(exact * 100_000 - 1e-9) / 100_000


MARGIN_MIB = 64  # above one full-length sequence in the smallest chain fraction: the start-to-start spread


@dataclass(frozen=True)
class ChainDesign:
    """1.2's design: memory fractions that give caches of a few multiples of what the load needs at
    its peak, computed from an engine's own memory report (`fraction_for`), or a fixed range where
    the report lacks the figures (a GPU's start-up log has no node memory)."""

    fractions: list[float]
    need_tokens: int
    fits_at: float | None  # the fraction at which the whole load just fits
    multiples: tuple[float, ...]

    def multiple(self, row, fraction: float) -> float:
        """The cache a fraction gives by the report's arithmetic, as a multiple of what the load needs."""
        per_token = row["kv_cache_gib"] * 2**30 / row["kv_cache_tokens"]
        return (fraction * row["node_memory_gib"] - row["non_kv_gib"]) * 2**30 / per_token / self.need_tokens

    def text(self, row) -> str:
        if self.fits_at is None:
            return (tr("The engine's report lacks the memory figures, so a fixed range of fractions is tried: "
                       "{fractions}.", fractions=self.fractions))
        per_token = row["kv_cache_gib"] * 2**30 / row["kv_cache_tokens"]
        return (tr("At its peak the load needs a cache of {need_tokens:,} KV tokens (its requests' blocks, plus "
                   "the one block vLLM keeps back as its null block). From the engine's report ({non_kv_gib} GiB "
                   "not KV cache, {per_token:,.0f} bytes a KV token, fractions of {node_memory_gib} GiB) the cell "
                   "computed the fraction at which it just fits (exercise 3 asks you for it) and tries "
                   "{fractions}, aiming at {value} times the cache the load needs; by the report's arithmetic they "
                   "give about {value_2} times, never less than one full-length sequence and {margin_mib} MiB more "
                   "(vLLM requires the sequence to start, and the worker's own memory moves by tens of MiB from "
                   "one start to the next).", need_tokens=self.need_tokens, non_kv_gib=row['non_kv_gib'],
                   per_token=per_token, node_memory_gib=row['node_memory_gib'], fractions=self.fractions,
                   value=' / '.join((f'{m:g}' for m in self.multiples)),
                   value_2=' / '.join((f'{self.multiple(row, f):.2f}' for f in self.fractions)), margin_mib=MARGIN_MIB))


def chain_design(ref, load: Load, max_model_len: int, multiples=(0.5, 2), fixed=(0.3, 0.9)) -> ChainDesign:
    block = verdicts.number(ref, "block_size")
    # one block more than the requests hold: the block pool keeps one back as its null block
    # (`BlockPool.__init__` in vllm/v1/core/block_pool.py), and the reported cache counts it
    need = load.peak_kv_tokens(int(block)) + int(block) if block else load.peak_kv_tokens(1)  # no block size: unrounded
    fits_at = fraction_for(ref, need)
    if fits_at is None:
        return ChainDesign(list(fixed), need, None, tuple(multiples))
    # One full-length sequence must fit (vLLM refuses to start otherwise) and the null block, with a
    # margin in bytes above the worker's start-to-start spread in memory (about 30 MiB seen on CI hosts:
    # each start's non-KV figure moves, and the cache takes what is left).
    per_token = float(ref["kv_cache_gib"]) * 2**30 / float(ref["kv_cache_tokens"])
    floor = max_model_len + (int(block) if block else 0) + MARGIN_MIB * 2**20 / per_token
    fractions = sorted({start_fraction(ref, max(m * need, floor)) for m in multiples})
    return ChainDesign(fractions, need, fits_at, tuple(multiples))


def attribution(ablation: pd.DataFrame, metric: str = "p99_itl_ms") -> dict[str, float]:
    """How far each single change moves `metric` from stock, as stock/changed (×>1: better)."""
    stock = ablation.loc["stock", metric]
    return {name: verdicts.ratio(stock, ablation.loc[name, metric]) for name in ablation.index if name != "stock"}


SINGLE = {"stock + max_model_len": "max_model_len", "stock + budget": "max_num_batched_tokens"}


def did_the_work(ablation: pd.DataFrame, metric: str = "p99_itl_ms") -> str | set[str]:
    """Exercise 1: the single change that moved stock's `metric` more, or both where their effects lie
    the same (the interval of the ratio of the two rows' figures holds ×1, `verdicts.within_noise`): a run
    cannot tell."""
    gains = attribution(ablation, metric)
    (a, ga), (b, gb) = ((name, gains[name]) for name in SINGLE)
    if min(ga, gb) > 0 and verdicts.within_noise(ablation.loc[a], ablation.loc[b], metric):
        return set(SINGLE.values())
    return SINGLE[a] if ga > gb else SINGLE[b]


def stock_vs_tuned(stock, tuned) -> verdicts.Claim:
    text = ("Tuned beats stock a lot: P99 latency over 2× lower (the article's figure; judged on P99 inter-token "
            "latency, what the long prompts stall), and throughput higher")
    if not (stock["p99_itl_ms"] > 0 and tuned["p99_itl_ms"] > 0):
        # Tokens that arrive in one burst have no gaps between them: the server's front end was starved
        # (another program busy on the same cores), so this run measured the machine, not the settings.
        return verdicts.untested(
            text,
            tr(
                "a P99 ITL of 0 ms (stock {p99_itl_ms:.0f}, tuned {p99_itl_ms_2:.0f}): "
                "the tokens arrived in bursts, so the machine was too busy to measure; "
                "run again with FORCE = True",
                p99_itl_ms=stock["p99_itl_ms"],
                p99_itl_ms_2=tuned["p99_itl_ms"],
            ),
            rule=tr("tested only when both runs streamed their tokens"),
        )
    if apart := rows.no_collision(stock, tuned):
        return verdicts.untested(
            text, apart, rule=tr("tested only where the long prompts met short answers in both runs")
        )
    itl_iv = verdicts.ratio_interval(tuned, stock, "p99_itl_ms")  # stock ÷ tuned: above ×1 is tuned lower
    thr_iv = verdicts.ratio_interval(stock, tuned, "output_throughput")
    if itl_iv is None or thr_iv is None:
        return verdicts.untested(
            text,
            tr("a P99 ITL or an output throughput is missing from a row"),
            rule=tr("tested only where both rows have both figures"),
        )
    ttft = verdicts.ratio(stock["p99_ttft_ms"], tuned["p99_ttft_ms"])
    itl_noise, thr_noise = itl_iv.includes(1.0), thr_iv.includes(1.0)
    # No change whose interval also excludes the article's ×2 is "within noise" (a change that size did not
    # show); one whose interval holds ×2 as well cannot tell (chapter 0).
    excluded = itl_noise and not itl_iv.includes(ARTICLE_FACTOR)
    # Each half in its own direction: the chat users' P99 ITL lower, the throughput higher. A TTFT
    # that improved does not make up for an ITL that got worse, nor a latency gain for lost throughput.
    lat_better = itl_iv.lo > 1
    lat_held, thr_better = lat_better and itl_iv.value >= ARTICLE_FACTOR, thr_iv.lo > 1
    said = lambda better, noise: tr("no change beyond noise") if noise else ("better" if better else "worse")
    return verdicts.judge(
        text,
        lat_held and thr_better,
        tr(
            "P99 ITL stock/tuned {text_value} ({said}); throughput tuned/stock {text_value_2} ({said_2}); P99 TTFT "
            "stock/tuned ×{ttft:.2f}, for reference",
            text_value=itl_iv.text(),
            said=said(lat_better, itl_noise),
            text_value_2=thr_iv.text(),
            said_2=said(thr_better, thr_noise),
            ttft=ttft,
        )
        + (
            tr("; the article's ×{article_factor:g} lies outside the P99 ITL interval", article_factor=ARTICLE_FACTOR)
            if excluded
            else ""
        )
        + bursts_note(stock=stock, tuned=tuned),
        # partly only where neither half moved the wrong way beyond noise, and the latency half, if it did not
        # move, still holds the article's ×2 (an interval that excludes it refutes the claim's headline)
        partly=(lat_better or thr_better)
        and (lat_better or (itl_noise and not excluded))
        and (thr_better or thr_noise),
        within_noise=itl_noise and thr_noise and excluded,
        cannot_tell=itl_noise and thr_noise and not excluded,
        rule=tr(
            "held: tuned's P99 ITL ×{article_factor:g} or more lower and its throughput higher, each ratio's "
            "95 % interval beyond no change; partly: one of the two better beyond noise and the other not "
            "worse (a P99 ITL whose interval holds ×1 but excludes ×{article_factor:g} counts as worse); both "
            "intervals holding no change: within noise where the P99 ITL interval excludes "
            "×{article_factor:g}, else cannot tell",
            article_factor=ARTICLE_FACTOR,
        ),
    )


def bursts_note(**named: dict) -> str:
    """A run where more than half the gaps between tokens are bursts (a median ITL under a tenth of the median
    TPOT: the front end was starved and delivered queued tokens together) still measured its longest gaps, but
    the reader should know: said beside the verdict rather than refusing it."""
    starved = [
        f"{name}'s median ITL {row['median_itl_ms']:.3f} ms against a median TPOT of {row['median_tpot_ms']:.0f} ms"
        for name, row in named.items()
        if row.get("median_itl_ms") is not None
        and row.get("median_tpot_ms")
        and row["median_itl_ms"] < 0.1 * row["median_tpot_ms"]
    ]
    return (
        (
            "; "
            + ", ".join(starved)
            + tr(
                ": more than half of its tokens came in bursts (the machine was busy), "
                "so its P99 ITL measured the longest gaps of a busy run"
            )
        )
        if starved
        else ""
    )


def chain_capacity(chain: pd.DataFrame) -> verdicts.Claim:
    if len(chain) < 2:
        return verdicts.untested(
            N_("A larger memory fraction ripples down to more KV tokens and a higher max concurrency"),
            tr("a chain of {n_chain} fraction(s) cannot show a rise", n_chain=len(chain)),
            rule=tr("held: both rise strictly with every larger fraction"),
        )
    rose = bool((chain.kv_cache_tokens.diff().dropna() > 0).all()) and bool(
        (chain.max_concurrency.diff().dropna() > 0).all()
    )
    # a step that did not rise, where the larger fraction asked for no more KV memory than a worker's own memory
    # moves from one start to the next (MARGIN_MIB), is that movement, not the mechanism failing
    planned = (
        (chain.cfg_gpu_memory_utilization * chain.node_memory_gib).diff().dropna() * 1024
        if {"cfg_gpu_memory_utilization", "node_memory_gib"} <= set(chain)
        else None
    )
    flat = [i for i, d in enumerate(chain.kv_cache_tokens.diff().dropna()) if d <= 0]
    small = planned is not None and all(planned.iloc[i] <= MARGIN_MIB for i in flat) if flat else False
    return verdicts.judge(
        N_("A larger memory fraction ripples down to more KV tokens and a higher max concurrency"),
        rose,
        tr(
            "KV tokens {kv_cache_tokens_first:,.0f} → {kv_cache_tokens_last:,.0f}; max concurrency "
            "{max_concurrency_first:.1f} → {max_concurrency_last:.1f}",
            kv_cache_tokens_first=chain.kv_cache_tokens.iloc[0],
            kv_cache_tokens_last=chain.kv_cache_tokens.iloc[-1],
            max_concurrency_first=chain.max_concurrency.iloc[0],
            max_concurrency_last=chain.max_concurrency.iloc[-1],
        )
        + (
            tr(
                "; a step that did not rise asked for no more than {margin_mib} MiB more memory, what a worker's own "
                "memory moves from one start to the next",
                margin_mib=MARGIN_MIB,
            )
            if small
            else ""
        ),
        cannot_tell=not rose and small,
        rule=tr(
            "held: both rise strictly with every larger fraction (engine start-up reports, one start per "
            "fraction; a chain of one fraction cannot show it); cannot tell: a step that did not rise asked "
            "for {margin_mib} MiB more memory or less, the start-to-start movement",
            margin_mib=MARGIN_MIB,
        ),
    )


def chain_throughput(small, large, need_tokens: float) -> verdicts.Claim:
    text = "…and on to the sequences that run and the throughput, under a load that needs the space"
    evidence = tr(
        "the load needs {need_tokens:,.0f} KV tokens at once; cache {kv_cache_tokens:,.0f} → "
        "{kv_cache_tokens_2:,.0f} tokens; peak running {peak_running:.0f} → {peak_running_2:.0f}, "
        "waiting {peak_waiting:.0f} → {peak_waiting_2:.0f}",
        need_tokens=need_tokens,
        kv_cache_tokens=small["kv_cache_tokens"],
        kv_cache_tokens_2=large["kv_cache_tokens"],
        peak_running=small["peak_running"],
        peak_running_2=large["peak_running"],
        peak_waiting=small["peak_waiting"],
        peak_waiting_2=large["peak_waiting"],
    )
    # Requests also queue for the token budget, so waiting alone does not show a memory limit: the
    # smallest cache must have filled up and either run fewer sequences than the largest one or
    # preempted more (vLLM admits on a prompt's blocks, so a cache too small can show as preemptions).
    preempted = (small.get("preemptions") or 0) > (large.get("preemptions") or 0)
    if small["peak_kv_cache_usage_pct"] < FULL_PCT or (
        small["peak_running"] >= large["peak_running"] and not preempted
    ):
        return verdicts.untested(
            text,
            evidence
            + tr(
                "; the smallest cache peaked at {peak_kv_cache_usage_pct:.0f} % use with {value:.0f} "
                "preemption(s) and as many running, so memory was not shown to limit it",
                peak_kv_cache_usage_pct=small["peak_kv_cache_usage_pct"],
                value=small.get("preemptions") or 0,
            ),
            rule=RULE_TESTED,
        )
    evidence += f"; preemptions {small.get('preemptions') or 0:.0f} → {large.get('preemptions') or 0:.0f}"
    claim = verdicts.judge_change(
        text,
        small,
        large,
        "output_throughput",
        better="higher",
        held_at=1.0,
        evidence=evidence + f"; throughput {small['output_throughput']:.0f} → "
        f"{large['output_throughput']:.0f} tokens/s",
    )
    if claim.verdict in (verdicts.NOISE, verdicts.CANNOT_TELL) and large["peak_running"] > small["peak_running"]:
        # Chapter 0's ?: a claim of no size cannot be told from no change, but the learner should see why.
        claim.evidence += (
            tr("; more sequences ran, but throughput showed no change beyond noise: the steps got slower by about "
               "as much, so compute as well as memory limited throughput here")
        )
    return claim


def q_fits_at(design: Callable[[], ChainDesign], ref: Callable[[], dict]) -> Question:
    """Exercise 3: the fraction at which the chain's load just fits. Cannot be checked (None)
    where the engine's report lacks the memory figures (a GPU, an imported row)."""

    def forgot_non_kv():
        d, r = design(), ref()
        return (
            None
            if d.fits_at is None
            else d.need_tokens * r["kv_cache_gib"] / r["kv_cache_tokens"] / r["node_memory_gib"]
        )

    def gigabytes():
        d, r = design(), ref()
        if d.fits_at is None:
            return None
        per_token = r["kv_cache_gib"] * 2**30 / r["kv_cache_tokens"]
        return (r["non_kv_gib"] + d.need_tokens * per_token / 1e9) / r["node_memory_gib"]

    # Most of the fraction is non-KV memory, so 3 % of it would hide a KV term 20 % off: the check allows
    # 1.5 % (a cache 15 % short is about 1.8 % of the fraction here), narrowed to half the distance to a
    # GB-for-GiB slip (under 1 %). An answer given with too few digits to tell the two apart is told so
    # instead of being blamed on the slip (`Question.check`).
    return Question(
        "the fraction where the chain load fits",
        lambda: design().fits_at,
        0.015,
        "fraction = (non-KV memory + need_tokens × bytes per token) / the memory the fraction applies to "
        "(need_tokens already counts the block vLLM keeps back; GiB are 2**30 bytes). Give four "
        "significant digits (0.04735, not 0.05).",
        "ch01_q3.py",
        unit="of memory",
        known_wrong={
            "you left out the memory that is not KV cache (weights, runtime)": forgot_non_kv,
            "you turned the KV bytes into GB (10**9) where the report's figures are GiB (2**30)": gigabytes,
        },
    )


def confirming_fraction(answer: float, design: ChainDesign, tolerance: float = 0.03) -> float:
    """The fraction exercise 3's confirming run uses: the larger of the learner's answer and the
    computed one, raised by 3 % and one per cent more (4 % in all) (a second start can report a
    slightly smaller cache), rounded up so rounding never takes the margin away."""
    base = max(answer, design.fits_at or 0.0) * (1 + tolerance + 0.01)
    return min(math.ceil(base * 1000) / 1000, 0.99)


def fit_claim(fit, load: Load) -> verdicts.Claim:
    """Exercise 3's confirming run: at the learner's fraction (plus a small margin) the whole load
    ran at once, as many sequences as it allows, without a preemption. Requests may still wait a
    moment for the token budget, so waiting alone does not count against it."""
    text = "At your fraction the whole load fits: every request runs at once"
    want = min(load.num_prompts, load.max_concurrency or load.num_prompts) * load.n
    running, waiting = verdicts.number(fit, "peak_running"), verdicts.number(fit, "peak_waiting")
    preempted = verdicts.number(fit, "preemptions") or 0
    rule = tr("held: peak running reached {want} with no preemption", want=want)
    if not running:  # none, or 0: a sampled gauge that saw no request
        return verdicts.untested(
            text,
            tr(
                "this row has no /metrics reading of running requests (none, or a peak of 0: a gauge that sampled "
                "no request), so it cannot be judged"
            ),
            rule,
        )
    evidence = tr(
        "peak running {running:.0f} of {want}, peak waiting {value:.0f}, {preempted:.0f} preemption(s), "
        "peak KV usage {value_2:.0f} %",
        running=running,
        want=want,
        value=waiting or 0,
        preempted=preempted,
        value_2=verdicts.number(fit, "peak_kv_cache_usage_pct") or 0,
    )
    return verdicts.judge(text, running >= want and not preempted, evidence, rule=rule)


def claims(stock, tuned, chain: pd.DataFrame, need_tokens: float) -> list[verdicts.Claim]:
    return [
        stock_vs_tuned(stock, tuned),
        chain_capacity(chain),
        chain_throughput(chain.iloc[0], chain.iloc[-1], need_tokens),
    ]


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = (
    "MARGIN_MIB",
    "serve_dtype",
    "dtype_note",
    "fraction_for",
    "start_fraction",
    "ChainDesign",
    "chain_design",
    "attribution",
)
PANELS = ()
CHECKS = ("SINGLE", "did_the_work", "q_fits_at", "confirming_fraction")
CLAIMS = (
    "ARTICLE_FACTOR",
    "FULL_PCT",
    "RULE_TESTED",
    "bursts_note",
    "fit_claim",
    "claims",
    "stock_vs_tuned",
    "chain_capacity",
    "chain_throughput",
)
