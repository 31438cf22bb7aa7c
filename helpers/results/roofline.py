"""The decode roofline of a result row: the bytes one decode step must read, the time per token
that reading them takes at this machine's measured bandwidth (the floor), and how close the
measured TPOT came to it (MBU, memory-bandwidth utilisation = floor ÷ measured TPOT, the usual
achieved-bytes-per-second ÷ peak).

One decode step runs every running sequence's next token through every weight, so it reads
the weights once (whatever the batch) plus each sequence's KV cache. At small batches that
reading is the step; compute takes over only past the crossover batch, where the step's
multiply-adds take longer at the compute roof than its bytes at the bandwidth roof.
Pure functions: the bandwidth and compute roofs come from `helpers.probes` via stored rows, and
`helpers.experiment.with_floor` is the step a chapter takes to put them on its rows.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.results.rows import kv_bytes_per_token, setting

NEAR_FLOOR = 0.6  # an MBU from which a step counts as mostly reading bytes (chapter 7, the advisor)


def compute_bytes(dtype) -> int:
    """Bytes per unquantized number in the engine: 4 for float32 (the guide's pick on AVX2), else 2."""
    return 4 if "float32" in str(dtype) else 2


def checkpoint_files(folder) -> dict[str, int]:
    """The checkpoint's weight files and their sizes in bytes."""
    return {f.name: f.stat().st_size for f in sorted(Path(folder).glob("*.safetensors"))}


def weight_bytes(folder, dtype="bfloat16") -> float:
    """Bytes of weights one decode step reads: the checkpoint's tensors as the engine holds them.
    Unquantized tensors change from the files' bytes per number (2, or 4 for a float32 checkpoint) to
    the compute dtype's; a quantized checkpoint's integer weights stay as stored, its unquantized
    output layer (`lm_head`, tied to the embedding table in the guide's copies, read whole every step)
    changes. An untied input embedding is left out: a step reads one row of it per token, not the
    table. Assumes every unquantized tensor is stored in the checkpoint's `torch_dtype` (or `dtype`)."""
    files = sum(checkpoint_files(folder).values())
    config = json.loads((Path(folder) / "config.json").read_text())
    stored = 4 if str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").endswith("float32") else 2
    widen = compute_bytes(dtype) / stored
    table = config["vocab_size"] * config["hidden_size"] * stored  # one embedding-sized matrix, as stored
    # the input table, read one row a token (transformers' default for a config without the key: untied)
    untied = 0 if config.get("tie_word_embeddings", False) else table
    if "quantization_config" not in config:
        return (files - untied) * widen
    return files - untied + table * (widen - 1)


def linear_params(folder) -> float:
    """Multiply-adds per token in the linear layers (lm_head included), from config.json."""
    c = json.loads((Path(folder) / "config.json").read_text())
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    heads = c["num_attention_heads"]
    head_dim = c.get("head_dim") or h // heads
    kv = c.get("num_key_value_heads", heads) * head_dim
    per_layer = h * heads * head_dim + 2 * h * kv + heads * head_dim * h + 3 * h * inter
    return layers * per_layer + c["vocab_size"] * h


def decode_batch(row: dict) -> float:
    """Sequences decoding together: the mean running count /metrics saw, else what the load allows."""
    if row.get("mean_running"):
        return float(row["mean_running"])
    prompts = row.get("load_num_prompts") or 1
    return float(min(row.get("load_max_concurrency") or prompts, prompts))


def step_metric(*rows) -> str:
    """The figure a decode step's time is read from: the median gap between tokens where every row has
    it (mean TPOT also carries other requests' prefill steps, and a stream that reached the client in
    one chunk counts 0 ms in it), else mean TPOT."""
    return "median_itl_ms" if all(positive(r, "median_itl_ms") for r in rows) else "mean_tpot_ms"


def metric_name(metric: str) -> str:
    return "median ITL" if metric == "median_itl_ms" else "mean TPOT"


def positive(row, key: str) -> bool:
    """Whether a row has `key` as a number above 0 (not None, not NaN)."""
    v = row.get(key) if hasattr(row, "get") else None
    return v is not None and v == v and v > 0


def decode_context(row: dict) -> float:
    """Mean context length of a decoding sequence: its prompt plus half its answer."""
    prompt = (row.get("load_input_len") or 0) + (row.get("load_prefix_len") or 0)
    return prompt + (row.get("load_output_len") or 0) / 2


def step_bytes(weights: float, batch: float, context: float, kv_per_token: float) -> float:
    return weights + batch * context * kv_per_token


def floor_ms(nbytes: float, bandwidth_gbs: float) -> float:
    """The time to read `nbytes` once at `bandwidth_gbs`, in ms: no decode step can be faster."""
    return nbytes / (bandwidth_gbs * 1e9) * 1e3


def crossover_batch(weights: float, flops_per_token: float, kv_per_seq: float, bandwidth_gbs: float,
                    gflops: float) -> float | None:
    """The batch B where a step's compute time (B · flops_per_token at the compute roof) equals its
    memory time ((weights + B · kv_per_seq) at the bandwidth roof); None where each sequence's own
    KV read takes longer than its compute, so decode stays memory-bound at any batch."""
    per_seq = flops_per_token / (gflops * 1e9) - kv_per_seq / (bandwidth_gbs * 1e9)
    return None if per_seq <= 0 else weights / (bandwidth_gbs * 1e9) / per_seq


def model_folder(row: dict) -> Path | None:
    """The local folder of the model a row measured (`model_folder`, which `measure` records from
    the engine it ran on), where this machine still has it: nothing is prepared or resolved here."""
    path = Path(row["model_folder"]) if row.get("model_folder") else None
    return path if path is not None and (path / "config.json").exists() else None


def worker_threads(row: dict) -> int:
    """Cores the engine's workers computed on: vLLM's binding of rank 0 times the ranks where it
    printed one (each rank of a split model reads its share of the weights at once), else all."""
    cores = int(row.get("env_cpu_cores") or len(os.sched_getaffinity(0)))
    if not row.get("worker_cores"):
        return cores
    ranks = 1
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        ranks *= int(setting(row, name) or 1)
    return min(cores, int(row["worker_cores"]) * ranks)


def ranks(row: dict, *names: str) -> int:
    """The product of the row's parallel sizes named (tensor, pipeline, data), 1 where unset."""
    n = 1
    for name in names:
        n *= int(setting(row, f"{name}_parallel_size") or 1)
    return n


COLUMNS = ("weights_read_mb", "bytes_per_step_mb", "decode_batch", "decode_context", "roofline_tpot_ms", "mbu",
           "roof_bandwidth_gbs", "roof_threads", "roof_kernel", "worker_roof_gbs", "worker_threads",
           "worker_floor_ms", "worker_mbu")


def unknown(row: dict) -> dict:
    """The row with empty roofline columns: a remote server's roofs are not this machine's."""
    return {**row, **dict.fromkeys(COLUMNS)}


def annotate(row: dict, roof: dict | None, worker_roof: dict | None = None) -> dict:
    """The row with its roofline columns. `roof` is the machine's (every core: no engine on this
    machine can read faster), so `roofline_tpot_ms` is the floor and `mbu` = floor ÷ mean TPOT, the
    usual MBU against the peak. `worker_roof` is the roof at the cores the worker computed on
    (`worker_threads`): `worker_floor_ms` and `worker_mbu` say how close the engine came to what
    those cores can read. Bytes per step: the weights once per data-parallel replica, plus every
    sequence's KV at its mean context, summed over the ranks that split it (tensor × pipeline; the
    engine reports KV bytes per rank). Unchanged where the row has no TPOT, no KV figures, no local
    model folder or no roof."""
    folder = model_folder(row)
    if row.get("engine_location") == "remote":  # measured on another machine: not this one's roof
        return row
    if roof is None or folder is None or not row.get("mean_tpot_ms") or not row.get("kv_cache_tokens"):
        return row
    weights = weight_bytes(folder, setting(row, "dtype"))
    kv = kv_bytes_per_token(row) * ranks(row, "tensor", "pipeline")
    batch, context = decode_batch(row), decode_context(row)
    nbytes = step_bytes(weights * ranks(row, "data"), batch, context, kv)
    floor = floor_ms(nbytes, roof["bandwidth_gbs"])
    worker = worker_roof or roof
    worker_floor = floor_ms(nbytes, worker["bandwidth_gbs"])
    return {**row, "weights_read_mb": weights / 1e6, "bytes_per_step_mb": nbytes / 1e6, "decode_batch": batch,
            "decode_context": context, "roofline_tpot_ms": floor, "mbu": floor / row["mean_tpot_ms"],
            "roof_bandwidth_gbs": roof["bandwidth_gbs"], "roof_threads": roof["threads"],
            "roof_kernel": roof.get("bandwidth_kernel"), "worker_roof_gbs": worker["bandwidth_gbs"],
            "worker_threads": worker["threads"], "worker_floor_ms": worker_floor,
            "worker_mbu": worker_floor / row["mean_tpot_ms"]}
