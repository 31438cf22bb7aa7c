"""A process that imports vLLM's API server once and forks a server per start.

A start in vLLM's layout imports torch and vLLM in each of its processes: the API server, then
the engine core and the worker that vLLM spawns (`platforms/cpu.py` forces spawn). The merged
layout drops the worker's import; this drops the API server's and the engine core's, by forking
the server from a process that has already imported vLLM and letting it fork its engine core
(`_fork_engine_core`). Workers (vLLM's layout) are still spawned by vLLM itself, unchanged.

Protocol, over the Unix socket whose descriptor is argv[1] (or each connection to the socket
`listen:<path>` names, for the test run's shared zygote): the zygote sends b"READY" once
imported; each request is one JSON message ({"argv", "env", "log", "cwd"}) carrying the engine
lock's descriptor (SCM_RIGHTS), answered with {"pid": N}. The zygote exits when the socket
closes (the process that started it ended). Run by path; imports only the standard library
besides vLLM, like helpers/engine/_launch.py.
"""
import importlib.util
import json
import os
import signal
import socket
import sys


def _child(request: dict, lock_fd: int, *socks: socket.socket) -> None:
    """In the forked child: become the server, as _launch.py would be started."""
    for sock in socks:
        sock.close()
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.set_inheritable(lock_fd, True)  # held for as long as the server lives
    os.chdir(request["cwd"])
    # Named like a spawned server, so that `ps` and the guide's process checks see what it is. Before the
    # environment is replaced: setproctitle finds the argv memory it rewrites next to the C environ, and
    # once set up here it also works in the engine core forked from this server ("VLLM::EngineCore").
    try:
        import setproctitle
        setproctitle.setproctitle("python -m vllm.entrypoints.openai.api_server (forked by helpers/engine/_launch.py) "
                                  + " ".join(request["argv"]))
    except ImportError:
        pass
    os.environ.clear()
    os.environ.update(request["env"])
    _fork_engine_core()
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers", "engine", "_launch.py")
    spec = importlib.util.spec_from_file_location("_guide_launch", launcher)
    launch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch)
    try:
        launch.serve(request["argv"])
    finally:
        os._exit(0)


def _fork_engine_core() -> None:
    """Fork vLLM's engine core (and a data-parallel coordinator) from this server, as vLLM does on
    a GPU, instead of spawning it.

    vLLM's CPU platform asks for spawn (`CpuPlatform.check_and_update_config` sets
    VLLM_WORKER_MULTIPROC_METHOD), so the engine core imports torch and vLLM again: about half of
    a start here. This server has run no torch op, so no OpenMP pool is copied into the child,
    which binds its own threads as it would after a spawn. `CoreEngineProcManager` (vllm/v1/engine/
    utils.py) and, with data parallelism, `DPCoordinator` (vllm/v1/engine/coordinator.py) take their
    context from get_mp_context(); only those two names are replaced, only here. The workers of
    vLLM's layout (`MultiprocExecutor`) keep spawn."""
    import ctypes
    import multiprocessing

    import vllm.v1.engine.coordinator as coordinator
    import vllm.v1.engine.utils as engine_utils

    engine_utils.get_mp_context = coordinator.get_mp_context = lambda: multiprocessing.get_context("fork")
    # vLLM sizes the CPU KV cache as the budget minus the worker's RSS. A forked child inherits glibc's
    # dynamic mmap threshold, which the server's own allocations have raised, so whether the profile
    # run's large buffers return to the system (and leave the RSS) varied from start to start: a 90 MB
    # swing in the reported non-KV memory. Fixed at glibc's starting value, the RSS repeats to 0.01 GiB.
    libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h

    def _fresh_malloc() -> None:
        libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        libc.mallopt(M_TRIM_THRESHOLD, 128 * 1024)

    os.register_at_fork(after_in_child=_fresh_malloc)


def _serve(sock: socket.socket, *others: socket.socket) -> None:
    """Answer one connection's requests until it closes."""
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 1)  # SOCK_SEQPACKET: one request a message
        except OSError:
            return
        if not msg:
            return
        request = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            _child(request, fds[0], sock, *others)
        for extra in fds:
            os.close(extra)
        sock.send(json.dumps({"pid": pid}).encode())


def main(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a notebook's interrupt is not for the zygote
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # servers are reaped by the kernel
    sock = socket.socket(fileno=fd)
    import vllm.entrypoints.openai.api_server  # noqa: F401 - the point: imported once, shared by fork
    sock.send(b"READY")
    _serve(sock)


def main_shared(path: str) -> None:
    """One zygote for a whole test run (helpers/engine/zygote.py `start_shared`): it listens on
    `path`; each connection (a kernel's start) gets READY once vLLM is imported, then its requests.
    It ends with the process that started it (PR_SET_PDEATHSIG), and when told to (SIGTERM)."""
    import ctypes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG; a forked server does not inherit it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(8)  # a kernel may connect now; it waits for READY
    import vllm.entrypoints.openai.api_server  # noqa: F401
    while True:
        conn, _ = listener.accept()
        try:
            conn.send(b"READY")
            _serve(conn, listener)
        except OSError:
            pass
        finally:
            conn.close()


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # this folder's modules must not shadow others
    if sys.argv[1].startswith("listen:"):
        main_shared(sys.argv[1][len("listen:"):])
    else:
        main(int(sys.argv[1]))
