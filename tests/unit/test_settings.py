"""The settings table: every setting reaches the server and is read back, vLLM's declared CPU
defaults match a real CPU server, and a spelled-out default is the same config as None."""
import dataclasses
import json
from pathlib import Path

import pytest

from helpers import charts
from helpers.config import BY_NAME, SETTINGS, ConfigError, EngineConfig
from helpers.engine.reported import resolved_values
from helpers.settings import dig

DATA = Path(__file__).resolve().parents[1] / "data"
MODEL_PATH = "/models/m"

# A value other than the guide's default for every setting (a new setting needs one here).
NON_DEFAULT = {
    "model": "someone/some-model", "max_model_len": 1024, "gpu_memory_utilization": 0.4, "block_size": 64,
    "max_num_seqs": 8, "max_num_batched_tokens": 1024, "enable_chunked_prefill": False,
    "long_prefill_token_threshold": 256, "max_num_queued_reqs": 16,
    "enable_prefix_caching": False, "num_gpu_blocks_override": 100, "enforce_eager": False,
    "compilation_config": {"mode": 3}, "kv_cache_memory_bytes": 2**26, "kv_cache_dtype": "fp8", "dtype": "float16",
    "quantization": "awq", "tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2,
    "distributed_executor_backend": "ray", "cpu_offload_gb": 1.5, "enable_log_requests": True, "log_level": "debug",
    "seed": 7, "cpu_threads_bind": "0-1", "cpu_reserved_cores": 0,
}
# A value of the wrong kind for each kind.
WRONG_KIND = {int: "8", float: "0.5", bool: "yes", str: 5, dict: "mode=3"}


@pytest.fixture(scope="module")
def server_info() -> dict:
    return json.loads((DATA / "server_info_cpu.json").read_text())["vllm_config"]


def _recorded_config() -> EngineConfig:
    """The config tests/data/server_info_cpu.json was recorded with: eager, fraction 0.25,
    everything else left to vLLM."""
    return EngineConfig(device="cpu", enforce_eager=True, gpu_memory_utilization=0.25)


def _sent(cfg: EngineConfig, name: str):
    """The value the harness sends for a setting (model: the resolved path; fraction: the guide's)."""
    return {"model": MODEL_PATH, "gpu_memory_utilization": cfg.memory_fraction}.get(name, getattr(cfg, name))


def _contains(args: list[str], words: list[str]) -> bool:
    return any(args[i:i + len(words)] == words for i in range(len(args)))


# -- each field declares its setting ----------------------------------------------------------

def test_every_field_but_the_device_declares_its_setting():
    fields = [f.name for f in dataclasses.fields(EngineConfig) if f.name != "device"]
    assert fields == [s.name for s in SETTINGS]
    assert set(NON_DEFAULT) == set(BY_NAME), "give a new setting a non-default value in NON_DEFAULT"


def test_kind_none_ness_and_default_come_from_the_field():
    assert (BY_NAME["max_num_seqs"].kind, BY_NAME["max_num_seqs"].nullable) == (int, True)
    assert (BY_NAME["enforce_eager"].kind, BY_NAME["enforce_eager"].nullable) == (bool, False)
    assert (BY_NAME["compilation_config"].kind, BY_NAME["model"].default) == (dict, "embedded")
    for s in SETTINGS:
        assert getattr(EngineConfig(device="cuda"), s.name) == s.default or s.name == "dtype", s.name


def test_panel_values_are_each_acceptable_and_name_their_chapter():
    for s in SETTINGS:
        assert bool(s.panel) == (s.chapter is not None), f"{s.name}: a panel value needs the chapter that teaches it"
        for v in s.panel:
            assert s.problem(v) is None, (s.name, v)


