"""Entry point of every server process the harness starts.

It runs vLLM's OpenAI-compatible server unchanged, plus one guard thread: when the process
that started it (a notebook kernel, a test) goes away for any reason, the guard takes the
whole process group down with it. That is what keeps a crashed or restarted kernel from
leaving a vLLM server behind.

It is started by path (`python .../helpers/engine/_launch.py ARGS`) and imports only the
standard library, so a server process loads nothing of the guide's package.
"""
import os
import runpy
import signal
import sys
import threading
import time


def _guard(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os.killpg(0, signal.SIGTERM)
    time.sleep(15)
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # this folder's modules (server.py, lock.py, ...) must not shadow others
    parent = int(os.environ.get("GUIDE_PARENT_PID", os.getppid()))
    threading.Thread(target=_guard, args=(parent,), daemon=True).start()
    sys.argv = ["vllm.entrypoints.openai.api_server", *sys.argv[1:]]
    runpy.run_module("vllm.entrypoints.openai.api_server", run_name="__main__", alter_sys=True)
