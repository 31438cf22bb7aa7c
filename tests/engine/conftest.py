import time

import pytest

from tests.conftest import ray_processes, vllm_processes


@pytest.fixture(autouse=True, scope="package")
def no_engine_left_behind():
    """The engine tests share the machine's engine (as notebooks do); after the last of them,
    stopping it leaves no vLLM or Ray process."""
    yield
    from helpers.engine import shared
    shared.stop_engine("the engine tests ended")
    deadline = time.monotonic() + 30
    while (vllm_processes() or ray_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes(), f"vLLM processes left behind: {vllm_processes()}"
    assert not ray_processes(), f"Ray processes left behind: {ray_processes()}"


@pytest.fixture
def no_new_process():
    """For a test whose point is that nothing starts: the processes before it are all there are after."""
    before = set(vllm_processes()) | set(ray_processes())
    yield
    after = set(vllm_processes()) | set(ray_processes())
    assert after <= before, f"started: {sorted(after - before)}"