def test_runs_here_drops_what_this_machine_refuses(monkeypatch):
    from helpers import hardware
    base = EngineConfig(device="cpu")
    monkeypatch.setattr(hardware, "has_avx512", lambda: False)
    assert base.runs_here("kv_cache_dtype") == ["auto"]
    why = base.refusals("kv_cache_dtype")["fp8"]
    assert isinstance(why, ConfigError) and why.setting == "kv_cache_dtype" and "AVX-512" in str(why)
    monkeypatch.setattr(hardware, "has_avx512", lambda: True)
    assert base.runs_here("kv_cache_dtype") == ["auto", "fp8", "fp8_e5m2"]
    assert base.runs_here("kv_cache_dtype", ["fp8"]) == ["fp8"]


def test_runs_here_names_a_value_the_other_settings_rule_out():
    base = EngineConfig(device="cpu", max_num_seqs=16, max_num_batched_tokens=64)
    assert base.runs_here("max_num_seqs") == [1, 2, 4, 8, 16, 32, 64]  # not 128 or 256 seats on a budget of 64
    assert base.refusals("max_num_seqs", [128])[128].setting == "max_num_batched_tokens"


def test_non_default_values_are_not_the_defaults():
    guide, cpu = EngineConfig(device="cuda"), EngineConfig(device="cpu")
    for name, value in NON_DEFAULT.items():
        assert getattr(guide, name) != value and cpu.as_dict()[name] != value, name


def test_every_setting_travels_somehow():
    for s in SETTINGS:
        assert (s.flag is None) != (s.env is None), f"{s.name}: exactly one of flag / env"
        assert s.flag is None or s.flag == "--" + s.name.replace("_", "-"), s.name  # vLLM's spelling
        assert s.kind in (int, float, bool, str, dict) and s.fix and set(s.devices) <= {"cpu", "cuda"}


# -- every setting reaches the server ---------------------------------------------------------

@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_every_setting_reaches_the_command_line_or_environment(device, monkeypatch):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0|1")  # keep the TP binding out of the way
    values = {k: v for k, v in NON_DEFAULT.items() if device in BY_NAME[k].devices}
    cfg = EngineConfig(device=device, **values)
    args, env = cfg.server_args(MODEL_PATH, 8000), cfg.server_env()
    for name in values:
        s, value = BY_NAME[name], _sent(cfg, name)
        if s.flag:
            assert s.flags(value) and _contains(args, s.flags(value)), (name, s.flags(value), args)
        else:
            assert env[s.env] == str(value), name
    for name in set(NON_DEFAULT) - set(values):  # settings that do not apply here are not sent
        assert BY_NAME[name].flag not in args


def test_a_setting_for_another_device_is_refused_before_start():
    problem = EngineConfig(device="cpu", cpu_offload_gb=1.5).cannot_run_here()
    assert problem is not None and problem.setting == "cpu_offload_gb" and "cuda" in problem.problem
    assert "cpu_offload_gb=0.0" in problem.fix
    assert EngineConfig(device="cuda", cpu_offload_gb=1.5).cannot_run_here() is None


def test_flag_rule():
    s = BY_NAME["enable_prefix_caching"]
    assert s.flags(None) == [] and s.flags(True) == ["--enable-prefix-caching"]
    assert s.flags(False) == ["--no-enable-prefix-caching"]
    assert BY_NAME["compilation_config"].flags({"mode": 3}) == ["--compilation-config", '{"mode": 3}']
    assert BY_NAME["max_num_seqs"].flags(4) == ["--max-num-seqs", "4"]


def test_vllms_own_parser_accepts_the_command_line():
    """Every flag exists in vLLM's api_server parser, --no-x works for each bool, and the
    parsed values are ours (the --no-enforce-eager case included)."""
    cli_args = pytest.importorskip("vllm.entrypoints.launchers.cli_args")
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = cli_args.make_arg_parser(FlexibleArgumentParser())
    for cfg in (EngineConfig(device="cuda", **NON_DEFAULT), EngineConfig(device="cuda"),
                EngineConfig(device="cuda", enable_chunked_prefill=True, enable_prefix_caching=True)):
        parsed = parser.parse_args(cfg.server_args(MODEL_PATH, 8000))
        for s in SETTINGS:
            got, want = getattr(parsed, s.name, None), _sent(cfg, s.name)
            if not s.flag or want is None:  # not sent: vLLM's own default
                continue
            if isinstance(want, dict):
                for key, v in want.items():
                    got_v = got[key] if isinstance(got, dict) else getattr(got, key)
                    assert got_v == v, (s.name, key)
            else:
                assert got == want, (s.name, got, want)


