"""Every engine setting the guide covers, declared once.

Each `Setting` says how the value travels to vLLM (a command-line flag or an environment
variable), what it may be (kind, range, choices), how charts name it (legend label, axis
title with unit), where the engine reports the value it resolved (a path into
/server_info's `vllm_config`), which devices it applies to, and what vLLM turns `None` into
on the CPU backend. `EngineConfig`'s checks, `server_args`, `server_env`, `label`, the
`cfg_*`/`engine_*` chart titles and the resolved-settings columns are all generated from
this table, so a setting is spelled in one place (as vLLM's own `EngineArgs` does).

Adding an engine setting:
  1. Append a `Setting(...)` to `SETTINGS` below. Give `cpu_default` only where vLLM
     resolves `None` to a fixed value on CPU, with the vLLM source line in a comment, and
     check it against tests/data/server_info_cpu.json; declare no GPU default (it differs by
     GPU and entry point).
  2. Add a field of the same name to `EngineConfig` (helpers/config.py) with the guide's
     default; tests/unit/test_settings.py checks the two lists agree.
  3. Give the setting a non-default value in `NON_DEFAULT` in tests/unit/test_settings.py;
     the tests then check it reaches the command line (or the environment), that vLLM's
     parser accepts it, and that its resolved path exists in the recorded /server_info.
  4. Checks that involve other settings, the machine or the model files stay hand-written:
     `EngineConfig._check_together` (other settings), `helpers/engine/preflight.py` (machine).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# On a CPU machine vLLM treats `gpu_memory_utilization` as the share of host RAM given to
# weights + KV cache. Its stock 0.92 does not start on a 24 GiB machine (the engine compares
# it with the free memory of one NUMA node), so the guide starts from a modest share.
CPU_DEFAULT_MEMORY_FRACTION = 0.25
GPU_DEFAULT_MEMORY_FRACTION = 0.90

KV_CACHE_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8_per_token_head")
DTYPES = ("auto", "bfloat16", "float16", "float32")
LOG_LEVELS = ("debug", "info", "warning", "error")
# Weight quantization methods the CPU backend has kernels for (vLLM's CPU docs).
CPU_QUANTIZATION = ("awq", "gptq", "compressed-tensors")

# Executors the guide offers for more than one rank ("uni" is the harness's own merged layout).
EXECUTOR_BACKENDS = ("mp", "ray")

DEVICES = ("cpu", "cuda")
_WHAT = {int: "a whole number", float: "a number", bool: "True or False", str: "text", dict: "a dict"}


@dataclass(frozen=True)
class Setting:
    """One engine setting: how it travels, what it may be, how it is named and read back."""

    name: str
    kind: type  # int, float, bool, str or dict
    fix: str  # what to try when a value is refused (the "Try:" of ConfigError)
    flag: str | None = None  # api_server flag; None: it travels as `env` instead
    env: str | None = None  # environment variable that carries it instead of a flag
    unit: str = ""  # for axis titles
    short: str = ""  # legend label; the name when empty
    what: str = ""  # what a value must be, for type errors; from `kind` when empty
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # exclusive lower bound
    nullable: bool = True  # None allowed: "vLLM's default" (or the guide's, see EngineConfig)
    resolved: tuple[str, ...] | None = None  # path in /server_info's vllm_config
    devices: tuple[str, ...] = DEVICES
    # What vLLM turns None into on the CPU backend: a value, or a function of the config for
    # defaults that depend on other settings. None: no fixed value (or not nullable).
    cpu_default: Any = None

    @property
    def label(self) -> str:
        return self.short or self.name

    @property
    def title(self) -> str:
        return f"{self.name} ({self.unit})" if self.unit else self.name

    def default_for(self, config) -> Any:
        """The value vLLM resolves None to for this config, where the table declares one."""
        if config.device != "cpu" or self.cpu_default is None:
            return None
        return self.cpu_default(config) if callable(self.cpu_default) else self.cpu_default

    def problem(self, value) -> str | None:
        """Why `value` is not acceptable on its own (None when it is); other settings aside."""
        if value is None:
            return None if self.nullable else "needs a value, got None."
        if not _is_kind(value, self.kind):
            what = self.what or ("True, False or None" if self.kind is bool and self.nullable else _WHAT[self.kind])
            return f"must be {what}, got {value!r}."
        if self.choices and value not in self.choices:
            return f"{value!r} is not one of {self.choices}."
        if _out_of_range(value, self.minimum, self.maximum, self.above):
            return f"must be {_range_text(self.minimum, self.maximum, self.above)}, got {value}."
        return None

    def flags(self, value) -> list[str]:
        """The command-line words for `value`, by vLLM's sweep rule: None → nothing,
        bool → --x / --no-x, dict → JSON, anything else → its text."""
        if self.flag is None or value is None:
            return []
        if isinstance(value, bool):
            return [self.flag if value else "--no-" + self.flag[2:]]
        return [self.flag, json.dumps(value) if isinstance(value, dict) else str(value)]

    def env_text(self, value) -> str | None:
        """The environment value for `value` (bool as 1/0, vLLM's convention); None: not set."""
        if self.env is None or value is None:
            return None
        return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _is_kind(value, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind) and not (kind is str and value == "")


def _out_of_range(v, minimum, maximum, above) -> bool:
    return ((minimum is not None and v < minimum) or (maximum is not None and v > maximum)
            or (above is not None and v <= above))


def _range_text(minimum, maximum, above) -> str:
    low = f"({above}" if above is not None else f"[{minimum}" if minimum is not None else None
    if low and maximum is not None:
        return f"in {low}, {maximum}]"
    if above is not None:
        return f"more than {above}"
    return f"at least {minimum}" if minimum is not None else f"at most {maximum}"


# -- vLLM's CPU defaults that depend on other settings ----------------------------------------
# vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: on CPU the OpenAI server's defaults
# are 2048 tokens and 128 sequences *per rank* (world size = tensor × pipeline parallel size).

def _ranks(config) -> int:
    """Ranks of one engine: tensor × pipeline parallel size (arg_utils.py: `world_size =
    self.pipeline_parallel_size * self.tensor_parallel_size`); data-parallel replicas each
    have their own scheduler, so they do not count."""
    return config.tensor_parallel_size * config.pipeline_parallel_size


def _cpu_max_num_seqs(config) -> int:
    return 128 * _ranks(config)


def _cpu_max_num_batched_tokens(config) -> int:
    """2048 per rank; with chunked prefill off at least max_model_len
    (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)."""
    budget = 2048 * _ranks(config)
    return max(budget, config.max_model_len) if config.enable_chunked_prefill is False else budget


SETTINGS: tuple[Setting, ...] = (
    Setting("model", str, 'model="embedded" (SmolLM2-135M, no download).', flag="--model",
            what="a name or a folder", nullable=False),
    Setting("max_model_len", int, "max_model_len=2048.", flag="--max-model-len", unit="tokens", short="len",
            minimum=16, nullable=False, resolved=("model_config", "max_model_len")),
    # None means the guide's fraction for the device (EngineConfig.memory_fraction); always sent.
    Setting("gpu_memory_utilization", float,
            f"a value such as {CPU_DEFAULT_MEMORY_FRACTION} on CPU or {GPU_DEFAULT_MEMORY_FRACTION} on a GPU.",
            flag="--gpu-memory-utilization", unit="fraction", short="mem", above=0, maximum=1,
            resolved=("cache_config", "gpu_memory_utilization")),
    # Power of two, and a multiple of 32 on CPU: checked by hand (EngineConfig._check_together).
    # vllm/platforms/cpu.py, CpuPlatform.check_and_update_config: 128 unless the user set it
    # (16 for MLA models, 256 for DeepSeek-V4).
    Setting("block_size", int, "block_size=16, 32, 64 or 128.", flag="--block-size", unit="tokens",
            short="block", minimum=1, resolved=("cache_config", "block_size"), cpu_default=128),
    Setting("max_num_seqs", int, "max_num_seqs=16.", flag="--max-num-seqs", unit="sequences", short="seqs",
            minimum=1, resolved=("scheduler_config", "max_num_seqs"), cpu_default=_cpu_max_num_seqs),
    Setting("max_num_batched_tokens", int, "max_num_batched_tokens=2048.", flag="--max-num-batched-tokens",
            unit="tokens", short="budget", minimum=1, resolved=("scheduler_config", "max_num_batched_tokens"),
            cpu_default=_cpu_max_num_batched_tokens),
    # arg_utils._set_default_chunked_prefill_and_prefix_caching_args: on for generative models
    # (ModelConfig.is_chunked_prefill_supported / is_prefix_caching_supported); off on RISC-V.
    Setting("enable_chunked_prefill", bool, "enable_chunked_prefill=True.", flag="--enable-chunked-prefill",
            short="chunked", resolved=("scheduler_config", "enable_chunked_prefill"), cpu_default=True),
    # config/scheduler.py: 0 (off) unless set. While other requests are running or waiting,
    # Scheduler.schedule() gives one request at most this many prompt tokens per step.
    Setting("long_prefill_token_threshold", int, "long_prefill_token_threshold=256 (or 0: off).",
            flag="--long-prefill-token-threshold", unit="tokens", short="prefill cap", minimum=0,
            resolved=("scheduler_config", "long_prefill_token_threshold"), cpu_default=0),
    Setting("max_num_queued_reqs", int, "max_num_queued_reqs=None (no cap), or at least max_num_seqs.",
            flag="--max-num-queued-reqs", unit="requests", short="queue cap", minimum=1,
            resolved=("scheduler_config", "max_num_queued_reqs")),
    Setting("enable_prefix_caching", bool, "enable_prefix_caching=True.", flag="--enable-prefix-caching",
            short="prefix cache", resolved=("cache_config", "enable_prefix_caching"), cpu_default=True),
    # Fixes the KV cache at this many blocks, whatever the memory fraction says: a way to
    # make the cache overflow on purpose (queueing, preemption) with a small model.
    Setting("num_gpu_blocks_override", int, "num_gpu_blocks_override=None (size the cache from the memory fraction).",
            flag="--num-gpu-blocks-override", unit="blocks", short="blocks", minimum=1,
            resolved=("cache_config", "num_gpu_blocks_override")),
    # There are no CUDA graphs on CPU; there this switch turns torch.compile on or off.
    Setting("enforce_eager", bool, "enforce_eager=True.", flag="--enforce-eager", short="eager",
            nullable=False, resolved=("model_config", "enforce_eager")),
    # The resolved object is large; facts.py reads its `mode` as engine_compilation_mode.
    Setting("compilation_config", dict, "compilation_config=None (vLLM's default).", flag="--compilation-config",
            short="compile", what="a dict such as {'mode': 3}"),
    # A fixed KV-cache size in bytes, whatever the memory fraction says: the way to compare KV
    # dtypes at equal memory (CPU worker: "Explicitly set (…) GiB for KV cache").
    Setting("kv_cache_memory_bytes", int, "kv_cache_memory_bytes=None (size the cache from the memory fraction).",
            flag="--kv-cache-memory-bytes", unit="bytes", short="kv bytes", minimum=1,
            resolved=("cache_config", "kv_cache_memory_bytes")),
    Setting("kv_cache_dtype", str, 'kv_cache_dtype="fp8" to halve KV memory, or "auto".', flag="--kv-cache-dtype",
            short="kv", choices=KV_CACHE_DTYPES, nullable=False, resolved=("cache_config", "cache_dtype")),
    # None is resolved by EngineConfig to the dtype this machine computes fastest.
    Setting("dtype", str, 'dtype="auto".', flag="--dtype", choices=DTYPES, resolved=("model_config", "dtype")),
    # The CPU's kernels (CPU_QUANTIZATION) are checked before a start (engine/preflight.py).
    Setting("quantization", str, "quantization=None (the checkpoint's own).", flag="--quantization",
            resolved=("model_config", "quantization")),
    Setting("tensor_parallel_size", int, "tensor_parallel_size=1.", flag="--tensor-parallel-size", unit="ranks",
            short="tp", minimum=1, nullable=False, resolved=("parallel_config", "tensor_parallel_size")),
    # Splits the layers into stages, one rank each; checked against the model's layers and the
    # cores before a start (engine/preflight.py).
    Setting("pipeline_parallel_size", int, "pipeline_parallel_size=1.", flag="--pipeline-parallel-size",
            unit="ranks", short="pp", minimum=1, nullable=False,
            resolved=("parallel_config", "pipeline_parallel_size")),
    # Replicas of the whole engine behind one API server (vLLM balances requests between them);
    # for a dense model each replica is an independent engine core with its own KV cache.
    Setting("data_parallel_size", int, "data_parallel_size=1.", flag="--data-parallel-size", unit="replicas",
            short="dp", minimum=1, nullable=False, resolved=("parallel_config", "data_parallel_size")),
    # None: vLLM's choice. vllm/platforms/cpu.py, CpuPlatform.check_and_update_config turns
    # "uni" (one rank) into "mp" on CPU, and ParallelConfig.__post_init__ picks "mp" for more
    # ranks unless the engine runs inside a Ray placement group (never, as the harness starts
    # it). "ray" needs the ray package (engine/preflight.py checks it).
    Setting("distributed_executor_backend", str, 'distributed_executor_backend="mp" (one machine) or "ray".',
            flag="--distributed-executor-backend", short="executor", choices=EXECUTOR_BACKENDS,
            resolved=("parallel_config", "distributed_executor_backend"), cpu_default="mp"),
    Setting("cpu_offload_gb", float, "cpu_offload_gb=0.", flag="--cpu-offload-gb", unit="GiB", minimum=0,
            nullable=False, devices=("cuda",), resolved=("offload_config", "uva", "cpu_offload_gb")),
    # The API server's per-request log lines (vLLM's --enable-log-requests): off unless asked for.
    Setting("enable_log_requests", bool, "enable_log_requests=False.", flag="--enable-log-requests",
            short="log requests", nullable=False),
    Setting("log_level", str, 'log_level="info" (the start-up report needs it).', env="VLLM_LOGGING_LEVEL",
            choices=LOG_LEVELS, nullable=False),
    Setting("seed", int, "seed=0.", flag="--seed", nullable=False, resolved=("model_config", "seed")),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def resolved_values(vllm_config: dict) -> dict:
    """{setting: the value the engine chose} from /server_info's `vllm_config` (None where absent)."""
    return {s.name: dig(vllm_config, s.resolved) for s in SETTINGS if s.resolved}


def dig(tree: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree


def chart_titles() -> dict[str, str]:
    """Axis titles for the settings' columns in result rows: cfg_* (asked) and engine_* (resolved)."""
    titles = {f"cfg_{s.name}": s.title for s in SETTINGS}
    titles.update({f"engine_{s.name}": f"{s.name}, engine's value" + (f" ({s.unit})" if s.unit else "")
                   for s in SETTINGS if s.resolved})
    return titles
