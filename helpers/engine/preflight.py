"""Checks run just before an engine starts: the machine and the model files.

They live with the engine start, not in `config`, because they read the hardware and the
model's config.json (which may first have to be prepared); `EngineConfig` itself stays a
cheap value object that notebooks build and compare freely.
"""
from __future__ import annotations

from helpers import hardware, models
from helpers.config import ConfigError, EngineConfig
from helpers.settings import CPU_QUANTIZATION


def check(config: EngineConfig) -> None:
    """Raise ConfigError for what this machine or this model cannot run; `Server.start` calls it."""
    if (problem := config.cannot_run_here()) is not None:
        raise problem
    _check_machine(config)
    _check_model(config)


def _check_machine(config: EngineConfig) -> None:
    hw = hardware.describe()
    tp = config.tensor_parallel_size
    if config.device == "cuda" and hw["gpu_count"] == 0:
        raise ConfigError("device", "is 'cuda' but this machine has no CUDA GPU.",
                          'device="cpu" (the default here).')
    if config.device == "cpu":
        if config.quantization not in (None, *CPU_QUANTIZATION):
            raise ConfigError("quantization", f"{config.quantization!r} has no CPU kernel in "
                              "vLLM (online fp8 fails at start-up on CPU).",
                              f"quantization=None, or a checkpoint made with one of {CPU_QUANTIZATION}.")
        if tp > hw["cpu_cores"]:
            raise ConfigError("tensor_parallel_size", f"({tp}) is more than "
                              f"this machine's {hw['cpu_cores']} cores; each CPU rank needs its own core.",
                              f"tensor_parallel_size <= {hw['cpu_cores']}.")
    elif tp > hw["gpu_count"]:
        raise ConfigError("tensor_parallel_size", f"({tp}) is more than the "
                          f"{hw['gpu_count']} GPU(s) here.", f"tensor_parallel_size <= {hw['gpu_count']}.")


def _check_model(config: EngineConfig) -> None:
    path = models.resolve(config.model)  # raises ConfigError for a missing folder
    shape = models.shape(path)
    if not shape:
        return
    heads, tp = shape["num_attention_heads"], config.tensor_parallel_size
    if heads % tp:
        ok = [n for n in range(1, heads + 1) if heads % n == 0]
        raise ConfigError("tensor_parallel_size",
                          f"({tp}) must divide the model's {heads} attention heads.",
                          f"one of {ok}, or model=\"synthetic-tp\" (8 heads) for a TP demo.")
    context = shape.get("max_position_embeddings")
    if context and config.max_model_len > context:
        raise ConfigError("max_model_len", f"({config.max_model_len}) is longer than the model's "
                          f"context ({context}).", f"max_model_len <= {context}.")
