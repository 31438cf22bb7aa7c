"""Chapter 6a's claims (reading the start-up log, a tuning path toward a latency target), its tuning
path's steps, and the rule that judges each claim from the rows notebook 06a measured.

The notebook passes:
  checks    6.1: explain(...) records (figure, engine, computed, agree)
  share     6.1: the KV cache's share of the device's memory (0–1; on a CPU, the NUMA node's memory the
                 fraction is taken of), and the service row measured on that engine (its peak KV usage and
                 preemptions say whether concurrency was short)
  records   6.2: walk(...) records (runs.py); `advised` the advisor's row and the baseline it changed;
                 `mixed` the final mixed-load rows {"baseline": row, "tuned": row}
"""
from __future__ import annotations

from helpers import models, tuning, verdicts
from helpers.config import ConfigError, EngineConfig
from helpers.i18n import N_, heading_, tr
from helpers.slo import SLO
from helpers.tuning import Step
from helpers.verdicts import Claim

FULL_PCT = 90.0  # peak KV usage that counts as "short of room"


def tuning_steps(base: EngineConfig, seats: int, engine_max_num_seqs: int, longest_prompt: int, full: bool,
                 gpu_count: int) -> list[Step]:
    """6.2's path, one setting a step, in the order the article gives. A smoke run leaves out the
    max_model_len, memory-fraction and fp8-KV steps; a CUDA machine adds CUDA graphs (the guide's
    baseline is eager, far from vLLM's GPU default) and, with several GPUs, a parallel split.
    `longest_prompt`: the longest request of every load the tuned engine will be sent (prompt and
    answer), so the max_model_len step never refuses one of them."""
    steps = [Step("max_num_seqs", {"max_num_seqs": seats}, 3),
             Step("batch budget", {"max_num_batched_tokens": max(256, int(engine_max_num_seqs))}, 3),
             Step("prefix caching off", {"enable_prefix_caching": False}, 4),
             Step("INT8 weights", {"model": "embedded-int8"}, 5)]
    if full:
        length = 1 << (longest_prompt - 1).bit_length()
        # a step that equals the baseline's value changes nothing (2,048 for the guide's loads): left out
        first = [Step("max_model_len", {"max_model_len": length}, 2)] if length != base.max_model_len else []
        steps = [*first, Step("memory fraction", {"gpu_memory_utilization": base.more_memory(0.4)}, 2), *steps]
        if base.runs_here("kv_cache_dtype", ["fp8"]):
            steps.append(Step("fp8 KV cache", {"kv_cache_dtype": "fp8"}, 5))
    if base.device == "cuda":  # written from vLLM's source; not run where this guide was built
        steps.append(Step("CUDA graphs", {"enforce_eager": False}, 4))
        if (layout := parallel_step(base, gpu_count)) is not None:
            steps.append(layout)
    return steps


QUANTIZING = {"model", "kv_cache_dtype"}  # the steps that make a faster kernel (fewer bytes a step)
SCHEDULING = {"max_num_seqs", "max_num_batched_tokens"}


def opposite_order(steps: list[Step]) -> list[Step]:
    """The order the article warns against: the quantization steps first, then the others in reverse
    (on a GPU the CUDA-graph and parallel steps come last in `tuning_steps`: a plain reversal would start
    with them, not with quantization)."""
    quant = [s for s in steps if QUANTIZING & set(s.change)]
    return [*quant, *reversed([s for s in steps if s not in quant])]


def parallel_step(base: EngineConfig, gpu_count: int) -> Step | None:
    """The largest tensor-parallel size the GPUs and the model's heads allow (the embedded model's
    9 heads and 3 KV heads take 3, not 2), else two data-parallel replicas, else None."""
    shape = models.shape(models.resolve(base.model)) or {}
    heads, kv = shape.get("num_attention_heads", 1), shape.get("num_key_value_heads", 1)
    for tp in range(gpu_count, 1, -1):
        if heads % tp == 0 and (kv % tp == 0 or tp % kv == 0):
            return Step(f"{tp} GPUs (TP={tp})", {"tensor_parallel_size": tp}, 5)
    return Step("two GPUs (DP=2)", {"data_parallel_size": 2}, 5) if gpu_count >= 2 else None


# a goodput claim names no size: a change within noise cannot exclude one, so the run cannot tell (chapter 0)
_GOODPUT_VERDICT = {tuning.HELPED: verdicts.HELD, tuning.NOTHING: verdicts.CANNOT_TELL, tuning.HURT: verdicts.NOT_HELD}


