"""Chapter 6b's home: three combinations of settings that backfire (6.3), the loads that show each,
and the rule that judges each claim from the rows notebook 06b measured (`claims`).

The notebook passes its rows by name (ROOMY, TIGHT, HIGH_FRACTION; SEATS_HIGH, SEATS_DEFAULT; BUDGET, TINY).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from helpers import verdicts
from helpers.i18n import tr
from helpers.load import Load
from helpers.verdicts import Claim

# -- designs: the combinations and the loads that show them ------------------------------------------
ROOMY, TIGHT, HIGH_FRACTION = "roomy cache", "tight cache", "high fraction"
SEATS_HIGH, SEATS_DEFAULT = "very many seats", "default seats"
BUDGET, TINY = "default budget", "tiny chunks"


def very_many_seats(engine_max_num_seqs: int, full: bool) -> int:
    """6.3b's "very high" max_num_seqs: twice the engine's default, and at least 256 (1,024 at full size)."""
    return max(2 * int(engine_max_num_seqs), 1024 if full else 256)


class BackfireLoads(NamedTuple):
    churn: Load  # 6.3a: many system prompts, each used a few times
    flood: Load  # 6.3b: short requests, all sent at once
    long_prompts: Load  # 6.3c: several long prompts at once


def backfire_loads(engine_max_num_seqs: int, full: bool) -> BackfireLoads:
    """6.3's three loads, in one place (notebook 06b measures each on the baseline and on its
    combination, and a stored row matches only an identical load). Sized from the baseline engine's
    resolved `max_num_seqs` (`cap["engine_max_num_seqs"]`) and the run size. The flood is a quarter
    more than `very_many_seats` allows (at the smoke size, a quarter more than the engine's default
    allows: enough for the high value to run more at once)."""
    seats = very_many_seats(engine_max_num_seqs, full) if full else int(engine_max_num_seqs)
    return BackfireLoads(
        churn=Load(kind="prefix", num_prompts=48 if full else 24, prefix_len=512, input_len=32, output_len=16,
                   num_prefixes=16 if full else 8, max_concurrency=4),
        flood=Load(num_prompts=seats * 5 // 4, input_len=32, output_len=16, max_concurrency=None),
        long_prompts=Load(num_prompts=12 if full else 4, input_len=1536, output_len=8, max_concurrency=None))


# -- claims and the rules that judge them ------------------------------------------------------------


# "loses its hits": the hit rate falls below this share of the roomy cache's; seven tenths (×1.43 lower) lies
# outside the ×÷1.3 start-to-start floor, so a rate that stayed put can refute the claim (at ×1.25 it could not)
HIT_DROP = 0.7


def prefix_space(row) -> tuple[int, int] | None:
    """(cache blocks left beside the running requests, blocks the load's distinct prefixes take), from
    the row's own figures: the engine's KV tokens and block size, and the load's prefixes, lengths
    and concurrency. Only whole blocks of a prefix are cached (vLLM hashes full blocks), and a running
    request shares those with the cache, so only its own blocks count against the room; one block is
    the block pool's null block (`BlockPool.__init__`), never handed out. None where the row lacks a
    figure."""
    g = lambda k: verdicts.number(row, k)  # noqa: E731
    tokens, block = g("kv_cache_tokens"), g("block_size")
    prefixes, prefix = g("load_num_prefixes"), g("load_prefix_len")
    prompts = g("load_num_prompts")
    if None in (tokens, block, prefixes, prefix, prompts) or not block:
        return None
    running = min(g("load_max_concurrency") or prompts, prompts)
    shared = prefix // block  # the prefix's full blocks: the cache's, shared by every request that starts with it
    own = math.ceil((prefix + (g("load_input_len") or 0) + (g("load_output_len") or 0)) / block) - shared
    return int(tokens // block - 1 - running * own), int(prefixes * shared)


TIGHT_RULE = ("a demonstration, not a test of the article: the notebook makes this cache short on purpose. Held: "
              "the tight cache's hit rate ×1.43 or more lower than the roomy one's (under 70 % of it), the ratio's "
              "interval past no change, or no hit at all; held partly: lower beyond no change, by less; an interval "
              "holding no change: did not hold where it excludes the claimed drop, cannot tell where it holds it (it "
              "fails if the prefixes come back before vLLM evicts them); cannot be judged: the roomy cache had no "
              "hits or no room for every prefix, or the tight one had room for all of them")


HIGH_RULE = ("held: the higher fraction's cache smaller and its hit rate ×1.43 or more lower than the default's "
             "(under 70 % of it), the ratio's interval past no change; held partly: lower beyond no change, by less; "
             "did not hold: the cache did not shrink, or an interval holding no change that excludes the claimed "
             "drop; cannot tell where it holds it")


def tight_cache_claim(roomy, tight) -> Claim:
    """6.3a's mechanism, shown on a cache made short on purpose: a demonstration, and its rule says so.
    Its premise is checked from the rows (`prefix_space`): the roomy cache holds every prefix beside the
    running requests and had hits; the tight one cannot hold them all."""
    text = "6.3a (demonstration) Prefix caching loses its hits when the cache is short of room"
    a, b = verdicts.number(roomy, "prefix_cache_hit_rate") or 0, verdicts.number(tight, "prefix_cache_hit_rate") or 0
    ev = (tr("hit rate {value:.0f} % with room, {value_2:.0f} % in the tight cache; median TTFT {value_3:,.0f} → "
             "{value_4:,.0f} ms", value=100 * a, value_2=100 * b,
             value_3=verdicts.number(roomy, 'median_ttft_ms') or 0,
             value_4=verdicts.number(tight, 'median_ttft_ms') or 0))
    room, short = prefix_space(roomy), prefix_space(tight)
    if room is None or short is None:
        return verdicts.untested(text, tr("{ev}; the rows lack the cache or load figures that say how much room "
                                          "there was", ev=ev),
                                 TIGHT_RULE)
    ev += (tr("; blocks left beside the running requests: {room_first} roomy, {short_first} tight, for {short} "
              "blocks of distinct prefixes", room_first=room[0], short_first=short[0], short=short[1]))
    if a == 0 or room[0] < room[1]:
        return verdicts.untested(text, tr("{ev}: the roomy cache ", ev=ev) + (tr("had no hits to lose") if a == 0 else
                                                                   tr("was short of room too")), TIGHT_RULE)
    if short[0] >= short[1]:
        return verdicts.untested(text, tr("{ev}: the tight cache had room for every prefix, so it was not short",
                                          ev=ev),
                                 TIGHT_RULE)
    return hit_drop(text, roomy, tight, ev, TIGHT_RULE)


def hit_drop(text: str, roomy, other, evidence: str, rule: str) -> Claim:
    """Did the hit rate fall to under HIT_DROP of the roomy cache's? Judged on the ratio's interval
    (`verdicts.judge_change`): a rate that stayed put refutes it, one inside the floor at the claimed
    size cannot tell; a rate of 0 (every hit lost) holds."""
    if (verdicts.number(other, "prefix_cache_hit_rate") or 0) == 0:
        return verdicts.judge(text, True, evidence + tr(": no hit at all"), rule=rule)
    return verdicts.judge_change(text, roomy, other, "prefix_cache_hit_rate", better="lower", held_at=1 / HIT_DROP,
                                 evidence=evidence, rule=rule, null_refutes=True)


def claims(rows: dict, high_why: str | None = None) -> list[Claim]:
    """6.3's verdicts; `high_why`: why the high memory fraction did not run where it was tried (vLLM's line)."""
    out = []
    roomy, tight = rows.get(ROOMY), rows.get(TIGHT)
    if roomy is not None and tight is not None:
        out.append(tight_cache_claim(roomy, tight))
    if roomy is not None and (high := rows.get(HIGH_FRACTION)) is not None:
        a, b = verdicts.number(roomy, "prefix_cache_hit_rate") or 0, verdicts.number(high, "prefix_cache_hit_rate") or 0
        # the room was taken only if the cache shrank; then the hit rate is judged as the demonstration's is
        shrank = (verdicts.number(high, "kv_cache_tokens") or 0) < (verdicts.number(roomy, "kv_cache_tokens") or 0)
        text = "6.3a …and a high memory fraction is what takes the room"
        ev = (tr("hit rate {value:.0f} % at the default fraction, {value_2:.0f} % at {value_3:g}; KV tokens "
                 "{value_4:,.0f} → {value_5:,.0f}", value=100 * a, value_2=100 * b,
                 value_3=verdicts.number(high, 'cfg_gpu_memory_utilization') or 0,
                 value_4=verdicts.number(roomy, 'kv_cache_tokens') or 0,
                 value_5=verdicts.number(high, 'kv_cache_tokens') or 0))
        out.append(hit_drop(text, roomy, high, ev, HIGH_RULE) if shrank else
                   verdicts.judge(text, False, ev + tr(": the higher fraction's cache did not shrink"), rule=HIGH_RULE))
    elif roomy is not None:
        out.append(
            verdicts.untested(
                "6.3a …and a high memory fraction is what takes the room",
                tr("the engine did not start at the high fraction: {high_why}", high_why=high_why)
                if high_why
                else tr("runs at full size (GUIDE_SIZE=full)"),
            )
        )
    if (many := rows.get(SEATS_HIGH)) is not None and (few := rows.get(SEATS_DEFAULT)) is not None:
        text = "6.3b A very high max_num_seqs with a flood of short requests lowers throughput"
        seats = verdicts.number(few, "engine_max_num_seqs") or 0
        ran = verdicts.number(many, "peak_running") or 0
        evidence = tr(
            "max_num_seqs {seats:.0f} (default) vs {value:.0f}: {number:.2f} vs {number_2:.2f} "
            "requests/s; peak running {value_2:.0f} vs {ran:.0f}",
            seats=seats,
            value=verdicts.number(many, "engine_max_num_seqs") or 0,
            number=verdicts.number(few, "request_throughput"),
            number_2=verdicts.number(many, "request_throughput"),
            value_2=verdicts.number(few, "peak_running") or 0,
            ran=ran,
        )
        if ran <= seats:
            out.append(
                verdicts.untested(
                    text, tr("{evidence}: the flood never ran more at once than the default allows", evidence=evidence)
                )
            )
        elif ran < 2 * seats:  # "very high" means many times the default: a batch a quarter larger cannot show it
            out.append(
                verdicts.untested(
                    text,
                    tr(
                        "{evidence}: the high cap ran only ×{ran:.2f} the default's "
                        "sequences at once, far from the thousands of seats the claim is "
                        "about (the full size sends a flood for 1,024 seats or more)",
                        evidence=evidence,
                        ran=ran / seats,
                    ),
                )
            )
        else:
            out.append(
                verdicts.judge_change(
                    text, few, many, "request_throughput", better="lower", held_at=1.1, unit="req/s", evidence=evidence
                )
            )
    if (budget := rows.get(BUDGET)) is not None and (tiny := rows.get(TINY)) is not None:
        out.append(
            verdicts.judge_change(
                "6.3c A tiny prefill chunk with many long prompts raises TTFT",
                budget,
                tiny,
                "median_ttft_ms",
                better="higher",
                held_at=1.1,
                unit="ms",
            )
        )
    return out


def raised_by_a_tenth(budget: dict, tiny: dict) -> str | None:
    """Exercise 3, a question about this run's figures: did tiny chunks raise the median TTFT by more than
    a tenth here? "yes" or "no" from the two medians. (The chapter's verdict asks more: whether the rise
    stands out of the ×÷1.7 a TTFT moves between two starts, which a tenth never does.) None where a
    median is 0 or missing."""
    a, b = verdicts.number(budget, "median_ttft_ms"), verdicts.number(tiny, "median_ttft_ms")
    if not a or not b:
        return None  # a zero or missing median: the check says it cannot check
    return "yes" if b > 1.1 * a else "no"


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = (
    "ROOMY",
    "TIGHT",
    "HIGH_FRACTION",
    "SEATS_HIGH",
    "SEATS_DEFAULT",
    "BUDGET",
    "TINY",
    "very_many_seats",
    "BackfireLoads",
    "backfire_loads",
)
PANELS = ()
CHECKS = ("raised_by_a_tenth",)
CLAIMS = ("hit_drop", "HIGH_RULE", "HIT_DROP", "prefix_space", "TIGHT_RULE", "tight_cache_claim", "claims")
