"""Starting servers by fork from a process that has imported vLLM once (_zygote.py).

Each start otherwise imports torch and vLLM in every process: the API server, then the engine
core vLLM spawns (and, in vLLM's layout, its workers). Forking the API server from a pre-imported
process, which then forks its engine core, leaves only the workers' imports. The server that
results is the same program with the same arguments and environment; rows record their layout
either way. A learner's kernel forks merged-layout starts from a zygote of its own, replaced when
a start needs another environment (vLLM reads some variables, such as its logging level, at
import); the test run's shared zygote also serves vLLM's layout, whose workers vLLM still spawns.
GUIDE_ZYGOTE=0 turns it off.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

# What a server inherits from the process that starts it and would behave differently under: an API
# key, a logging level (read at import), thread counts, offline mode. Not what vLLM's own import or
# config code writes into the environment of any process that imports it (torch's and triton's
# settings, LD_PRELOAD, the worker start method): those differ between a kernel that has run a load
# (and so imported vLLM's benchmark client) and one that has not, for the same server.
_SERVER_READS = ("VLLM_", "HF_", "OMP_", "KMP_", "MKL_", "OPENAI_", "CUDA_VISIBLE_DEVICES", "TOKENIZERS_",
                 "DO_NOT_TRACK")
_VLLM_WRITES = {"VLLM_WORKER_MULTIPROC_METHOD", "VLLM_DISABLE_SHARED_EXPERTS_STREAM", "VLLM_SSM_CONV_STATE_LAYOUT"}
# Read only when a server starts, after the fork has handed the child its own environment: the layout
# (`CpuPlatform.check_and_update_config`, `LLMEngine`) and the thread binding (`OMPProcessManager` in
# vllm/utils/ompmultiprocessing.py). A zygote imported without them serves starts that set them.
_READ_AT_START = {"VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU"}


def server_reads(env) -> dict:
    """The part of an environment that makes one server differ from another (see _SERVER_READS)."""
    return {k: v for k, v in env.items()
            if k.startswith(_SERVER_READS) and k not in _VLLM_WRITES and k not in _READ_AT_START}

_current: "Zygote | None" = None


def enabled() -> bool:
    return os.environ.get("GUIDE_ZYGOTE", "1") != "0"


class Zygote:
    def __init__(self, env: dict, log_path: Path):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.key = server_reads(env)
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_zygote.py")),
                                          str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        theirs.close()
        self.sock = ours
        self.ready = False

    def wait_ready(self) -> bool:
        if not self.ready:
            self.ready = self.sock.recv(64) == b"READY"
        return self.ready

    def fork(self, argv: list[str], env: dict, log_path: Path, cwd: str, lock_fd: int) -> int:
        request = json.dumps({"argv": argv, "env": env, "log": str(log_path), "cwd": cwd}).encode()
        socket.send_fds(self.sock, [request], [lock_fd])
        return int(json.loads(self.sock.recv(4096))["pid"])

    @classmethod
    def connected(cls, sock: socket.socket, key: dict) -> "Zygote":
        """A connection to a zygote someone else started (the run's shared one)."""
        z = cls.__new__(cls)
        z.sock, z.key, z.proc, z.ready = sock, key, None, False
        return z

    def close(self) -> None:
        self.sock.close()  # the zygote exits at the end of its socket (a shared one: at the end of the run)
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# -- the test run's shared zygote ---------------------------------------------------------------
# One zygote for the whole run, started by the pytest process: each kernel's first start then finds
# vLLM imported instead of waiting for its own zygote's import (10-15 s of a core, per notebook).
_SOCKET, _KEY = "GUIDE_ZYGOTE_SOCKET", "GUIDE_ZYGOTE_KEY"
_shared_proc: "subprocess.Popen | None" = None


def _key_text(env) -> str:
    return hashlib.sha256(json.dumps(server_reads(env), sort_keys=True).encode()).hexdigest()[:16]


def start_shared(env: dict, log_path: Path, folder: Path) -> None:
    """Start the run's shared zygote (listening on a socket in `folder`) and tell every process
    started from here on (kernels inherit the environment) where it is and what it imported with."""
    global _shared_proc
    path = folder / "zygote.sock"
    with open(log_path, "ab") as log:
        _shared_proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_zygote.py")), f"listen:{path}"],
                                        env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    os.environ[_SOCKET], os.environ[_KEY] = str(path), _key_text(env)


def stop_shared() -> None:
    global _shared_proc
    if _shared_proc is not None:
        _shared_proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            _shared_proc.wait(timeout=10)
        if _shared_proc.poll() is None:
            _shared_proc.kill()
        _shared_proc = None
    for name in (_SOCKET, _KEY):
        os.environ.pop(name, None)


def shared_serves(env: dict) -> bool:
    """There is a shared zygote, and it imported vLLM under the same server-read environment as `env`."""
    return bool(os.environ.get(_SOCKET)) and os.environ.get(_KEY) == _key_text(env)


def _shared_for(env: dict) -> "Zygote | None":
    """A connection to the run's shared zygote where it serves `env`; None otherwise."""
    if not shared_serves(env):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(os.environ[_SOCKET])
    except OSError:
        sock.close()
        return None
    return Zygote.connected(sock, server_reads(env))


def start_early(env: dict, log_path: Path) -> None:
    """Start a zygote for `env` now, without waiting for its import to finish (none where the
    run's shared zygote will serve it)."""
    global _current
    if shared_serves(env):
        return
    if _current is None or _current.key != server_reads(env) or _current.proc.poll() is not None:
        close()
        _current = Zygote(env, log_path)


def start_server(argv: list[str], env: dict, log_path: Path, cwd: str, lock_fd: int,
                 shared_only: bool = False) -> int | None:
    """Fork a server from the run's shared zygote, else (unless `shared_only`) from this process's
    own (made or replaced as needed); its pid, or None when no zygote could serve it (the caller
    then starts the server the usual way)."""
    global _current
    if (shared := _shared_for(env)) is not None:
        try:
            if shared.wait_ready():
                return shared.fork(argv, env, log_path, cwd, lock_fd)
        except OSError:
            pass  # this process's own zygote, as below
        finally:
            shared.close()
    if shared_only:
        return None
    if _current is not None and (_current.key != server_reads(env) or _current.proc.poll() is not None):
        _current.close()
        _current = None
    if _current is None:
        _current = Zygote(env, log_path.with_name(f"zygote-{os.getpid()}.log"))
    try:
        if not _current.wait_ready():
            raise OSError("the zygote ended before it was ready")
        return _current.fork(argv, env, log_path, cwd, lock_fd)
    except OSError:
        _current.close()
        _current = None
        return None


def settle() -> None:
    """Wait until a zygote started early has finished importing vLLM, so that a measurement of
    the machine itself (helpers/probes.py) does not share the cores with that import."""
    if _current is not None and _current.proc.poll() is None:
        try:
            _current.wait_ready()
        except OSError:
            pass


def close() -> None:
    global _current
    if _current is not None:
        _current.close()
        _current = None