FROM_MEMORY = ("KV cache tokens", "memory budget (GiB)", "KV cache (GiB)")  # `explain`'s checks that start from GiB
CAPACITY_CLAIM = "6.1 The start-up log's capacity figures follow from its memory figures"
CAPACITY_RULE = ("held: every figure within its tolerance (tokens 1 %, from the blocks 0.1 %, the others 2 %); partly: "
                 "the KV tokens computed from the KV GiB agree (memory to capacity), though another figure is off; "
                 "did not hold: they do not; tested only where at least one check starts from memory")


def startup_claims(checks: list[dict], share: float, loaded: dict, non_kv_share: float) -> list[Claim]:
    """`share` and `non_kv_share`: the KV cache's and the non-KV memory's shares of the device's
    memory (the NUMA node's on a CPU), as the article reads them."""
    agree = [c for c in checks if c["agree"]]
    off = [c["figure"] for c in checks if not c["agree"]]
    if not any(c["figure"] in FROM_MEMORY for c in checks):
        # a server's /metrics or /server_info gives block counts only, and vLLM computes its capacity
        # figures from those: agreeing with each other shows nothing about the memory
        return [verdicts.untested(CAPACITY_CLAIM, tr("{n_checks} figure(s) checked, none of them from a memory "
                                                     "figure (a server started elsewhere reports no start-up lines)",
                                                     n_checks=len(checks)),
                                  rule=CAPACITY_RULE), band_claim(share, non_kv_share, loaded)]
    return [
        verdicts.judge(CAPACITY_CLAIM, not off,
                     tr("{n_agree} of {n_checks} figures agree with the harness's arithmetic", n_agree=len(agree),
                        n_checks=len(checks))
                     + (tr("; off: {names}", names=tr(", ").join(tr(n) for n in off)) if off else ""),
                     # the checks from the blocks always agree (vLLM derives both from one count), and the budget
                     # and KV GiB are memory against memory: partly needs the KV tokens computed from the KV GiB
                     partly=any(c["figure"] == "KV cache tokens" for c in agree),
                     rule=CAPACITY_RULE),
        band_claim(share, non_kv_share, loaded),
    ]


def band_claim(share: float | None, non_kv_share: float | None, loaded: dict) -> Claim:
    """The article's three bands of the KV share of device memory, each judged by what it says;
    untested where the shares are not known (`kv_shares`)."""
    if share is None or non_kv_share is None:
        return verdicts.untested("6.1 The article's bands of the KV share of the device's memory", NO_SHARES)
    peak = verdicts.number(loaded, "peak_kv_cache_usage_pct") or 0
    preempted = verdicts.number(loaded, "preemptions") or 0
    short = peak >= FULL_PCT or preempted > 0
    ev = (tr("KV cache {value:.0f} % of the device's memory, non-KV memory {value_2:.0f} %; under the service load "
             "the cache peaked at {peak:.1f} % with {preempted:.0f} preemption(s)", value=100 * share,
             value_2=100 * non_kv_share, peak=peak, preempted=preempted))
    upper = 0.40 <= share < 0.60 or share >= 0.70
    if upper and peak < 50 and not preempted:  # the upper bands promise room under load
        return verdicts.cannot_tell("6.1 The article's upper bands of the KV share (room for concurrency)",
                                    tr("{ev}: the load used under half of the cache, so it could not show a cache "
                                       "too small for it", ev=ev))
    if share < 0.20:
        return verdicts.judge("6.1 A KV share under a fifth means the weights crowd the cache out",
                              non_kv_share > share, ev,
                              rule=tr("held: the non-KV memory (weights, runtime) is larger than the cache; it "
                                      "does not say which of the two: on a CPU with a small model the runtime is "
                                      "most of it, and the guide's fraction sets the band more than either"))
    if 0.40 <= share < 0.60:
        return verdicts.judge("6.1 A KV share of two to three fifths is a sound configuration", not short, ev,
                            rule=tr("held: the service load never filled the cache (peak under {full_pct:.0f} %, "
                                    "no preemption)", full_pct=FULL_PCT))
    if share >= 0.70:
        return verdicts.judge("6.1 A KV share above seven tenths leaves plenty of room for concurrency", not short, ev,
                            rule=tr("held: the service load never filled the cache (peak under {full_pct:.0f} %, "
                                    "no preemption)", full_pct=FULL_PCT))
    return verdicts.untested("6.1 The article's bands of the KV share (under a fifth, two to three fifths, over seven "
                           "tenths)", tr("{ev}: {value:.0f} % lies between the bands, which say nothing about it",
                                         ev=ev, value=100 * share))


