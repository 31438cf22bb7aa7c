import time

import pytest

from tests.conftest import ray_processes, vllm_processes


@pytest.fixture(autouse=True)
def no_engine_left_behind():
    """After every real-engine test, no vLLM or Ray process may remain."""
    yield
    from helpers import experiment
    experiment.stop()
    deadline = time.monotonic() + 30
    while (vllm_processes() or ray_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes(), f"vLLM processes left behind: {vllm_processes()}"
    assert not ray_processes(), f"Ray processes left behind: {ray_processes()}"
