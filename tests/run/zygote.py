"""The test run's server starts: forked from a process that imported vLLM once (_zygote.py).

Each start otherwise imports torch and vLLM in every process: the API server, then the engine
core vLLM spawns (and, in vLLM's layout, its workers). Forking the API server from a pre-imported
process, which then forks its engine core, leaves only the workers' imports. The server that
results is the same program with the same arguments and environment; rows record their layout
either way. One zygote serves the whole run (`share`, started by the pytest process); a process
whose environment it does not serve (vLLM reads some variables, such as its logging level, at
import) starts one of its own for the merged layout. A learner's process never comes here: the
harness starts `helpers/engine/_launch.py` itself. GUIDE_ZYGOTE=0 turns it off in a test run too.
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

from helpers.engine.server import server_reads

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


def serves(env: dict) -> bool:
    """There is a shared zygote, and it imported vLLM under the same server-read environment as `env`."""
    return bool(os.environ.get(_SOCKET)) and os.environ.get(_KEY) == _key_text(env)


def _shared_for(env: dict) -> "Zygote | None":
    """A connection to the run's shared zygote where it serves `env`; None otherwise."""
    if not serves(env):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(os.environ[_SOCKET])
    except OSError:
        sock.close()
        return None
    return Zygote.connected(sock, server_reads(env))


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


def close() -> None:
    global _current
    if _current is not None:
        _current.close()
        _current = None


def fork_start(argv: list[str], env: dict, log_path: Path, cwd: str, lock_fd: int, layout: str,
               ray: bool) -> int | None:
    """helpers/engine/server.py's way to start a server process in the test run (`start_processes_with`):
    a fork for the merged layout, and for vLLM's where the run's zygote serves it (its workers are still
    spawned by vLLM); None (start it as usual) for a Ray-backed engine or with GUIDE_ZYGOTE=0."""
    if not enabled() or ray or (layout != "merged" and not serves(env)):
        return None
    with open(log_path, "ab") as log:
        log.write(b"# forked from a pre-imported process (the test run: tests/run/zygote.py)\n")
    return start_server(argv, env, log_path, cwd, lock_fd, shared_only=layout != "merged")


def share(folder: Path) -> bool:
    """One zygote for every start of the run from here on, in either layout, its socket in `folder`:
    only where the run uses the merged layout (GUIDE_ENGINE_LAYOUT=merged). True if one was started."""
    from helpers.config import EngineConfig
    from helpers.engine.lock import lock_path
    from helpers.engine.server import layout_for, log_dir, server_environment
    config = EngineConfig()
    if layout_for(config) != "merged" or not enabled():
        return False
    start_shared(server_environment(config, "merged", lock_path()), log_dir() / "zygote-shared.log", folder)
    return True