GOODPUT_RULE = ("held: goodput at the target higher beyond noise and the share of requests within the target not "
                "lower beyond noise, or the share rising to the target's where it was missed (the step helped); did "
                "not hold: either one lower beyond noise, or the share falling below the target's (a failed request "
                "is a miss); within noise of each other: cannot tell; a change of fewer than "
                f"{tuning.MIN_COUNT_CHANGE} requests within the target, with no crossing, counts as none, and then "
                "only the pace (the run's duration) is judged; from a reference "
                f"that met the target for no request, held needs {tuning.FROM_NONE_SHARE:.0%} of the requests (and "
                f"{tuning.FROM_NONE_COUNT}) within it; cannot be judged: no request met it on either side, or the rows "
                "lack per-request latencies, or both sides are the same run")


def _goodput_claim(text: str, before: dict, after: dict, slo: SLO, evidence: str, rule: str = GOODPUT_RULE) -> Claim:
    """A claim that `after` raised goodput at the target over `before` (tuning.effect: goodput and
    the share of requests within the target), with both figures in the evidence."""
    if before is after or (before.get("run_id") is not None and before.get("run_id") == after.get("run_id")):
        return verdicts.untested(text, tr("{evidence}: both sides are the same run, so there is nothing to compare",
                                          evidence=evidence),
                                 rule)
    try:
        judged, ratio = tuning.effect(before, after, slo)
    except ConfigError as why:
        return verdicts.untested(text, f"{evidence}: {why}", rule)
    g0, g1 = slo.goodput(before) or 0, slo.goodput(after) or 0
    s0, s1 = slo.met_share(before) or 0, slo.met_share(after) or 0
    times = tuning.ratio_text(before, after, slo, ratio)
    ev = (tr("{rstrip}: goodput {g0:.2f} → {g1:.2f} req/s ({times}); within the target {value:.0f} % → "
             "{value_2:.0f} % of requests (the target asks {value_3:.0f} %)", rstrip=evidence.rstrip('.。'), g0=g0,
             g1=g1, times=times, value=100 * s0, value_2=100 * s1, value_3=100 * slo.share))
    if g0 == 0 and g1 == 0:
        return verdicts.cannot_tell(
            text, tr("{ev}: no request met the target on either side, so goodput cannot tell them apart", ev=ev), rule
        )
    ceiling = tuning.pace_ceiling(before, after) if tuning.judged_on_pace(before, after, slo) else None
    if (
        judged == tuning.NOTHING
        and ceiling is not None
        and ceiling <= 1 + verdicts.DEFAULT_NOISE
        and tuning.count_cannot_decide(before, slo)
    ):
        left = (
            tr(
                "fewer than {min_count_change} more requests could meet the target: only crossing it could show "
                "a gain here",
                min_count_change=tuning.MIN_COUNT_CHANGE,
            )
            if (slo.met_share(before) or 0) < slo.share
            else tr(
                "the reference already meets the target, with fewer than {min_count_change} of its requests "
                "left to meet it: no step could show a gain at this rate",
                min_count_change=tuning.MIN_COUNT_CHANGE,
            )
        )
        return verdicts.cannot_tell(
            text,
            tr(
                "{ev}: judged on the pace, and an engine no faster per request than "
                "these two could not have finished this load more than ×{ceiling:.2f} "
                "sooner, inside the noise allowance, and {left}",
                ev=ev,
                ceiling=ceiling,
                left=left,
            ),
            rule,
        )
    return Claim(text, _GOODPUT_VERDICT[judged], ev, rule)


