"""The engine's process layout: vLLM's own unless asked, recorded in every row and key."""
import pytest

from helpers import EngineConfig, Load
from helpers.config import ConfigError
from helpers.engine.server import LAYOUTS, layout_for
from helpers.experiment import base_row


def test_default_is_vllms_layout(monkeypatch):
    monkeypatch.delenv("GUIDE_ENGINE_LAYOUT", raising=False)
    assert layout_for(EngineConfig()) == "vllm"
    assert LAYOUTS["vllm"] == ({}, [])


def test_merged_is_opt_in_and_only_for_one_cpu_rank(monkeypatch):
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "merged")
    assert layout_for(EngineConfig()) == "merged"
    assert layout_for(EngineConfig(tensor_parallel_size=2)) == "vllm"
    env, args = LAYOUTS["merged"]
    assert env == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"} and args == ["--distributed-executor-backend", "uni"]


def test_unknown_layout_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "fast")
    with pytest.raises(ConfigError, match="GUIDE_ENGINE_LAYOUT"):
        layout_for(EngineConfig())


def test_layout_is_recorded_and_keeps_rows_apart(monkeypatch):
    load = Load(num_prompts=4)
    monkeypatch.delenv("GUIDE_ENGINE_LAYOUT", raising=False)
    default = base_row(EngineConfig(), load, "t", "load")
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "merged")
    merged = base_row(EngineConfig(), load, "t", "load")
    assert (default["engine_layout"], merged["engine_layout"]) == ("vllm", "merged")
    assert default["key"] != merged["key"]


def test_repeats_are_part_of_the_key():
    load = Load(num_prompts=4)
    assert (base_row(EngineConfig(), load, "t", "load", 1)["key"]
            != base_row(EngineConfig(), load, "t", "load", 3)["key"])
