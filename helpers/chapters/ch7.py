"""Chapter 7's figures and claims: this machine's roofs, the decode floor of each measured row
(`helpers.experiment.with_floor`), and what the time above the floor is made of. Lab 5 checks its
answers here too.

The notebook passes rows indexed by name:
  sweep     7.2: the default engine at 1, 2, 4, 8… requests in flight (chapter 3's loads)
  weights   7.3: "base" (7.2's one-in-flight row) and "int8" on the same load
  layouts   7.3: "merged" and "vllm" on one load
  binding   7.3: "auto", "all cores" (and "nobind" at full size) in vLLM's layout, on one load
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from helpers import verdicts
from helpers.i18n import N_, tr
from helpers.results import roofline, rows
from helpers.verdicts import Claim

AGREE = 0.15  # the two bandwidth methods "agree" within 15 %
NEAR_FLOOR = roofline.NEAR_FLOOR  # MBU at which decode counts as running at the bandwidth floor
BASE, INT8 = "base", "int8"
MERGED, VLLM = "merged", "vllm"
AUTO, ALL = "auto", "all cores"


def roof_table(roof: dict) -> pd.DataFrame:
    """GB/s of each kernel by each method: the best run (the roof), the median and the slowest."""
    out = {(method, kernel): {"best (GB/s)": k["best_gbs"], "median (GB/s)": k["median_gbs"],
                              "slowest (GB/s)": k["min_gbs"]}
           for method in ("numpy", "torch", "cuda") if method in roof for kernel, k in roof[method].items()}
    return pd.DataFrame(out).T.rename_axis(["method", "kernel"])


def probe_claim(roof: dict, one: dict | None = None) -> Claim:
    """Like with like: each method's read kernel (the roof's kind of traffic), at the roof's threads.
    Judged on the all-core roof: on one core numpy's sum (a pairwise reduction) runs at its own loop's speed,
    which on this host's one thread reached about half of what torch's vectorised sum did: the kernel, not
    the memory; every kernel of both methods is shown in the table, so that is visible."""
    r = roof.get("methods_ratio")
    if r is None:  # a GPU's roof: one method
        return verdicts.untested(
            "7.1 Two ways of measuring bandwidth agree",
            tr("a GPU's roof is measured one way here (torch on the device)"),
            rule=PROBE_RULE,
        )
    reads = {m: roof[m]["read"]["best_gbs"] for m in ("numpy", "torch")}
    if (
        one is not None
        and one is not roof
        and one.get("numpy")
        and roof["threads"] > one["threads"]
        and reads["numpy"] < reads["torch"]
        and abs(r - 1) > AGREE
    ):  # a cap holds numpy down, below torch
        # numpy's read is one Python thread per core, each as fast as its reduction loop: where it grew nearly in
        # step with the threads (at least 0.8 of linear) and more than torch's read did (which one core cannot
        # saturate either: ×1.34 from one thread to two on a 2-core EPYC), each thread's loop holds it down, so
        # it measures its kernel; a growth torch's own read matches is the memory's, and the claim is judged
        grew = reads["numpy"] / one["numpy"]["read"]["best_gbs"]
        torch_grew = (reads["torch"] / one["torch"]["read"]["best_gbs"]) if one.get("torch") else 1.0
        if grew >= 0.8 * roof["threads"] / one["threads"] and grew > torch_grew:
            return verdicts.cannot_tell(
                "7.1 Two ways of measuring bandwidth agree",
                tr(
                    "numpy's read still grew ×{grew:.2f} from {threads} to {threads_2} thread(s) ({numpy:.1f} GB/s "
                    "against torch's {torch:.1f}): each thread's sum caps it, so on this few cores it measures its "
                    "kernel, not the memory",
                    grew=grew,
                    threads=one["threads"],
                    threads_2=roof["threads"],
                    numpy=reads["numpy"],
                    torch=reads["torch"],
                ),
                rule=PROBE_RULE,
            )
    return verdicts.judge(
        "7.1 Two ways of measuring bandwidth agree",
        abs(r - 1) <= AGREE,
        tr(
            "the read kernel of each at {threads} thread(s): numpy {numpy:.1f} GB/s, torch {torch:.1f} GB/s "
            "(×{value:.2f}); the roof ({value_2}) ran from {bandwidth_min_gbs:.1f} to {bandwidth_gbs:.1f} GB/s",
            threads=roof["threads"],
            numpy=reads["numpy"],
            torch=reads["torch"],
            value=r,
            value_2=roof.get("bandwidth_kernel"),
            bandwidth_min_gbs=roof["bandwidth_min_gbs"],
            bandwidth_gbs=roof["bandwidth_gbs"],
        ),
        partly=abs(r - 1) <= 2 * AGREE,
        rule=PROBE_RULE,
    )


PROBE_RULE = (
    f"held: the two reads within {AGREE:.0%} of each other; partly: within {2 * AGREE:.0%}; cannot tell "
    "where numpy's read, below torch's, still grew nearly in step with the threads and more than torch's (it "
    "measures its kernel: the roof then rests on torch's read alone); not measured on a GPU (one method)"
)


def methods_sentence(roof_all: dict, roof_one: dict, claim: Claim) -> str:
    """7.1's sentence under the probe: the two methods' reads, and the mixed-traffic figure beside the
    roof. A GPU's roof has one method and no thread counts."""
    kind = "copy" if str(roof_all.get("mixed_kernel", "")).endswith("copy") else "triad"
    mixed = (
        tr(" The best {kind} (reads and writes together, {value}) ran at {mixed_gbs:.1f} GB/s: the machine's "
           "figure for mixed traffic, not decode's roof.", kind=kind, value=roof_all.get('mixed_kernel'),
           mixed_gbs=roof_all['mixed_gbs'])
        if roof_all.get("mixed_gbs")
        else ""
    )
    if roof_all.get("methods_ratio") is None:
        return f"*{verdicts.said(claim.verdict)}*: {claim.evidence}.{mixed}"
    one = ""
    if roof_one is not roof_all and roof_one.get("methods_ratio") is not None:
        one = (
            tr(" With one thread, numpy's read ran at ×{methods_ratio:.2f} of torch's: on the same thread numpy's "
               "sum (a pairwise reduction) runs at its own loop's speed, so it says more about the kernel than "
               "about the memory.", methods_ratio=roof_one['methods_ratio'])
        )
    why = (
        claim.evidence
        if claim.verdict in (verdicts.UNTESTED, verdicts.CANNOT_TELL)  # not judged: its reason
        else tr("rule: {rule}", rule=tr(claim.rule))
    )
    return tr(
        "numpy's read ran at ×{methods_ratio:.2f} of torch's with {threads} thread(s): *{verdict}* for the "
        "claim that the two methods agree ({why}).{one}{mixed}",
        methods_ratio=roof_all["methods_ratio"],
        threads=roof_all["threads"],
        verdict=verdicts.said(claim.verdict),
        why=why,
        one=one,
        mixed=mixed,
    )


