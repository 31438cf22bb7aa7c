"""One validated object for every engine setting the guide covers.

A notebook builds an `EngineConfig`, changes one field at a time with `.replace(...)`, and
hands it to the harness. Validation happens here, before any process starts, so a bad value
is reported with the setting's name and a fix instead of a crashed server.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from helpers import hardware

# On a CPU machine vLLM treats `gpu_memory_utilization` as the share of host RAM given to
# weights + KV cache. Its stock 0.92 does not start on a 24 GiB machine (the engine compares
# it with the free memory of one NUMA node), so the guide starts from a modest share.
CPU_DEFAULT_MEMORY_FRACTION = 0.25
GPU_DEFAULT_MEMORY_FRACTION = 0.90

KV_CACHE_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
DTYPES = ("auto", "bfloat16", "float16", "float32")
LOG_LEVELS = ("debug", "info", "warning", "error")
# Weight quantization methods the CPU backend has kernels for (vLLM's CPU docs).
CPU_QUANTIZATION = ("awq", "gptq", "compressed-tensors")


# Chart-legend names for settings (labels stay short enough to read).
SHORT_NAMES = {"max_num_batched_tokens": "budget", "max_num_seqs": "seqs", "enable_chunked_prefill": "chunked",
               "enable_prefix_caching": "prefix cache", "gpu_memory_utilization": "mem", "max_model_len": "len",
               "kv_cache_dtype": "kv", "enforce_eager": "eager", "num_gpu_blocks_override": "blocks",
               "tensor_parallel_size": "tp", "block_size": "block", "compilation_config": "compile"}


class ConfigError(ValueError):
    """A setting is wrong. The message names it, says why, and what to try."""

    def __init__(self, setting: str, problem: str, fix: str):
        self.setting, self.problem, self.fix = setting, problem, fix
        super().__init__(f"{setting}: {problem} Try: {fix}")


@dataclass(frozen=True)
class EngineConfig:
    """Every setting the guide toggles. `None` means "vLLM's own default"."""

    model: str = "embedded"  # "embedded", "synthetic-tp", a local folder, or a hub id
    max_model_len: int = 2048
    gpu_memory_utilization: float | None = None  # None: the guide's default for this device
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    # Fixes the KV cache at this many blocks, whatever the memory fraction says: a way to
    # make the cache overflow on purpose (queueing, preemption) with a small model.
    num_gpu_blocks_override: int | None = None
    # There are no CUDA graphs on CPU; there this switch turns torch.compile on or off.
    # The guide starts eager by default: compiling costs ~90 s per start on 2 cores.
    enforce_eager: bool = True
    compilation_config: dict | None = None
    kv_cache_dtype: str = "auto"
    # None: the dtype this machine computes fastest (hardware.cpu_dtype(): float32 where the CPU
    # only emulates bf16, bf16 where AVX512-BF16/AMX exist; vLLM's "auto" on a GPU). "auto" is
    # vLLM's own rule: the model's dtype (bf16 for the embedded model), emulated or not.
    dtype: str | None = None
    quantization: str | None = None
    tensor_parallel_size: int = 1
    cpu_offload_gb: float = 0.0
    log_level: str = "info"
    seed: int = 0
    device: str = field(default_factory=hardware.default_device)  # "cpu" or "cuda"

    # -- building -------------------------------------------------------------------------
    def replace(self, **changes) -> "EngineConfig":
        """A copy with some settings changed, validated again."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            name = sorted(unknown)[0]
            raise ConfigError(name, "is not a setting the guide knows.",
                              f"one of {', '.join(f.name for f in dataclasses.fields(self))}.")
        return dataclasses.replace(self, **changes)

    def __post_init__(self):
        if self.dtype is None:  # resolved now, so spelling the machine's pick out is the same config
            object.__setattr__(self, "dtype", hardware.cpu_dtype() if self.device == "cpu" else "auto")
        self._check_types()
        self._check_ranges()

    @property
    def memory_fraction(self) -> float:
        if self.gpu_memory_utilization is not None:
            return self.gpu_memory_utilization
        return CPU_DEFAULT_MEMORY_FRACTION if self.device == "cpu" else GPU_DEFAULT_MEMORY_FRACTION

    def as_dict(self) -> dict:
        """Plain settings, for result rows and store keys (device is part of the environment)."""
        d = dataclasses.asdict(self)
        d.pop("device")
        d["gpu_memory_utilization"] = self.memory_fraction
        return d

    def label(self) -> str:
        """A short name for charts: only the settings that differ from the guide's defaults."""
        base = EngineConfig(device=self.device).as_dict()
        parts = []
        for k, v in self.as_dict().items():
            if k == "model" or v == base.get(k):
                continue
            v = {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v
            parts.append(f"{SHORT_NAMES.get(k, k)}={v}")
        return ", ".join(parts) or "guide default"

    # -- validation -----------------------------------------------------------------------
    def _check_types(self):
        for name in ("max_model_len", "tensor_parallel_size", "seed", "cpu_offload_gb"):
            if getattr(self, name) is None:
                raise ConfigError(name, "needs a value, got None.", f"{name}={EngineConfig.__dataclass_fields__[name].default!r}")
        ints = ("max_model_len", "block_size", "max_num_seqs", "max_num_batched_tokens", "num_gpu_blocks_override",
                "tensor_parallel_size", "seed")
        for name in ints:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ConfigError(name, f"must be a whole number, got {v!r}.", f"{name}=2048")
        for name in ("enable_chunked_prefill", "enable_prefix_caching", "enforce_eager"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, bool):
                raise ConfigError(name, f"must be True, False or None, got {v!r}.", f"{name}=True")
        for name in ("gpu_memory_utilization", "cpu_offload_gb"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ConfigError(name, f"must be a number, got {v!r}.", f"{name}=0.3")
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError("model", f"must be a name or a folder, got {self.model!r}.",
                              'model="embedded" (SmolLM2-135M, no download).')
        if self.compilation_config is not None and not isinstance(self.compilation_config, dict):
            raise ConfigError("compilation_config", "must be a dict such as {'mode': 3}.",
                              "compilation_config=None (vLLM's default).")

    def _check_ranges(self):
        f = self.gpu_memory_utilization
        if f is not None and not 0 < f <= 1:
            raise ConfigError("gpu_memory_utilization",
                              f"is a fraction of memory and must lie in (0, 1], got {f}.",
                              f"a value such as {CPU_DEFAULT_MEMORY_FRACTION} on CPU or 0.9 on a GPU.")
        if self.max_model_len < 16:
            raise ConfigError("max_model_len", f"must be at least 16 tokens, got {self.max_model_len}.",
                              "max_model_len=2048.")
        if self.block_size is not None and (self.block_size < 1 or self.block_size & (self.block_size - 1)):
            raise ConfigError("block_size", f"must be a power of two, got {self.block_size}.",
                              "block_size=16, 32, 64 or 128.")
        if self.num_gpu_blocks_override is not None and self.num_gpu_blocks_override < 1:
            raise ConfigError("num_gpu_blocks_override", f"must be at least 1 block, got {self.num_gpu_blocks_override}.",
                              "num_gpu_blocks_override=None (size the cache from the memory fraction).")
        if self.device == "cpu" and self.block_size is not None and self.block_size % 32:
            raise ConfigError("block_size", f"({self.block_size}) must be a multiple of 32 on the CPU backend "
                              "(its attention kernel works in 32-token tiles).", "block_size=32, 64 or 128 (CPU default).")
        if self.max_num_seqs is not None and self.max_num_seqs < 1:
            raise ConfigError("max_num_seqs", f"must be at least 1, got {self.max_num_seqs}.",
                              "max_num_seqs=16.")
        b = self.max_num_batched_tokens
        if b is not None:
            if b < 1:
                raise ConfigError("max_num_batched_tokens", f"must be at least 1, got {b}.",
                                  "max_num_batched_tokens=2048.")
            if self.max_num_seqs is not None and b < self.max_num_seqs:
                raise ConfigError("max_num_batched_tokens",
                                  f"({b}) is smaller than max_num_seqs ({self.max_num_seqs}); "
                                  "every running sequence needs at least one token per step.",
                                  f"max_num_batched_tokens >= {self.max_num_seqs}.")
            if self.enable_chunked_prefill is False and b < self.max_model_len:
                raise ConfigError("max_num_batched_tokens",
                                  f"({b}) is smaller than max_model_len ({self.max_model_len}) with "
                                  "chunked prefill off, so a long prompt could never be scheduled.",
                                  f"max_num_batched_tokens >= {self.max_model_len}, or enable_chunked_prefill=True.")
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ConfigError("kv_cache_dtype", f"{self.kv_cache_dtype!r} is not one of {KV_CACHE_DTYPES}.",
                              'kv_cache_dtype="fp8" to halve KV memory, or "auto".')
        if not isinstance(self.dtype, str) or self.dtype not in DTYPES:
            raise ConfigError("dtype", f"{self.dtype!r} is not one of {DTYPES}.", 'dtype="auto".')
        if self.log_level not in LOG_LEVELS:
            raise ConfigError("log_level", f"{self.log_level!r} is not one of {LOG_LEVELS}.",
                              'log_level="info" (the start-up report needs it).')
        if self.tensor_parallel_size < 1:
            raise ConfigError("tensor_parallel_size", f"must be at least 1, got {self.tensor_parallel_size}.",
                              "tensor_parallel_size=1.")
        if self.cpu_offload_gb < 0:
            raise ConfigError("cpu_offload_gb", f"must not be negative, got {self.cpu_offload_gb}.",
                              "cpu_offload_gb=0.")
        if self.device not in ("cpu", "cuda"):
            raise ConfigError("device", f"must be 'cpu' or 'cuda', got {self.device!r}.", 'device="cpu".')

    def cannot_run_here(self) -> ConfigError | None:
        """Why this machine's CPU cannot run this config (None when it can). Cheap: no model
        files, no process; notebooks and tests use it to skip a part with the reason."""
        if self.device != "cpu":
            return None
        if self.kv_cache_dtype.startswith("fp8") and not hardware.has_avx512():
            return ConfigError("kv_cache_dtype", f"{self.kv_cache_dtype!r} needs a CPU with AVX-512 or AMX; this one has "
                               f"{hardware.isa_label()} (vLLM: \"FP8 KV cache on CPU requires x86 with AVX-512 or AMX.\").",
                               'kv_cache_dtype="auto" here; fp8 KV runs on an AVX-512/AMX CPU or a GPU.')
        return None

    def check_against_machine(self) -> None:
        """Checks that need the model files or the machine; run just before a start."""
        from helpers import models

        if (problem := self.cannot_run_here()) is not None:
            raise problem
        hw = hardware.describe()
        if self.device == "cuda" and hw["gpu_count"] == 0:
            raise ConfigError("device", "is 'cuda' but this machine has no CUDA GPU.",
                              'device="cpu" (the default here).')
        if self.device == "cpu":
            if self.cpu_offload_gb:
                raise ConfigError("cpu_offload_gb", "offloads GPU weights to host RAM; on the CPU "
                                  "backend the weights are already there.", "cpu_offload_gb=0 on CPU.")
            if self.quantization not in (None, *CPU_QUANTIZATION):
                raise ConfigError("quantization", f"{self.quantization!r} has no CPU kernel in "
                                  "vLLM (online fp8 fails at start-up on CPU).",
                                  f"quantization=None, or a checkpoint made with one of {CPU_QUANTIZATION}.")
            if self.tensor_parallel_size > hw["cpu_cores"]:
                raise ConfigError("tensor_parallel_size", f"({self.tensor_parallel_size}) is more than "
                                  f"this machine's {hw['cpu_cores']} cores; each CPU rank needs its own core.",
                                  f"tensor_parallel_size <= {hw['cpu_cores']}.")
        elif self.tensor_parallel_size > hw["gpu_count"]:
            raise ConfigError("tensor_parallel_size", f"({self.tensor_parallel_size}) is more than the "
                              f"{hw['gpu_count']} GPU(s) here.", f"tensor_parallel_size <= {hw['gpu_count']}.")

        path = models.resolve(self.model)  # raises ConfigError for a missing folder
        shape = models.shape(path)
        if shape:
            heads, kv_heads = shape["num_attention_heads"], shape["num_key_value_heads"]
            tp = self.tensor_parallel_size
            if heads % tp:
                ok = [n for n in range(1, heads + 1) if heads % n == 0]
                raise ConfigError("tensor_parallel_size",
                                  f"({tp}) must divide the model's {heads} attention heads.",
                                  f"one of {ok}, or model=\"synthetic-tp\" (8 heads) for a TP demo.")
            if shape.get("max_position_embeddings") and self.max_model_len > shape["max_position_embeddings"]:
                raise ConfigError("max_model_len", f"({self.max_model_len}) is longer than the model's "
                                  f"context ({shape['max_position_embeddings']}).",
                                  f"max_model_len <= {shape['max_position_embeddings']}.")

    # -- turning into a server command ----------------------------------------------------
    def server_args(self, model_path: str, port: int) -> list[str]:
        """The api_server command-line arguments for this config."""
        args = ["--model", model_path, "--host", "127.0.0.1", "--port", str(port),
                "--max-model-len", str(self.max_model_len),
                "--gpu-memory-utilization", str(self.memory_fraction),
                "--kv-cache-dtype", self.kv_cache_dtype, "--dtype", self.dtype,
                "--tensor-parallel-size", str(self.tensor_parallel_size),
                "--seed", str(self.seed)]
        optional = {"--block-size": self.block_size, "--max-num-seqs": self.max_num_seqs,
                    "--max-num-batched-tokens": self.max_num_batched_tokens,
                    "--quantization": self.quantization,
                    "--num-gpu-blocks-override": self.num_gpu_blocks_override}
        for flag, value in optional.items():
            if value is not None:
                args += [flag, str(value)]
        for flag, value in {"--enable-chunked-prefill": self.enable_chunked_prefill,
                            "--enable-prefix-caching": self.enable_prefix_caching}.items():
            if value is not None:
                args.append(flag if value else "--no-" + flag[2:])
        if self.enforce_eager:
            args.append("--enforce-eager")
        if self.compilation_config is not None:
            args += ["--compilation-config", json.dumps(self.compilation_config)]
        if self.cpu_offload_gb:
            args += ["--cpu-offload-gb", str(self.cpu_offload_gb)]
        return args

    def server_env(self) -> dict[str, str]:
        """Environment variables the server needs for this config."""
        # No hub downloads unless the learner opts in for a hub id of their own.
        offline = "0" if os.environ.get("GUIDE_ALLOW_DOWNLOAD") == "1" else "1"
        env = {"VLLM_LOGGING_LEVEL": self.log_level.upper(), "HF_HUB_OFFLINE": offline,
               "TOKENIZERS_PARALLELISM": "false", "VLLM_NO_USAGE_STATS": "1",
               "DO_NOT_TRACK": "1",
               # Dev endpoints let the harness read the engine's resolved settings
               # (/server_info). The server only listens on 127.0.0.1.
               "VLLM_SERVER_DEV_MODE": "1"}
        if self.device == "cpu" and self.tensor_parallel_size > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
            # Without it vLLM wants one NUMA node per rank; give each rank its own cores.
            cpus = sorted(os.sched_getaffinity(0))
            per = max(1, len(cpus) // self.tensor_parallel_size)
            groups = [",".join(map(str, cpus[i * per:(i + 1) * per])) for i in range(self.tensor_parallel_size)]
            env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(groups)
        return env
