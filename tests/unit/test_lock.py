"""The one-engine lock: a clear refusal while an engine runs, patience while a dead one's last child closes."""
import json
import subprocess
import time

import pytest

from helpers.engine import lock as lock_mod
from helpers.engine.lock import EngineBusyError, EngineLock


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _hold(path, seconds: float, info: dict) -> subprocess.Popen:
    """Another process holding the lock (util-linux flock uses flock(2), as the harness does)."""
    proc = subprocess.Popen(["flock", str(path), "sleep", str(seconds)])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until it really holds it
        try:
            EngineLock(path).acquire("probe", wait_s=0).release()
            time.sleep(0.05)
        except EngineBusyError:
            path.write_text(json.dumps(info))  # what the harness records about the holder
            return proc
    raise AssertionError("the holder never took the lock")


def test_a_running_engine_is_refused_with_who_holds_the_lock(tmp_path, monkeypatch):
    path = tmp_path / "engine.lock"
    holder = _hold(path, 30, {"pid": subprocess.os.getpid(), "what": "guide default", "since": "09:00:00"})
    monkeypatch.setattr(lock_mod, "SHUTDOWN_GRACE_S", 0.5)
    try:
        with pytest.raises(EngineBusyError, match=r"guide default.*Processes holding it now: \d+ \(flock .*\(sleep"):
            EngineLock(path).acquire("second", wait_s=0)
    finally:
        holder.kill()


def test_an_exited_engine_s_last_child_is_waited_for(tmp_path):
    path = tmp_path / "engine.lock"
    holder = _hold(path, 2, {"pid": _dead_pid(), "server_pid": _dead_pid(), "what": "guide default"})
    got = EngineLock(path).acquire("next", wait_s=0)  # within the grace period, not an error
    try:
        assert got.fd is not None
        assert json.loads(path.read_text())["what"] == "next"  # the lock now names its new holder
        assert holder.poll() is not None  # the old holder had let go (its sleep ended), not been overtaken
    finally:
        got.release()
        holder.wait()


def test_a_stopped_group_has_no_live_process_left():
    """`guide.sh stop` says "stopped" only once the engine core and workers are gone too (CI once
    found a VLLM::Worker alive just after the leader exited)."""
    from helpers.engine.server import _end_group
    leader = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 60 & sleep 60 & wait"], start_new_session=True)
    deadline = time.monotonic() + 5
    while len(lock_mod.group_alive(leader.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(lock_mod.group_alive(leader.pid)) == 3  # the leader and its two children
    _end_group(leader.pid)
    assert lock_mod.group_alive(leader.pid) == []
    leader.wait(timeout=5)
