"""Entry point of every server process the harness starts.

It runs vLLM's OpenAI-compatible server unchanged, plus one guard thread. The engine is shared
between the processes on this machine (helpers/engine/shared.py): its record lists every
process that used it. Once none of them has been alive for GUIDE_ENGINE_GRACE seconds (60),
the guard takes the whole process group down. That is what keeps crashed, restarted or
SIGKILLed kernels from leaving a vLLM server behind, while the next notebook can still take
over an idle engine.

It is started by path (`python .../helpers/engine/_launch.py ARGS`) and imports only the
standard library, so a server process loads nothing of the guide's package.
"""
import fcntl
import json
import os
import runpy
import signal
import sys
import threading
import time


def _alive(pid: int, start: int | None = None) -> bool:
    """A running process (not a zombie) that is still the one recorded (same start time)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X") and (not start or int(fields[19]) == start)


def _read(record_path: str) -> dict:
    try:
        return json.loads(open(record_path).read() or "{}")
    except (OSError, ValueError):
        return {}


def _users(record_path: str, parent: int) -> tuple[list, bool]:
    """([[pid, start time], ...] of the processes that used this engine, whether it is shared).
    Until the record names this server (it is written once the server is healthy), and for a
    server a process started for itself, the one user is the parent."""
    record = _read(record_path)
    if record.get("server_pid") == os.getpid():
        return record.get("users", []), True
    return [[parent, 0]], False


def _guard(parent: int, record_path: str, turn_path: str, grace: float) -> None:
    idle_since = None
    while True:
        time.sleep(1.0)
        users, shared = _users(record_path, parent)
        if any(_alive(pid, start) for pid, start in users):
            idle_since = None
            continue
        idle_since = idle_since or time.monotonic()
        if shared and time.monotonic() - idle_since < grace:
            continue
        if shared:
            try:  # nobody starts, stops or loads the engine while it ends
                fd = os.open(turn_path, os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
        record = _read(record_path)
        if record.get("server_pid") == os.getpid():
            ended = {"label": record.get("label"), "server_pid": os.getpid(), "by": "the engine's guard",
                     "why": f"no process had used it for {grace:.0f} s", "at": time.time()}
            tmp = f"{record_path}.tmp{os.getpid()}"
            earlier = [*(record.get("ended_before") or [])][-9:]
            with open(tmp, "w") as f:
                f.write(json.dumps({"ended": ended, "ended_before": earlier}))
            os.replace(tmp, record_path)
        os.killpg(0, signal.SIGTERM)
        time.sleep(15)
        os.killpg(0, signal.SIGKILL)


def serve(argv: list[str]) -> None:
    """Run vLLM's API server with `argv`, under the guard (also called in a forked child, tests/run/_zygote.py)."""
    parent = int(os.environ.get("GUIDE_PARENT_PID", os.getppid()))
    record = os.environ.get("GUIDE_ENGINE_RECORD", "/nonexistent")
    turn = os.environ.get("GUIDE_ENGINE_TURN", "/tmp/vllm-guide-engine.turn")
    grace = float(os.environ.get("GUIDE_ENGINE_GRACE", 60))
    threading.Thread(target=_guard, args=(parent, record, turn, grace), daemon=True).start()
    sys.argv = ["vllm.entrypoints.openai.api_server", *argv]
    runpy.run_module("vllm.entrypoints.openai.api_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # this folder's modules (server.py, lock.py, ...) must not shadow others
    serve(sys.argv[1:])
