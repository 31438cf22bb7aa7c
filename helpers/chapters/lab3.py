"""Lab 3 (fit and split): the figures its questions are checked against and the rule that
picks a split (TP=1, TP=2 or two replicas), from the rows the lab measured. No engine starts here."""
from __future__ import annotations

from helpers import verdicts
from helpers.engine.startup_log import rank_memory
from helpers.i18n import tr
from helpers.results.rows import kv_bytes_per_token, paced

TOO_CLOSE = "too close to call"
# Each question's target: the figure that decides it, and which way is better.
TARGETS = {"one user": ("median_tpot_ms", "lower"), "eight users": ("output_throughput", "higher")}


def kv_heads_per_rank(row: dict, shape: dict, bytes_per_number: int) -> float:
    """KV heads one rank holds: its bytes per token (the engine's own figures) over the bytes one
    KV head takes per token in all layers (key and value)."""
    return kv_bytes_per_token(row) / (2 * shape["num_hidden_layers"] * shape["head_dim"] * bytes_per_number)


def judged_rows(measured: dict, splits: list[str], target: str) -> dict | None:
    """Each split's row as the target reads it: for the one-user pace, the median TPOT over the streams that
    showed one (`rows.paced`: a stream sent in one chunk counts 0 ms and would halve a median of four); None
    where a split's pace was not seen."""
    metric, _ = TARGETS[target]
    out = {o: (paced(measured[(o, target)]) if metric == "median_tpot_ms" else measured[(o, target)]) for o in splits}
    return None if any(r is None for r in out.values()) else out


def ranked(measured: dict, splits: list[str], target: str) -> list[str]:
    """The splits, best first on the target's figure; `measured` maps (split, target) to a row."""
    metric, better = TARGETS[target]
    rows = judged_rows(measured, splits, target) or {o: measured[(o, target)] for o in splits}
    return sorted(splits, key=lambda o: rows[o][metric], reverse=better == "higher")


def winner(measured: dict, splits: list[str], target: str) -> str | None:
    """The best split, or "too close to call" when the interval of the best two's ratio holds no change
    (verdicts.within_noise); None where a split's figure is missing or not positive, or its pace was not
    seen (more than a quarter of its streams in one chunk)."""
    metric, _ = TARGETS[target]
    rows = judged_rows(measured, splits, target)
    if rows is None or not all((verdicts.number(rows[o], metric) or 0) > 0 for o in splits):
        return None  # a pace not seen (one-chunk streams) or a figure missing: the check says it cannot check
    best, second = ranked(measured, splits, target)[:2]
    return TOO_CLOSE if verdicts.within_noise(rows[best], rows[second], metric) else best


def why(measured: dict, splits: list[str], target: str) -> str:
    """The figures the choice was made on, and the interval of the ratio between the best two."""
    metric, _ = TARGETS[target]
    rows = judged_rows(measured, splits, target)
    if rows is None:
        return (tr("{metric}: over a quarter of a split's streams reached the client in one chunk, so its pace was "
                   "not seen", metric=metric))
    best, second = ranked(measured, splits, target)[:2]
    return (f"{metric}" + (tr(" over the streams that showed a pace") if metric == "median_tpot_ms" else "") + ": "
            + ", ".join(f"{o} {rows[o][metric]:,.1f}" for o in splits)
            + f"; {second} ÷ {best} " + verdicts.change_text(rows[best], rows[second], metric))


def binding_lines(rows: dict[str, dict]) -> list[str]:
    """One line per split: who computed on which cores, and the cores kept free, as each engine
    printed them at start (the row's `bound_ranks` and `cores_kept_free`; a row stored before they
    were kept has neither and gets no line)."""
    lines = []
    for split, row in rows.items():
        if computes := row.get("bound_ranks"):
            kept = row.get("cores_kept_free") or []
            lines.append(
                f"- {split}: "
                + ", ".join(computes)
                + (
                    tr("; core(s) {kept} kept free for the server and scheduler", kept=", ".join(kept))
                    if kept
                    else tr("; no core kept free: the server and scheduler share the ranks' cores")
                )
            )
    return lines


def loads() -> dict:
    """Lab 3's two loads ({name: Load}): chapter 5 measures them too while its TP=1 and TP=2
    engines are up, so that the lab reads those rows from the store instead of starting both again."""
    from helpers.load import Load
    from helpers.run_size import smoke_or_full

    return {
        "one user": Load(
            num_prompts=smoke_or_full(4, 8), input_len=128, output_len=smoke_or_full(64, 128), max_concurrency=1
        ),
        "eight users": Load(
            num_prompts=smoke_or_full(16, 32), input_len=128, output_len=smoke_or_full(64, 128), max_concurrency=8
        ),
    }