# -- every setting with a resolved path is read back ------------------------------------------

def test_every_resolved_path_exists_in_the_recorded_server_info(server_info):
    for s in SETTINGS:
        if s.resolved is None:
            continue
        node = server_info
        for key in s.resolved:
            assert isinstance(node, dict) and key in node, f"{s.name}: {s.resolved} not in /server_info"
            node = node[key]
    assert set(resolved_values(server_info)) == {s.name for s in SETTINGS if s.resolved}


def test_declared_cpu_defaults_match_a_real_cpu_server(server_info):
    cfg, resolved = _recorded_config(), resolved_values(server_info)
    declared = [s for s in SETTINGS if s.cpu_default is not None]
    assert {s.name for s in declared} >= {"block_size", "max_num_seqs", "max_num_batched_tokens",
                                          "enable_chunked_prefill", "enable_prefix_caching"}
    for s in declared:
        assert resolved[s.name] == s.default_for(cfg), s.name


def test_resolved_values_are_what_the_recorded_config_asked_for(server_info):
    asked, resolved = _recorded_config().as_dict(), resolved_values(server_info)
    for name, value in resolved.items():
        if name == "dtype":
            assert value == "torch.bfloat16"  # the engine's spelling; the machine's pick varies
        else:
            assert value == asked[name], name


def test_dig():
    assert dig({"a": {"b": 1}}, ("a", "b")) == 1
    assert dig({"a": {}}, ("a", "b")) is None and dig({"a": 3}, ("a", "b")) is None


# -- checks generated from the table ----------------------------------------------------------

@pytest.mark.parametrize("name", [s.name for s in SETTINGS])
def test_wrong_kind_names_the_setting(name):
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", **{name: WRONG_KIND[BY_NAME[name].kind]})
    assert err.value.setting == name and err.value.fix


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if not s.nullable])
def test_none_for_a_required_setting(name):
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", **{name: None})
    assert err.value.setting == name and "needs a value" in err.value.problem


def test_range_messages():
    with pytest.raises(ConfigError, match=r"must be in \(0, 1\], got 1.5"):
        EngineConfig(device="cpu", gpu_memory_utilization=1.5)
    with pytest.raises(ConfigError, match="must be at least 16, got 8"):
        EngineConfig(device="cpu", max_model_len=8)


def test_a_budget_below_the_default_seats_lowers_them_as_vllm_does():
    # EngineArgs lowers an unset max_num_seqs to the budget; it refuses only a cap set above the budget.
    assert EngineConfig(device="cpu", max_num_batched_tokens=64).effective("max_num_seqs") == 64
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", max_num_batched_tokens=64, max_num_seqs=128)
    assert err.value.setting == "max_num_batched_tokens" and "max_num_seqs (128)" in err.value.problem
    with pytest.raises(ConfigError) as err:
        EngineConfig(device="cpu", max_num_seqs=4096)
    assert "vLLM's default here, 2048" in err.value.problem
    EngineConfig(device="cuda", max_num_batched_tokens=64)  # no GPU default declared: vLLM decides


# -- labels and chart titles ------------------------------------------------------------------

def test_short_names_and_titles_come_from_the_table():
    assert BY_NAME["max_num_batched_tokens"].label == "budget"
    assert BY_NAME["enable_prefix_caching"].label == "prefix cache"
    assert EngineConfig(device="cpu", max_num_batched_tokens=512).label() == "budget=512"
    assert charts.title("cfg_max_num_batched_tokens") == "max_num_batched_tokens (tokens)"
    assert charts.title("cfg_gpu_memory_utilization") == "gpu_memory_utilization (fraction)"
    assert charts.title("cfg_max_num_seqs") == "max_num_seqs (sequences)"
    assert charts.title("cfg_block_size") == "block_size (tokens)"
    assert charts.title("engine_max_num_seqs") == "max_num_seqs, engine's value (sequences)"
    for s in SETTINGS:
        assert f"cfg_{s.name}" in charts.TITLES