def floors(folder, dtype, kv_per_token: float, roof: dict, batches=(1, 8), context: float = 144) -> pd.DataFrame:
    """Bytes one decode step reads and the floor TPOT, per batch, for one model copy."""
    weights = roofline.weight_bytes(folder, dtype)
    rows = {}
    for b in batches:
        nbytes = roofline.step_bytes(weights, b, context, kv_per_token)
        rows[b] = {
            "weights read (MB)": weights / 1e6,
            "KV read (MB)": (nbytes - weights) / 1e6,
            "bytes per step (MB)": nbytes / 1e6,
            "floor TPOT (ms)": roofline.floor_ms(nbytes, roof["bandwidth_gbs"]),
        }
    return pd.DataFrame(rows).T.rename_axis("sequences in a step")


def flops_per_token(folder, context: float) -> float:
    """Multiply-adds ×2 per sequence per step: the linear layers (output layer included) and the
    attention over `context` tokens (q·k and p·v)."""
    cfg = json.loads((Path(folder) / "config.json").read_text())
    attention = (
        4
        * context
        * cfg["num_hidden_layers"]
        * cfg["num_attention_heads"]
        * (cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])
    )
    return 2 * roofline.linear_params(folder) + attention


def crossover(
    folder, dtype, kv_per_token: float, roof: dict, context: float, flops: float | None = None
) -> float | None:
    """The batch past which this machine's decode would be compute-bound (None: never). `flops`: another
    count of operations per token (lab 5's named mistakes)."""
    return roofline.crossover_batch(
        roofline.weight_bytes(folder, dtype),
        flops if flops is not None else flops_per_token(folder, context),
        context * kv_per_token,
        roof["bandwidth_gbs"],
        roof["compute_gflops"],
    )


def crossover_mistakes(folder, dtype, kv_per_token: float, roof: dict, context: float) -> dict:
    """Lab 5 Q4's named mistakes: the KV read left out, the attention over the context left out, and the
    attention counted with the KV heads instead of the query heads."""
    cfg = json.loads((Path(folder) / "config.json").read_text())
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    linear = 2 * roofline.linear_params(folder)
    kv_heads = 4 * context * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim
    q_heads = 4 * context * cfg["num_hidden_layers"] * cfg["num_attention_heads"] * head_dim
    never = float("inf")
    return {
        N_("you left out each sequence's KV read (memory time grows with B too)"): lambda: (
            crossover(folder, dtype, 0, roof, context) or never
        ),
        N_(
            "you left out the attention over the context (q·k and p·v, 4 × context × layers × heads × head_dim)"
        ): lambda: crossover(folder, dtype, kv_per_token, roof, context, flops=linear) or never,
        N_("you counted the attention with the KV heads; every query head attends"): lambda: (
            crossover(folder, dtype, kv_per_token, roof, context, flops=linear + kv_heads) or never
        ),
        N_("you counted q·k only; p·v (the weighted sum of the values) costs as much again"): lambda: (
            crossover(folder, dtype, kv_per_token, roof, context, flops=linear + q_heads / 2) or never
        ),
    }