def tuning_claims(
    records: list[dict], advised: dict, advice_text: str, mixed: dict, slo: SLO, fresh: tuple[dict, dict] | None = None
) -> list[Claim]:
    """`fresh`: (the baseline, the kept configuration) on prompts no step saw; the path's own row was
    chosen as the best of several noisy rows, so the claim is judged on these two when given, the
    same requests on both sides."""
    base, kept = records[0], [r for r in records[1:] if r["kept"]]
    best = kept[-1] if kept else base
    steps = tr(", ").join(f"{r['step']} {tr(r['effect'])}" for r in records[1:]) or tr("no step ran")
    rule = GOODPUT_RULE
    before, judged_row, how = (
        (*fresh, tr("; judged on fresh prompts, the baseline and the kept configuration alike"))
        if fresh
        else (base["row"], best["row"], "")
    )
    path_text = "6.2 One setting at a time, from a baseline, raises goodput at the target"
    path_evidence = tr("{kept} of {steps_run} steps kept ({steps}){how}", kept=len(kept), steps_run=len(records) - 1,
                       steps=steps, how=how)
    effects = [r["effect"] for r in records[1:]]
    if not kept and effects:  # measured, and nothing helped: the path ended at the baseline
        # a control (a default switched off, to show it earns its keep) is not an attempt to raise goodput
        attempts = [r for r in records[1:] if r["step"] not in CONTROLS]
        hurt = sum(r["effect"] == tuning.HURT for r in attempts)
        ceilings = [r.get("pace_ceiling") for r in attempts]
        if (
            not hurt
            and attempts
            and all(r.get("judged_on") == "pace" for r in attempts)
            and all(c is not None and c <= 1 + verdicts.DEFAULT_NOISE for c in ceilings)
            and tuning.count_cannot_decide(base["row"], slo)
        ):
            left = (
                tr(
                    "fewer than {min_count_change} more requests could meet the target: at this size only "
                    "crossing it could show a gain",
                    min_count_change=tuning.MIN_COUNT_CHANGE,
                )
                if (slo.met_share(base["row"]) or 0) < slo.share
                else tr(
                    "the baseline already meets the target, with fewer than {min_count_change} of its requests "
                    "left to meet it: no step could show a gain at this rate",
                    min_count_change=tuning.MIN_COUNT_CHANGE,
                )
            )
            return [
                verdicts.cannot_tell(
                    path_text,
                    path_evidence
                    + tr(
                        ": every step was judged on the pace, and "
                        "an engine no faster per request than the "
                        "rows compared could not have finished this "
                        "load more than ×{ceilings:.2f} sooner (the "
                        "arrival schedule and the last request's "
                        "own time), inside the noise allowance, and "
                        "{left}",
                        ceilings=max(ceilings),
                        left=left,
                    ),
                    rule,
                ),
                *_other_tuning_claims(advised, advice_text, mixed, slo, rule),
            ]
        # cannot tell only where every attempt was within noise: a step that hurt beyond the noise was told
        # apart, so the path did find something, and it was worse
        # a step that hurt was dropped, as the method drops it: whether a gain was there to find is as undecided
        # as where none hurt, so the path reads cannot tell either way, the hurt steps named
        path_claim = Claim(
            path_text,
            verdicts.CANNOT_TELL,
            path_evidence
            + (
                tr(
                    ": no step raised goodput at the target ({hurt} lowered it beyond "
                    "the noise and was dropped), so the path ended at the baseline",
                    hurt=hurt,
                )
                if hurt
                else tr(": no step moved goodput at the target beyond the noise, so the path ended at the baseline")
            ),
            tr(
                "no step kept: cannot tell (a step that hurt is dropped, as the method says, and leaves the path at "
                "the baseline); otherwise held / did not hold as for one change: "
            )
            + rule,
        )
    else:
        path_claim = _goodput_claim(path_text, before, judged_row, slo, path_evidence, rule)
    return [path_claim, *_other_tuning_claims(advised, advice_text, mixed, slo, rule)]


CONTROLS = ("prefix caching off",)  # tuning_steps' controls: a default switched off, expected to hurt


def _other_tuning_claims(advised: dict, advice_text: str, mixed: dict, slo: SLO, rule: str) -> list[Claim]:
    out = [
        _goodput_claim(
            "6.2 The advisor's first advice raises goodput", advised["baseline"], advised["row"], slo, advice_text, rule
        )
    ]
    if mixed:
        out.append(
            _goodput_claim(
                "6.2 The tuned configuration still wins on a mixed load",
                mixed["baseline"],
                mixed["tuned"],
                slo,
                tr(
                    "final run, long and short prompts together (goodput counts every request of it, the long "
                    "prompts too)"
                ),
                rule,
            )
        )
    return out