# -- None means vLLM's default: one configuration, one spelling -------------------------------

def _same(a: EngineConfig, b: EngineConfig):
    assert a == b and hash(a) == hash(b)
    assert a.as_dict() == b.as_dict() and a.label() == b.label()


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.cpu_default is not None])
def test_spelled_out_cpu_default_is_the_default(name):
    plain = EngineConfig(device="cpu")
    spelled = EngineConfig(device="cpu", **{name: BY_NAME[name].default_for(plain)})
    _same(spelled, plain)
    assert getattr(spelled, name) is None
    assert spelled.label() == "guide default"
    assert spelled.server_args(MODEL_PATH, 1) == plain.server_args(MODEL_PATH, 1)


def test_spelled_out_defaults_all_at_once():
    spelled = EngineConfig(device="cpu", max_num_seqs=128, max_num_batched_tokens=2048, block_size=128,
                           enable_chunked_prefill=True, enable_prefix_caching=True, gpu_memory_utilization=0.25)
    _same(spelled, EngineConfig(device="cpu"))


def test_as_dict_writes_the_defaults_out():
    d = EngineConfig(device="cpu").as_dict()
    assert (d["max_num_seqs"], d["max_num_batched_tokens"], d["block_size"]) == (128, 2048, 128)
    assert d["enable_chunked_prefill"] is True and d["enable_prefix_caching"] is True
    assert d["gpu_memory_utilization"] == 0.25
    assert EngineConfig(device="cuda").as_dict()["max_num_seqs"] is None  # no GPU default declared


def test_guide_memory_fraction_spelled_out():
    _same(EngineConfig(device="cpu", gpu_memory_utilization=0.25), EngineConfig(device="cpu"))
    _same(EngineConfig(device="cuda", gpu_memory_utilization=0.90), EngineConfig(device="cuda"))
    assert EngineConfig(device="cpu", gpu_memory_utilization=0.25).memory_fraction == 0.25
    assert EngineConfig(device="cpu", gpu_memory_utilization=0.4).gpu_memory_utilization == 0.4


def test_gpu_keeps_spelled_values():
    assert EngineConfig(device="cuda", max_num_seqs=128).max_num_seqs == 128
    assert "--max-num-seqs" in EngineConfig(device="cuda", max_num_seqs=128).server_args(MODEL_PATH, 1)


def test_defaults_per_rank():
    tp2 = EngineConfig(device="cpu", tensor_parallel_size=2)
    assert (tp2.as_dict()["max_num_batched_tokens"], tp2.as_dict()["max_num_seqs"]) == (4096, 256)
    _same(EngineConfig(device="cpu", tensor_parallel_size=2, max_num_seqs=256, max_num_batched_tokens=4096), tp2)
    assert EngineConfig(device="cpu", max_num_seqs=256).max_num_seqs == 256  # not a default at tp=1
    assert tp2.label() == "tp=2"


def test_replace_recomputes_defaults():
    tp2 = EngineConfig(device="cpu", tensor_parallel_size=2, max_num_batched_tokens=4096)
    assert tp2.replace(tensor_parallel_size=1).as_dict()["max_num_batched_tokens"] == 2048


def test_budget_default_with_chunked_prefill_off():
    # vLLM's default budget is at least max_model_len when chunked prefill is off.
    off = EngineConfig(device="cpu", enable_chunked_prefill=False, max_model_len=4096)
    assert off.as_dict()["max_num_batched_tokens"] == 4096
    _same(EngineConfig(device="cpu", enable_chunked_prefill=False, max_model_len=4096,
                       max_num_batched_tokens=4096), off)
    assert EngineConfig(device="cpu", enable_chunked_prefill=False,
                        max_num_batched_tokens=2048).max_num_batched_tokens is None
