"""EngineConfig: validation, the checks before a start (engine/preflight.py), and the server
command it turns into."""
import json

import pytest

from helpers import hardware, models
from helpers.config import ConfigError, EngineConfig
from helpers.engine import preflight


def _machine(**over):
    """A fake `hardware.describe()` result."""
    hw = {"cpu_model": "test CPU", "cpu_cores": 8, "ram_gib": 32.0, "gpu_names": (),
          "gpu_count": 0, "machine": "x86_64"}
    hw.update(over)
    return lambda: hw


def _value(args, flag):
    return args[args.index(flag) + 1]


def _embedded_ready():
    return (models.embedded_dir() / "model.safetensors").exists()


needs_embedded = pytest.mark.skipif(not _embedded_ready(),
                                    reason="the converted embedded model is not in the cache")


# -- validation ---------------------------------------------------------------------------

@pytest.mark.parametrize("setting, kwargs", [
    ("gpu_memory_utilization", {"gpu_memory_utilization": 1.5}),
    ("gpu_memory_utilization", {"gpu_memory_utilization": 0}),
    ("gpu_memory_utilization", {"gpu_memory_utilization": -0.1}),
    ("gpu_memory_utilization", {"gpu_memory_utilization": "0.5"}),
    ("max_model_len", {"max_model_len": 2048.0}),
    ("max_model_len", {"max_model_len": "2048"}),
    ("max_model_len", {"max_model_len": True}),
    ("max_model_len", {"max_model_len": 8}),
    ("block_size", {"block_size": 24}),
    ("block_size", {"block_size": 0}),
    ("block_size", {"block_size": -16}),
    ("max_num_seqs", {"max_num_seqs": 0}),
    ("max_num_batched_tokens", {"max_num_seqs": 64, "max_num_batched_tokens": 32}),
    ("max_num_batched_tokens", {"enable_chunked_prefill": False, "max_model_len": 2048,
                                "max_num_batched_tokens": 1024}),
    ("kv_cache_dtype", {"kv_cache_dtype": "int4"}),
    ("dtype", {"dtype": "fp64"}),
    ("log_level", {"log_level": "verbose"}),
    ("log_level", {"log_level": "INFO"}),
    ("tensor_parallel_size", {"tensor_parallel_size": 0}),
    ("cpu_offload_gb", {"cpu_offload_gb": -1}),
    ("enable_prefix_caching", {"enable_prefix_caching": "yes"}),
    ("model", {"model": ""}),
    ("compilation_config", {"compilation_config": "mode=3"}),
    ("device", {"device": "tpu"}),
])
def test_bad_value_names_the_setting(setting, kwargs):
    with pytest.raises(ConfigError) as err:
        EngineConfig(**{"device": "cpu", **kwargs})
    assert err.value.setting == setting
    assert str(err.value).startswith(setting + ":")
    assert err.value.fix  # every error says what to try


@pytest.mark.parametrize("kwargs", [
    {"gpu_memory_utilization": 1},
    {"gpu_memory_utilization": 0.05},
    {"block_size": 32}, {"block_size": 64}, {"block_size": 128},
    {"max_num_seqs": 64, "max_num_batched_tokens": 64},
    # Chunked prefill on (or vLLM's default) lets the budget be below max_model_len.
    {"enable_chunked_prefill": True, "max_num_batched_tokens": 256},
    {"enable_chunked_prefill": None, "max_num_batched_tokens": 256},
    {"enable_chunked_prefill": False, "max_model_len": 2048, "max_num_batched_tokens": 2048},
    {"kv_cache_dtype": "fp8"},
    {"log_level": "debug"},
])
def test_good_values_are_accepted(kwargs, monkeypatch):
    monkeypatch.setattr(hardware, "cpu_isa", lambda: frozenset({"avx2", "avx512f"}))  # fp8 KV needs AVX-512
    config = EngineConfig(device="cpu", **kwargs)
    # Kept as given (a value equal to vLLM's CPU default is stored as None, its one spelling).
    for name, value in kwargs.items():
        assert getattr(config, name) in (value, None), name
    assert config.cannot_run_here() is None