def order_claim(forward: list[dict], reverse: list[dict] | None, slo: SLO) -> Claim:
    """The article's order (memory, scheduling, reuse, quantization last) against the same steps
    in the opposite order (quantization first), on the same load: each path's kept configuration."""
    text = "6.2 The order matters: quantize last, or a faster kernel hides a scheduling problem"
    if not reverse:
        return verdicts.untested(
            text, tr("the opposite order costs one engine start per step; it runs at full size (GUIDE_SIZE=full)")
        )
    best = lambda path: next((r for r in reversed(path) if r["kept"]), path[0])  # noqa: E731
    a, b = best(forward), best(reverse)
    kept = lambda path: ", ".join(r["step"] for r in path[1:] if r["kept"]) or "none"  # noqa: E731
    same = (a.get("config") is not None and a.get("config") == b.get("config")) or a["row"] is b["row"]
    tested = tr(
        "tested only where the article's order kept a scheduling step and quantization first kept a quantization step"
    )
    kept_keys = lambda path, keys: {k for r in path[1:] if r["kept"] for k in (r.get("change") or {}) if k in keys}  # noqa: E731
    fwd_sched = kept_keys(forward, SCHEDULING)
    if not fwd_sched:
        return verdicts.untested(
            text,
            tr(
                "the article's order kept no scheduling step (it kept {kept}), so there "
                "was no scheduling problem for a faster kernel to hide",
                kept=kept(forward),
            ),
            tested,
        )
    if not kept_keys(reverse, QUANTIZING):
        return verdicts.untested(
            text,
            tr(
                "quantization first kept no quantization step (it kept {kept}), so no "
                "faster kernel was there to hide anything",
                kept=kept(reverse),
            ),
            tested,
        )
    if fwd_sched <= kept_keys(reverse, SCHEDULING):
        return Claim(
            text,
            verdicts.NOT_HELD,
            tr(
                "quantization first kept the scheduling step(s) the article's "
                "order kept too (the article's order kept {kept}; quantization "
                "first kept {kept_2}): the faster kernel hid nothing",
                kept=kept(forward),
                kept_2=kept(reverse),
            ),
            "did not hold: quantizing first still kept the scheduling step, so it hid nothing",
        )
    if same and (slo.goodput(a["row"]) or 0) > 0:
        return Claim(
            text,
            verdicts.NOT_HELD,
            tr(
                "both orders ended at the same configuration (the article's order "
                "kept {kept}; quantization first kept {kept_2}): quantizing first "
                "did not hide the scheduling step",
                kept=kept(forward),
                kept_2=kept(reverse),
            ),
            "did not hold: both orders ended at one configuration, so quantizing first hid nothing",
        )
    return _goodput_claim(
        text,
        b["row"],
        a["row"],
        slo,
        tr(
            "the article's order kept {kept}; quantization first kept {kept_2}; the opposite order's kept "
            "configuration against the article's",
            kept=kept(forward),
            kept_2=kept(reverse),
        ),
        tr(
            "held: the article's order ends with a higher goodput than the opposite order beyond noise, and no "
            "smaller share within the target; cannot tell: the two orders' goodputs within noise of each other; "
            "cannot be judged: no request met the target on either path"
        ),
    )


# -- 6.1: each figure of the report, cross-checked ----------------------------------------------
# The article's reading of the KV cache's share of the engine's memory (its own rule of thumb,
# from load tests): (upper bound of the band, what it says). Chapter 6 tests it on this machine.
KV_SHARE_BANDS = (
    (0.20, N_("low: the weights take most of the memory; quantize, or add devices")),
    (0.40, N_("between the article's bands")),
    (0.60, N_("reasonable: tune max_model_len and the concurrency cap next")),
    (0.70, N_("between the article's bands")),
    (1.01, N_("high: plenty of concurrency; watch long sequences for overflow")),
)


NO_SHARES = (
    "the start-up report gives no non-KV memory (the CPU's \"Auto set\" line does, a GPU's log does not), "
    "so the shares of the device's memory are not known here"
)


def kv_shares(cap: dict, fraction: float) -> tuple[float | None, float | None]:
    """The KV cache's and the non-KV memory's shares of the memory the fraction is taken of (the
    NUMA node's on a CPU), from the start-up report: the node's memory its "Auto set" line prints, else
    its budget (else KV + non-KV) ÷ the fraction (the budget is rounded up, so the node's own figure comes
    first). (None, None) where the report lacks the figures (a GPU's log: `startup_log.parse_startup`)."""
    kv, non_kv = verdicts.number(cap, "kv_cache_gib"), verdicts.number(cap, "non_kv_gib")
    if kv is None or non_kv is None or not fraction:
        return None, None
    device = (
        verdicts.number(cap, "node_memory_gib") or (verdicts.number(cap, "memory_budget_gib") or kv + non_kv) / fraction
    )
    return kv / device, non_kv / device


