"""Starting, watching and stopping one vLLM OpenAI-compatible server.

The notebook kernel never hosts an engine: each config runs in its own server process (its
own process group, on a free 127.0.0.1 port, logging to a file). A failed start raises an
error carrying the engine's own reason; a stopped cell, a restarted kernel or a crash
leaves nothing running (context manager, atexit, process-group kill, and a guard thread
inside the server that exits when its parent does).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from helpers import models
from helpers.config import ConfigError, EngineConfig
from helpers.engine import preflight, ray_local, startup_log
from helpers.engine.lock import EngineLock, alive, group_alive
from helpers.engine.progress import StartProgress
from helpers.i18n import tr

START_TIMEOUT_S = float(os.environ.get("GUIDE_START_TIMEOUT", 900))

# How a server's processes are laid out. vLLM's own layout on the CPU is three processes (API
# server, engine core, one worker), each importing torch and vLLM again. "merged" sets
# VLLM_ENABLE_V1_MULTIPROCESSING=0, which the CPU platform reads as "run the one worker inside
# the engine-core process" (uni executor; vllm/platforms/cpu.py); the API server keeps its
# engine core in a process of its own (AsyncLLM always does). benchmarks/engine_start.py found
# it starts in about 0.7x the time; on 2 cores it also runs loads at a different speed (faster in
# that benchmark, slower in some of chapter 7's rows: one busy process fewer, but unpinned threads),
# so it changes what a learner measures: measurements keep vLLM's layout.
# GUIDE_ENGINE_LAYOUT=merged opts in; every row records the layout and its store key includes it.
LAYOUTS = {"vllm": ({}, []),
           "merged": ({"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}, ["--distributed-executor-backend", "uni"])}
_LIVE: set["Server"] = set()


class EngineStartError(RuntimeError):
    """The engine did not start. Carries its own error line, the setting to look at, the log, and the
    parts its message is made of (`parts`: stored with a refusal, so a read-back one is worded again in
    the learner's language: `start_error_text`)."""

    def __init__(self, message: str, engine_line: str | None, setting: str | None, log_path: Path,
                 parts: dict | None = None):
        self.engine_line, self.setting, self.log_path, self.parts = engine_line, setting, log_path, parts or {}
        super().__init__(message)


def start_error_text(parts: dict, line: str | None, setting: str | None, value, log_path) -> str:
    """An engine's refusal in the learner's language: why it did not start (it exited, with its code, or it
    never became healthy), vLLM's own line (as it printed it), the setting to look at and what to try."""
    if parts.get("stage") is not None:
        what = tr("it was not healthy after {seconds:.0f} s (last stage: {stage})", seconds=parts["seconds"],
                  stage=parts["stage"])
    else:
        what = tr("the server exited with code {code}", code=parts.get("code") if parts.get("code") is not None
                  else tr("unknown (forked)"))
    fix = tr(parts.get("fix") or "read the log for the first error.")
    msg = [tr("vLLM did not start: {what}.", what=what)]
    if line:
        msg.append(tr("Engine said: {line}", line=line))
    if setting:
        msg.append(tr("Setting to look at: {setting} = {getattr}. Try: {fix}", setting=setting, getattr=value,
                      fix=fix))
    else:
        msg.append(tr("Try: {fix}", fix=fix))
    msg.append(tr("Full log: {log_path}", log_path=log_path))
    return "\n".join(msg)


def layout_for(config: EngineConfig) -> str:
    """The process layout the harness uses for this config (see LAYOUTS)."""
    forced = os.environ.get("GUIDE_ENGINE_LAYOUT")
    if forced:
        if forced not in LAYOUTS:
            raise ConfigError("GUIDE_ENGINE_LAYOUT", tr("{forced!r} is not one of {sorted}.", forced=forced,
                                                        sorted=sorted(LAYOUTS)),
                              tr("unset it (the harness picks), or GUIDE_ENGINE_LAYOUT=vllm."))
        # More than one rank needs worker processes (and an executor of the user's choice
        # wins over "uni"); the merged layout is for the CPU backend.
        one_rank = config.ranks * config.data_parallel_size == 1
        merged_ok = one_rank and config.distributed_executor_backend is None and config.device == "cpu"
        # vLLM binds the CPU worker's threads only in its multiprocess executor (OMPProcessManager).
        merged_ok = merged_ok and config.cpu_threads_bind is None and config.cpu_reserved_cores is None
        # The synthetic model is where one rank is set against two (notebook 05, lab 3): both
        # sides keep vLLM's layout so that comparison stays fair.
        synthetic = str(config.model).startswith("synthetic")
        return forced if merged_ok and not synthetic else "vllm"
    return "vllm"


@contextlib.contextmanager
def process_layout(name: str):
    """Start (and key) engines in layout `name` inside the block, whatever GUIDE_ENGINE_LAYOUT
    says outside it: chapter 7 measures the same configuration in both layouts. A config that
    the merged layout cannot run (several ranks, a thread binding) still gets vLLM's."""
    if name not in LAYOUTS:
        raise ConfigError(
            "layout",
            tr("{name!r} is not one of {sorted}.", name=name, sorted=sorted(LAYOUTS)),
            "layout 'vllm' or 'merged'.",
        )
    before = os.environ.get("GUIDE_ENGINE_LAYOUT")
    os.environ["GUIDE_ENGINE_LAYOUT"] = name
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("GUIDE_ENGINE_LAYOUT", None)
        else:
            os.environ["GUIDE_ENGINE_LAYOUT"] = before


def server_environment(config: EngineConfig, layout: str, lock_file: Path) -> dict[str, str]:
    """The whole environment a server process for `config` gets."""
    return {
        **os.environ,
        **config.server_env(),
        **LAYOUTS[layout][0],
        "GUIDE_PARENT_PID": str(os.getpid()),
        # what the guard inside the server watches (helpers/engine/shared.py)
        "GUIDE_ENGINE_RECORD": str(lock_file.with_suffix(".json")),
        "GUIDE_ENGINE_TURN": str(lock_file.with_suffix(".turn")),
    }


# What a server inherits from the process that starts it and would behave differently under: an API
# key, a logging level (read at import), thread counts, offline mode. Not what vLLM's own import or
# config code writes into the environment of any process that imports it (torch's and triton's
# settings, LD_PRELOAD, the worker start method): those differ between a kernel that has run a load
# (and so imported vLLM's benchmark client) and one that has not, for the same server. Nor what is
# read only when a server starts: the layout (`CpuPlatform.check_and_update_config`, `LLMEngine`) and
# the thread binding (`OMPProcessManager` in vllm/utils/ompmultiprocessing.py).
_SERVER_READS = (
    "VLLM_",
    "HF_",
    "OMP_",
    "KMP_",
    "MKL_",
    "OPENAI_",
    "CUDA_VISIBLE_DEVICES",
    "TOKENIZERS_",
    "DO_NOT_TRACK",
)
_VLLM_WRITES = {"VLLM_WORKER_MULTIPROC_METHOD", "VLLM_DISABLE_SHARED_EXPERTS_STREAM", "VLLM_SSM_CONV_STATE_LAYOUT"}
_READ_AT_START = {"VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU"}


def server_reads(env) -> dict:
    """The part of an environment that makes one server differ from another (see _SERVER_READS)."""
    return {
        k: v
        for k, v in env.items()
        if k.startswith(_SERVER_READS) and k not in _VLLM_WRITES and k not in _READ_AT_START
    }


# Two seams a test run uses to go faster (tests/run/); a learner's process leaves both empty.
_START_PROCESS = None  # (argv, env, log_path, cwd, lock_fd, layout, ray) -> pid, or None: start it as usual
_BESIDE_START: list = []


def start_processes_with(start) -> None:
    """Start server processes with `start` instead of `python _launch.py` (None: as usual). The test
    run forks them from a process that imported vLLM once (tests/run/zygote.py): the same program,
    arguments and environment, minus an import."""
    global _START_PROCESS
    _START_PROCESS = start


def beside_next_start(work) -> None:
    """Run `work` in a thread while this process's next server starts: the process only waits then
    (for /health). The thread is joined before the start returns (after its time is taken), so
    nothing it imports races the caller's own imports."""
    if work not in _BESIDE_START:
        _BESIDE_START.append(work)


def log_dir() -> Path:
    path = models.cache_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class Server:
    """One running vLLM server for one `EngineConfig`. Use as a context manager."""

    def __init__(self, config: EngineConfig, port: int | None = None, progress=True):
        self.config = config
        self.requested_port = port
        self.port: int | None = None
        self.progress = progress
        self.proc: subprocess.Popen | None = None  # set only in the process that started it
        self.pid: int | None = None  # the server's pid, also for an engine another process started
        self.model_path: str | None = None
        self.log_path: Path | None = None
        self.report: startup_log.StartupReport | None = None
        self.start_seconds: float | None = None
        self.layout = layout_for(config)
        self.warmed_up = False  # set by the first load after a start (experiment.measure)
        self.shared = False  # True once handed to helpers.engine.shared (outlives this process)
        self.ray_folder: Path | None = None  # this server's own local Ray instance (ray_local)
        self._lock = EngineLock()

    # -- public -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and alive(self.pid)

    @classmethod
    def attach(cls, config: EngineConfig | None, record: dict) -> "Server":
        """A handle on a server another process started (helpers/engine/shared.py's record)."""
        server = cls.__new__(cls)
        server.config, server.requested_port, server.progress = config, record["port"], False
        server.proc, server.pid, server.port = None, record["server_pid"], record["port"]
        server.model_path, server.log_path = record["model_path"], Path(record["log_path"])
        server.start_seconds, server.layout = record.get("start_seconds"), record.get("layout", "vllm")
        server.warmed_up, server.ray_folder, server._lock = bool(record.get("warmed_up")), None, EngineLock()
        server.shared, server._t0 = True, None
        server.report = startup_log.parse_startup(server.log_text())
        return server

    def start(self) -> "Server":
        cfg = self.config
        preflight.check(cfg)  # raises ConfigError before anything starts
        self.model_path = models.resolve(cfg.model)
        if self.requested_port is not None and port_in_use(self.requested_port):
            raise ConfigError(
                "port",
                tr(
                    "127.0.0.1:{requested_port} is already in use by another program.",
                    requested_port=self.requested_port,
                ),
                tr("leave port=None so the harness picks a free one, or stop that program."),
            )
        self._lock.acquire(f"vLLM for {cfg.label()}")
        bar = StartProgress(self.progress, cfg.label())  # before the threads: it may import tqdm
        beside = [
            threading.Thread(target=_BESIDE_START.pop(0), name="guide-beside-start", daemon=True)
            for _ in range(len(_BESIDE_START))
        ]
        for t in beside:  # from here this thread only waits (for /health)
            t.start()
        try:
            self._spawn()
            self._wait_healthy(bar)
        except BaseException:
            self.stop()
            raise
        finally:
            for t in beside:
                t.join()
        return self

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after 20 s."""
        if self.proc is None and self.pid is not None:  # started by another process, or by _START_PROCESS
            self._stop_attached()
            return
        proc, self.proc, self.pid = self.proc, None, None
        if proc is not None and proc.poll() is None:
            _kill_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait(timeout=10)
        if proc is not None:
            _end_group(proc.pid)  # stragglers (engine core, workers) in the group
        if self.ray_folder is not None:  # Ray's idle workers have process groups of their own
            ray_local.end(self.ray_folder)
            self.ray_folder = None
        _LIVE.discard(self)
        self._lock.release()

    def _stop_attached(self) -> None:
        pid, self.pid = self.pid, None
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            deadline = time.monotonic() + wait_s
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not alive(pid):
                break
        _end_group(pid)  # stragglers (engine core, workers) in the group
        _LIVE.discard(self)
        self._lock.release()  # a server this process forked privately; no-op for another's

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def __enter__(self) -> "Server":
        return self.start() if not self.running else self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.base_url}" if self.running else "stopped"
        return f"<Server {self.config.label()} {state}>"

    # -- internals ------------------------------------------------------------------------
    def _spawn(self) -> None:
        self.port = self.requested_port or free_port()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.log_path = log_dir() / f"vllm-{stamp}-{self.port}.log"
        layout_args = LAYOUTS[self.layout][1]
        env = server_environment(self.config, self.layout, self._lock.path)
        if ray_local.owns_ray(self.config):
            self.ray_folder = ray_local.make_folder()
            env.update(ray_local.env_for(self.ray_folder))
        # Run by path, not `-m helpers.engine._launch`: the server process then imports nothing
        # of the guide's package (no start-up cost, whatever helpers/__init__ grows into).
        argv = [*self.config.server_args(self.model_path, self.port), *layout_args]
        cmd = [sys.executable, str(Path(__file__).with_name("_launch.py")), *argv]
        cwd = str(Path(__file__).resolve().parents[2])
        self._t0, self.spawned_at = time.monotonic(), time.time()
        with open(self.log_path, "wb") as log:
            log.write(("$ " + " ".join(cmd) + "\n").encode())
        if _START_PROCESS is not None:
            self.pid = _START_PROCESS(
                argv, env, self.log_path, cwd, self._lock.fd, self.layout, ray_local.owns_ray(self.config)
            )
        if self.pid is None:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                    pass_fds=(self._lock.fd,),
                    cwd=cwd,
                )
            self.pid = self.proc.pid
        self._lock.note_server(self.pid, f"vLLM on port {self.port} for {self.config.label()}")
        _LIVE.add(self)

    def _wait_healthy(self, bar: "StartProgress") -> None:
        deadline = self._t0 + START_TIMEOUT_S
        try:
            while True:
                log = self.log_text()
                bar.update(*startup_log.stage(log), time.monotonic() - self._t0)
                if not self.running:
                    raise self._start_error(log, {"code": self.proc.returncode if self.proc is not None else None})
                if healthy(self.base_url):
                    break
                if time.monotonic() > deadline:
                    raise self._start_error(log, {"seconds": START_TIMEOUT_S, "stage": startup_log.stage(log)[1]})
                time.sleep(0.2)  # start_seconds is read to the poll: a fifth of a second, not half
        finally:
            bar.close()
        self.start_seconds = time.monotonic() - self._t0  # not counting a wait for what ran beside the start
        self.report = startup_log.parse_startup(self.log_text())

    def _start_error(self, log: str, parts: dict) -> EngineStartError:
        """`parts`: {"code": the exit code or None} for a server that exited, {"seconds", "stage"} for one that
        never became healthy; the hint's fix is added here (English, shown through tr())."""
        time.sleep(0.5)
        log = self.log_text() or log
        line = startup_log.error_line(log)
        hint = startup_log.hint_for(log)
        setting, fix = hint if hint else (None, None)
        parts = {**parts, "fix": fix, "value": getattr(self.config, setting, "?") if setting else None}
        text = start_error_text(parts, line, setting, parts["value"], self.log_path)
        return EngineStartError(text, line, setting, self.log_path, parts)


def healthy(base_url: str) -> bool:
    """True once the server's /health answers 200."""
    try:
        with urllib.request.urlopen(base_url + "/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _end_group(pgid: int, wait_s: float = 30.0) -> None:
    """SIGKILL what is left of the group and return once none of it lives, so "stopped" means
    no vLLM process is left (a worker killed while holding gigabytes takes a moment to go)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if not group_alive(pgid) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_private() -> None:
    """Stop every server this process started for itself. The machine's shared engine is left to
    its grace instead (helpers/engine/shared.py): another notebook may take it over."""
    for server in list(_LIVE):
        if not server.shared:
            server.stop()


atexit.register(stop_private)


def reset_prefix_cache(base_url: str, headers: dict | None = None) -> bool:
    """Empty the engine's prefix cache. It is a dev endpoint (the harness starts its servers with
    VLLM_SERVER_DEV_MODE=1); False where a server does not offer it, and rows record that."""
    req = urllib.request.Request(base_url + "/reset_prefix_cache", data=b"", method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30):
            return True
    except OSError:
        return False
