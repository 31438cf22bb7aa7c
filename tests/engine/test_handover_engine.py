"""The machine's one engine, handed between processes as between notebooks: kernels are child
processes here, driven line by line. The last test runs vLLM's own process layout end to end (a
start, a load, a row that records the layout); the others the test run's merged layout.
Directions and messages, never timings."""
import json
import os
import subprocess
import sys
import time

import pytest

from helpers.engine import shared
from tests.conftest import ROOT, vllm_processes
from tests.run import tempo

pytestmark = pytest.mark.engine

KERNEL = """import sys, json
import helpers as H
from helpers import EngineConfig, Load
from helpers.engine import shared
from tests.run import install
install()  # what the run's IPython startup file does in a notebook kernel
LOAD = Load(num_prompts=4, input_len=64, output_len=8, max_concurrency=2)
print("READY", flush=True)
for line in sys.stdin:
    try:
        exec(line)
    except Exception as e:
        print("ERR", type(e).__name__, str(e).replace(chr(10), " "), flush=True)
    print("DONE", flush=True)
"""


class Kernel:
    """A Python process that measures when told, like a notebook kernel left open."""

    def __init__(self, name: str, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-c", KERNEL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                                     env={**os.environ, **env, "GUIDE_NOTEBOOK": name})
        assert self.proc.stdout.readline().strip() == "READY"

    def run(self, line: str, wait: bool = True) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.output() if wait else ""

    def output(self) -> str:
        out = []
        for text in self.proc.stdout:
            if text.strip() == "DONE":
                break
            out.append(text)
        return "".join(out)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def kernels(results_dir, tmp_path):
    shared.stop_engine("a shared-engine test begins")  # each of these tests starts from no engine
    env = {"GUIDE_ENGINE_LAYOUT": "merged", "GUIDE_ENGINE_GRACE": "4", "GUIDE_TEMPO_LOG": str(tmp_path / "tempo.jsonl"),
           "GUIDE_RESULTS": str(results_dir)}
    made = []

    def make(name: str, **extra) -> Kernel:
        made.append(Kernel(name, {**env, **extra}))
        return made[-1]

    yield make
    for k in made:
        if k.proc.poll() is None:
            k.kill()
    shared.stop_engine("a shared-engine test ended", wait_for_load=False)
    own = tmp_path / "tempo.jsonl"
    if own.exists():  # this test's starts count in the run's tempo line too
        with open(tempo.log_path(), "a") as f:
            f.write(own.read_text())


def _starts(tmp_path) -> int:
    path = tmp_path / "tempo.jsonl"
    return sum(json.loads(x)["event"] == "start" for x in path.read_text().splitlines()) if path.exists() else 0


def test_two_notebooks_share_wait_for_and_leave_the_engine(kernels, tmp_path):
    """One afternoon of two notebooks, in one sequence (each step needs the engine the step before
    left, so separate tests would each start it again): an idle engine is reused, then replaced,
    then restarted; a load in flight is waited for and never cut off; killed kernels leave nothing
    once the grace has passed."""
    ch1, ch2 = kernels("01_first.ipynb"), kernels("02_second.ipynb", GUIDE_ENGINE_WAIT="4")
    out = ch1.run("r = H.measure(EngineConfig(), LOAD, progress=False); "
                  "print('ROW', r['engine_layout'], r['completed'])")
    assert "ROW merged 4" in out, out
    # Chapter 1's kernel stays open; chapter 2 asks for the same configuration: no start.
    out = ch2.run("r = H.measure(EngineConfig(), LOAD.repeat(1), progress=False); print('ROW', r['completed'])")
    assert "reusing the idle engine for guide default that 01_first.ipynb" in out and "ROW 4" in out, out
    assert _starts(tmp_path) == 1
    # Another configuration: the idle engine is stopped, with a line saying so.
    out = ch2.run("r = H.measure(EngineConfig(max_num_seqs=4), LOAD, progress=False); print('ROW', r['completed'])")
    assert "stopping the idle engine for guide default (started by 01_first.ipynb" in out and "ROW 4" in out, out
    # Chapter 1 measures again: told why its engine went, and given one again.
    out = ch1.run("r = H.measure(EngineConfig(), LOAD.repeat(2), progress=False); print('ROW', r['completed'])")
    assert "was stopped: replaced by 02_second.ipynb" in out and "gets an engine again" in out and "ROW 4" in out, out
    assert _starts(tmp_path) == 3

    # A load in flight: chapter 2 asks for another configuration, waits (GUIDE_ENGINE_WAIT=4 s), and is
    # refused with what to do; chapter 1's load finishes whole.
    long_load = "Load(num_prompts=8, input_len=256, output_len=96, max_concurrency=2)"
    ch1.run(f"r = H.measure(EngineConfig(), {long_load}, progress=False); print('ROW', r['completed'], r['failed'])",
            wait=False)
    time.sleep(2)  # the load is running
    out = ch2.run("H.measure(EngineConfig(max_num_seqs=4), LOAD.repeat(3), progress=False)")  # not stored yet
    assert "waiting for the engine: 01_first.ipynb" in out and "is running the load" in out, out
    assert "ERR EngineBusyError" in out and "GUIDE_ENGINE_WAIT" in out and "bash guide.sh stop" in out, out
    assert "ROW 8.0 0.0" in ch1.output(), "the running load finished whole"
    assert _starts(tmp_path) == 3

    # Killed kernels: the engine outlives one while the other uses it, and stops after the grace once
    # neither is left.
    assert "reusing" in ch2.run("H.engine_for(EngineConfig(), progress=False)")
    assert vllm_processes()
    ch1.kill()
    time.sleep(6)  # past the grace: the second kernel still uses it
    assert vllm_processes() and shared.live_record() is not None
    ch2.kill()  # SIGKILL: no atexit, no cleanup
    deadline = time.monotonic() + 4 + 40
    while vllm_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not vllm_processes()
    assert "no process had used it" in shared.read_record()["ended"]["why"]
    from helpers.engine.lock import EngineLock
    EngineLock().acquire("check", wait_s=60).release()


def test_vllms_own_layout_end_to_end_on_loopback_only_and_guide_sh_stop_stops_it_at_once(kernels):
    # GUIDE_ZYGOTE=0: a learner's start, as `vllm serve` would be run (the rest of the run forks vLLM's layout too).
    k = kernels("open.ipynb", GUIDE_ENGINE_GRACE="600", GUIDE_ENGINE_LAYOUT="vllm", GUIDE_ZYGOTE="0")
    out = k.run("r = H.measure(EngineConfig(), LOAD, progress=False); "
                "s = H.engine_for(EngineConfig(), progress=False); "
                "print('ROW', r['engine_layout'], r['completed'], 'PIDS', s.pid)")
    assert "ROW vllm 4" in out, out  # vLLM's own three-process layout: a start, a load, a row
    pid = int(out.split("PIDS", 1)[1].split()[0])
    group = [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == pid]
    inodes = set()
    for p in group:
        for fd in os.listdir(f"/proc/{p}/fd"):
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(table).read().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                listening.append(cols[1])
    assert listening, "the engine listens somewhere"
    loopback = ("0100007F:", "00000000000000000000000001000000:", "0000000000000000FFFF00000100007F:")
    assert all(addr.startswith(loopback) for addr in listening), listening
    out = subprocess.run(["bash", "guide.sh", "stop"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "stopped the guide's engine" in out.stdout, out.stdout + out.stderr
    assert not vllm_processes() and k.proc.poll() is None, "the engine stopped; the kernel lives on"


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