@pytest.mark.parametrize("setting", ["max_model_len", "tensor_parallel_size", "cpu_offload_gb", "seed"])
def test_none_for_a_required_setting_is_a_config_error(setting):
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", **{setting: None})
    assert err.value.setting == setting


def test_replace_unknown_field():
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu").replace(max_num_seq=4)
    assert err.value.setting == "max_num_seq"
    assert "max_num_seqs" in err.value.fix  # the list of real settings


def test_replace_validates_and_copies():
    base = EngineConfig(device="cpu")
    changed = base.replace(max_num_seqs=4)
    assert changed.max_num_seqs == 4 and base.max_num_seqs is None
    with pytest.raises(ConfigError) as err:
        base.replace(block_size=24)
    assert err.value.setting == "block_size"


# -- label / as_dict ----------------------------------------------------------------------

def test_label_default():
    assert EngineConfig().label() == "guide default"
    assert EngineConfig(device="cpu").label() == "guide default"
    assert EngineConfig(device="cpu", model="synthetic-tp").label() == "guide default"  # model is not a knob
    assert EngineConfig(device="cpu", model="embedded-int8").label() == "weights=int8"  # …its quantized copies are


def test_label_lists_changed_settings():
    assert EngineConfig(device="cpu", max_num_seqs=4).label() == "seqs=4"
    label = EngineConfig(device="cpu", enable_prefix_caching=False, block_size=32).label()
    assert "prefix cache=off" in label and "block=32" in label


def test_cpu_block_size_must_be_a_multiple_of_32():
    with pytest.raises(ConfigError) as e:
        EngineConfig(device="cpu", block_size=16)
    assert e.value.setting == "block_size"
    EngineConfig(device="cuda", block_size=16)


def test_as_dict_resolves_memory_fraction_and_drops_device():
    d = EngineConfig(device="cpu").as_dict()
    assert "device" not in d
    assert d["gpu_memory_utilization"] == 0.25
    assert EngineConfig(device="cuda").as_dict()["gpu_memory_utilization"] == 0.90
    assert EngineConfig(device="cpu", gpu_memory_utilization=0.4).as_dict()["gpu_memory_utilization"] == 0.4


# -- preflight.check ------------------------------------------------------------------------

@needs_embedded
def test_tp2_on_embedded_model_is_refused():
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model="embedded", tensor_parallel_size=2))
    assert err.value.setting == "tensor_parallel_size"
    assert "tensor_parallel_size" in str(err.value)


@needs_embedded
def test_tp2_on_embedded_names_the_heads(monkeypatch):
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=8))
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model="embedded", tensor_parallel_size=2))
    assert err.value.setting == "tensor_parallel_size"
    assert "9 attention heads" in str(err.value)
    assert "synthetic-tp" in err.value.fix


@needs_embedded
def test_tp3_on_embedded_divides_the_heads(monkeypatch):
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=8))
    assert preflight.check(EngineConfig(device="cpu", model="embedded", tensor_parallel_size=3)) is None
    with pytest.raises(ConfigError) as err:  # and the same check refuses 2, which does not divide 9 heads
        preflight.check(EngineConfig(device="cpu", model="embedded", tensor_parallel_size=2))
    assert err.value.setting == "tensor_parallel_size"


@needs_embedded
def test_max_model_len_beyond_model_context():
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model="embedded", max_model_len=100_000))
    assert err.value.setting == "max_model_len"


@needs_embedded
def test_default_config_passes_machine_check():
    config = EngineConfig(device="cpu")
    assert config.cannot_run_here() is None
    assert preflight.check(config) is None  # returns quietly: nothing to refuse


def test_missing_model_folder(tmp_path):
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model=str(tmp_path / "no-such-model")))
    assert err.value.setting == "model"


def test_model_folder_without_config_json(tmp_path):
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model=str(tmp_path)))
    assert err.value.setting == "model"
    assert "config.json" in str(err.value)


