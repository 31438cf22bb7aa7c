"""Chapter 2's claims (throughput, latency and memory) and the rule that judges each one.

The notebook measures; `claims(...)` turns its tables and rows into verdicts. The exercise
factories at the end are shared by the notebook and tests/chapters/test_ch2.py, so the
check a learner runs is the one the tests run on recorded rows.
"""
from __future__ import annotations

import math
import re
import statistics
from typing import Callable

from helpers import verdicts
from helpers.exercises import Choice, Question
from helpers.i18n import N_, tr
from helpers.results import rows

# The engine lines that name each start-up failure, as vLLM words them.
# Free memory: "… on startup is less than desired CPU/GPU memory utilization" (CPUWorker.__init__
# in vllm/v1/worker/cpu_worker.py; request_memory in v1/worker/utils.py on a GPU), or, on the
# CPU, "… on kv cache allocation is less than requested memory for kv (X/Y GiB)" with X > 0: the KV
# share fits the budget but not the node's free memory (CPUWorker.determine_available_memory).
# No room: the same line with X ≤ 0 (the weights and working memory fill the budget), or a GPU's
# "No available memory for the cache blocks" (_check_enough_kv_cache_memory, v1/core/kv_cache_utils.py).
FREE_MEMORY_CHECK = "less than desired"
KV_SHARE_CHECK = re.compile(r"less than requested memory for kv \((-?[\d.]+)")
NO_ROOM_FOR_KV = "No available memory for the cache blocks"