def sweep_frame(rows: dict, roof: dict, folder) -> pd.DataFrame:
    """Per concurrency: measured TPOT, the bandwidth floor and the compute floor (the batch's
    operations, attention included, at the compute roof), in ms, long-form for the roofline chart.
    `roof` is the one the rows' floors used (the machine's), so the lines meet where `crossover` says."""
    out = []
    for c, r in rows.items():
        batch = roofline.decode_batch(r)
        compute = batch * flops_per_token(folder, roofline.decode_context(r)) / (roof["compute_gflops"] * 1e9) * 1e3
        for line, ms in (
            ("measured mean TPOT", r["mean_tpot_ms"]),
            ("bandwidth floor", r["roofline_tpot_ms"]),
            ("compute floor", compute),
        ):
            out.append({"requests in flight": c, "sequences in a step": batch, "line": line, "ms per token": ms})
    return pd.DataFrame(out)


def gap(row, metric: str = "mean_tpot_ms") -> float:
    """Measured TPOT (or `metric`, a step's time) minus the floor, in ms: the time above the floor (not
    only per-step work; see chapter 7.3 for its terms)."""
    return row[metric] - row["roofline_tpot_ms"]


step_metric, metric_name = roofline.step_metric, roofline.metric_name  # 7.3's step time, shared with 5.1


def batches_apart(base: dict, int8: dict, level: float) -> str | None:
    """Why two rows' step times cannot be compared for their bytes alone: they ran different batches
    (each extra sequence in a step adds time of its own, 7.2), beyond the noise allowance."""
    b0, b1 = roofline.decode_batch(base), roofline.decode_batch(int8)
    if b0 and b1 and abs(b1 / b0 - 1) > level:
        return tr(
            "the two engines ran different batches ({b0:.2f} → {b1:.2f} sequences a step, beyond the noise "
            "±{value:.0f} %), and each extra sequence adds time of its own (7.2), so the bytes alone cannot "
            "be read from the step times",
            b0=b0,
            b1=b1,
            value=100 * level,
        )
    return None


def near_floor_claim(one: dict) -> Claim:
    title = "7.2 With one request in flight, decode runs near the bandwidth floor"
    gpu = not one.get("roof_threads")  # a GPU's roof has no thread count (`probes.cuda_probe`)
    evidence = (
        tr(
            "floor {roofline_tpot_ms:.1f} ms (reading {bytes_per_step_mb:.0f} MB at {roof_bandwidth_gbs:.1f} GB/s, ",
            roofline_tpot_ms=one["roofline_tpot_ms"],
            bytes_per_step_mb=one["bytes_per_step_mb"],
            roof_bandwidth_gbs=one["roof_bandwidth_gbs"],
        )
        + (tr("on the GPU") if gpu else f"{one['roof_threads']} thread(s)")
        + "), measured "
        f"{one['mean_tpot_ms']:.1f} ms: MBU {one['mbu']:.2f}"
        + (
            ""
            if gpu
            else tr(
                " (against the worker's {worker_threads} thread(s): {worker_mbu:.2f})",
                worker_threads=one["worker_threads"],
                worker_mbu=one["worker_mbu"],
            )
        )
    )
    if one["mbu"] > 1 or (verdicts.number(one, "worker_mbu") or 0) > 1:
        return verdicts.cannot_tell(
            title,
            tr(
                "{evidence}: faster than the floor, so the roof measured low (a busy "
                "neighbour during the probe?) or the weights fit in the CPU's caches "
                "(compare weights_read_mb with the L3): probe again with force=True",
                evidence=evidence,
            ),
            rule=tr(
                "held: MBU ≥ {near_floor} × the most the worker's cores allow; MBU > 1 cannot be judged",
                near_floor=NEAR_FLOOR,
            ),
        )
    # The machine's MBU cannot pass what the worker's cores can read (vLLM's layout on few cores keeps one
    # free): the threshold is scaled by that ceiling, so a layout is not failed for the cores it was given.
    ceiling = allowed_mbu(one)
    need = NEAR_FLOOR * ceiling
    evidence += (
        tr("; this layout's worker can read at most ×{ceiling:.2f} of the machine's roof, so the threshold is "
           "{near_floor} × {ceiling:.2f} = {need:.2f}", ceiling=ceiling, near_floor=NEAR_FLOOR, need=need)
        if ceiling < 1
        else ""
    )
    return verdicts.judge(
        title,
        one["mbu"] >= need,
        evidence,
        partly=one["mbu"] >= 0.75 * need,
        rule=tr(
            "held: MBU ≥ {near_floor} × the most the worker's cores allow (their roof ÷ the "
            "machine's, at most 1); partly: three quarters of that; MBU > 1 cannot be judged",
            near_floor=NEAR_FLOOR,
        ),
    )


def allowed_mbu(row: dict) -> float:
    """The highest machine MBU the row's worker could reach: its cores' roof over the machine's (1 where
    the worker computed on every core, or a figure is missing)."""
    worker, machine = verdicts.number(row, "worker_roof_gbs"), verdicts.number(row, "roof_bandwidth_gbs")
    return min(1.0, worker / machine) if worker and machine else 1.0