def test_tp_above_core_count(monkeypatch, tmp_path):
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=2))
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model=str(tmp_path), tensor_parallel_size=4))
    assert err.value.setting == "tensor_parallel_size"


def test_cuda_without_gpu(monkeypatch, tmp_path):
    monkeypatch.setattr(hardware, "describe", _machine(gpu_count=0))
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cuda", model=str(tmp_path)))
    assert err.value.setting == "device"


@pytest.mark.parametrize("setting, kwargs", [
    ("cpu_offload_gb", {"cpu_offload_gb": 1.0}),
    ("quantization", {"quantization": "fp8"}),
])
def test_cpu_only_refusals(setting, kwargs, tmp_path):
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(device="cpu", model=str(tmp_path), **kwargs))
    assert err.value.setting == setting


# -- server_args ----------------------------------------------------------------------------

def test_server_args_defaults():
    args = EngineConfig(device="cpu").server_args("/models/m", 8123)
    assert _value(args, "--model") == "/models/m"
    assert _value(args, "--host") == "127.0.0.1"
    assert _value(args, "--port") == "8123"
    assert _value(args, "--max-model-len") == "2048"
    assert _value(args, "--gpu-memory-utilization") == "0.25"
    assert "--enforce-eager" in args
    for absent in ("--enable-prefix-caching", "--no-enable-prefix-caching", "--enable-chunked-prefill",
                   "--no-enable-chunked-prefill", "--compilation-config", "--block-size",
                   "--max-num-seqs", "--max-num-batched-tokens", "--quantization", "--cpu-offload-gb"):
        assert absent not in args, absent


def test_server_args_enforce_eager_off():
    assert "--enforce-eager" not in EngineConfig(device="cpu", enforce_eager=False).server_args("m", 1)


def test_server_args_prefix_caching_off():
    args = EngineConfig(device="cpu", enable_prefix_caching=False).server_args("m", 1)
    assert "--no-enable-prefix-caching" in args
    assert "--enable-prefix-caching" not in args


def test_server_args_prefix_caching_on():
    args = EngineConfig(device="cuda", enable_prefix_caching=True).server_args("m", 1)
    assert "--enable-prefix-caching" in args
    assert "--no-enable-prefix-caching" not in args


def test_server_args_chunked_prefill():
    on = EngineConfig(device="cuda", enable_chunked_prefill=True).server_args("m", 1)
    off = EngineConfig(device="cpu", enable_chunked_prefill=False).server_args("m", 1)
    assert "--enable-chunked-prefill" in on and "--no-enable-chunked-prefill" not in on
    assert "--no-enable-chunked-prefill" in off and "--enable-chunked-prefill" not in off


def test_server_args_leave_vllms_cpu_defaults_to_vllm():
    # True is vLLM's CPU default for both, so the config stores None and sends no flag.
    args = EngineConfig(device="cpu", enable_prefix_caching=True, enable_chunked_prefill=True).server_args("m", 1)
    assert not [a for a in args if "prefix-caching" in a or "chunked-prefill" in a]


def test_server_args_compilation_config_is_json():
    cc = {"mode": 3, "compile_sizes": [1, 2]}
    args = EngineConfig(device="cpu", enforce_eager=False, compilation_config=cc).server_args("m", 1)
    assert json.loads(_value(args, "--compilation-config")) == cc


def test_compilation_config_under_enforce_eager_is_refused():
    with pytest.raises(ConfigError, match="compilation_config.*ignored.*enforce_eager=False"):
        EngineConfig(device="cpu", compilation_config={"mode": 3})


@pytest.mark.parametrize("cc, match", [({"mode": 5}, "mode 5 is not one of"),
                                       ({"cudagraph_mode": "SOMETIMES"}, "cudagraph_mode 'SOMETIMES'")])
def test_unknown_compilation_values_are_refused(cc, match):
    with pytest.raises(ConfigError, match=match):
        EngineConfig(device="cuda", enforce_eager=False, compilation_config=cc)


