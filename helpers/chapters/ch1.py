"""Chapter 1: stock vs tuned settings, and one chain of settings (memory fraction → KV space →
sequences that fit → throughput)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from helpers import verdicts
from helpers.load import Load

ARTICLE_FACTOR = 2.0  # the article: P99 latency more than twice as bad with the stock settings
FULL_PCT = 80  # a cache this full (peak KV usage, %) is what limits admission
RULE_TESTED = f"tested only when the smallest cache filled (≥ {FULL_PCT} %) and ran fewer sequences than the largest"


def fraction_for(row, kv_tokens: float) -> float | None:
    """The memory fraction that would give a KV cache of `kv_tokens`, from what an engine with
    the same model and settings reported: its non-KV memory, its bytes per KV token and the
    memory the fraction applies to (CPU: the NUMA node). None where the row lacks those figures."""
    try:
        per_token = float(row["kv_cache_gib"]) / float(row["kv_cache_tokens"])
        node, non_kv = float(row["node_memory_gib"]), float(row["non_kv_gib"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not node or node != node or non_kv != non_kv:
        return None
    return round((non_kv + kv_tokens * per_token) / node, 3)


@dataclass(frozen=True)
class ChainDesign:
    """1.2's design: memory fractions that give caches of a few multiples of what the load needs at
    its peak, computed from an engine's own memory report (`fraction_for`), or a fixed range where
    the report lacks the figures (a GPU's start-up log has no node memory)."""

    fractions: list[float]
    need_tokens: int
    fits_at: float | None  # the fraction at which the whole load just fits
    multiples: tuple[float, ...]

    def text(self, row) -> str:
        if self.fits_at is None:
            return f"The engine's report lacks the memory figures, so a fixed range of fractions is tried: {self.fractions}."
        per_token = row["kv_cache_gib"] * 2**30 / row["kv_cache_tokens"]
        return (f"At its peak the load holds {self.need_tokens:,} KV tokens. From the engine's report "
                f"({row['non_kv_gib']} GiB not KV cache, {per_token:,.0f} bytes a KV token, fractions of "
                f"{row['node_memory_gib']} GiB) the cell computed the fraction at which it just fits (exercise 3 asks "
                f"you for it) and tries {self.fractions}: about {' / '.join(f'{m:g}' for m in self.multiples)} times "
                "the cache the load needs, never less than one full-length sequence (vLLM requires it to start).")


def chain_design(ref, load: Load, max_model_len: int, multiples=(0.5, 2), fixed=(0.3, 0.9)) -> ChainDesign:
    need = load.peak_kv_tokens(int(ref["block_size"]))
    fits_at = fraction_for(ref, need)
    if fits_at is None:
        return ChainDesign(list(fixed), need, None, tuple(multiples))
    floor = 1.25 * max_model_len  # one full-length sequence must fit, with room to spare
    fractions = sorted({fraction_for(ref, max(m * need, floor)) for m in multiples})
    return ChainDesign(fractions, need, fits_at, tuple(multiples))


def attribution(ablation: pd.DataFrame, metric: str = "p99_itl_ms") -> dict[str, float]:
    """How far each single change moves `metric` from stock, as stock/changed (×>1: better)."""
    stock = ablation.loc["stock", metric]
    return {name: verdicts.ratio(stock, ablation.loc[name, metric]) for name in ablation.index if name != "stock"}


def stock_vs_tuned(stock, tuned) -> verdicts.Claim:
    text = "Stock vs tuned: P99 latency differs a lot (article: over 2×), and throughput differs too"
    if not (stock["p99_itl_ms"] > 0 and tuned["p99_itl_ms"] > 0):
        # Tokens that arrive in one burst have no gaps between them: the server's front end was starved
        # (another program busy on the same cores), so this run measured the machine, not the settings.
        return verdicts.untested(text, f"a P99 ITL of 0 ms (stock {stock['p99_itl_ms']:.0f}, tuned {tuned['p99_itl_ms']:.0f}): "
                               "the tokens arrived in bursts, so the machine was too busy to measure; run again "
                               "with FORCE = True", rule="tested only when both runs streamed their tokens")
    itl, ttft = verdicts.ratio(stock["p99_itl_ms"], tuned["p99_itl_ms"]), verdicts.ratio(stock["p99_ttft_ms"], tuned["p99_ttft_ms"])
    thr = verdicts.ratio(tuned["output_throughput"], stock["output_throughput"])
    itl_noise = verdicts.within_noise(stock, tuned, "p99_itl_ms")
    thr_noise = verdicts.within_noise(stock, tuned, "output_throughput")
    level = 100 * verdicts.noise([stock, tuned], "p99_itl_ms")
    # Each half in its own direction: the chat users' P99 ITL lower, the throughput higher. A TTFT
    # that improved does not make up for an ITL that got worse, nor a latency gain for lost throughput.
    lat_held, lat_better = itl >= ARTICLE_FACTOR and not itl_noise, itl > 1 and not itl_noise
    thr_better = thr > 1 and not thr_noise
    said = lambda better, noise: "within noise" if noise else ("better" if better else "worse")
    return verdicts.judge(
        text, lat_held and thr_better,
        f"P99 ITL stock/tuned ×{itl:.2f} ({said(lat_better, itl_noise)}), throughput tuned/stock ×{thr:.2f} "
        f"({said(thr_better, thr_noise)}); P99 TTFT stock/tuned ×{ttft:.2f}, for reference (noise ±{level:.0f} %)",
        partly=lat_better or thr_better, within_noise=itl_noise and thr_noise,
        rule=f"held: tuned's P99 ITL ×{ARTICLE_FACTOR:g} or more lower and its throughput higher, each beyond noise; "
             "partly: one of the two better beyond noise")


def chain_capacity(chain: pd.DataFrame) -> verdicts.Claim:
    return verdicts.judge(
        "A larger memory fraction ripples down to more KV tokens and a higher max concurrency",
        chain.kv_cache_tokens.is_monotonic_increasing and chain.max_concurrency.is_monotonic_increasing,
        f"KV tokens {chain.kv_cache_tokens.iloc[0]:,.0f} → {chain.kv_cache_tokens.iloc[-1]:,.0f}; max concurrency "
        f"{chain.max_concurrency.iloc[0]:.1f} → {chain.max_concurrency.iloc[-1]:.1f}",
        rule="held: both rise with every larger fraction (engine start-up reports)")


def chain_throughput(small, large, need_tokens: float) -> verdicts.Claim:
    text = "…and on to the sequences that run and the throughput, under a load that needs the space"
    evidence = (f"the load needs {need_tokens:,.0f} KV tokens at once; cache {small['kv_cache_tokens']:,.0f} → "
                f"{large['kv_cache_tokens']:,.0f} tokens; peak running {small['peak_running']:.0f} → "
                f"{large['peak_running']:.0f}, waiting {small['peak_waiting']:.0f} → {large['peak_waiting']:.0f}")
    # Requests also queue for the token budget, so waiting alone does not show a memory limit:
    # the smallest cache must have filled up and run fewer sequences than the largest one.
    if small["peak_kv_cache_usage_pct"] < FULL_PCT or small["peak_running"] >= large["peak_running"]:
        return verdicts.untested(text, evidence + f"; the smallest cache peaked at {small['peak_kv_cache_usage_pct']:.0f} % "
                               "use, so memory was not what limited it", rule=RULE_TESTED)
    claim = verdicts.judge_change(text, small, large, "output_throughput", better="higher", held_at=1.0,
                                evidence=evidence + f"; throughput {small['output_throughput']:.0f} → "
                                                    f"{large['output_throughput']:.0f} tokens/s")
    if claim.verdict == verdicts.NOISE and large["peak_running"] > small["peak_running"]:
        claim.evidence += "; more sequences ran, but the steps got slower by as much: compute, not memory, was the limit"
    return claim


def claims(stock, tuned, chain: pd.DataFrame, need_tokens: float) -> list[verdicts.Claim]:
    return [stock_vs_tuned(stock, tuned), chain_capacity(chain),
            chain_throughput(chain.iloc[0], chain.iloc[-1], need_tokens)]