def batching_claim(sweep: dict, cross: float | None) -> Claim:
    """Compares the time each extra sequence adds to a step with a solo step: (t − 1) / (B − 1) for a
    step ×t longer at ×B the sequences. Judged on the largest row still below the crossover batch."""
    title = "7.2 Below the crossover batch, more sequences per step cost little more time per step"
    one = sweep[min(sweep)]
    below = [c for c in sweep if cross is None or roofline.decode_batch(sweep[c]) <= cross]
    many = sweep[max(below)] if below else None
    if many is None or roofline.decode_batch(many) < 1.5 * roofline.decode_batch(one):
        where = (
            tr("the crossover is at {cross:.1f} sequences", cross=cross) if cross else tr("no row ran more sequences")
        )
        return verdicts.cannot_tell(
            title,
            tr("no row ran at least 1.5× the sequences of the first while memory-bound ({where})", where=where),
            rule=tr(
                "held: each extra sequence adds at most 0.25 of a solo step; partly: 0.5; needs a row with "
                "1.5× the sequences below the crossover"
            ),
        )
    b = roofline.decode_batch(many) / roofline.decode_batch(one)
    # A step's time is the median gap between tokens: mean TPOT also carries other requests' prefill steps.
    metric = step_metric(one, many)
    name = metric_name(metric)
    t_ratio = many[metric] / one[metric]
    share = (t_ratio - 1) / (b - 1)
    f1, f2 = verdicts.number(one, "roofline_tpot_ms"), verdicts.number(many, "roofline_tpot_ms")
    # in the same unit as `share` (a fraction of the measured solo step): the floor's growth per sequence
    by_bytes = (f2 - f1) / (b - 1) / one[metric] if f1 and f2 else None
    predicted = (
        tr("; the bytes alone predict {by_bytes:.3f} of a solo step (the floor {f1:.2f} → {f2:.2f} ms): the other "
           "{share:.2f} is work each added sequence brings (arithmetic, sampling, bookkeeping), and what the batch "
           "shares is the rest of the solo step", by_bytes=by_bytes, f1=f1, f2=f2, share=share - by_bytes)
        if by_bytes is not None
        else ""
    )
    # the verdict is judged on the largest row, an average over the range: each row's own share is shown too
    # each step time is one reading: the noise allowance on their ratio gives a band on the share
    level = verdicts.noise([one, many], metric)
    low, high = ((t_ratio * k - 1) / (b - 1) for k in (1 - level, 1 + level))
    shares, costly = [], []
    for c in sorted(below):
        row, bc = sweep[c], roofline.decode_batch(sweep[c]) / roofline.decode_batch(one)
        if bc > 1 and verdicts.number(row, metric):
            each = (row[metric] / one[metric] - 1) / (bc - 1)
            shares.append(f"{roofline.decode_batch(row):.2f}: {each:.2f}")
            if c != max(below) and (row[metric] / one[metric] * (1 - level) - 1) / (bc - 1) > 0.25:  # even at noise
                costly.append(f"{roofline.decode_batch(row):.2f}")
    return verdicts.judge(
        title,
        share <= 0.25 and not costly,
        tr(
            "{decode_batch:.2f} → {decode_batch_2:.2f} sequences a step (×{b:.2f}), {name} {one:.1f} → {many:.1f} "
            "ms (×{t_ratio:.2f}): each extra sequence added {share:.2f} of a solo step",
            decode_batch=roofline.decode_batch(one),
            decode_batch_2=roofline.decode_batch(many),
            b=b,
            name=name,
            one=one[metric],
            many=many[metric],
            t_ratio=t_ratio,
            share=share,
        )
        + predicted
        + (
            tr("; crossover {cross:.1f} at the roof of the worker's cores (7.2 printed the machine's)", cross=cross)
            if cross
            else ""
        )
        + tr(
            "; noise ±{value:.0f} % on the time ratio puts the share between {low:.2f} and {high:.2f}",
            value=100 * level,
            low=low,
            high=high,
        )
        + (
            tr(
                "; each row's share of a solo step per extra sequence (sequences a step: share) {shares}: the "
                "verdict reads the largest, an average over the range",
                shares=", ".join(shares),
            )
            if len(shares) > 1
            else ""
        )
        + (
            tr(
                "; but at {costly} sequences a step the extra sequences cost more than 0.25 of a solo step each, "
                "beyond the noise: cheap on average, not at every step",
                costly=", ".join(costly),
            )
            if costly
            else ""
        ),
        partly=share <= 0.5,
        cannot_tell=low <= 0.25 < high and not costly,
        rule=tr(
            "held: each extra sequence adds at most 0.25 of a solo step, at the largest row below the "
            "crossover and at no smaller row beyond the noise; partly: 0.5, or held on average only; cannot "
            "tell here where the noise on the two step times puts the share on both sides of 0.25; rows past "
            "the crossover are left out"
        ),
    )


def floor_claims(sweep: dict, cross: float | None = None) -> list[Claim]:
    return [near_floor_claim(sweep[min(sweep)]), batching_claim(sweep, cross)]


