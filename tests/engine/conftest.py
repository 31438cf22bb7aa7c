import time

import pytest

from tests.conftest import ray_processes, vllm_processes


@pytest.fixture(autouse=True, scope="package")
def no_engine_left_behind():
    """The engine tests share the machine's engine (as notebooks do). After the last of them, the
    only vLLM processes left are the shared engine's, which the notebooks may take over
    (test_remote_engine, last, leaves the guide default running; the run stops it at its end),
    and no Ray process is left."""
    yield
    from helpers.engine import shared
    rec = shared.live_record()
    deadline = time.monotonic() + 30
    while (_strays(rec) or ray_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _strays(rec), f"vLLM processes left behind: {_strays(rec)}"
    assert not ray_processes(), f"Ray processes left behind: {ray_processes()}"


def _strays(rec) -> list[str]:
    """vLLM processes outside the shared engine's process group."""
    import os
    group = rec["server_pid"] if rec else None
    out = []
    for line in vllm_processes():
        pid = int(line.split(":", 1)[0])
        try:
            if group is not None and os.getpgid(pid) == group:
                continue
        except OSError:
            continue
        out.append(line)
    return out


@pytest.fixture
def no_new_process():
    """For a test whose point is that nothing starts: the processes before it are all there are after."""
    before = set(vllm_processes()) | set(ray_processes())
    yield
    after = set(vllm_processes()) | set(ray_processes())
    assert after <= before, f"started: {sorted(after - before)}"