def share_text(kv_share: float | None, non_kv_share: float | None, fraction: float) -> str:
    """One sentence on the shares and the article's reading of them, or why they are not known."""
    if kv_share is None or non_kv_share is None:
        return tr("KV share of the device's memory: not known, {no_shares}.", no_shares=NO_SHARES)
    return tr(
        "KV cache {value:.0f} % of the device's memory (non-KV memory {value_2:.0f} %, the budget "
        "{value_3:.0f} %); the article's reading: {kv_share_band}.",
        value=100 * kv_share,
        value_2=100 * non_kv_share,
        value_3=100 * fraction,
        kv_share_band=kv_share_band(kv_share),
    )


def kv_share_band(share: float) -> str:
    """The article's reading of the KV cache's share of the device's memory (0–1)."""
    return tr(next(text for top, text in KV_SHARE_BANDS if share < top))


CHECK_HEADINGS = (heading_("figure"), heading_("engine"), heading_("computed"), heading_("how"), heading_("agree"))


def explain(row: dict, shape: dict, bytes_per_number: int, max_model_len: int, fraction: float) -> list[dict]:
    """Each capacity figure the engine reported, beside what the harness computes from the
    model's config.json and the settings, and whether the two agree (within `tolerance`).
    Figures the engine did not report (a GPU log has no node memory) are left out."""
    per_token = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * bytes_per_number
    g = lambda k: row.get(k)  # noqa: E731
    checks = []  # shown through tr() (helpers.tables.in_language): the figure names below and CHECK_HEADINGS

    def add(figure, reported, computed, how, tolerance=0.02):
        if reported is None or computed is None:
            return
        ok = abs(float(reported) - float(computed)) <= tolerance * max(abs(float(computed)), 1e-9)
        checks.append({"figure": figure, "engine": reported, "computed": computed, "how": how, "agree": ok})

    # vLLM's order (get_max_concurrency_for_kv_cache_config, kv_cache_utils.py): blocks → concurrency =
    # blocks ÷ cdiv(max_model_len, block_size) → the logged tokens = concurrency × max_model_len.
    size = g("block_size") or 1
    per_request = -(-max_model_len // size)
    if g("kv_cache_gib") is not None:
        blocks = int(g("kv_cache_gib") * 2**30 // (per_token * size))
        add(
            N_("KV cache tokens"),
            g("kv_cache_tokens"),
            int(blocks / per_request * max_model_len),
            tr(
                "KV GiB ÷ {per_token:,} bytes per token in whole blocks, ÷ the blocks of one {max_model_len}-token "
                "request, × max_model_len",
                per_token=per_token,
                max_model_len=max_model_len,
            ),
            tolerance=0.01,
        )
    if g("num_blocks") and g("block_size"):
        add(
            N_("KV cache tokens (blocks)"),
            g("kv_cache_tokens"),
            int(g("num_blocks") / per_request * max_model_len),
            tr("blocks ÷ the blocks of one full-length request × max_model_len"),
            0.001,
        )
        add(
            N_("max concurrency"),
            g("max_concurrency"),
            g("num_blocks") / per_request,
            tr("blocks ÷ cdiv(max_model_len ({max_model_len}), block size)", max_model_len=max_model_len),
        )
    elif g("kv_cache_tokens"):
        add(
            N_("max concurrency"),
            g("max_concurrency"),
            g("kv_cache_tokens") / max_model_len,
            tr("KV tokens ÷ max_model_len ({max_model_len})", max_model_len=max_model_len),
        )
    if g("node_memory_gib") is not None:
        add(
            N_("memory budget (GiB)"),
            g("memory_budget_gib"),
            fraction * g("node_memory_gib"),
            tr("gpu_memory_utilization ({fraction}) × the node's memory", fraction=fraction),
        )
    if g("memory_budget_gib") is not None and g("non_kv_gib") is not None:
        add(N_("KV cache (GiB)"), g("kv_cache_gib"), g("memory_budget_gib") - g("non_kv_gib"),
            tr("budget − non-KV memory"))
    return checks