def blocks_for(tokens: int, block_size: int) -> int:
    """Blocks that hold `tokens` tokens: whole blocks only."""
    return -(-int(tokens) // int(block_size))


def fixed_cache_plan(block_size: int, long_len: int, num_prompts: int, output_len: int) -> dict:
    """A cache of fixed size for the max_model_len test, computed from the engine's block size.

    The cache must hold one `long_len` sequence (vLLM refuses to start otherwise) plus the one
    block it keeps in reserve. Each short request gets a tenth of the usable blocks, so about ten
    run at once and the rest of `num_prompts` wait: the cache, not max_model_len, is the limit.
    """
    usable = blocks_for(long_len, block_size)
    per_request = max(1, usable // 10)
    return {"override": usable + 1, "usable_blocks": usable, "blocks_per_request": per_request,
            # the prompt fills its blocks and the answer spills into one more: admission counts the prompt's
            # blocks (allocate_slots), so "the whole request must fit" would give another answer
            "input_len": per_request * block_size - output_len // 2, "output_len": output_len,
            "num_prompts": num_prompts, "fit_at_once": usable // per_request}


def failure_kind(line: str | None) -> str | None:
    """Which start-up check an engine line comes from: "free memory", "no room for KV", other, or None."""
    if not line:
        return None
    if FREE_MEMORY_CHECK in line:
        return "free memory"
    if m := KV_SHARE_CHECK.search(line):
        return "no room for KV" if float(m.group(1)) <= 0 else "free memory"
    if NO_ROOM_FOR_KV in line:
        return "no room for KV"
    return "other"


def within_preemptions(a_row, b_row) -> bool:
    """Two sampled peaks of running requests that differ by no more than the preemptions the two runs
    counted: a preempted request leaves the running count between two reads, so the gauge can show
    fewer than ran at once (the fixed-cache plan makes every prompt spill into one more block)."""
    a, b = verdicts.number(a_row, "peak_running") or 0, verdicts.number(b_row, "peak_running") or 0
    low = a_row if a <= b else b_row  # only the lower run's preemptions can explain why its gauge read low
    slack = verdicts.number(low, "preemptions") or 0
    return slack > 0 and abs(a - b) <= slack


def same_or_half(short, long, metric: str = "peak_running") -> str:
    """What the engine did to `metric` when max_model_len doubled on the same blocks."""
    a, b = verdicts.number(short, metric), verdicts.number(long, metric)
    if not a or not b or rows.too_few_samples(short, long):  # a peak of 0, or too few readings to trust one
        return "no data"
    r = b / a
    if metric == "peak_running" and within_preemptions(short, long):
        return "the same"
    if verdicts.within_noise(short, long, metric):  # an interval that also holds a half cannot tell them apart
        return "cannot tell" if verdicts.ratio_interval(short, long, metric).includes(0.5) else "the same"
    if r > 1:
        return "more"
    # a drop beyond noise: about half where its interval holds ×0.5, fewer for any other drop
    return "about half" if verdicts.ratio_interval(short, long, metric).includes(0.5) else "fewer"


def claims(frac, too_high: dict, too_low: dict, lens, fixed: dict, per_token: dict, fill, blocks) -> list:
    """All of chapter 2's verdicts.

    frac: capacity rows by memory fraction (sorted); too_high / too_low: {"fraction", "line"}
    (line None when the engine started); lens: capacity rows by max_model_len (sorted);
    fixed: {"short": row, "long": row} on the same block count; per_token: {"article", "full",
    "engine"} bytes; fill: the fixed-cache row at the short length; blocks: rows by block_size.
    """
    return [memory_fraction(frac), start_failure_high(too_high), start_failure_low(too_low),
            reported_concurrency(lens), smaller_len_more_running(fixed["short"], fixed["long"]),
            formula(per_token), queueing(fill), block_size(blocks)]


def memory_fraction(frac) -> verdicts.Claim:
    """Judged against the rise the chapter's own mechanism predicts (KV = fraction × memory − non-KV,
    from the first row's report), so a capacity that fails to move, its interval holding ×1 and not the
    predicted rise, did not hold (the mechanism did not show, as chapter 1's chain reads it). Held: at
    least half of the predicted rise, every step up."""
    first, last = frac.iloc[0], frac.iloc[-1]
    f0, f1 = verdicts.number(first, "cfg_gpu_memory_utilization"), verdicts.number(last, "cfg_gpu_memory_utilization")
    node, non_kv = verdicts.number(first, "node_memory_gib"), verdicts.number(first, "non_kv_gib")
    if node and non_kv is not None and f0 and f1 and f0 * node > non_kv:
        predicted, how = (f1 * node - non_kv) / (f0 * node - non_kv), tr("fraction × node memory − non-KV memory")
    else:  # a GPU's report has no node memory: the fraction's own ratio, a lower bound of the KV's rise
        predicted, how = (f1 / f0 if f0 and f1 else 2.0), tr("the fractions' ratio (no memory figures reported)")
    need = 1 + (predicted - 1) / 2
    evidence = ", ".join(f"{f:g}: {t:,.0f}" for f, t in zip(frac.cfg_gpu_memory_utilization, frac.kv_cache_tokens))
    c = verdicts.judge_change("2.2 A larger memory fraction gives more KV tokens", first, last, "kv_cache_tokens",
                              "higher", held_at=need,
                              evidence=tr("KV tokens by fraction: {evidence}; predicted ×{predicted:.2f} ({how})",
                                          evidence=evidence, predicted=predicted, how=how),
                              null_refutes=True)
    if c.verdict == verdicts.HELD and not (frac.kv_cache_tokens.diff().dropna() > 0).all():
        c.verdict = verdicts.PARTLY
    c.rule = tr("held: KV tokens rise with every step up in fraction, by at least half the predicted rise "
                "(×{need:.2f}; one start per fraction, so the floor for what a start reports, ×÷{floor:.2f}); an "
                "interval holding no change: did not hold where it excludes the claimed rise (the mechanism did not "
                "show), else cannot tell", need=need, floor=1 + verdicts.CAPACITY_NOISE)
    return c


def start_failure_high(too_high: dict) -> verdicts.Claim:
    """Held only when the engine refused for lack of free memory; a start that went through did not
    hold; a refusal for another reason (a port in use, a missing file) says nothing about memory."""
    line, f = too_high.get("line"), too_high["fraction"]
    kind = failure_kind(line)
    text = "2.2 Too high a fraction: the engine does not start"
    rule = (tr("held: the engine refuses {f:g} with its free-memory check (\"{free_memory_check} … memory "
               "utilization\"); it starts: cannot be judged (that much was free here, so the fraction was not too "
               "high on this machine); another refusal: cannot be judged", f=f, free_memory_check=FREE_MEMORY_CHECK))
    if line is None:
        return verdicts.untested(text, tr("{f:g} started: that share of memory was free here, so it was not too "
                                          "high on this machine", f=f), rule)
    if kind != "free memory":
        return verdicts.untested(text, tr("{f:g} was refused, but not by the free-memory check ({kind}): {line}", f=f,
                                          kind=kind, line=line), rule)
    return verdicts.judge(text, True, f"{f:g} → {line}", rule=rule)


def start_failure_low(too_low: dict) -> verdicts.Claim:
    """Only a refusal for memory bears on the claim: a port in use or a bad path says nothing about
    the KV room, so such a refusal leaves it untested, with the engine's own line."""
    line, f = too_low.get("line"), too_low["fraction"]
    kind = failure_kind(line)
    text = "2.2 Too low a fraction: weights and working memory leave no room for the KV cache"
    rule = (tr("held: the engine refuses with the KV-room check (budget minus non-KV memory ≤ 0); it started: did "
               "not hold; any other refusal (the free-memory check included: too little memory free on the node "
               "says nothing about the room left for KV): cannot be judged"))
    if kind in ("other", "free memory"):
        return verdicts.untested(text, tr("the start at {f:g} was refused by another check than the KV room: {line}",
                                          f=f, line=line),
                                 rule=rule)
    evidence = f"{f:g} → {line}" if line else tr("{f:g} started on this machine", f=f)
    return verdicts.judge(text, kind == "no room for KV", evidence, rule=rule)


def reported_concurrency(lens) -> verdicts.Claim:
    """The engine's figure is KV tokens ÷ max_model_len: a worst case for full-length sequences."""
    first, last = lens.iloc[0], lens.iloc[-1]
    want = last.cfg_max_model_len / first.cfg_max_model_len
    got = first.max_concurrency / last.max_concurrency
    evidence = ", ".join(f"{int(n)}: {c:.2f}" for n, c in zip(lens.cfg_max_model_len, lens.max_concurrency))
    band = 1 + verdicts.CAPACITY_NOISE  # what a start reports moves ×1.016–×1.03 from one start to the next
    close = 1 / band <= got / want <= band
    return verdicts.judge("2.2 The reported maximum concurrency (full-length sequences) falls as max_model_len grows",
                        close and bool((lens.max_concurrency.diff().dropna() < 0).all()),
                        tr("max_model_len: reported concurrency: {evidence} (×{got:.2f} fewer for ×{want:g} longer)",
                           evidence=evidence, got=got, want=want),
                        partly=got > 1,
                        rule=tr("held: falls in proportion (×{want:g} longer → ×{want:g} fewer, within "
                                "×÷{band:.2f}, what a start's report moves from one start to the next; one start "
                                "per length)", want=want, band=band))


def smaller_len_more_running(short, long) -> verdicts.Claim:
    """The article's claim, on real requests: does a smaller max_model_len let more short ones run?"""
    a, b = verdicts.number(short, "peak_running"), verdicts.number(long, "peak_running")
    if few := rows.too_few_samples(short, long):
        return verdicts.untested("2.2 A smaller max_model_len lets more short requests run at once", few)
    if not a or not b:  # a sampled gauge that saw no request reads 0: no ratio to judge
        return verdicts.untested("2.2 A smaller max_model_len lets more short requests run at once",
                                 tr("peak running {value:.0f} vs {value_2:.0f}: a figure of 0 on one side (a "
                                    "sampled gauge that saw no request, a run too short for its sampling) cannot "
                                    "be compared", value=a or 0, value_2=b or 0))
    gain = a / b if b else float("inf")  # the claimed way: more running at the shorter length
    iv = verdicts.ratio_interval(long, short, "peak_running")  # short ÷ long, with its interval
    want = verdicts.number(long, "cfg_max_model_len") / verdicts.number(short, "cfg_max_model_len")
    evidence = (tr("same {value} blocks; peak running {a:.0f} (len {number}) vs {b:.0f} (len {number_2}), "
                   "{text_value}; peak waiting {number_3:.0f} vs {number_4:.0f}; {number_5:.0f} vs {number_6:.0f} "
                   "output tokens/s; reported max concurrency {number_7:.2f} vs {number_8:.2f}",
                   value=int(verdicts.number(short, 'num_blocks') or 0), a=a,
                   number=int(verdicts.number(short, 'cfg_max_model_len')), b=b,
                   number_2=int(verdicts.number(long, 'cfg_max_model_len')), text_value=iv.text(),
                   number_3=verdicts.number(short, 'peak_waiting'), number_4=verdicts.number(long, 'peak_waiting'),
                   number_5=verdicts.number(short, 'output_throughput'),
                   number_6=verdicts.number(long, 'output_throughput'),
                   number_7=verdicts.number(short, 'max_concurrency'),
                   number_8=verdicts.number(long, 'max_concurrency')))
    rule = (tr("held: ×{want:g} more short requests run at once at the shorter length (as the reported figure "
               "says), the ratio's interval past ×1; partly: more, short of that; the same peak (peaks apart by no "
               "more than the preemptions counted, or an interval holding ×1 but not ×{want:g}) or fewer beyond "
               "noise: did not hold, the count stayed put; an interval holding both ×1 and ×{want:g}: cannot tell",
               want=want))
    text = "2.2 A smaller max_model_len lets more short requests run at once"
    # as exercise 2 reads the same rows (same_or_half): peaks within the preemptions counted are the same count
    if within_preemptions(short, long):
        return verdicts.Claim(text, verdicts.NOT_HELD, evidence + tr(" — the engine ran as many at either length "
                                                                     "(peaks apart by no more than the preemptions "
                                                                     "counted, which lower the gauge between "
                                                                     "reads): the count stayed put, as V1 reserves "
                                                                     "nothing per max_model_len"), rule)
    if iv.hi < 1:
        return verdicts.Claim(text, verdicts.NOT_HELD, evidence + tr(" — fewer ran at the shorter length"), rule)
    if iv.includes(1.0):
        if iv.includes(want):  # the gauge's gap is one reading, the claimed change another: the run cannot choose
            return verdicts.Claim(text, verdicts.CANNOT_TELL, evidence + tr(" — the interval holds both ×1 and the "
                                                                            "claimed ×{want:g}", want=want), rule)
        return verdicts.Claim(text, verdicts.NOT_HELD, evidence + tr(" — the interval of the ratio holds ×1 and "
                                                                     "excludes ×{want:g}: the count stayed put, as "
                                                                     "V1 reserves nothing per max_model_len",
                                                                     want=want), rule)
    return verdicts.judge(
        text,
        gain >= want,
        evidence
        + (
            ""
            if gain >= want or not iv.includes(want)
            else tr("; the interval reaches the claimed ×{want:g}, so it may have held in full", want=want)
        ),
        partly=True,
        rule=rule,
    )


def formula(per_token: dict) -> verdicts.Claim:
    article, full, engine = per_token["article"], per_token["full"], per_token["engine"]
    err = abs(full - engine) / engine
    return verdicts.judge(
        "2.3 The article's formula is incomplete; the full one matches",
        err < 0.05 and engine / article > 2,
        tr(
            "engine {engine:,.0f} B/token; full formula {full:,.0f} (off by {value:.1f} %); article "
            "{article:,.0f} (engine/article ×{engine_2:.0f})",
            engine=engine,
            full=full,
            value=100 * err,
            article=article,
            engine_2=engine / article,
        ),
        rule=tr("held: the full formula within 5 % of the engine (its GiB figure is rounded), the article's off by "
                "more than ×2"),
    )


NEAR_CEILING = 80.0  # peak KV usage (%) that counts as "near the ceiling"


def queueing(fill) -> verdicts.Claim:
    """Judged only where the cache came near its ceiling: requests can also wait for the token budget
    (a burst of prompts larger than one step), which says nothing about memory."""
    usage, waiting = fill["peak_kv_cache_usage_pct"], fill["peak_waiting"]
    text = "2.3 Usage near the ceiling means queueing"
    evidence = tr(
        "peak KV usage {usage:.0f} %, up to {waiting:.0f} waiting, {preemptions:.0f} preemption(s)",
        usage=usage,
        waiting=waiting,
        preemptions=fill["preemptions"],
    )
    rule = (
        tr("held: peak KV usage of {near_ceiling:.0f} % or more with requests waiting; did not hold: that usage "
           "and none waiting; usage below it: cannot be judged (any waiting was for the token budget, not memory)",
           near_ceiling=NEAR_CEILING)
    )
    if few := rows.too_few_samples(fill):
        return verdicts.untested(text, f"{evidence}; {few}", rule)
    if usage < NEAR_CEILING:
        return verdicts.untested(text, tr("{evidence}: the cache never came near its ceiling", evidence=evidence), rule)
    # The peaks can come from different moments (requests wait for the token budget in the first steps too):
    # where the row keeps its /metrics samples, only a sample with both at once counts.
    samples = fill.get("timeseries") if hasattr(fill, "get") else None
    if isinstance(samples, list) and samples:
        both = [
            x for x in samples if (x.get("kv_cache_usage_pct") or 0) >= NEAR_CEILING and (x.get("waiting") or 0) > 0
        ]
        evidence += (
            tr("; {n_both} of {n_samples} /metrics samples had both at once", n_both=len(both), n_samples=len(samples))
            if both
            else tr("; no /metrics sample had usage of {near_ceiling:.0f} % or more and a request waiting at once",
                    near_ceiling=NEAR_CEILING)
        )
        return verdicts.judge(
            text,
            bool(both),
            evidence,
            rule=tr("held: peak KV usage of {near_ceiling:.0f} % or more with requests waiting in the same sample; did "
                    "not hold: that usage and none waiting; usage below it: cannot be judged (any waiting was for the "
                    "token budget, not memory)", near_ceiling=NEAR_CEILING),
        )
    return verdicts.judge(text, waiting > 0, evidence, rule=rule)


# "barely matters", read as the block sizes' figures within ×÷1.5 of each other: the narrowest band a null claim
# can hold in against the ×÷1.3 start-to-start floor of a throughput or a TPOT (verdicts.DEFAULT_NOISE)
BARELY = 0.50


def block_size(blocks) -> verdicts.Claim:
    """A null claim ("barely matters"), judged against the band it states (×÷(1 + BARELY)): held where
    the interval of the ratio between the extreme block sizes lies inside the band for throughput and for
    TPOT; did not hold where one lies wholly outside it; cannot tell otherwise (the interval is never
    narrower than the start-to-start floor, so a ratio near the band's edge cannot be placed)."""
    sizes = tr(", ").join(str(int(b)) for b in blocks.block_size)
    parts, inside, outside = [], True, False
    for metric, name in (("output_throughput", tr("output throughput")), ("mean_tpot_ms", tr("mean TPOT"))):
        low, high = blocks.loc[blocks[metric].idxmin()], blocks.loc[blocks[metric].idxmax()]
        iv = verdicts.ratio_interval(low, high, metric)
        if iv is None:
            return verdicts.untested(
                "2.3 block_size barely matters for short requests (throughput and time per token)",
                tr("{name}: a figure is missing or zero", name=name),
            )
        parts.append(tr("{name} highest ÷ lowest {ratio}", name=name, ratio=iv.text()))
        inside = inside and iv.hi <= 1 + BARELY + 1e-9
        outside = outside or iv.lo > 1 + BARELY
    itl = ", ".join(f"{v:.0f}" for v in blocks.p99_itl_ms) if "p99_itl_ms" in blocks else "?"
    return verdicts.judge(
        "2.3 block_size barely matters for short requests (throughput and time per token)",
        inside,
        tr("across block sizes {sizes}: ", sizes=sizes)
        + tr("; ").join(parts)
        + tr("; P99 ITL {itl} ms, for reference (one run's P99 is noisy)", itl=itl),
        cannot_tell=not inside and not outside,
        rule=tr("held: both ratios' 95 % intervals inside ×÷{value:g} (the claim's \"barely\"); one wholly outside "
                "it: did not hold; an interval across the band's edge: cannot tell", value=1 + BARELY),
    )


# -- exercises --------------------------------------------------------------------------------
def answer_blocks(plan: dict, block_size: int) -> int:
    """Blocks a request's answer adds after its prompt's (`fixed_cache_plan` makes it spill into at least
    one more at any block size): admission does not count them, so they can preempt, not refuse."""
    return blocks_for(plan["input_len"] + plan["output_len"], block_size) - blocks_for(plan["input_len"], block_size)


def peak_running_hint(plan: dict | None = None, block_size: int | None = None) -> str:
    """Exercise 1's hint, true for the block size in use."""
    where = ""
    if plan and block_size:
        extra = answer_blocks(plan, block_size)
        where = (
            tr(" Here the answer fits in the room left in the prompt's last block.")
            if extra == 0
            else tr(" Here the answer needs {extra} more block(s) as it grows, which admission does not count.").format(
                extra=extra
            )
        )
    return (
        tr(
            "Count blocks, not tokens. The scheduler admits a request when the blocks for its whole prompt are "
            "free (rounded up to whole blocks); its answer gets blocks later, as it grows."
        )
        + where
        + tr(" How many usable blocks are there (the override minus the one vLLM keeps back)?")
    )


def admitted(row, plan: dict) -> int | None:
    """Exercise 1's answer: the short requests the engine's own blocks admit at once (`num_blocks`
    less the null block, over the prompt's whole blocks), at most the requests sent. The sampled peak
    can read lower (/metrics is read twice a second), so the check counts blocks, as chapter 3's does."""
    blocks, size = verdicts.number(row, "num_blocks"), verdicts.number(row, "block_size")
    if not blocks or not size:
        return None
    return min(plan["num_prompts"], max(0, int(blocks) - 1) // blocks_for(plan["input_len"], int(size)))


def q_peak_running(short: Callable[[], dict], plan: dict | None = None, block_size: int | None = None) -> Question:
    """Exact (a count of whole requests), with the named mistakes: the null block counted, and the
    engine's reported maximum concurrency (full-length sequences), as printed or rounded down."""

    def null_block():
        r = short()
        size = verdicts.number(r, "block_size")
        if plan is None or not size or not verdicts.number(r, "num_blocks"):
            return math.nan
        return min(plan["num_prompts"], int(r["num_blocks"]) // blocks_for(plan["input_len"], int(size)))

    def whole_length():  # the prompt and its answer counted at admission: vLLM admits on the prompt's blocks
        r = short()
        size = verdicts.number(r, "block_size")
        if plan is None or not size or not verdicts.number(r, "num_blocks"):
            return math.nan
        usable = int(r["num_blocks"]) - 1
        return min(plan["num_prompts"], usable // blocks_for(plan["input_len"] + plan["output_len"], int(size)))

    reported = N_(
        "you used the engine's reported maximum concurrency, which counts full-length sequences, not these short ones"
    )
    rounded = N_(
        "you used the engine's reported maximum concurrency, rounded down, which counts full-length "
        "sequences, not these short ones"
    )
    return Question(
        "requests running at once at the short length",
        lambda: admitted(short(), plan) if plan is not None else short()["peak_running"],
        0.0,
        peak_running_hint(plan, block_size),
        "ch02_q1.py",
        unit="requests",
        known_wrong={
            "you counted the block vLLM keeps back (the null block)": null_block,
            "you counted the answer's blocks too: vLLM admits a request on its prompt's blocks "
            "(allocate_slots), and the answer's come as it is written": whole_length,
            reported: lambda: short()["max_concurrency"],
            rounded: lambda: math.floor(short()["max_concurrency"]),
        },
    )


def q_same_or_half(short: Callable[[], dict], long: Callable[[], dict]) -> Choice:
    return Choice(
        "doubling max_model_len on the same blocks",
        ["about half", "fewer", "the same", "more", "cannot tell"],
        lambda: same_or_half(short(), long()),
        "V1 hands out blocks as tokens arrive. Does a short request use more blocks when max_model_len is larger?",
        "ch02_q2.py",
        why=lambda: tr("peak running {value:.0f} vs {value_2:.0f}", value=short()["peak_running"],
                       value_2=long()["peak_running"]),
    )


def q_kv_tokens(
    row: Callable[[], dict], article_bytes: Callable[[], float], ref: Callable[[], dict] | None = None
) -> Question:
    def expected():  # the method needs the node's memory and the non-KV memory: a GPU's report has neither
        r = row()
        return (
            r["kv_cache_tokens"]
            if verdicts.number(r, "node_memory_gib") and verdicts.number(r, "non_kv_gib") is not None
            else None
        )

    def scaled():  # the reference's tokens times the fractions' ratio: as if the non-KV memory scaled too
        if ref is None:
            return None
        r, f = ref(), row()
        fr, ff, tokens = (
            verdicts.number(r, "cfg_gpu_memory_utilization"),
            verdicts.number(f, "cfg_gpu_memory_utilization"),
            verdicts.number(r, "kv_cache_tokens"),
        )
        return tokens * ff / fr if fr and ff and tokens else None

    def no_non_kv():  # the whole budget taken for KV
        f = row()
        g = lambda k: verdicts.number(f, k)  # noqa: E731
        if not (
            g("cfg_gpu_memory_utilization") and g("node_memory_gib") and g("kv_cache_gib") and g("kv_cache_tokens")
        ):
            return None
        return g("cfg_gpu_memory_utilization") * g("node_memory_gib") * g("kv_cache_tokens") / g("kv_cache_gib")

    return Question(
        "KV tokens at another fraction",
        expected,
        0.05,
        "KV memory = fraction × node memory − non-KV memory (from the rows above); divide by the full "
        "formula's bytes per token.",
        "ch02_q3.py",
        unit="tokens",
        known_wrong={
            "you divided by the article's bytes per token": lambda: row()["kv_cache_gib"] * 2**30 / article_bytes(),
            "you scaled the tokens by the fractions' ratio, but the non-KV memory does not scale with the "
            "fraction": scaled,
            "you left out the non-KV memory (weights, runtime): the KV cache gets what is left of the "
            "budget": no_non_kv,
        },
    )


WHICH_CHECK = {"free memory": N_("free memory on the node"), "no room for KV": N_("no room for KV"),
               None: N_("it started")}  # exercise 4's options (typed in English); the summary shows them with tr()


def q_which_check(too_low: Callable[[], dict]) -> Choice:
    """Exercise 4. "it started" is an answer too, so the check can be passed whatever the engine did;
    a refusal by no memory check at all (a port in use) cannot be checked."""
    return Choice(
        "which check stopped the too-low fraction",
        list(WHICH_CHECK.values()),
        lambda: WHICH_CHECK.get(failure_kind(too_low()["line"])),
        "A tiny fraction asks for very little memory, so free memory is plentiful. What must fit inside "
        "the budget before the KV cache gets any?",
        "ch02_q4.py",
        why=lambda: too_low()["line"] or "it started",
        why_when_wrong=False,
    )


# The template every home follows (helpers/chapters/__init__.py says what each part is).
def inside_the_fill(row: dict) -> str:
    """The fill run's timeline in numbers: the requests whose first token came before any request had
    finished (the cache admitted them from the start) against those whose first token came only after
    (the moment a finished request hands its blocks back), with each group's median wait for it, and the
    preemptions /metrics counted."""
    run = (row.get("runs") or [row])[0]
    starts, ttfts, e2els = run.get("request_start_s"), run.get("request_ttft_ms"), run.get("request_e2el_ms")
    if not starts or not ttfts or not e2els:
        return tr(
            "This row keeps no timeline (it was measured before timelines were stored): set FORCE = True in "
            "the set-up cell and run again."
        )
    cap = row.get("load_max_concurrency")
    if cap and cap == cap and cap < len(starts):  # the client held the later requests: not the cache's doing
        return tr(
            "The client sent at most {cap:.0f} requests at once, so a request sent later waited in the "
            "client, not for blocks: this run cannot show the cache's ceiling.",
            cap=cap,
        )
    first_done = min(s + e / 1000 for s, e in zip(starts, e2els))
    early = [w for s, w in zip(starts, ttfts) if s + w / 1000 < first_done]
    late = [w for s, w in zip(starts, ttfts) if s + w / 1000 >= first_done]
    said = (
        tr(
            "Of the {n_starts} requests, {n_early} had their first token before any request finished (a median "
            "{statistics_median:.0f} ms after being sent)",
            n_starts=len(starts),
            n_early=len(early),
            statistics_median=statistics.median(early),
        )
        if early
        else tr("None of the {n_starts} requests had its first token before a request finished", n_starts=len(starts))
    )
    sent_early = all(s < first_done for s, w in zip(starts, ttfts) if s + w / 1000 >= first_done)
    blocks = (
        tr(" when blocks came back") if sent_early and (rows.full_while_waiting(row, NEAR_CEILING) or 0) > 0 else ""
    )
    said += (
        tr(
            "; the other {n_late} had theirs only after the first request finished,{blocks} (a median "
            "{statistics_median:.0f} ms after being sent)",
            n_late=len(late),
            blocks=blocks,
            statistics_median=statistics.median(late),
        )
        if late
        else tr("; none had to wait for a request to finish: the cache held them all at once")
    )
    return said + tr(". /metrics counted {value:.0f} preemption(s) in this run.", value=run.get("preemptions") or 0)


DESIGNS = ("NEAR_CEILING", "FREE_MEMORY_CHECK", "KV_SHARE_CHECK", "NO_ROOM_FOR_KV", "blocks_for", "fixed_cache_plan")
PANELS = ()
CHECKS = (
    "admitted",
    "answer_blocks",
    "peak_running_hint",
    "q_peak_running",
    "q_same_or_half",
    "q_kv_tokens",
    "WHICH_CHECK",
    "q_which_check",
)
CLAIMS = (
    "failure_kind",
    "within_preemptions",
    "same_or_half",
    "claims",
    "memory_fraction",
    "start_failure_high",
    "start_failure_low",
    "reported_concurrency",
    "smaller_len_more_running",
    "formula",
    "queueing",
    "block_size",
    "inside_the_fill",
    "BARELY",
)