def bytes_sentence(base: dict, int8: dict, isa: str, device: str = "cpu") -> str:
    """What the INT8 rows say, from the figures `bytes_claims` judges (so the sentence and the table never
    disagree): not measured; within the noise (with or without a saving the bytes predicted outside it);
    slower beyond the noise; faster by at least what the bytes predict, or by less."""
    claims = bytes_claims(base, int8)
    m = step_metric(base, int8)
    apart = batches_apart(base, int8, verdicts.noise([base, int8], m))
    if claims[0].verdict == verdicts.UNTESTED and not apart:
        return tr("INT8 was not measured here: {evidence}.", evidence=claims[0].evidence)
    said = tr(
        "INT8 reads ×{bytes_per_step_mb:.2f} of the bytes per step and took ×{int8:.2f} of the time per step "
        "({metric_name}); the time above the floor went from {gap:.1f} to {gap_2:.1f} ms. ",
        bytes_per_step_mb=int8["bytes_per_step_mb"] / base["bytes_per_step_mb"],
        int8=int8[m] / base[m],
        metric_name=metric_name(m),
        gap=gap(base, m),
        gap_2=gap(int8, m),
    )
    if apart:
        return said + tr("This run cannot say what the bytes did: {apart}.", apart=apart)
    where = f"this CPU ({isa})" if device == "cpu" else "this GPU"
    own_work = tr(
        "the INT8 path's own work (quantizing every activation on the fly, multiplying integers on `{value}`)",
        value=int8.get("linear_kernel") or "?",
    )
    saved = base[m] - int8[m]
    floor_saved = base["roofline_tpot_ms"] - int8["roofline_tpot_ms"]
    level = verdicts.noise([base, int8], m)
    iv = verdicts.ratio_interval(base, int8, m)  # INT8 ÷ the base, with its interval
    if iv is None:
        return said + tr("One of the step times is 0 or missing, so the two cannot be compared.")
    said += tr("That time ratio with its interval: {text_value}. ", text_value=iv.text())
    if iv.includes(1.0):
        threshold = 1 - 0.75 * floor_saved / base[m]  # three quarters of the predicted saving: the claim's line
        if not iv.includes(threshold):
            return said + (
                tr(
                    "The interval holds no change, though the saved bytes predicted {floor_saved:.1f} ms "
                    "a token less (×{value:.2f}); even three quarters of that saving (×{threshold:.2f}, "
                    "the claim's line) lies outside it: the saving did not show.",
                    floor_saved=floor_saved,
                    value=1 - floor_saved / base[m],
                    threshold=threshold,
                )
            )
        return said + (
            tr(
                "The interval holds both no change and ×{threshold:.2f}, three quarters of the saving "
                "the bytes predict (the claim's line): this run cannot tell whether INT8 was faster.",
                threshold=threshold,
            )
        )
    if saved < 0:
        return said + tr(
            "It was slower beyond the noise: on {where} {own_work} cost more than the bytes saved.",
            where=where,
            own_work=own_work,
        )
    stays = claims[1].verdict
    if saved > base[m] * (1 - int8["bytes_per_step_mb"] / base["bytes_per_step_mb"]) + level * base[m]:
        return said + (
            tr(
                "It was faster by more than the bytes can explain ({saved:.1f} ms a step, more than even "
                "a step paid wholly per byte would save): the INT8 kernels' own speed did that, not the "
                "bytes.",
                saved=saved,
            )
        )
    if saved >= 0.75 * floor_saved:  # the claim's own threshold: about what the bytes predict, or more
        tail = {
            verdicts.HELD: tr(" and the rest of the step stayed."),
            verdicts.NOT_HELD: (
                tr(": the time above the floor shrank too, so part of it is paid per byte (reading more slowly "
                   "than the probe), not a fixed cost per step.")
                if gap(int8, m) < gap(base, m)
                else "."
            ),
        }.get(stays, ".")
        return said + (
            tr(
                "It was faster beyond the noise by about what the bytes predict or more ({saved:.1f} ms "
                "a token against {floor_saved:.1f} ms)",
                saved=saved,
                floor_saved=floor_saved,
            )
            + tail
        )
    return said + (
        tr(
            "It was faster beyond the noise, but by less than the bytes ({saved:.1f} ms a token against "
            "{floor_saved:.1f} ms): {own_work} took back part of what they saved.",
            saved=saved,
            floor_saved=floor_saved,
            own_work=own_work,
        )
    )