@pytest.mark.parametrize("cc", [{"cudagraph_mode": "FULL"}, {"mode": 3, "cudagraph_capture_sizes": [1, 2, 4]}])
def test_cuda_graphs_cannot_run_on_cpu(cc):
    cpu = EngineConfig(device="cpu", enforce_eager=False, compilation_config=cc)
    problem = cpu.cannot_run_here()
    assert problem is not None and problem.setting == "compilation_config"
    assert "CUDA graphs" in str(problem) and "Try:" in str(problem)
    assert EngineConfig(device="cuda", enforce_eager=False, compilation_config=cc).cannot_run_here() is None
    assert EngineConfig(device="cpu", enforce_eager=False,
                        compilation_config={"cudagraph_mode": "NONE"}).cannot_run_here() is None


def test_server_args_optional_numbers():
    cfg = EngineConfig(device="cpu", block_size=32, max_num_seqs=4, max_num_batched_tokens=512,
                       gpu_memory_utilization=0.4, kv_cache_dtype="fp8", tensor_parallel_size=2)
    args = cfg.server_args("m", 1)
    assert _value(args, "--block-size") == "32"
    assert _value(args, "--max-num-seqs") == "4"
    assert _value(args, "--max-num-batched-tokens") == "512"
    assert _value(args, "--gpu-memory-utilization") == "0.4"
    assert _value(args, "--kv-cache-dtype") == "fp8"
    assert _value(args, "--tensor-parallel-size") == "2"


def _cpu_ids(bind: str) -> set[int]:
    ids = set()
    for group in bind.split("|"):
        for part in group.split(","):
            lo, _, hi = part.partition("-")
            ids.update(range(int(lo), int(hi or lo) + 1))
    return ids


# -- server_env -----------------------------------------------------------------------------

def test_server_env_basics(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    env = EngineConfig(device="cpu", log_level="debug").server_env()
    assert env["VLLM_LOGGING_LEVEL"] == "debug"  # vLLM upper-cases it (vllm/envs.py)
    assert env["HF_HUB_OFFLINE"] == "1"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env  # TP=1 needs no binding


def test_server_env_binds_threads_for_tp2_on_cpu(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    bind = EngineConfig(device="cpu", tensor_parallel_size=2).server_env()["VLLM_CPU_OMP_THREADS_BIND"]
    assert len(bind.split("|")) == 2


@pytest.mark.parametrize("cores, expected", [(2, [{0}, {1}]), (4, [{0, 1}, {2, 3}]), (5, [{0, 1}, {2, 3}])])
def test_server_env_bind_groups(monkeypatch, cores, expected):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=cores))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)))
    bind = EngineConfig(device="cpu", tensor_parallel_size=2).server_env()["VLLM_CPU_OMP_THREADS_BIND"]
    assert [_cpu_ids(group) for group in bind.split("|")] == expected


def test_server_env_keeps_users_binding(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0|1")
    assert "VLLM_CPU_OMP_THREADS_BIND" not in EngineConfig(device="cpu", tensor_parallel_size=2).server_env()


def test_server_env_no_binding_on_cuda(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in EngineConfig(device="cuda", tensor_parallel_size=2).server_env()


def test_server_env_binds_only_allowed_cpus(monkeypatch):
    allowed = {4, 5, 6, 7}
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=len(allowed)))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(allowed))
    bind = EngineConfig(device="cpu", tensor_parallel_size=2).server_env()["VLLM_CPU_OMP_THREADS_BIND"]
    assert _cpu_ids(bind) <= allowed


def test_prefill_cap_longer_than_a_sequence_is_refused():
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", long_prefill_token_threshold=4096, max_model_len=2048)
    assert err.value.setting == "long_prefill_token_threshold"
    assert EngineConfig(device="cpu", long_prefill_token_threshold=0) == EngineConfig(device="cpu")  # 0 is vLLM's off
    assert EngineConfig(device="cpu", long_prefill_token_threshold=256).label() == "prefill cap=256"
