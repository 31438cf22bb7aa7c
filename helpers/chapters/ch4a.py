"""Chapter 4a's home (parallel samples, beam search, prefix caching): what notebook 04a measures, its
panel, and its claims with the rule that judges each from the rows it measured (`claims`).

The notebook passes its tables indexed by name:
  samples   4.1: "n=1", "n=4" and "4× requests" (four times as many prompts, each its own, same lengths)
  beam      4.1: timed rows "greedy", "sampled" (n = width) and "beam" (the same width)
  prefix    4.2: "fixed prefix", "churning prefixes", "prefix under one block", "caching off"
  stale     4.2: the small cache, "caching on" and "caching off"
  one_token 4.2: `prefix_hits` of `one_token_changes(block)`: tokens found for each prompt
"""
from __future__ import annotations

import dataclasses
import random
import statistics
from typing import Callable

import pandas as pd

from helpers import experiment, verdicts
from helpers.config import ConfigError, EngineConfig
from helpers.engine import remote
from helpers.engine.server import reset_prefix_cache
from helpers.experiment import base_row, engine_for, turn_for
from helpers.i18n import tr
from helpers.load import Load
from helpers.load.metrics import scrape
from helpers.load.sequential import cached_tokens_each, timed_completions
from helpers.results import ResultStore, reuse_or_measure, rows
from helpers.verdicts import Claim

# -- designs: the prompts and plain-request runs it measures -----------------------------------------
N1, N4, MANY = "n=1", "n=4", "4× requests"


FIXED, CHURN, SHORT, OFF = "fixed prefix", "churning prefixes", "prefix under one block", "caching off"
REUSE = 2  # the churning load: each template used this many times, then never again


ORIGINAL, LATE, EARLY, AGAIN = "original", "changed late", "changed early", "original again"


FIRST, OTHER, FIRST_AGAIN = "prompt A", "prompt B (needs blocks)", "prompt A again"


