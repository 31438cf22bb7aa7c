"""The notebooks' CUDA branches, walked through validation and preflight on a pretend CUDA machine.

Nothing here starts an engine or touches a GPU: GUIDE_DEVICE=cuda and GUIDE_GPUS make `hardware`
report one, the way GUIDE_CPU_ISA pretends to be another CPU. What this catches is a GPU step
that can never run (a TP size the model's heads refuse) or a setting that quietly lowers a
GPU default (a "higher" memory fraction below 0.90). It cannot catch what only a GPU shows.
"""
import pytest

from helpers import hardware
from helpers.chapters import ch3, ch6a
from helpers.config import ConfigError, EngineConfig
from helpers.engine import preflight
from helpers.results import fingerprint


@pytest.fixture
def gpus(monkeypatch):
    """Pretend to be a CUDA machine with `n` GPUs."""
    def use(n: int) -> EngineConfig:
        monkeypatch.setenv("GUIDE_DEVICE", "cuda")
        monkeypatch.setenv("GUIDE_GPUS", ",".join(["NVIDIA H100 80GB HBM3"] * n))
        _clear()
        base = EngineConfig()
        assert base.device == "cuda" and hardware.describe()["gpu_count"] == n
        return base
    yield use
    monkeypatch.delenv("GUIDE_GPUS", raising=False)
    monkeypatch.delenv("GUIDE_DEVICE", raising=False)
    _clear()


def _clear():
    hardware.describe.cache_clear()
    hardware._gpus.cache_clear()
    fingerprint.cache_clear()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_chapter6_path_runs_on_a_gpu_and_lowers_no_default(gpus, n):
    base = gpus(n)
    steps = ch6a.tuning_steps(base, seats=8, engine_max_num_seqs=1024, longest_prompt=600, full=True, gpu_count=n)
    names = [s.name for s in steps]
    assert "CUDA graphs" in names
    assert any("GPUs" in name for name in names) == (n >= 2)  # a parallel step whenever there are two GPUs
    for step in steps:
        config = base.replace(**step.change)
        preflight.check(config)  # every step can start here: none is skipped for good
        assert config.memory_fraction >= base.memory_fraction, f"{step.name} lowers the GPU's memory fraction"
    if n == 3:
        assert {"tensor_parallel_size": 3} in [s.change for s in steps]  # 9 heads: 3 ranks, not 2


def test_chapter6_high_fraction_is_higher_on_a_gpu(gpus):
    base = gpus(1)
    assert base.more_memory(0.5) > base.memory_fraction == 0.9
    preflight.check(base.replace(gpu_memory_utilization=base.more_memory(0.5)))


def test_tp2_on_the_embedded_model_would_never_run(gpus):
    """What the old chapter 6 step did: refused by preflight on every machine."""
    base = gpus(2)
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        preflight.check(base.replace(tensor_parallel_size=2))


@pytest.mark.parametrize("block", [16, 128])
def test_chapter3_shrunken_cache_admits_only_part_of_the_flood(gpus, block):
    design = ch3.shrunken_cache(gpus(1), block)
    preflight.check(design.config)
    assert design.admitted < design.flood.num_prompts  # some requests must wait, at either block size
    assert design.config.max_model_len >= design.flood.input_len + design.flood.output_len


def test_chapter4_and_5_gpu_settings_pass(gpus):
    base = gpus(2)
    compiled = base.replace(enforce_eager=False)
    for mode in ("PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"):
        preflight.check(compiled.replace(compilation_config={"cudagraph_mode": mode}))
    synthetic = base.replace(model="synthetic-tp")
    for change in ({"tensor_parallel_size": 2}, {"pipeline_parallel_size": 2}, {"data_parallel_size": 2}):
        preflight.check(synthetic.replace(**change))
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        preflight.check(synthetic.replace(tensor_parallel_size=4))  # only two GPUs here


def test_int8_per_token_head_kv_is_refused_on_cpu_only(gpus):
    why = EngineConfig(device="cpu", kv_cache_dtype="int8_per_token_head").cannot_run_here()
    assert why is not None and why.setting == "kv_cache_dtype" and "Triton" in str(why)
    preflight.check(gpus(1).replace(kv_cache_dtype="int8_per_token_head"))

