"""Chapter 3's claims (continuous batching, chunked prefill, the two concurrency ceilings) and
the rule that judges each one from the rows the notebook measured.

`claims(sweep, chunked, seqs, tiny, flood_requests)` takes:
  sweep    the 3.1 concurrency sweep, one row per client concurrency, lowest first;
  chunked  the 3.2 mixed-load rows, indexed "default budget", "chunking off", "budget <n>"...;
  seqs     the 3.3 `max_num_seqs` rows, indexed "default" and the small values tried;
  tiny     the row of the shrunken KV cache run; flood_requests: how many requests it got.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from helpers import experiment, verdicts
from helpers.config import EngineConfig
from helpers.exercises import Question
from helpers.i18n import N_, tr
from helpers.load import Load
from helpers.results import rows
from helpers.verdicts import Claim

DEFAULT, OFF = "default budget", "chunking off"
# The short requests' stall statistic: the P99 of their token gaps. The single worst gap depends on
# which decode happened to sit in the longest step (two identical runs gave 502 and 2,223 ms); the
# P99 of a few hundred gaps counts every stalled one and changes little between runs.
GAP = "short_p99_itl_ms"
FULL_CACHE_PCT = 95.0  # peak KV usage at or above this counts as "the cache ran out"


@dataclass(frozen=True)
class ShrunkenCache:
    """3.3's design: a KV cache with room for about two finished requests, and a flood of twice
    as many requests as the cache can admit at once, whatever the block size (128 tokens on the
    CPU backend, 16 on CUDA)."""

    config: EngineConfig
    flood: Load
    usable_blocks: int
    override: int  # num_gpu_blocks_override: the usable blocks + the null block the pool keeps back

    @property
    def admitted(self) -> int:
        """What the scheduler admits at once: a request needs its whole prompt's blocks free."""
        return min(self.flood.num_prompts, self.usable_blocks // math.ceil(self.flood.input_len / self.block))

    @property
    def block(self) -> int:
        return self.config.max_model_len // self.usable_blocks


def shrunken_cache(base: EngineConfig, block: int, room: int = 2, input_len: int = 49,
                   output_len: int = 192) -> ShrunkenCache:
    """The prompt length is one token past a multiple of 16, so a prompt's last block has room left at
    either block size (15 tokens at 16, 79 at 128): the requests admitted first can decode a while
    without a new block, and the last ones to arrive still find the blocks the arithmetic counts.
    The usable blocks are rounded up so that the pool with its null block holds a whole number of
    prompts: counting the null block then gives one request more than the right answer. `room`: how
    many finished requests the usable blocks hold (exercise 6 changes it)."""
    per_prompt = math.ceil(input_len / block)
    blocks = math.ceil(room * (input_len + output_len) / block)  # room for about `room` finished requests
    usable = per_prompt * math.ceil((blocks + 1) / per_prompt) - 1
    admitted = usable // per_prompt
    flood = Load(num_prompts=2 * admitted, input_len=input_len, output_len=output_len, max_concurrency=2 * admitted)
    config = base.replace(max_model_len=usable * block, num_gpu_blocks_override=usable + 1)
    return ShrunkenCache(config, flood, usable, usable + 1)


def blocks_admit(row, input_len: int) -> int | None:
    """How many prompts of `input_len` tokens the engine's KV blocks admit at once, from what the
    engine reported (`num_blocks`, `block_size`). Every block counts but the null block, which
    `BlockPool.__init__` takes off the free queue. The scheduler admits a waiting request only when
    the blocks for its whole prompt are free (`KVCacheManager.allocate_slots`, called by
    `Scheduler.schedule` with `full_sequence_must_fit`); its answer's blocks come later, as it
    writes. None where the row lacks either figure."""
    blocks, size = verdicts.number(row, "num_blocks"), verdicts.number(row, "block_size")
    if not blocks or not size:
        return None
    return max(0, int(blocks) - 1) // math.ceil(input_len / int(size))


def peak_admitted(row, flood: Load) -> int | None:
    """Exercise 2's answer: how many of the flood the scheduler admits at once, by the engine's own
    blocks, at most the requests sent and max_num_seqs. The check uses this, not the sampled peak:
    /metrics is read twice a second, and when the admitted requests run out of room in their last
    block, preemption lowers the running count, perhaps before the next read."""
    admit = blocks_admit(row, flood.input_len)
    if admit is None:
        return None
    seats = verdicts.number(row, "engine_max_num_seqs")
    return min(flood.num_prompts, admit, int(seats) if seats else admit)


NULL_BLOCK = N_("you counted the block the pool keeps back")
WHOLE_LENGTH = N_("you gave each request room for its whole length at once")


def peak_mistakes(row, flood: Load) -> dict[str, int]:
    """Exercise 2's known mistakes and the number each gives on this engine's blocks; a mistake
    that happens to give the right number is left out (it cannot be told apart)."""
    right, size, blocks = (peak_admitted(row, flood), verdicts.number(row, "block_size"),
                           verdicts.number(row, "num_blocks"))
    if right is None:
        return {}
    size, blocks = int(size), int(blocks)
    wrong = {NULL_BLOCK: blocks // math.ceil(flood.input_len / size),
             WHOLE_LENGTH: (blocks - 1) // math.ceil((flood.input_len + flood.output_len) / size)}
    return {why: min(flood.num_prompts, n) for why, n in wrong.items() if min(flood.num_prompts, n) != right}


def q_admitted(flood: Load, row: Callable[[], dict]) -> Question:
    """Exercise 2 (predict, then measure): `row()` is the shrunken cache's row, read at check time."""
    return Question(
        "requests admitted at once", lambda: peak_admitted(row(), flood), 0.0,
        "Blocks per prompt = prompt tokens ÷ block size, rounded up. Only the usable blocks count.",
        "ch03_q2.py", unit="requests",
        known_wrong={why: (lambda why=why: peak_mistakes(row(), flood).get(why, math.nan))
                     for why in (NULL_BLOCK, WHOLE_LENGTH)})


def smallest_budget(chunked: pd.DataFrame) -> str:
    """The name of the chunked-prefill row with the smallest token budget the engine reported."""
    names = [n for n in chunked.index if str(n).startswith("budget ")]
    return min(names, key=lambda n: chunked.loc[n, "engine_max_num_batched_tokens"])


def _budget(row) -> str:
    return f"{row['engine_max_num_batched_tokens']:.0f}"


def concurrency_claims(sweep: pd.DataFrame) -> list[Claim]:
    first, last = sweep.iloc[0], sweep.iloc[-1]
    c0, c1 = first["load_max_concurrency"], last["load_max_concurrency"]
    return [
        verdicts.judge_change(
            "3.1 More concurrency raises throughput (×1.3 or more: the requests in flight share each step's "
            "weight read)", first, last, "output_throughput", better="higher", held_at=1.3,
            evidence=tr("{output_throughput:.0f} → {output_throughput_2:.0f} tokens/s from {c0:.0f} to {c1:.0f} "
                        "requests in flight (×{ratio:.1f})", output_throughput=first.output_throughput,
                        output_throughput_2=last.output_throughput, c0=c0, c1=c1,
                        ratio=verdicts.ratio(last.output_throughput, first.output_throughput))),
        verdicts.judge_change(
            "3.1 …and each request gets slower", first, last, "mean_tpot_ms", better="higher", held_at=1.0,
            evidence=f"mean TPOT {first.mean_tpot_ms:.0f} → {last.mean_tpot_ms:.0f} ms/token"),
    ]


def chunking_claims(chunked: pd.DataFrame) -> list[Claim]:
    """Each budget is compared with chunking off on its own, so the data can say where the
    article's claim holds (a small budget) and where it does not (a large one)."""
    small_name = smallest_budget(chunked)
    small, default, off = chunked.loc[small_name], chunked.loc[DEFAULT], chunked.loc[OFF]
    def gaps(name: str, gap: float) -> str:
        return tr("{name}: short requests' P99 token gap {gap:.0f} ms vs {off:.0f} ms with chunking off (budget "
                  "{budget})", name=name, gap=gap, off=off[GAP], budget=_budget(off))
    at_default = tr("3.2 Chunked prefill at vLLM's default budget ({budget}) keeps short requests moving").format(
        budget=_budget(default))
    same = never_cuts(default) or rows.no_collision(off, default)
    small_text = tr("3.2 Chunked prefill with a small budget ({budget}) keeps short requests moving").format(
        budget=_budget(small))
    apart = rows.no_collision(off, small)
    return [
        verdicts.untested(small_text, apart) if apart else verdicts.judge_change(
            small_text, off, small, GAP, better="lower", held_at=1.0,
            evidence=gaps(f"budget {_budget(small)}", small[GAP])),
        verdicts.untested(at_default, same) if same else verdicts.judge_change(
            at_default, off, default, GAP, better="lower", held_at=1.0,
            evidence=gaps(f"budget {_budget(default)}", default[GAP])),
        verdicts.judge_change(
            "3.2 Too small a chunk delays the long prompts' first token", default, small, "long_mean_ttft_ms",
            better="higher", held_at=1.0,
            evidence=tr("long prompts' mean TTFT: {long_mean_ttft_ms:.0f} ms (budget {budget}) vs "
                        "{long_mean_ttft_ms_2:.0f} ms (budget {budget_2})", long_mean_ttft_ms=small.long_mean_ttft_ms,
                        budget=_budget(small), long_mean_ttft_ms_2=default.long_mean_ttft_ms,
                        budget_2=_budget(default))),
        verdicts.untested("3.2 Chunked prefill raises the whole batch's throughput", same) if same else
        verdicts.judge_change(
            "3.2 Chunked prefill raises the whole batch's throughput", off, default, "output_throughput",
            better="higher", held_at=1.0,
            evidence=tr("output throughput {output_throughput:.0f} tokens/s (chunking on, budget {budget}) vs "
                        "{output_throughput_2:.0f} (off)", output_throughput=default.output_throughput,
                        budget=_budget(default), output_throughput_2=off.output_throughput)),
    ]


def never_cuts(row) -> str | None:
    """Why chunking could not matter at this row's budget, or None: where every long prompt of the mixed
    load and every short request's decode token fit in one step (a GPU's default budget of 8,192, say),
    chunking on and off build the same steps, so comparing the two says nothing."""
    g = lambda k: verdicts.number(row, k)  # noqa: E731
    budget, longs, long_len, shorts = (g("engine_max_num_batched_tokens"), g("load_long_prompts"),
                                       g("load_long_input_len"), g("load_num_prompts"))
    if None in (budget, longs, long_len, shorts):
        return None
    need = longs * long_len + shorts
    if budget < need:
        return None
    return (tr("cannot be judged here: the budget ({budget:.0f}) holds every long prompt and every decode of this "
               "load in one step ({need:.0f} tokens), so chunking never cuts a prompt and both configurations "
               "build the same steps", budget=budget, need=need))


def long_docs_claim(small, default) -> Claim:
    """The article's 'long documents want a bigger budget': the same long prompts, alone, at the
    smallest budget and at vLLM's default."""
    small, default = pd.Series(small), pd.Series(default)
    return verdicts.judge_change(
        "3.1 Long documents want a bigger max_num_batched_tokens", small, default, "mean_ttft_ms", better="lower",
        held_at=1.0,
        evidence=tr("long prompts alone: mean TTFT {mean_ttft_ms:.0f} ms at budget {budget} vs "
                    "{mean_ttft_ms_2:.0f} ms at {budget_2}; output throughput {output_throughput:.0f} vs "
                    "{output_throughput_2:.0f} tokens/s", mean_ttft_ms=small.mean_ttft_ms, budget=_budget(small),
                    mean_ttft_ms_2=default.mean_ttft_ms, budget_2=_budget(default),
                    output_throughput=small.output_throughput, output_throughput_2=default.output_throughput))


def blocks_only_claim(tiny, admitted: int | None, sent: int | None = None) -> Claim:
    """The article: with max_num_seqs unset, concurrency comes entirely from the KV blocks. vLLM
    0.32 never leaves it unset: EngineArgs picks a default (128 for a CPU API server).
    `admitted`: what the blocks admit at once (`blocks_admit`); `sent`: the requests of the flood."""
    text = "3.3 Without max_num_seqs set, concurrency comes entirely from the KV blocks"
    rule = (tr("held: the blocks capped concurrency and no seat cap existed; did not hold: more ran than the "
               "blocks admit, or vLLM set a seat cap of its own "
               "(EngineArgs._set_default_max_num_seqs_and_batched_tokens_args), so concurrency does not come "
               "*entirely* from the blocks even where they capped it"))
    peak, seats = verdicts.number(tiny, "peak_running"), verdicts.number(tiny, "engine_max_num_seqs")
    if not peak or admitted is None:
        return verdicts.untested(
            text,
            tr("cannot be judged here: the row has no ")
            + (
                tr("peak of running requests (or a peak of 0: the gauge saw no request)")
                if not peak
                else tr("block count")
            ),
            rule,
        )
    if seats is None:
        return verdicts.untested(
            text, tr("cannot be judged here: the row does not say which max_num_seqs the engine used"), rule
        )
    if sent is not None and sent <= admitted:
        return verdicts.untested(
            text,
            tr(
                "cannot be judged here: {sent} requests were sent, no more than the "
                "{admitted} the blocks admit, so the blocks never had to hold one back",
                sent=sent,
                admitted=admitted,
            ),
            rule,
        )
    if seats and seats <= admitted:
        return verdicts.untested(
            text,
            tr(
                "cannot be judged here: max_num_seqs={seats:.0f} stops requests before "
                "the blocks do (they admit {admitted})",
                seats=seats,
                admitted=admitted,
            ),
            rule,
        )
    if peak == admitted:
        ran = tr("at most {peak:.0f} ran at once, what the blocks admit ({admitted})", peak=peak, admitted=admitted)
    elif peak < admitted:
        ran = (
            tr("at most {peak:.0f} ran at once, fewer than the {admitted} the blocks admit (the running count is "
               "sampled, and preemption can lower it between two reads)", peak=peak, admitted=admitted)
        )
    else:
        ran = tr("{peak:.0f} ran at once, more than the {admitted} the blocks admit, so the blocks did not set the "
                 "limit", peak=peak, admitted=admitted)
    capped = peak <= admitted
    if seats:
        evidence = tr(
            "max_num_seqs left unset: {ran}; yet the engine set max_num_seqs={seats:.0f} itself, a seat "
            "cap that binds whenever the cache has room for more",
            ran=ran,
            seats=seats,
        )
    else:
        evidence = tr("no seat cap: {ran}", ran=ran)
    return verdicts.judge(text, capped and not seats, evidence, rule=rule)


def _first_error(row) -> str:
    """The client's first error line, shortened, so a reader can tell a refusal from a crash."""
    error = row.get("first_error") if hasattr(row, "get") else None
    return (
        tr('; the first: "{splitlines_last}"', splitlines_last=str(error).strip().splitlines()[-1][:120])
        if isinstance(error, str) and error.strip()
        else ""
    )


def queue_claim(capped, waited) -> Claim:
    """max_num_queued_reqs (vLLM 0.32): the API server refuses a request beyond the cap (an HTTP 503
    before the response, or inside a stream already answered 200: `AsyncLLM` checks twice), so the
    requests it takes wait less than the same load with no cap."""
    capped, waited = pd.Series(capped), pd.Series(waited)
    refused = (verdicts.number(capped, "failed") or 0) > 0
    sooner = capped["p99_ttft_ms"] < waited["p99_ttft_ms"] and not verdicts.within_noise(waited, capped, "p99_ttft_ms")
    later = capped["p99_ttft_ms"] > waited["p99_ttft_ms"] and not verdicts.within_noise(
        waited, capped, "p99_ttft_ms"
    )  # the second half went the wrong way
    return verdicts.judge(
        "3.3 A queue cap answers 'busy' instead of letting requests wait",
        refused and sooner,
        tr(
            "max_num_queued_reqs={cfg_max_num_queued_reqs:.0f}: {failed:.0f} of {failed_2:.0f} failed (refused at "
            "the cap: an HTTP 503, or a stream that ended without a token{first_error}); P99 TTFT of the rest "
            "{p99_ttft_ms:.0f} ms vs {p99_ttft_ms_2:.0f} ms with no cap",
            cfg_max_num_queued_reqs=capped["cfg_max_num_queued_reqs"],
            failed=capped["failed"],
            failed_2=capped["failed"] + capped["completed"],
            first_error=_first_error(capped),
            p99_ttft_ms=capped["p99_ttft_ms"],
            p99_ttft_ms_2=waited["p99_ttft_ms"],
        ),
        partly=refused and not later,
        rule=tr(
            "held: some requests were refused and the accepted ones' P99 TTFT fell beyond noise; partly: "
            "refused, and their P99 TTFT not higher beyond noise; did not hold: none refused, or the accepted "
            "ones waited longer"
        ),
    )


def seqs_claim(seqs: pd.DataFrame) -> Claim:
    small_n = min(n for n in seqs.index if n != "default")
    small, base = seqs.loc[small_n], seqs.loc["default"]
    queued = small.peak_waiting > 0
    beyond = not verdicts.within_noise(base, small, "output_throughput")
    slower = small.output_throughput < base.output_throughput and beyond
    return verdicts.judge(
        "3.1 Many short requests want a higher max_num_seqs (a small one makes them queue)",
        queued and slower,
        tr(
            "max_num_seqs={small_n}: up to {peak_waiting:.0f} waiting, {output_throughput:.0f} vs "
            "{output_throughput_2:.0f} tokens/s at the default ({engine_max_num_seqs:.0f})",
            small_n=small_n,
            peak_waiting=small.peak_waiting,
            output_throughput=small.output_throughput,
            output_throughput_2=base.output_throughput,
            engine_max_num_seqs=base.engine_max_num_seqs,
        ),
        cannot_tell=queued and not beyond,
        rule=tr(
            "held: requests waited and throughput fell by more than the noise; cannot tell: they waited, "
            "throughput within noise; did not hold: the small cap was as fast or faster beyond noise (waiting "
            "alone, which the design forces, does not show that more seats were wanted)"
        ),
    )


def block_claims(tiny, flood_requests: int) -> list[Claim]:
    capped = tiny["peak_running"] < flood_requests and tiny["peak_waiting"] > 0
    cache = tr("{tokens:.0f}-token cache ({blocks:.0f} blocks of {size:.0f})", tokens=tiny["kv_cache_tokens"],
               blocks=tiny["num_blocks"], size=tiny["block_size"])
    cap_text, cap_rule = (
        "3.3 KV blocks cap real concurrency; the excess waits",
        N_("held: fewer ran at once than were sent, and some waited"),
    )
    seen = (
        tr("{cache}: at most {peak_running:.0f} of {flood_requests} ran at once, up to {peak_waiting:.0f} waited",
           cache=cache, peak_running=tiny['peak_running'], flood_requests=flood_requests,
           peak_waiting=tiny['peak_waiting'])
    )
    few = rows.too_few_samples(tiny)
    out = [
        verdicts.untested(cap_text, seen + tr(": a peak of 0 running is a gauge that sampled no request"), cap_rule)
        if not tiny["peak_running"]
        else verdicts.untested(cap_text, f"{seen}; {few}", cap_rule)
        if few
        else verdicts.judge(cap_text, capped, seen, rule=cap_rule)
    ]
    text = "3.3 When the cache runs out, running sequences are preempted (and recomputed later)"
    rule = tr(
        "held: the engine counted a preemption; not measured: KV usage stayed under {full_cache_pct:.0f} %; "
        "else did not hold",
        full_cache_pct=FULL_CACHE_PCT,
    )
    evidence = tr(
        "{preemptions:.0f} preemption(s), peak KV usage {peak_kv_cache_usage_pct:.0f} %, up to "
        "{peak_waiting:.0f} waiting",
        preemptions=tiny["preemptions"],
        peak_kv_cache_usage_pct=tiny["peak_kv_cache_usage_pct"],
        peak_waiting=tiny["peak_waiting"],
    )
    if tiny["preemptions"] > 0:
        out.append(verdicts.judge(text, True, evidence, rule=rule))
    elif tiny["peak_kv_cache_usage_pct"] < FULL_CACHE_PCT:
        out.append(verdicts.untested(text, tr("the cache never ran out ({evidence})", evidence=evidence), rule=rule))
    else:
        out.append(
            verdicts.judge(text, False, evidence + tr(": the cache filled, yet nothing was preempted"), rule=rule)
        )
    return out


def claims(
    sweep: pd.DataFrame,
    chunked: pd.DataFrame,
    seqs: pd.DataFrame,
    tiny,
    flood_requests: int,
    *,
    long_docs: dict,
    admitted: int,
    queue: dict,
) -> list[Claim]:
    """`long_docs`: the long prompts alone, {"small": row, "default": row}; `queue`: the crowd load
    {"capped": row with max_num_queued_reqs, "waited": the same engine without the cap}."""
    return [
        *concurrency_claims(sweep),
        seqs_claim(seqs),
        long_docs_claim(long_docs["small"], long_docs["default"]),
        *chunking_claims(chunked),
        *block_claims(tiny, flood_requests),
        blocks_only_claim(tiny, admitted, flood_requests),
        queue_claim(queue["capped"], queue["waited"]),
    ]


# The answers the chapter's exercises check against, computed from this run's rows.


def smallest_gap(chunked: pd.DataFrame) -> str:
    """The configuration whose short requests' P99 token gap was smallest."""
    return str(chunked[GAP].idxmin())


def _tied_with_best(frame: pd.DataFrame, metric: str, best) -> set:
    """The index labels whose row a run cannot tell from the best row on `metric`: the interval of the
    ratio between them holds no change (`verdicts.within_noise`), the best row itself included."""
    ref = frame.loc[best]
    return {name for name, row in frame.iterrows() if name == best or verdicts.within_noise(ref, row, metric)}


def smoothest(chunked: pd.DataFrame) -> set[str]:
    """Exercise 1: the configuration with the smallest P99 gap, and every one a run cannot tell from it
    (the interval of their ratio holds no change): each is a right answer."""
    return {str(n) for n in _tied_with_best(chunked, GAP, chunked[GAP].idxmin())}


def budget_for(chunked: pd.DataFrame, max_gap_ms: float) -> str | set[str]:
    """Exercise 3: among the configurations whose P99 gap stays within `max_gap_ms`, the
    one that serves the long prompts' first token soonest, with every other a run cannot tell from it
    (`_tied_with_best`); "none" when none qualifies."""
    ok = chunked[chunked[GAP] <= max_gap_ms]
    if ok.empty:
        return "none"
    return {str(n) for n in _tied_with_best(ok, "long_mean_ttft_ms", ok["long_mean_ttft_ms"].idxmin())}


def best_concurrency(sweep: pd.DataFrame) -> set[float]:
    """Exercise 4: the client concurrency at which output throughput was highest, with every other a
    run cannot tell from it (where batching stops paying, neighbours lie close)."""
    frame = sweep.reset_index(drop=True)
    tied = _tied_with_best(frame, "output_throughput", frame["output_throughput"].idxmax())
    return {float(frame.loc[i, "load_max_concurrency"]) for i in tied}


# -- the control panel's run function (widgets.Panel calls it with the controls' values) ------------


def chunked_prefill_panel(base: EngineConfig, mixed: Load, tag: str = "ch3-panel") -> Callable[..., dict]:
    """Chapter 3: chunked prefill, budget, prefill cap and seats, on the mixed load or on long
    prompts only. With chunking off the budget is raised to max_model_len, which vLLM needs to
    schedule a whole prompt (None: vLLM's default, which it raises itself). The settings' parameters are
    named as the EngineConfig fields they set, so a panel's controls are `widgets.setting_controls`."""

    def run(
        enable_chunked_prefill=None,
        max_num_batched_tokens=None,
        long_prefill_token_threshold=None,
        max_num_seqs=None,
        short_requests=8,
        shape="mixed",
        force=False,
        progress=True,
    ) -> dict:
        budget = max_num_batched_tokens
        if enable_chunked_prefill is False and budget is not None:  # None: vLLM's default, on
            budget = max(budget, base.max_model_len)
        cfg = base.replace(
            enable_chunked_prefill=enable_chunked_prefill,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=budget,
            long_prefill_token_threshold=long_prefill_token_threshold,
        )
        load = (
            dataclasses.replace(mixed, num_prompts=short_requests)
            if shape == "mixed"
            else Load(
                num_prompts=short_requests,
                input_len=mixed.long_input_len,
                output_len=mixed.output_len,
                max_concurrency=short_requests,
            )
        )
        return experiment.measure(cfg, load, force=force, progress=progress, tag=tag)

    return run


def inside_the_runs(by_name: dict[str, dict], names: tuple[str, str]) -> str:
    """What the two runs' timelines show, in numbers from their first repeat, each half of the page's
    reading judged: the short requests' own longest gap between tokens (the median over them: in a run
    they mostly share one freeze, so it is a tail figure, judged against the tail allowance), and the
    long prompts' median wait for their first token (the page expects it longer with the small budget)."""
    if why := rows.no_collision(*(by_name[n] for n in names)):  # the long prompts met no short answer
        return why[0].upper() + why[1:] + tr(": the pictures show two runs, not what chunking changes.")
    seen = {}
    for name in names:
        run = (by_name[name].get("runs") or [by_name[name]])[0]
        kinds, gaps, ttfts = run.get("request_kind"), run.get("request_max_itl_ms"), run.get("request_ttft_ms")
        if not kinds or not gaps:
            return tr(
                "The row of **{name}** keeps no timeline (it was measured before timelines were stored): "
                "set FORCE = True in the set-up cell and run again.",
                name=name,
            )
        short = [g for g, k in zip(gaps, kinds) if k == "short"]
        long = [t for t, k in zip(ttfts, kinds) if k == "long"]
        seen[name] = (statistics.median(short), max(short), statistics.median(long), len(short))
    (a, (ga, worst_a, ta, n)), (b, (gb, worst_b, tb, _)) = seen.items()
    (froze, froze_kind), (waited, waited_kind) = (
        _way(gb, ga, verdicts.TAIL_NOISE, tr("longer"), tr("shorter")),
        _way(ta, tb, verdicts.TTFT_NOISE, tr("longer"), tr("shorter")),
    )
    return (
        tr(
            "Each of the {n} short requests' own longest gap between two tokens: median **{gb:.0f} ms** with "
            "{b} (the longest {worst_b:.0f} ms) against **{ga:.0f} ms** with {a} (the longest {worst_a:.0f} "
            "ms): {froze} with {b}",
            n=n,
            gb=gb,
            b=b,
            worst_b=worst_b,
            ga=ga,
            a=a,
            worst_a=worst_a,
            froze=froze,
        )
        + _reading(froze_kind)
        + tr(
            ". The long prompts' median wait for their first token: {ta:.0f} ms with {a} against {tb:.0f} ms "
            "with {b}: {waited} with {a}",
            ta=ta,
            a=a,
            tb=tb,
            b=b,
            waited=waited,
        )
        + _reading(waited_kind)
        + "."
    )


def _reading(kind: str) -> str:
    """The page expects "longer" (`more`): held; within the noise (`about`): this run does not show it;
    shorter (`less`): did not hold."""
    return (
        tr(", as the page expects")
        if kind == "more"
        else tr(": within noise, so this run does not show the page's reading")
        if kind == "about"
        else tr(": the page's reading **did not hold** here")
    )


def _way(x: float, y: float, noise: float, more: str, less: str) -> tuple[str, str]:
    """x against y in words ("longer (×r)", "about the same (within the ×÷f floor between two starts)" or
    "shorter (×r)") and which of the three it is: "more", "about" or "less" (the words are the learner's
    language, so `_reading` reads the kind, not the words)."""
    r = x / y if y else math.inf
    if 1 / (1 + noise) <= r <= 1 + noise:
        return tr(
            "about the same (×{value:.2f}, within the ×÷{value_2:.1f} floor between two starts)",
            value=r,
            value_2=1 + noise,
        ), "about"
    return (f"{more} (×{r:.2f})", "more") if r > 1 else (f"{less} (×{r:.2f})", "less")


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("DEFAULT", "OFF", "GAP", "ShrunkenCache", "shrunken_cache")
PANELS = ("chunked_prefill_panel",)
CHECKS = ("blocks_admit", "peak_admitted", "NULL_BLOCK", "WHOLE_LENGTH", "peak_mistakes", "q_admitted")
CLAIMS = (
    "FULL_CACHE_PCT",
    "smallest_budget",
    "never_cuts",
    "concurrency_claims",
    "chunking_claims",
    "long_docs_claim",
    "blocks_only_claim",
    "queue_claim",
    "seqs_claim",
    "block_claims",
    "claims",
    "smallest_gap",
    "smoothest",
    "budget_for",
    "best_concurrency",
    "inside_the_runs",
)
