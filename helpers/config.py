"""One validated object for every engine setting the guide covers.

A notebook builds an `EngineConfig`, changes one field at a time with `.replace(...)`, and
hands it to the harness. Validation happens here, before any process starts, so a bad value
is reported with the setting's name and a fix instead of a crashed server.

Each setting is declared once, on its field here (`declare`: flag, range, unit, label, vLLM's
CPU default, panel values, chapter; `helpers.settings` says what those mean); `SETTINGS` is
read from the fields. This module also holds the checks a declaration cannot express
(several settings at once, this machine). Checks that need the model files run at start:
`helpers/engine/preflight.py`.
"""
from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field

from helpers import hardware
from helpers.cpu_refusals import cpu_refusal
from helpers.errors import ConfigError  # noqa: F401 - also importable from here
from helpers.i18n import tr
from helpers.settings import (
    CPU_DEFAULT_MEMORY_FRACTION,
    DEVICES,
    DTYPES,
    EXECUTOR_BACKENDS,
    GPU_DEFAULT_MEMORY_FRACTION,
    KV_CACHE_DTYPES,
    LOG_LEVELS,
    Setting,
    cpu_max_num_batched_tokens,
    cpu_max_num_seqs,
    declare,
)

# vllm/config/compilation.py: CompilationMode (0 none, 1 stock torch.compile, 2 one Dynamo trace,
# 3 vLLM's own) and CUDAGraphMode.
COMPILATION_MODES = (0, 1, 2, 3)
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


