import time

import pytest

from tests.conftest import vllm_processes


@pytest.fixture(autouse=True)
def no_engine_left_behind():
    """After every real-engine test, no vLLM process may remain."""
    yield
    from helpers import experiment
    experiment.stop()
    deadline = time.monotonic() + 30
    while vllm_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes(), f"vLLM processes left behind: {vllm_processes()}"