def bytes_claims(base: dict, int8: dict) -> list[Claim]:
    """Judges "quantization speeds decode by the bytes it saves" on one load, both engines."""
    m = step_metric(base, int8)
    saved = base[m] - int8[m]
    floor_saved = base["roofline_tpot_ms"] - int8["roofline_tpot_ms"]
    by_bytes = int8["bytes_per_step_mb"] / base["bytes_per_step_mb"]
    by_time = int8[m] / base[m]
    iv = verdicts.ratio_interval(base, int8, m)  # INT8 ÷ the base, with its interval
    if iv is None:
        why = tr("a step time ({metric_name}) of 0 or none on one side", metric_name=metric_name(m))
        return [verdicts.untested(BYTES, why, rule=BYTES_RULE), verdicts.untested(STAYS, why, rule=STAYS_RULE)]
    # "within noise" only where even the claim's own threshold (three quarters of the predicted saving) lies
    # outside the interval; where it lies inside, the run cannot tell
    noisy, predicted_inside = iv.includes(1.0), iv.includes(1 - 0.75 * floor_saved / base[m])
    level = verdicts.noise([base, int8], m)
    # "by the bytes they save": the time the saved bytes take at the roof (the floor's fall, in ms), not
    # the bytes' ratio, which the time could match only at an MBU of 1 (the time above the floor stays)
    if base.get("key") is not None and base.get("key") == int8.get("key"):
        why = tr("the two rows are one measurement (a model of your own has no INT8 copy here)")
        return [verdicts.untested(BYTES, why), verdicts.untested(STAYS, why)]
    if apart := batches_apart(base, int8, level):
        return [
            verdicts.cannot_tell(BYTES, apart, rule=BYTES_RULE),
            verdicts.cannot_tell(STAYS, apart, rule=STAYS_RULE),
        ]
    # a step cannot shrink by more than its bytes do, even were every millisecond paid per byte: a larger
    # saving is the INT8 kernels' own speed, not the bytes
    per_byte_saved = base[m] * (1 - by_bytes)
    beyond_bytes = saved > per_byte_saved + level * base[m]
    return [
        verdicts.judge(
            BYTES,
            not noisy and saved >= 0.75 * floor_saved > 0 and not beyond_bytes,
            tr(
                "INT8 reads ×{by_bytes:.2f} of the bytes per step and took ×{by_time:.2f} of the time per step "
                "({metric_name}): {saved:.1f} ms saved a step, against {floor_saved:.1f} ms that the saved bytes "
                "take at the roof (MBU {mbu:.2f} → {mbu_2:.2f}); INT8 ÷ the base {text_value}, against ×{value:.2f} "
                "the saved bytes predict (the claim's line, three quarters of that saving: ×{value_2:.2f})",
                by_bytes=by_bytes,
                by_time=by_time,
                metric_name=metric_name(m),
                saved=saved,
                floor_saved=floor_saved,
                mbu=base["mbu"],
                mbu_2=int8["mbu"],
                text_value=iv.text(),
                value=1 - floor_saved / base[m],
                value_2=1 - 0.75 * floor_saved / base[m],
            )
            + (
                tr(
                    "; more than even a step paid wholly per byte could save ({per_byte_saved:.1f} ms): the INT8 "
                    "kernels' own speed, not the bytes",
                    per_byte_saved=per_byte_saved,
                )
                if beyond_bytes and not noisy
                else ""
            ),
            # where the saving the bytes predict is itself within the noise, a run cannot see it either way
            partly=by_time < 1 and not noisy,
            # a time within noise where the time the bytes predict lies outside the noise of what was measured:
            # the saving did not show; where the prediction lies inside it too, the run cannot tell
            within_noise=noisy and not predicted_inside,
            # a saving past what the bytes could give is the kernels' own speed: it cannot tell what the bytes did
            cannot_tell=(noisy and predicted_inside) or (beyond_bytes and not noisy),
            rule=BYTES_RULE,
        ),
        stays_claim(base, int8, level),
    ]


BYTES = "7.3 INT8 weights speed decode by the bytes they save"
BYTES_RULE = (
    "judged on a step's time (the median gap between tokens); held: faster beyond noise, by at least three "
    "quarters of the time the saved bytes take at the roof (the floor's fall) and by no more than a step "
    "paid wholly per byte could save (plus noise); partly: faster beyond noise otherwise; where the time "
    "moved within the noise (the ratio's 95 % interval holds ×1): within noise here where three quarters of "
    "the saving the bytes predict lies outside the interval of what was measured (the saving did not "
    "show), cannot tell where it lies inside; did not hold: slower beyond noise; not judged where the two "
    "engines ran batches apart beyond the noise; cannot tell where INT8 saved more than a step paid wholly "
    "per byte could (its kernels' own speed)"
)


STAYS = "7.3 The time above the floor stays when the bytes shrink (a cost per step, not per byte)"
STAYS_RULE = (
    "judged on INT8's step time (the median gap between tokens) against what each reading predicts: a cost "
    "per step gives INT8's floor plus the base's time above it; a cost per byte gives the base's time × the "
    "bytes ratio. Held: nearer the per-step time and within the noise of it; partly: nearer it but faster "
    "beyond the noise; did not hold: nearer the per-byte time; not judged where INT8 is slower than the "
    "per-step time beyond the noise (work of its own: the test's premise failed) or faster than the per-byte "
    "time beyond it (its kernels' own speed), where the two "
    "predictions lie within the noise of each other, or where the two engines ran batches apart beyond "
    "the noise"
)