@dataclass(frozen=True)
class EngineConfig:
    """Every setting the guide toggles. `None` means "vLLM's own default".

    One configuration has one spelling. A value equal to what vLLM turns None into on this
    device (declared in `helpers.settings`) is stored as None, so the two are equal, hash
    alike, and give the same `as_dict()` (the store key) and `label()`. None rather than the
    number because None leaves the choice to vLLM on the command line (no flag is sent, so
    its side rules for a user-given value do not apply), because it survives `.replace()` of
    a setting the default depends on (a budget written out as 4096 at tensor_parallel_size=2
    would otherwise stay 4096 at 1), and because on a GPU, where no default is declared,
    None is the only spelling anyway. `as_dict()` writes the declared defaults out, so result
    rows still carry numbers. Two settings keep their own rule: `dtype=None` becomes this
    machine's pick, and a memory fraction equal to the guide's becomes None
    (`memory_fraction`).
    """

    # Each field declares its setting once (helpers.settings.declare): flag or env, range,
    # unit and label, where the engine reports its value, vLLM's CPU default, panel values.
    # "embedded", "synthetic-tp", a local folder, or a hub id; a panel offers the embedded model's
    # quantized copies (bf16 or this CPU's dtype, INT8 W8A8, INT4 W4A16).
    model: str = declare("embedded", 'model="embedded" (SmolLM2-135M, no download).', flag="--model",
                         what="a name or a folder", panel=("embedded", "embedded-int8", "embedded-int4"), chapter=5)
    max_model_len: int = declare(2048, "max_model_len=2048.", flag="--max-model-len", unit="tokens", short="len",
                                 minimum=16, resolved=("model_config", "max_model_len"),
                                 panel=(512, 1024, 2048, 4096, 8192), chapter=2)
    # None: the guide's fraction for the device (memory_fraction); always sent.
    gpu_memory_utilization: float | None = declare(
        None, f"a value such as {CPU_DEFAULT_MEMORY_FRACTION} on CPU or {GPU_DEFAULT_MEMORY_FRACTION} on a GPU.",
        flag="--gpu-memory-utilization", unit="fraction", short="mem", above=0, maximum=1,
        resolved=("cache_config", "gpu_memory_utilization"), panel=(0.1, 0.15, 0.25, 0.35, 0.5), chapter=2)
    # Power of two, and a multiple of 32 on CPU: checked by hand (_check_together).
    # vllm/platforms/cpu.py, CpuPlatform.check_and_update_config: 128 unless the user set it
    # (16 for MLA models, 256 for DeepSeek-V4).
    block_size: int | None = declare(None, "block_size=16, 32, 64 or 128.", flag="--block-size", unit="tokens",
                                     short="block", minimum=1, resolved=("cache_config", "block_size"),
                                     cpu_default=128, panel=(16, 32, 64, 128), chapter=2)
    max_num_seqs: int | None = declare(None, "max_num_seqs=16.", flag="--max-num-seqs", unit="sequences",
                                       short="seqs", minimum=1, resolved=("scheduler_config", "max_num_seqs"),
                                       cpu_default=cpu_max_num_seqs, panel=(1, 2, 4, 8, 16, 32, 64, 128, 256),
                                       chapter=3)
    max_num_batched_tokens: int | None = declare(
        None, "max_num_batched_tokens=2048.", flag="--max-num-batched-tokens", unit="tokens", short="budget",
        minimum=1, resolved=("scheduler_config", "max_num_batched_tokens"), cpu_default=cpu_max_num_batched_tokens,
        panel=(64, 128, 256, 512, 1024, 2048, 4096, 8192), chapter=3)
    # arg_utils._set_default_chunked_prefill_and_prefix_caching_args: on for generative models
    # (ModelConfig.is_chunked_prefill_supported / is_prefix_caching_supported); off on RISC-V.
    enable_chunked_prefill: bool | None = declare(
        None, "enable_chunked_prefill=True.", flag="--enable-chunked-prefill", short="chunked",
        resolved=("scheduler_config", "enable_chunked_prefill"), cpu_default=True, panel=(True, False), chapter=3)
    # config/scheduler.py: 0 (off) unless set. While other requests are running or waiting,
    # Scheduler.schedule() gives one request at most this many prompt tokens per step.
    long_prefill_token_threshold: int | None = declare(
        None, "long_prefill_token_threshold=256 (or 0: off).", flag="--long-prefill-token-threshold", unit="tokens",
        short="prefill cap", minimum=0, resolved=("scheduler_config", "long_prefill_token_threshold"),
        cpu_default=0, panel=(0, 64, 128, 256, 512), chapter=3)
    # In-flight cap (waiting + running); beyond it HTTP 503.
    max_num_queued_reqs: int | None = declare(
        None, "max_num_queued_reqs=None (no cap), or at least max_num_seqs.", flag="--max-num-queued-reqs",
        unit="requests", short="queue cap", minimum=1, resolved=("scheduler_config", "max_num_queued_reqs"))
    enable_prefix_caching: bool | None = declare(
        None, "enable_prefix_caching=True.", flag="--enable-prefix-caching", short="prefix cache",
        resolved=("cache_config", "enable_prefix_caching"), cpu_default=True, panel=(True, False), chapter=4)
    # Fixes the KV cache at this many blocks, whatever the memory fraction says: a way to
    # make the cache overflow on purpose (queueing, preemption) with a small model.
    num_gpu_blocks_override: int | None = declare(
        None, "num_gpu_blocks_override=None (size the cache from the memory fraction).",
        flag="--num-gpu-blocks-override", unit="blocks", short="blocks", minimum=1,
        resolved=("cache_config", "num_gpu_blocks_override"))
    # The guide starts eager by default: compiling costs ~90 s per start on 2 cores. There are
    # no CUDA graphs on CPU; there this switch turns torch.compile on or off.
    enforce_eager: bool = declare(True, "enforce_eager=True.", flag="--enforce-eager", short="eager",
                                  resolved=("model_config", "enforce_eager"), panel=(True, False), chapter=4)
    # The resolved object is large; reported.py reads its `mode` as engine_compilation_mode.
    compilation_config: dict | None = declare(None, "compilation_config=None (vLLM's default).",
                                              flag="--compilation-config", short="compile",
                                              what="a dict such as {'mode': 3}")
    # A fixed KV-cache size in bytes, whatever the memory fraction says: the way to compare KV
    # dtypes at equal memory (CPU worker: "Explicitly set (…) GiB for KV cache").
    kv_cache_memory_bytes: int | None = declare(
        None, "kv_cache_memory_bytes=None (size the cache from the memory fraction).", flag="--kv-cache-memory-bytes",
        unit="bytes", short="kv bytes", minimum=1, resolved=("cache_config", "kv_cache_memory_bytes"))
    kv_cache_dtype: str = declare("auto", 'kv_cache_dtype="fp8" to halve KV memory, or "auto".',
                                  flag="--kv-cache-dtype", short="kv", choices=KV_CACHE_DTYPES,
                                  resolved=("cache_config", "cache_dtype"), panel=("auto", "fp8", "fp8_e5m2"),
                                  chapter=5)
    # None: the dtype this machine computes fastest (hardware.cpu_dtype(): float32 where the CPU
    # only emulates bf16, bf16 where AVX512-BF16/AMX exist; vLLM's "auto" on a GPU), resolved in
    # __post_init__. "auto" is vLLM's own rule: the model's dtype (bf16 for the embedded model),
    # emulated or not.
    dtype: str | None = declare(None, 'dtype="auto".', flag="--dtype", choices=DTYPES,
                                resolved=("model_config", "dtype"))
    # The CPU's kernels (CPU_QUANTIZATION) are checked before a start (engine/preflight.py).
    quantization: str | None = declare(None, "quantization=None (the checkpoint's own).", flag="--quantization",
                                       resolved=("model_config", "quantization"))
    tensor_parallel_size: int = declare(1, "tensor_parallel_size=1.", flag="--tensor-parallel-size", unit="ranks",
                                        short="tp", minimum=1, resolved=("parallel_config", "tensor_parallel_size"))
    # Splits the layers into stages, one rank each; checked against the model's layers and the
    # cores before a start (engine/preflight.py).
    pipeline_parallel_size: int = declare(1, "pipeline_parallel_size=1.", flag="--pipeline-parallel-size",
                                          unit="ranks", short="pp", minimum=1,
                                          resolved=("parallel_config", "pipeline_parallel_size"))
    # Replicas of the whole engine behind one API server (vLLM balances requests between them);
    # for a dense model each replica is an independent engine core with its own KV cache.
    data_parallel_size: int = declare(1, "data_parallel_size=1.", flag="--data-parallel-size", unit="replicas",
                                      short="dp", minimum=1, resolved=("parallel_config", "data_parallel_size"))
    # None: vLLM's choice. vllm/platforms/cpu.py, CpuPlatform.check_and_update_config turns
    # "uni" (one rank) into "mp" on CPU, and ParallelConfig.__post_init__ picks "mp" for more
    # ranks unless the engine runs inside a Ray placement group (never, as the harness starts
    # it). "ray" needs the ray package (engine/preflight.py checks it).
    distributed_executor_backend: str | None = declare(
        None, 'distributed_executor_backend="mp" (one machine) or "ray".', flag="--distributed-executor-backend",
        short="executor", choices=EXECUTOR_BACKENDS, resolved=("parallel_config", "distributed_executor_backend"),
        cpu_default="mp")
    cpu_offload_gb: float = declare(0.0, "cpu_offload_gb=0.", flag="--cpu-offload-gb", unit="GiB", minimum=0,
                                    devices=("cuda",), resolved=("offload_config", "uva", "cpu_offload_gb"))
    # The API server's per-request log lines (vLLM's --enable-log-requests): off unless asked for.
    enable_log_requests: bool = declare(False, "enable_log_requests=False.", flag="--enable-log-requests",
                                        short="log requests")
    log_level: str = declare("info", 'log_level="info" (the start-up report needs it).', env="VLLM_LOGGING_LEVEL",
                             choices=LOG_LEVELS)
    seed: int = declare(0, "seed=0.", flag="--seed", resolved=("model_config", "seed"))
    # The CPU worker's OpenMP cores (vllm/utils/ompmultiprocessing.py, OMPProcessManager): None is
    # vLLM's "auto" (one logical CPU per physical core of one NUMA node per rank, minus the cores it
    # reserves; those are only logged, nothing pins the other processes there), "nobind" leaves
    # OpenMP alone, "0-1" or "0|1" (one group per rank) names the cores. The CPU platform preloads
    # PyTorch's libgomp (CpuPlatform.check_and_update_config), so configure_omp_envs sets
    # GOMP_CPU_AFFINITY: each OpenMP thread pinned to one CPU of the list, the worker's first thread
    # too. Only the multiprocess executor applies it, so such an engine starts in vLLM's layout.
    cpu_threads_bind: str | None = declare(None, 'cpu_threads_bind=None (vLLM\'s "auto" for one rank; with several '
                                           'the guide splits the allowed cores evenly, "0|1"), "nobind", or cores '
                                           'such as "0-1".', env="VLLM_CPU_OMP_THREADS_BIND", short="bind",
                                           devices=("cpu",))
    # Cores "auto" keeps out of the worker's list; vLLM's minimum is one per rank on x86, a smaller
    # value is taken all the same, with a warning, and none are kept when the selected cores are no more.
    cpu_reserved_cores: int | None = declare(None, "cpu_reserved_cores=None (vLLM's: one per rank).",
                                             env="VLLM_CPU_NUM_OF_RESERVED_CPU", unit="cores", short="reserved",
                                             minimum=0, devices=("cpu",))
    device: str = field(default_factory=hardware.default_device)  # "cpu" or "cuda"

    # -- building -------------------------------------------------------------------------
    def replace(self, **changes) -> "EngineConfig":
        """A copy with some settings changed, validated again."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            name = sorted(unknown)[0]
            raise ConfigError(name, tr("is not a setting the guide knows."),
                              tr("one of {value}.", value=', '.join((f.name for f in dataclasses.fields(self)))))
        return dataclasses.replace(self, **changes)

    def __post_init__(self):
        if self.dtype is None:  # resolved now, so spelling the machine's pick out is the same config
            object.__setattr__(self, "dtype", hardware.cpu_dtype() if self.device == "cpu" else "auto")
        self._check_each()
        self._check_together()
        self._drop_spelled_defaults()

    def _drop_spelled_defaults(self):
        """Store a value that only spells out a default as None (see the class docstring)."""
        for s in SETTINGS:
            value = getattr(self, s.name)
            if value is not None and s.nullable and value == s.default_for(self):
                object.__setattr__(self, s.name, None)
        if self.gpu_memory_utilization == self._guide_memory_fraction():
            object.__setattr__(self, "gpu_memory_utilization", None)

    def _guide_memory_fraction(self) -> float:
        return CPU_DEFAULT_MEMORY_FRACTION if self.device == "cpu" else GPU_DEFAULT_MEMORY_FRACTION

    @property
    def memory_fraction(self) -> float:
        if self.gpu_memory_utilization is not None:
            return self.gpu_memory_utilization
        return self._guide_memory_fraction()

    def more_memory(self, on_cpu: float) -> float:
        """A memory fraction above this config's, for a step that means "give it more memory":
        `on_cpu` on the CPU backend, halfway to all of it on a GPU (0.90 → 0.95), so that such a
        step never lowers a GPU's default."""
        if self.device == "cpu":
            return max(on_cpu, self.memory_fraction)
        return round((1 + self.memory_fraction) / 2, 2)

    def effective(self, name: str):
        """The setting's value, or what vLLM turns None into here where that is declared
        (None where neither is known: a GPU's defaults)."""
        value = getattr(self, name)
        if value is not None:
            return value
        default = BY_NAME[name].default_for(self)
        if name == "max_num_seqs" and default is not None and self.max_num_batched_tokens is not None:
            # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: an unset seat count is lowered to the
            # token budget (each running sequence needs a token of it every step)
            return min(default, self.max_num_batched_tokens)
        return default

    def as_dict(self) -> dict:
        """Plain settings, for result rows and store keys (device is part of the environment).
        None is written out where its value on this device is known (the guide's memory
        fraction, vLLM's declared CPU defaults), so rows carry numbers to chart."""
        d = dataclasses.asdict(self)
        d.pop("device")
        d["gpu_memory_utilization"] = self.memory_fraction
        for s in SETTINGS:
            if d[s.name] is None:
                d[s.name] = s.default_for(self)
        return d

    def label(self) -> str:
        """A short name for charts: only the settings that differ from the guide's defaults."""
        base = EngineConfig(device=self.device)
        parts = []
        for s in SETTINGS:
            value = getattr(self, s.name)
            if value == getattr(base, s.name):
                continue
            if s.name == "model":  # not a knob, except the guide's quantized copies of the default model
                from helpers.quantize import SCHEMES  # light: no torch at import

                if value in SCHEMES:
                    parts.append(f"weights={SCHEMES[value]}")
                continue
            value = ("on" if value else "off") if isinstance(value, bool) else value
            parts.append(f"{s.label}={value}")
        return ", ".join(parts) or "guide default"

    # -- validation -----------------------------------------------------------------------
    def _check_each(self):
        """Kind, range and choices of each setting, as `helpers.settings` declares them."""
        if self.device not in DEVICES:
            raise ConfigError(
                "device", tr("must be 'cpu' or 'cuda', got {device!r}.", device=self.device), 'device="cpu".'
            )
        for s in SETTINGS:
            if (problem := s.problem(getattr(self, s.name))) is not None:
                raise ConfigError(s.name, problem, s.fix)

    def _check_together(self):
        """Rules a range cannot express: powers of two, and settings that bound each other."""
        block = self.block_size
        if block is not None and block & (block - 1):
            raise ConfigError(
                "block_size", tr("must be a power of two, got {block}.", block=block), "block_size=16, 32, 64 or 128."
            )
        if self.device == "cpu" and block is not None and block % 32:
            raise ConfigError(
                "block_size",
                tr(
                    "({block}) is not a multiple of 32: vLLM's CPU backend only warns "
                    "and falls back to its slower vec16 attention kernel; the guide "
                    "keeps to multiples of 32.",
                    block=block,
                ),
                tr("block_size=32, 64 or 128 (CPU default)."),
            )
        self._check_compilation()
        cap = self.long_prefill_token_threshold
        if cap is not None and cap > self.max_model_len:
            raise ConfigError(
                "long_prefill_token_threshold",
                tr(
                    "({cap}) is larger than max_model_len ({max_model_len}); vLLM refuses that.",
                    cap=cap,
                    max_model_len=self.max_model_len,
                ),
                f"long_prefill_token_threshold <= {self.max_model_len}.",
            )
        budget, seqs = self.effective("max_num_batched_tokens"), self.effective("max_num_seqs")
        if budget is None:
            return
        said = str(budget) if self.max_num_batched_tokens is not None else tr("vLLM's default here, {budget}",
                                                                              budget=budget)
        # an unset seat count is lowered to the budget by vLLM itself (`effective`): only a cap set here can clash
        if self.max_num_seqs is not None and seqs is not None and budget < seqs:
            raise ConfigError(
                "max_num_batched_tokens",
                tr(
                    "({said}) is smaller than max_num_seqs ({seqs}); every running sequence needs at "
                    "least one token per step.",
                    said=said,
                    seqs=seqs,
                ),
                f"max_num_batched_tokens >= {seqs}.",
            )
        if self.enable_chunked_prefill is False and budget < self.max_model_len:
            raise ConfigError(
                "max_num_batched_tokens",
                tr(
                    "({said}) is smaller than max_model_len ({max_model_len}) with chunked prefill "
                    "off, so a long prompt could never be scheduled.",
                    said=said,
                    max_model_len=self.max_model_len,
                ),
                tr(
                    "max_num_batched_tokens >= {max_model_len}, or enable_chunked_prefill=True.",
                    max_model_len=self.max_model_len,
                ),
            )

    def _check_compilation(self):
        """vLLM drops a compilation config under enforce_eager without a word; say so first."""
        cc = self.compilation_config
        if cc is None:
            return
        if self.enforce_eager:
            raise ConfigError(
                "compilation_config",
                tr(
                    "({cc}) would be ignored: with enforce_eager=True vLLM sets "
                    "the compilation mode and cudagraph_mode to NONE "
                    "(VllmConfig.__post_init__).",
                    cc=cc,
                ),
                tr("enforce_eager=False together with compilation_config, or compilation_config=None."),
            )
        mode = cc.get("mode")
        if mode is not None and mode not in COMPILATION_MODES:
            raise ConfigError(
                "compilation_config",
                tr(
                    "mode {mode!r} is not one of vLLM's compilation modes {compilation_modes}.",
                    mode=mode,
                    compilation_modes=COMPILATION_MODES,
                ),
                tr("{'mode': 0} (none) … {'mode': 3} (vLLM's own, the default)."),
            )
        graphs = cc.get("cudagraph_mode")
        if graphs is not None and str(graphs).upper() not in CUDAGRAPH_MODES:
            raise ConfigError(
                "compilation_config",
                tr(
                    "cudagraph_mode {graphs!r} is not one of {cudagraph_modes}.",
                    graphs=graphs,
                    cudagraph_modes=CUDAGRAPH_MODES,
                ),
                tr("cudagraph_mode='FULL_AND_PIECEWISE' (vLLM's usual default on a GPU) or 'NONE'."),
            )

    def cuda_graphs_asked(self) -> str | None:
        """The CUDA-graph part of compilation_config, where one asks for graphs (None: none asked)."""
        cc = self.compilation_config or {}
        if str(cc.get("cudagraph_mode", "NONE")).upper() != "NONE":
            return f"cudagraph_mode={cc['cudagraph_mode']!r}"
        for key in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
            if cc.get(key):
                return f"{key}={cc[key]!r}"
        return None

    def cannot_run_here(self) -> ConfigError | None:
        """Why this config cannot run on this device or this machine's CPU (None when it can).
        Cheap: no model files, no process; notebooks and tests use it to skip a part with the
        reason, and the engine start refuses it (engine/preflight.py)."""
        for s in SETTINGS:
            value, default = getattr(self, s.name), s.default
            if self.device not in s.devices and value not in (None, default):
                return ConfigError(
                    s.name,
                    tr(
                        "({value!r}) applies on {devices} only; this config runs on {device}.",
                        value=value,
                        devices=" or ".join(s.devices),
                        device=self.device,
                    ),
                    f"{s.name}={default!r} on {self.device}.",
                )
        if self.device != "cpu":
            return None
        return cpu_refusal(self)

    def runs_here(self, name: str, values=None) -> list:
        """Which `values` of one setting (its declared panel values when None) this config can
        run with on this machine, in order; `refusals` says why not the others."""
        return [v for v, why in self.refusals(name, values).items() if why is None]

    def refusals(self, name: str, values=None) -> dict:
        """{value: None where this config runs with `name` set to it here, else the ConfigError}."""
        values = BY_NAME[name].panel if values is None else values
        out = {}
        for v in values:
            try:
                out[v] = self.replace(**{name: v}).cannot_run_here()
            except ConfigError as refused:  # a value the other settings rule out
                out[v] = refused
        return out

    # -- turning into a server command ----------------------------------------------------
    def server_args(self, model_path: str, port: int) -> list[str]:
        """The api_server command-line arguments for this config (one rule: Setting.flags)."""
        sent = {**dataclasses.asdict(self), "model": model_path, "gpu_memory_utilization": self.memory_fraction}
        args = [word for s in SETTINGS if self.device in s.devices for word in s.flags(sent[s.name])]
        return args + ["--host", "127.0.0.1", "--port", str(port)]

    def server_env(self) -> dict[str, str]:
        """Environment variables the server needs for this config."""
        # No hub downloads unless the learner opts in for a hub id of their own.
        offline = "0" if os.environ.get("GUIDE_ALLOW_DOWNLOAD") == "1" else "1"
        env = {
            "HF_HUB_OFFLINE": offline,
            "TOKENIZERS_PARALLELISM": "false",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            # Dev endpoints let the harness read the engine's resolved settings
            # (/server_info). The server only listens on 127.0.0.1.
            "VLLM_SERVER_DEV_MODE": "1",
        }
        for s in SETTINGS:
            if (text := s.env_text(getattr(self, s.name))) is not None:
                env[s.env] = text
        ranks = self.ranks * self.data_parallel_size
        if (
            self.device == "cpu"
            and ranks > 1
            and self.cpu_threads_bind is None
            and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ
        ):
            # Without it vLLM wants one NUMA node per rank; give each rank its own cores. vLLM
            # reads the groups in rank order (utils/ompmultiprocessing.py: "[DP, PP, TP]").
            cpus = sorted(os.sched_getaffinity(0))
            per = max(1, len(cpus) // ranks)
            groups = [",".join(map(str, cpus[i * per : (i + 1) * per])) for i in range(ranks)]
            env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(groups)
        return env

    @property
    def ranks(self) -> int:
        """Worker processes of the engine: tensor × pipeline parallel size."""
        return self.tensor_parallel_size * self.pipeline_parallel_size


# Every setting, in field order, read from the fields' declarations.
SETTINGS: tuple[Setting, ...] = tuple(
    Setting.from_field(f, hint)
    for f in dataclasses.fields(EngineConfig)
    if "setting" in f.metadata
    for hint in [typing.get_type_hints(EngineConfig)[f.name]]
)
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
