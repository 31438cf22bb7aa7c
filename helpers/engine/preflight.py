"""Checks run just before an engine starts: the machine and the model files.

They live with the engine start, not in `config`, because they read the hardware and the
model's config.json (which may first have to be prepared); `EngineConfig` itself stays a
cheap value object that notebooks build and compare freely.
"""
from __future__ import annotations

import importlib.util

from helpers import hardware, models
from helpers.config import ConfigError, EngineConfig
from helpers.i18n import tr
from helpers.settings import CPU_QUANTIZATION


def check(config: EngineConfig) -> None:
    """Raise ConfigError for what this machine or this model cannot run; `Server.start` calls it."""
    if (problem := config.cannot_run_here()) is not None:
        raise problem
    _check_machine(config)
    _check_model(config)


def refusal(config: EngineConfig) -> ConfigError | None:
    """Why this machine or model cannot start `config` (the ConfigError `check` would raise), or
    None: a notebook skips a part with the reason instead of catching the error itself."""
    try:
        check(config)
    except ConfigError as why:
        return why
    return None


def _check_machine(config: EngineConfig) -> None:
    hw = hardware.describe()
    if config.device == "cuda" and hw["gpu_count"] == 0:
        raise ConfigError("device", tr("is 'cuda' but this machine has no CUDA GPU."),
                          tr("device=\"cpu\" (the default here)."))
    if config.distributed_executor_backend == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("distributed_executor_backend", tr("is 'ray' but Ray is not installed in this "
                                                             "environment."),
                          tr("pip install 'ray[default]' (the version your vLLM supports), or "
                             "distributed_executor_backend='mp' on one machine."))
    if config.device == "cpu":
        if config.quantization not in (None, *CPU_QUANTIZATION):
            raise ConfigError("quantization", tr("{quantization!r} has no CPU kernel in vLLM (online fp8 fails at "
                                                 "start-up on CPU).", quantization=config.quantization),
                              tr("quantization=None, or a checkpoint made with one of {cpu_quantization}.",
                                 cpu_quantization=CPU_QUANTIZATION))
        _check_world(config, hw["cpu_cores"], tr("this machine's {n} cores; each CPU rank needs its own core"))
        _check_memory_shares(config)
    else:
        _check_world(config, hw["gpu_count"], "the {n} GPU(s) here")


_PARALLEL = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")


def _check_world(config: EngineConfig, room: int, what: str) -> None:
    """tensor × pipeline × data parallel ranks must fit the cores (CPU) or GPUs."""
    sizes = {name: getattr(config, name) for name in _PARALLEL}
    world = config.ranks * config.data_parallel_size
    if world <= room:
        return
    used = {name: n for name, n in sizes.items() if n > 1}
    setting = max(used, key=used.get)  # the largest factor is the one to lower first
    product = " × ".join(f"{name} {n}" for name, n in used.items())
    said = f"({sizes[setting]})" if len(used) == 1 else f"({product} = {world} ranks)"
    raise ConfigError(setting, tr("{said} is more than {what}.", said=said, what=what.format(n=room)),
                      f"{setting} <= {room}" + (tr(", with the product of {used} <= {room}.", used=', '.join(used),
                                                   room=room)
                                                 if len(used) > 1 else "."))


def _check_memory_shares(config: EngineConfig) -> None:
    """On CPU every worker takes gpu_memory_utilization × the node's memory (cpu_worker.py:
    requested_cpu_memory = total_memory * memory_fraction), so the shares add up."""
    workers = config.ranks * config.data_parallel_size
    total = workers * config.memory_fraction
    if workers > 1 and total > 0.9:
        raise ConfigError("gpu_memory_utilization", tr("({memory_fraction}) is taken by each of the {workers} CPU "
                                                       "workers (tensor × pipeline × data parallel), {total:.2f} "
                                                       "of the memory in all.", memory_fraction=config.memory_fraction,
                                                       workers=workers, total=total),
                          f"gpu_memory_utilization <= {0.9 / workers:.2f} with {workers} workers.")


def _check_model(config: EngineConfig) -> None:
    path = models.resolve(config.model)  # raises ConfigError for a missing folder
    if config.device == "cpu" and config.dtype == "float32":
        from helpers import quantize
        if (problem := quantize.float32_problem(models.quant_config(path))) is not None:
            raise ConfigError("dtype", problem, tr("dtype=\"bfloat16\" (emulated where the CPU lacks AVX512-BF16: "
                                                   "slow, but it runs), or an 8-bit checkpoint."))
    shape = models.shape(path)
    if not shape:
        return
    heads, tp = shape["num_attention_heads"], config.tensor_parallel_size
    if heads % tp:
        ok = [n for n in range(1, heads + 1) if heads % n == 0]
        raise ConfigError("tensor_parallel_size",
                          tr("({tp}) must divide the model's {heads} attention heads.", tp=tp, heads=heads),
                          tr("one of {ok}, or model=\"synthetic-tp\" (8 heads) for a TP demo.", ok=ok))
    layers, pp = shape.get("num_hidden_layers"), config.pipeline_parallel_size
    if layers and pp > layers:
        raise ConfigError(
            "pipeline_parallel_size",
            tr(
                "({pp}) is more than the model's {layers} layers; each pipeline stage needs at least one.",
                pp=pp,
                layers=layers,
            ),
            f"pipeline_parallel_size <= {layers}.",
        )
    context = shape.get("max_position_embeddings")
    if context and config.max_model_len > context:
        raise ConfigError(
            "max_model_len",
            tr(
                "({max_model_len}) is longer than the model's context ({context}).",
                max_model_len=config.max_model_len,
                context=context,
            ),
            f"max_model_len <= {context}.",
        )