def stays_claim(base: dict, int8: dict, level: float) -> Claim:
    """Judged against its alternative on the measured figure itself (INT8's time per token), within the
    TPOT's own noise: the gap's ratio would magnify that noise by 1 / (1 − MBU)."""
    m = step_metric(base, int8)
    t0, t1 = base[m], int8[m]
    per_step = int8["roofline_tpot_ms"] + gap(base, m)
    per_byte = t0 * int8["bytes_per_step_mb"] / base["bytes_per_step_mb"]
    allowed = level * t0
    evidence = tr(
        "INT8 took {t1:.1f} ms a step ({metric_name}); a cost per step predicts {per_step:.1f} ms (its "
        "floor {roofline_tpot_ms:.1f} + the base's {gap:.1f} above the floor), a cost per byte "
        "{per_byte:.1f} ms; noise ±{allowed:.1f} ms",
        t1=t1,
        metric_name=metric_name(m),
        per_step=per_step,
        roofline_tpot_ms=int8["roofline_tpot_ms"],
        gap=gap(base, m),
        per_byte=per_byte,
        allowed=allowed,
    )
    if t1 > max(per_step, per_byte) + allowed:  # the test's premise (the same work apart from the bytes) failed
        return verdicts.cannot_tell(
            STAYS,
            evidence
            + tr(
                "; slower than both beyond the noise: the INT8 path brought work of its own, so this run "
                "cannot tell a per-step cost from a per-byte one"
            ),
            STAYS_RULE,
        )
    if t1 < per_byte - allowed:  # faster than even a step paid wholly per byte: the INT8 kernels' own speed
        return verdicts.cannot_tell(
            STAYS,
            evidence
            + tr(
                "; faster than both beyond the noise: the INT8 path saved more than its bytes (its "
                "kernels' own speed), so this run cannot tell a per-step cost from a per-byte one"
            ),
            STAYS_RULE,
        )
    if abs(per_step - per_byte) <= allowed:
        return verdicts.cannot_tell(
            STAYS,
            tr(
                "{evidence}: the two predictions lie within the noise of each other (the allowance is wider than "
                "the gap between them, base step × (1 − bytes ratio) × (1 − the floor's share of the base step)), "
                "so this run cannot tell them apart",
                evidence=evidence,
            ),
            STAYS_RULE,
        )
    nearer_step = abs(t1 - per_step) < abs(t1 - per_byte)
    return verdicts.judge(
        STAYS, nearer_step and abs(t1 - per_step) <= allowed, evidence, partly=nearer_step, rule=STAYS_RULE
    )


def floor_with(
    row: dict,
    batch: float | None = None,
    kv: bool | float = True,
    gib: bool = False,
    bandwidth: float | None = None,
    context: float | None = None,
    weights_scale: float = 1.0,
) -> float | None:
    """A row's floor TPOT (ms) recomputed with another batch or without the KV term: the exercises'
    known mistakes (the nominal requests in flight for the measured sequences per step; the weights
    alone). From the row's own roofline columns (`H.with_floor`); None where it has none."""
    g = lambda k: verdicts.number(row, k)  # noqa: E731
    weights, bw = g("weights_read_mb"), g("roof_bandwidth_gbs")
    context = context or g("decode_context")
    if weights is None or context is None or not bw or not g("kv_cache_tokens"):
        return None
    # kv: True, False (left out) or a factor on its bytes (a slip in bytes per number); gib: the roof read as GiB/s
    per_token = rows.kv_bytes_per_token(row) * (kv if not isinstance(kv, bool) else 1.0) if kv else 0.0
    nbytes = roofline.step_bytes(
        weights * weights_scale * 1e6, roofline.decode_batch(row) if batch is None else batch, context, per_token
    )
    return roofline.floor_ms(nbytes, (bandwidth or bw) * (2**30 / 1e9 if gib else 1.0))


def nominal_mistake(row: dict, roof: dict | None = None) -> dict:
    """Exercise 2's and lab 5's known mistakes: the requests the client kept in flight taken for the
    sequences the engine ran per step (the mean running count /metrics saw), the KV term left out, the KV
    cache counted in 4 bytes a number on a 16-bit engine, the roof read as GiB/s, the whole answer taken
    as the context, and (given the probe's `roof`) its median run taken for its best."""
    nominal = verdicts.number(row, "load_max_concurrency")
    out = {
        N_("you left out the KV term (each sequence reads its context's KV cache every step)"): lambda: floor_with(
            row, kv=False
        )
    }
    if nominal:
        out[
            N_(
                "you used the requests the client kept in flight, not the sequences the engine ran per step "
                "(decode_batch, the mean running count)"
            )
        ] = lambda: floor_with(row, batch=nominal)
    if rows.kv_bytes_per_number(row) == 2:
        out[N_("you counted the KV cache in 4 bytes a number; the engine keeps it in the compute dtype (2 here)")] = (
            lambda: floor_with(row, kv=2.0)
        )
    out[N_("you took the roof as GiB/s; the probe reports GB/s (10**9 bytes)")] = lambda: floor_with(row, gib=True)
    if answer := verdicts.number(row, "load_output_len"):
        out[
            N_(
                "you took the whole answer as the context; on average a sequence is halfway through it "
                "(prompt + half the answer)"
            )
        ] = lambda: floor_with(row, context=roofline.decode_context(row) + answer / 2)
    if rows.kv_bytes_per_number(row) == 4:  # a float32 engine: the files' bf16 bytes are half what it reads
        out[N_("you counted the files' bf16 bytes; this engine holds its weights in float32")] = lambda: floor_with(
            row, weights_scale=0.5
        )
    worker = verdicts.number(row, "worker_roof_gbs")
    if worker and worker != verdicts.number(row, "roof_bandwidth_gbs"):
        out[N_("you used the worker's roof; the floor is at the machine's roof (every core)")] = lambda: floor_with(
            row, bandwidth=worker
        )
    median = verdicts.number(roof or {}, "bandwidth_median_gbs")
    if median and median != verdicts.number(row, "roof_bandwidth_gbs"):
        out[N_("you took the probe's median run; the roof is its best run (what the memory can do)")] = lambda: (
            floor_with(row, bandwidth=median)
        )
    return out


NO_BINDING = (
    "thread binding is the CPU worker's (`OMPProcessManager` runs only on the CPU backend), and the guide's "
    "config refuses `cpu_threads_bind` on a GPU, so it was not measured here"
)