def one_token_changes(block: int, blocks: int = 6, seed: int = 0) -> dict[str, list[int]]:
    """One prompt of `blocks` full blocks (plus a few tokens), then the same prompt with one token
    changed in its last full block, then with one token changed in its first block, then the
    original again: sent in this order into an emptied cache."""
    rng = random.Random(seed)
    ids = [rng.randrange(1000, 20000) for _ in range(blocks * block + 8)]
    def changed(at: int) -> list[int]:
        return ids[:at] + [ids[at] + 1] + ids[at + 1:]
    return {ORIGINAL: ids, LATE: changed((blocks - 1) * block + block // 2), EARLY: changed(block // 2), AGAIN: ids}


def eviction_prompts(block: int, usable: int, seed: int = 1) -> tuple[dict[str, list[int]], int]:
    """3 prompts for a cache of `usable` blocks (at least 10): A (usable − 4 full blocks and a partial
    one), then B, unrelated, which needs more blocks than are free, so some of A's cached blocks are
    evicted, then A again. Returns the prompts and the tokens A should find the second time if cached
    blocks go tail first (`SingleTypeKVCacheManager.free` frees in reverse; `BlockPool.free_blocks`
    puts unhashed blocks in front, hashed ones at the back)."""
    rng = random.Random(seed)
    a_full, b_blocks = usable - 4, usable - 5  # B: usable − 6 full blocks and a partial one
    # ids under 20,000 (as one_token_changes'), so any vocabulary of 20k or more takes them (vLLM refuses an id
    # past the model's vocabulary: BaseRenderer.validate_token_ids); A and B from disjoint ranges, unrelated
    a = [rng.randrange(1000, 10000) for _ in range(a_full * block + 8)]
    b = [rng.randrange(10000, 20000) for _ in range((b_blocks - 1) * block + 8)]
    never_used = usable - (a_full + 1)
    evicted = b_blocks - 1 - never_used  # B takes A's partial block and the unused ones first
    return {FIRST: a, OTHER: b, FIRST_AGAIN: a}, (a_full - evicted) * block


def timed(config: EngineConfig, prompts: list[str], max_tokens: int, params: dict, *, force: bool = False,
          tag: str = "", store: ResultStore | None = None, progress: bool = True) -> dict:
    """Time plain, one-at-a-time completion requests sent with `params` (beam search is not
    streamed, so the benchmark client cannot send it); stored like every other row."""
    def time_them() -> dict:
        with turn_for(config, "timed requests"):
            server = engine_for(config, progress)
            headers = getattr(server, "headers", None)
            if not isinstance(server, remote.Endpoint):  # a shared server's cache is not ours to empty
                reset_prefix_cache(server.base_url, headers)
            return dict(params=params, max_tokens=max_tokens, **timed_completions(
                server.base_url, server.model_path, list(prompts), max_tokens, params, headers))

    row = base_row(config, {"prompts": list(prompts), "max_tokens": max_tokens, "params": params}, tag, "timed")
    return reuse_or_measure(row, time_them, force=force, store=store)


def prefix_hits(config: EngineConfig, prompts: dict[str, list[int]], *, force: bool = False, tag: str = "",
                store: ResultStore | None = None, progress: bool = True) -> dict:
    """Tokens the prefix cache supplied to each prompt, sent one after another into an emptied
    cache (so each finds only what the prompts before it left); stored like every other row."""
    def look_up() -> dict:
        with turn_for(config, "prefix-cache lookups"):
            server = engine_for(config, progress)
            headers = getattr(server, "headers", None)
            if isinstance(server, remote.Endpoint) or not reset_prefix_cache(server.base_url, headers):
                raise ConfigError("enable_prefix_caching", tr("this experiment needs an engine whose prefix cache "
                                                              "the guide can empty (its own server, started with "
                                                              "VLLM_SERVER_DEV_MODE=1)."),
                                  tr("run it on a local engine, not on GUIDE_ENDPOINT."))
            hits = cached_tokens_each(server.base_url, server.model_path, prompts,
                                      lambda: scrape(server.base_url, headers=headers), headers)
        return {"hits": hits, "prompt_tokens": {name: len(ids) for name, ids in prompts.items()}}

    row = base_row(config, {"prefix_hits": {name: list(ids) for name, ids in prompts.items()}}, tag, "prefix_hits")
    return reuse_or_measure(row, look_up, force=force, store=store)


# -- panels ------------------------------------------------------------------------------------------
def prefix_caching_panel(base: EngineConfig, fixed: Load, block: int, tag: str = "ch4-panel") -> Callable[..., dict]:
    """Chapter 4a: caching on or off (`enable_prefix_caching`, named as the field it sets; None: vLLM's
    default, on), on the fixed-prefix load with another prefix length (in blocks), number of distinct
    prefixes or number of requests."""
    def run(enable_prefix_caching=None, prefix_blocks=4.0, prefixes=1, requests=fixed.num_prompts, force=False,
            progress=True) -> dict:
        # vLLM's prefix_repetition dataset sends requests // prefixes prompts per prefix: send a whole
        # multiple, so the run's label says what was sent
        prefixes = min(prefixes, requests)
        load = dataclasses.replace(fixed, num_prompts=requests - requests % prefixes,
                                   prefix_len=max(1, int(prefix_blocks * block)), num_prefixes=prefixes)
        if load.num_prompts != requests:
            print(tr("{num_prompts} requests sent, not {requests}: each of the {prefixes} prefixes is used "
                     "{num_prompts_2} time(s) (vLLM's prefix_repetition dataset)", num_prompts=load.num_prompts,
                     requests=requests, prefixes=prefixes, num_prompts_2=load.num_prompts // prefixes))
        return experiment.measure(base.replace(enable_prefix_caching=enable_prefix_caching), load, force=force,
                                  progress=progress, tag=tag)
    return run


# -- claims and the rules that judge them ------------------------------------------------------------
# "costs about as much", read as the two figures within ×÷1.5 of each other: the narrowest band a null claim can
# hold in against the ×÷1.3 start-to-start floor of a throughput or a latency (verdicts.DEFAULT_NOISE)
CLOSE = 0.50


FULL_CACHE_PCT = 95.0  # peak KV usage at or above this counts as "the cache filled"


def share_saved(row) -> float:
    """Share of the prompt tokens the engine did not have to compute: prefix-cache hits are
    counted in tokens (vllm:prefix_cache_hits), prompts in tokens too."""
    prompt = verdicts.number(row, "total_input_tokens")
    return (verdicts.number(row, "prefix_cache_hits") or 0.0) / prompt if prompt else 0.0


def share_by_shape(load, block: int) -> float:
    """Exercise 2's answer from the load's shape and the three rules: every request after the first
    finds the prefix's full blocks. The measured share can fall short of it by up to one block per
    request: vLLM's benchmark decodes each prompt to text (`PrefixRepetitionRandomDataset.sample`) and
    the server tokenizes it again, so the prefix's last token can merge with the text after it."""
    cached = (load.prefix_len // block) * block
    return (load.num_prompts - 1) * cached / (load.num_prompts * (load.prefix_len + load.input_len))


def junction_note(load, block: int, row) -> str:
    """What the engine found against what the shape allows (exercise 2's evidence)."""
    shape, measured = share_by_shape(load, block), share_saved(row)
    lost = max(0.0, shape - measured) * load.num_prompts * (load.prefix_len + load.input_len) / block
    note = (tr("measured: {measured:.3f} of the prompt tokens came from the cache; the load's shape allows "
               "{shape:.3f}", measured=measured, shape=shape))
    if lost >= 0.5:
        note += (tr(" (about {lost:.0f} block(s) fewer: where the tokenizer merged a prefix's last token with the "
                    "text after it, that request's last prefix block differs and is computed again)", lost=lost))
    return note


def _close(a, b, metric: str) -> str:
    """"inside" where the interval of b ÷ a lies within ×÷(1 + CLOSE), "outside" where it lies wholly past
    it, "across" where it straddles the band's edge (a run that cannot tell), "none" without a figure."""
    iv = verdicts.ratio_interval(a, b, metric)
    if iv is None:
        return "none"
    band = 1 + CLOSE
    if iv.lo >= 1 / band - 1e-9 and iv.hi <= band + 1e-9:
        return "inside"
    return "outside" if iv.lo > band or iv.hi < 1 / band else "across"


def sample_claims(samples: pd.DataFrame) -> list[Claim]:
    one, four, many = samples.loc[N1], samples.loc[N4], samples.loc[MANY]
    thr, lat = _close(many, four, "output_throughput"), _close(many, four, "mean_e2el_ms")
    ivs = "; ".join(f"{name} n=4 ÷ 4× requests {verdicts.change_text(many, four, m)}"
                    for name, m in (("throughput", "output_throughput"), ("latency", "mean_e2el_ms")))
    few = rows.too_few_samples(one, four)
    return [
        verdicts.untested("4.1 Each of n samples runs as a sequence of its own", few) if few else
        verdicts.judge_change(
            "4.1 Each of n samples runs as a sequence of its own", one, four, "peak_running", better="higher",
            held_at=3.0, evidence=tr("peak running: {peak_running:.0f} with n=1, {peak_running_2:.0f} with n=4 "
                                     "(the same {completed:.0f} requests)", peak_running=one.peak_running,
                                     peak_running_2=four.peak_running, completed=one.completed), null_refutes=True),
        verdicts.judge(
            "4.1 n=4 costs about as much as four times the requests", thr == lat == "inside",
            tr("n=4 vs 4× requests: {output_throughput:.0f} vs {output_throughput_2:.0f} output tokens/s, mean "
               "request latency {mean_e2el_ms:.0f} vs {mean_e2el_ms_2:.0f} ms, peak running {peak_running:.0f} vs "
               "{peak_running_2:.0f}; the samples shared {prefix_cache_hits:,.0f} prompt tokens through the prefix "
               "cache, and the other load sent {completed:.0f}× the HTTP requests and streams; {ivs}",
               output_throughput=four.output_throughput, output_throughput_2=many.output_throughput,
               mean_e2el_ms=four.mean_e2el_ms, mean_e2el_ms_2=many.mean_e2el_ms, peak_running=four.peak_running,
               peak_running_2=many.peak_running, prefix_cache_hits=four.prefix_cache_hits,
               completed=many.completed / max(four.completed, 1), ivs=ivs),
            partly="inside" in (thr, lat) and "outside" not in (thr, lat),
            cannot_tell="outside" not in (thr, lat) and "inside" not in (thr, lat),
            rule=tr("held: the 95 % intervals of the throughput and mean request latency ratios both inside "
                    "×÷{value:g} (the claim's \"about\", past the ×÷1.3 floor between starts); partly: one inside "
                    "and the other across the band's edge; did not hold: one wholly outside it; both across: "
                    "cannot tell", value=1 + CLOSE)),
    ]


def beam_claim(beam: dict) -> Claim:
    sampled, searched = beam["sampled"], beam["beam"]
    width = searched["params"]["n"]
    slower = searched["mean_seconds"] / sampled["mean_seconds"]
    floor = 1 + verdicts.DEFAULT_NOISE
    return verdicts.judge(
        "4.1 Beam search costs more still", slower > floor,
        tr("width {width}: {mean_seconds:.2f} s per request vs {mean_seconds_2:.2f} s for {width} sampled answers "
           "(×{slower:.1f}); greedy {mean_seconds_3:.2f} s", width=width, mean_seconds=searched['mean_seconds'],
           mean_seconds_2=sampled['mean_seconds'], slower=slower, mean_seconds_3=beam['greedy']['mean_seconds']),
        cannot_tell=1 / floor <= slower <= floor,
        rule=tr("held: slower than the same number of sampled answers by more than ×{floor:.1f} (chapter 0's "
                "floor: one timing each); within ×÷ that of each other: cannot tell; faster beyond it: did not hold",
                floor=floor))


def prefix_claims(prefix: pd.DataFrame) -> list[Claim]:
    fixed, churn, short, off = (prefix.loc[n] for n in (FIXED, CHURN, SHORT, OFF))
    share = share_saved(fixed)
    return [
        verdicts.judge_change(
            "4.2 A fixed system prompt saves at least 30 % of prefill time (time to first token; the article: "
            "30–40 %)", off, fixed,
            "median_ttft_ms", better="lower", held_at=1 / (1 - 0.30),
            evidence=tr("median TTFT {median_ttft_ms:,.0f} ms with caching off → {median_ttft_ms_2:,.0f} ms on "
                        "({value:.0f} % less); the design shares {value_2:.0f} % of the prompt tokens (hit rate "
                        "{value_3:.0f} %), so it could save up to about that share of the prefill; the article's "
                        "30–40 % fits prompts of which about that share is the system prompt, so a saving above 40 "
                        "% here says this design shares more, not that the article's figure is wrong",
                        median_ttft_ms=off.median_ttft_ms, median_ttft_ms_2=fixed.median_ttft_ms,
                        value=100 * (1 - fixed.median_ttft_ms / off.median_ttft_ms), value_2=100 * share,
                        value_3=100 * fixed.prefix_cache_hit_rate),
            rule=tr("held: median TTFT at least 30 % lower than with caching off (×1.43)")),
        churn_claim(churn, fixed),
        verdicts.judge(
            "4.2 A prefix shorter than one KV block is never reused", short.prefix_cache_hits == 0,
            tr("{load_prefix_len:.0f}-token prefix, {block_size:.0f}-token blocks: {prefix_cache_hits:.0f} tokens "
               "hit", load_prefix_len=short.load_prefix_len, block_size=short.block_size,
               prefix_cache_hits=short.prefix_cache_hits),
            rule=tr("held: no hits at all (only full blocks are cached)")),
    ]


def repeat_hits(row) -> float | None:
    """Prompt tokens the cache can supply to a prefix load at most: every request after the first of
    its template finds the template's full blocks (`KVCacheManager.get_computed_blocks` stops at the
    first block it cannot find)."""
    g = lambda k: verdicts.number(row, k)  # noqa: E731
    n, templates, prefix, block = g("load_num_prompts"), g("load_num_prefixes"), g("load_prefix_len"), g("block_size")
    if None in (n, templates, prefix) or not block:
        return None
    return (n - templates) * (prefix // block) * block


def churn_claim(churn, fixed) -> Claim:
    """The article: with a churning template the saving vanishes. Each template here is used REUSE
    times, so the claim can be tested both ways: the cache must find the repeats (at most k−1 of k
    requests of a template) and nothing more, and the saving must fall below the fixed prefix's."""
    text = "4.2 With a churning template the saving shrinks: only a template's repeats find it"
    rule = (tr("held: the hits at most what the repeats allow ((requests − templates) × the template's full-block "
               "tokens), at least half of it, and below the fixed prefix's; partly: below the fixed prefix's but "
               "the repeats found less than half (evicted, or the template ended mid-block); did not hold: more "
               "hits than the repeats allow, or not below the fixed prefix's"))
    allowed, hits = repeat_hits(churn), verdicts.number(churn, "prefix_cache_hits")
    if allowed is None or hits is None:
        return verdicts.untested(
            text, tr("cannot be judged here: the row lacks the load's shape or the hit count"), rule
        )
    fewer = hits < (verdicts.number(fixed, "prefix_cache_hits") or 0)
    g = lambda k: verdicts.number(churn, k) or 0  # noqa: E731
    evidence = tr(
        "{g:.0f} templates for {g_2:.0f} requests: {hits:,.0f} tokens found (the repeats allow "
        "{allowed:,.0f}; the fixed prefix found {value:,.0f}), hit rate {value_2:.0f} %",
        g=g("load_num_prefixes"),
        g_2=g("load_num_prompts"),
        hits=hits,
        allowed=allowed,
        value=verdicts.number(fixed, "prefix_cache_hits") or 0,
        value_2=100 * g("prefix_cache_hit_rate"),
    )
    return verdicts.judge(
        text, fewer and 0.5 * allowed <= hits <= allowed, evidence, partly=fewer and hits <= allowed, rule=rule
    )


def one_token_claim(hits: dict, block: int) -> Claim:
    late, early, again = hits[LATE], hits[EARLY], hits[AGAIN]
    whole = late == 0 and early == 0
    if again == 0:  # the unchanged prompt found nothing either: the cache was not working, the claim not tested
        return verdicts.untested(
            "4.2 One changed character invalidates the cached prefix entirely",
            tr(
                "the original prompt again found 0 tokens (changed late {late:,}, early "
                "{early:,}): the cache kept nothing to test the change against",
                late=late,
                early=early,
            ),
        )
    return verdicts.judge(
        "4.2 One changed character invalidates the cached prefix entirely",
        whole and again > 0,
        tr(
            "one token changed in the last full block: {late:,} tokens still came from the cache ({late_2} blocks); "
            "changed in the first block: {early:,}; the original again: {again:,}",
            late=late,
            late_2=late // block,
            early=early,
            again=again,
        ),
        rule=tr(
            "held: a change anywhere leaves nothing to reuse (and the unchanged prompt does hit). Chained "
            "block hashes predict: the blocks before the change are still found"
        ),
    )


def eviction_claim(hits: dict, predicted: int, block: int) -> Claim:
    found = hits[FIRST_AGAIN]
    if found == 0:  # nothing found: head-first eviction and a cache that kept nothing look alike from here
        return verdicts.cannot_tell(
            "4.2 A cached prefix is evicted from its tail: its start survives longest",
            tr(
                "prompt A found 0 tokens the second time (tail-first eviction predicts "
                "{predicted:,}): head-first eviction, or a cache that kept nothing, would "
                "both read 0",
                predicted=predicted,
            ),
        )
    return verdicts.judge(
        "4.2 A cached prefix is evicted from its tail: its start survives longest",
        found == predicted,
        tr(
            "prompt A found {found:,} tokens ({found_2} blocks) the second time, after prompt B needed blocks; "
            "tail-first eviction predicts {predicted:,}, head-first 0",
            found=found,
            found_2=found // block,
            predicted=predicted,
        ),
        rule=tr("held: exactly the blocks before the evicted tail were found (the rule of BlockPool.free_blocks)"),
    )


STALE_RULE = (
    "held: with caching on, output throughput fell (or the run took longer) beyond noise, and a count "
    "shows the space taken (at least two fewer running, or two more preempted: two runs of one engine can "
    "differ by one); a smaller fall with such a count: cannot tell here; a fall with no such count, or "
    "none: did not hold. Cannot be judged: no request needed the space (none waited while the cache had "
    "too few free blocks for its prompt, in the same /metrics sample, and none was preempted)"
)


def stale_claim(stale: pd.DataFrame) -> Claim:
    """The article: with churning templates, stale cached blocks only take space. Judged on what a
    user would feel, the throughput (or the run's duration), caching on against off; the peak of
    running requests and the preemptions are sampled counts, shown as evidence. The premise: the
    small cache filled in at least one run, or nobody needed the space stale blocks might hold."""
    text = "4.2 Stale cached blocks only take space"
    on, off = stale.loc["caching on"], stale.loc["caching off"]
    if few := rows.too_few_samples(on, off):  # its premise and its counts are sampled peaks
        return verdicts.untested(text, few, STALE_RULE)
    g = lambda row, key: verdicts.number(row, key)
    usage = [u for u in (g(on, "peak_kv_cache_usage_pct"), g(off, "peak_kv_cache_usage_pct")) if u is not None]
    waited = any((g(r, "peak_waiting") or 0) > 0 for r in (on, off))
    metric = "output_throughput" if g(on, "output_throughput") and g(off, "output_throughput") else "duration"
    x, y = g(off, metric), g(on, metric)
    if x is None or y is None:
        return verdicts.untested(
            text, tr("cannot be judged here: a row has neither output throughput nor duration"), STALE_RULE
        )
    counts = (
        f"peak running {g(on, 'peak_running') or 0:.0f} vs {g(off, 'peak_running') or 0:.0f}, preemptions "
        f"{g(on, 'preemptions') or 0:.0f} vs {g(off, 'preemptions') or 0:.0f}, peak waiting "
        f"{g(on, 'peak_waiting') or 0:.0f} vs {g(off, 'peak_waiting') or 0:.0f}"
    )
    usable = max((g(on, "num_blocks") or 1) - 1, 0)  # one of them is vLLM's null block
    size = f"{usable:.0f}-block cache (usable blocks), churning prefixes"
    # The premise: a request needed the space. It waited while the cache held too few free blocks for
    # its prompt (in the same /metrics sample: requests also wait for the step's timing on few cores),
    # or a request was preempted. Where the rows keep no samples, the peaks stand in.
    block = g(on, "block_size") or 0
    prompt = (g(on, "load_prefix_len") or 0) + (g(on, "load_input_len") or 0)
    need = -(-prompt // block) if block and prompt else 0
    full_pct = min(FULL_CACHE_PCT, 100 * (usable - need + 1) / usable) if usable and need else FULL_CACHE_PCT
    preempted = any((g(r, "preemptions") or 0) > 0 for r in (on, off))
    both = [rows.full_while_waiting(r, full_pct) for r in (on, off)]
    if any(b is not None for b in both):
        needed = preempted or any(b for b in both if b)
        why = tr(
            "no /metrics sample had a request waiting while the cache was {full_pct:.0f} % full or more",
            full_pct=full_pct,
        )
    else:
        needed = preempted or (waited and bool(usage) and max(usage) >= full_pct)
        why = tr("the peak KV usage stayed under {full_pct:.0f} % or nobody waited", full_pct=full_pct)
    if not needed:
        return verdicts.untested(
            text,
            tr(
                "cannot be judged here: in the {size} {why} (peak KV usage {value:.0f} %), and nothing was "
                "preempted, so no request needed the space ({counts})",
                size=size,
                why=why,
                value=max(usage) if usage else 0,
                counts=counts,
            ),
            STALE_RULE,
        )
    unit = "tokens/s" if metric == "output_throughput" else "s"
    evidence = tr(
        "{size}: {replace} {y:,.1f} vs {value:,.1f} {unit} (caching on ÷ off {change_text}); {counts}",
        size=size,
        replace=metric.replace("_", " "),
        y=y,
        value=x,
        unit=unit,
        change_text=verdicts.change_text(off, on, metric),
        counts=counts,
    )
    worse = (y < x) if metric == "output_throughput" else (y > x)
    beyond = worse and not verdicts.within_noise(off, on, metric)
    # a count leans the claim's way only by more than one: two runs of one engine can differ by one
    lean = (g(off, "peak_running") or 0) - (g(on, "peak_running") or 0) >= 2 or (g(on, "preemptions") or 0) - (
        g(off, "preemptions") or 0
    ) >= 2
    if beyond and lean:
        return verdicts.judge(text, True, evidence, rule=STALE_RULE)
    if beyond:  # slower, but no count shows space taken: the claim is about space, so it did not hold here
        return verdicts.judge(
            text,
            False,
            evidence
            + tr(
                ": slower with caching on, but no count shows the space "
                "taken by two or more (two runs of one engine can differ "
                "by one), so this run does not show the space taken"
            ),
            rule=STALE_RULE,
        )
    if lean and worse:
        return verdicts.judge(
            text,
            False,
            evidence + tr(": a count leans the claim's way, but the throughput did not fall beyond noise"),
            cannot_tell=True,
            rule=STALE_RULE,
        )
    return verdicts.judge(text, False, evidence, rule=STALE_RULE)


def claims(
    samples, beam, prefix, stale, one_token: dict | None = None, eviction: tuple[dict, int] | None = None
) -> list[Claim]:
    """The notebook's verdict table (sections 4.1 and 4.2). `one_token`: experiment.prefix_hits row of
    `one_token_changes`; `eviction`: (experiment.prefix_hits row of `eviction_prompts`, the predicted hits)."""
    block = int(prefix.loc[FIXED, "block_size"])
    changed = [one_token_claim(one_token["hits"], block)] if one_token else []
    evicted = [eviction_claim(eviction[0]["hits"], eviction[1], block)] if eviction else []
    return [*sample_claims(samples), beam_claim(beam), *prefix_claims(prefix), *changed, stale_claim(stale), *evicted]


# The template every home follows (helpers/chapters/__init__.py says what each part is).
def inside_the_prefixes(rows: dict[str, dict], names: tuple[str, str] = (FIXED, CHURN)) -> str:
    """The two runs' timelines in numbers: each run's median wait for a first token over all its requests,
    judged the way the page reads the picture: the churning run, whose requests more often compute their
    prefix, should wait longer (within the noise allowance: about the same; shorter: did not hold)."""
    waits = {}
    for name in names:
        run = (rows[name].get("runs") or [rows[name]])[0]
        ttfts = run.get("request_ttft_ms")
        if not run.get("request_start_s") or not ttfts:
            return tr(
                "The row of **{name}** keeps no timeline (it was measured before timelines were stored): "
                "set FORCE = True in the set-up cell and run again.",
                name=name,
            )
        waits[name] = statistics.median(ttfts)
    (a, wa), (b, wb) = waits.items()
    ratio = wb / wa if wa else float("inf")
    floor = 1 + verdicts.TTFT_NOISE  # a TTFT's start-to-start floor (chapter 0)
    if 1 / floor <= ratio <= floor:
        way = tr(
            "about the same (×{ratio:.2f}, within the ×÷{floor:.1f} that chapter 0 allows a TTFT): the page's "
            "reading is not shown by this run",
            ratio=ratio,
            floor=floor,
        )
    else:
        way = (
            tr("×{ratio:.2f} the {a}'s, as the page expects", ratio=ratio, a=a)
            if ratio > 1
            else tr("×{ratio:.2f} the {a}'s: shorter, so the page's reading **did not hold** here", ratio=ratio, a=a)
        )
    return tr(
        "The median wait for a first token over every request: **{wa:.0f} ms** with the {a} and **{wb:.0f} "
        "ms** with {b}: {way}.",
        wa=wa,
        a=a,
        wb=wb,
        b=b,
        way=way,
    )


DESIGNS = (
    "N1",
    "N4",
    "MANY",
    "FIXED",
    "CHURN",
    "REUSE",
    "SHORT",
    "OFF",
    "ORIGINAL",
    "LATE",
    "EARLY",
    "AGAIN",
    "FIRST",
    "OTHER",
    "FIRST_AGAIN",
    "one_token_changes",
    "eviction_prompts",
    "timed",
    "prefix_hits",
)
PANELS = ("prefix_caching_panel",)
CHECKS = ("share_by_shape", "junction_note")
CLAIMS = (
    "inside_the_prefixes",
    "CLOSE",
    "FULL_CACHE_PCT",
    "share_saved",
    "sample_claims",
    "beam_claim",
    "prefix_claims",
    "repeat_hits",
    "churn_claim",
    "one_token_claim",
    "eviction_claim",
    "STALE_RULE",
    "stale_claim",
    "claims",
)