def rank_memory_lines(tp1: dict, tp2: dict) -> list[str]:
    """What the TP=2 engine's per-rank "Auto set" lines say, beside the one-rank engine."""
    ranks = rank_memory(tp2["startup_lines"])
    if not ranks:  # a GPU reports "Available KV cache memory" instead, per device
        return [tr("No per-rank `Auto set` lines in this engine's report (they are the CPU backend's).")]
    reserved, node = sum(r["requested_gib"] for r in ranks), ranks[0]["node_gib"]
    return [
        tr("- The TP=2 engine printed {n_ranks} `Auto set` lines, one per rank: ", n_ranks=len(ranks))
        + "; ".join(
            f"rank line {i + 1}: {r['kv_gib']} GiB KV, {r['non_kv_gib']} GiB non-KV, {r['requested_gib']} GiB reserved"
            for i, r in enumerate(ranks)
        )
        + ".",
        tr(
            "- Together the ranks reserved {reserved:.2f} GiB of the node's {node} GiB ({reserved_2:.0%}), with "
            "`gpu_memory_utilization` = {cfg_gpu_memory_utilization}: the fraction is per rank on the CPU "
            "backend, so the whole engine takes the fraction times the ranks.",
            reserved=reserved,
            node=node,
            reserved_2=reserved / node,
            cfg_gpu_memory_utilization=tp2["cfg_gpu_memory_utilization"],
        ),
        tr(
            "- KV tokens: {kv_cache_tokens:,} at TP=1, {kv_cache_tokens_2:,} at TP=2 "
            "(×{kv_cache_tokens_3:.2f}). Each rank's non-KV memory was {non_kv_gib} GiB against {non_kv_gib_2} "
            "GiB for the single rank",
            kv_cache_tokens=tp1["kv_cache_tokens"],
            kv_cache_tokens_2=tp2["kv_cache_tokens"],
            kv_cache_tokens_3=tp2["kv_cache_tokens"] / tp1["kv_cache_tokens"],
            non_kv_gib=tp2["non_kv_gib"],
            non_kv_gib_2=tp1["non_kv_gib"],
        )
        + half_weights(tp1, tp2)
        + tr(
            ", so each rank had {kv_cache_gib} GiB for KV against {kv_cache_gib_2}.",
            kv_cache_gib=tp2["kv_cache_gib"],
            kv_cache_gib_2=tp1["kv_cache_gib"],
        ),
    ]


def half_weights(tp1, tp2=None) -> str:
    """Half the checkpoint, beside the drop in a rank's non-KV memory: what a rank holds differs from its
    share of the files (`dispatch_cpu_unquantized_gemm` keeps a packed copy of a tied table for the output
    layer on the CPU backend, and a split halves that copy too), so the drop is not split into weights and
    runtime here; the sentence says which way the drop lies from half the checkpoint."""
    checkpoint = tp1.get("checkpoint_gib") if hasattr(tp1, "get") else None
    if not checkpoint or checkpoint != checkpoint:
        return tr(" (it holds half of the weights, among other things)")
    text = tr(" (half of the {checkpoint:.3f} GiB checkpoint is {checkpoint_2:.3f} GiB", checkpoint=checkpoint,
              checkpoint_2=checkpoint / 2)
    before = tp1.get("non_kv_gib") if hasattr(tp1, "get") else None
    after = tp2.get("non_kv_gib") if hasattr(tp2, "get") else None
    if before is None or after is None:
        return text + ")"
    drop = before - after
    if drop > checkpoint / 2:
        return text + (
            tr(
                "; the drop, {drop:.2f} GiB, is more: the single rank holds more than the checkpoint, "
                "such as the CPU backend's packed copy of a tied embedding table for its output layer, "
                "and a split halves that copy too)",
                drop=drop,
            )
        )
    return text + (
        tr(
            "; the drop, {drop:.2f} GiB, is no more: each rank also carries a runtime of its own, which "
            "a split does not halve)",
            drop=drop,
        )
    )


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("binding_lines", "loads", "rank_memory_lines", "half_weights")
PANELS = ()
CHECKS = ("judged_rows", "TOO_CLOSE", "TARGETS", "kv_heads_per_rank", "ranked", "winner", "why")
CLAIMS = ()