def faster_binding(binding: dict) -> str | set[str]:
    """Exercise 3's answer: the faster of its two options, whatever other rows (`nobind`) ran beside them;
    both where they lie within the noise allowance of each other (a run cannot tell)."""
    if verdicts.within_noise(binding[AUTO], binding[ALL], "output_throughput"):
        return {AUTO, ALL}
    return max((AUTO, ALL), key=lambda name: binding[name]["output_throughput"])


NO_LAYOUT = (
    "the merged layout is the CPU backend's: on one GPU vLLM already runs the model in the engine-core "
    "process (the uni executor), so there is no third process to merge"
)


def _two_runs(before: dict, after: dict) -> str:
    """Two engines' throughput, time per token and worker cores, before → after."""
    return tr("{output_throughput:.0f} → {output_throughput_2:.0f} output tokens/s, mean TPOT {mean_tpot_ms:.1f} → "
              "{mean_tpot_ms_2:.1f} ms; worker cores {worker_threads} vs {worker_threads_2}",
              output_throughput=before["output_throughput"], output_throughput_2=after["output_throughput"],
              mean_tpot_ms=before["mean_tpot_ms"], mean_tpot_ms_2=after["mean_tpot_ms"],
              worker_threads=roofline.worker_threads(before), worker_threads_2=roofline.worker_threads(after))


def layout_claims(layouts: dict, binding: dict, cores: int) -> list[Claim]:
    title = tr("7.3 On {cores} cores the merged layout gives more output tokens per second than vLLM's three "
               "processes (×1.2 or more)", cores=cores)
    if MERGED not in layouts:
        out = [verdicts.untested(title, NO_LAYOUT, rule=LAYOUT_RULE)]
        return out + (
            []
            if ALL in binding
            else [
                verdicts.untested(
                    "7.3 Binding the worker to every core beats vLLM's auto binding (×1.2 or more)",
                    NO_BINDING,
                    rule=LAYOUT_RULE,
                )
            ]
        )
    merged, split = layouts[MERGED], layouts[VLLM]
    out = [
        verdicts.judge_change(
            title,
            split,
            merged,
            "output_throughput",
            better="higher",
            held_at=1.2,
            evidence=_two_runs(split, merged),
        )
    ]
    text = "7.3 Binding the worker to every core beats vLLM's auto binding (×1.2 or more)"
    if ALL not in binding:
        return out + [verdicts.untested(text, NO_BINDING, rule=LAYOUT_RULE)]
    auto, every = binding[AUTO], binding[ALL]
    out.append(
        verdicts.judge_change(
            text,
            auto,
            every,
            "output_throughput",
            better="higher",
            held_at=1.2,
            evidence=_two_runs(auto, every),
        )
    )
    return out


GRAPHS = "7.3 CUDA graphs shorten the time per output token"
LAYOUT_RULE = "held: ×1.2 the output tokens per second or more, beyond noise; partly: more, by less"
GRAPHS_RULE = "held: mean TPOT ×1.1 lower or more with graphs, beyond noise; partly: lower, by less"


def gpu_claim(device: str, rows: dict | None = None) -> Claim:
    """`rows`: {"no graphs": row, "CUDA graphs": row}, both compiled (`enforce_eager=False`), the first
    with `compilation_config={"cudagraph_mode": "NONE"}`, so the graphs alone differ."""
    if device == "cpu" or not rows:
        return verdicts.untested(
            GRAPHS,
            tr("no CUDA GPU here: the CPU backend has no CUDA graphs (capture sizes emptied in vllm/platforms/cpu.py)")
            if device == "cpu"
            else tr("no rows measured"),
            rule=GRAPHS_RULE,
        )
    off, on = rows["no graphs"], rows["CUDA graphs"]
    return verdicts.judge_change(
        GRAPHS,
        off,
        on,
        "mean_tpot_ms",
        better="lower",
        held_at=1.1,
        evidence=tr(
            "mean TPOT {mean_tpot_ms:.2f} → {mean_tpot_ms_2:.2f} ms against a floor of {value:.2f} ms",
            mean_tpot_ms=off["mean_tpot_ms"],
            mean_tpot_ms_2=on["mean_tpot_ms"],
            value=on.get("roofline_tpot_ms") or float("nan"),
        ),
    )


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = (
    "BASE",
    "INT8",
    "MERGED",
    "VLLM",
    "AUTO",
    "ALL",
    "roof_table",
    "floors",
    "flops_per_token",
    "sweep_frame",
    "GRAPHS",
)
PANELS = ()
CHECKS = ("crossover_mistakes", "NO_BINDING", "NO_LAYOUT", "floor_with", "nominal_mistake")
CLAIMS = (
    "methods_sentence",
    "AGREE",
    "PROBE_RULE",
    "LAYOUT_RULE",
    "GRAPHS_RULE",
    "NEAR_FLOOR",
    "allowed_mbu",
    "probe_claim",
    "crossover",
    "gap",
    "step_metric",
    "metric_name",
    "batches_apart",
    "BYTES",
    "BYTES_RULE",
    "near_floor_claim",
    "batching_claim",
    "floor_claims",
    "bytes_sentence",
    "bytes_claims",
    "STAYS",
    "STAYS_RULE",
    "stays_claim",
    "faster_binding",
    "layout_claims",
    "gpu_claim",
)
