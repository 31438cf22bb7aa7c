"""A process that imports, once for the whole test run, what every notebook kernel imports (IPython's
kernel, pandas, Altair, ipywidgets, vLLM's benchmark client: 8-10 s of a core), and forks a kernel
for each launch (_kernel_launch.py). Nothing of the guide is imported here: the guide reads its
settings (GUIDE_LANG, GUIDE_SIZE, ...) as it is imported, after the fork, from the kernel's own
environment.

Protocol, over each connection to the socket at argv[1]: the zygote sends b"READY" once imported;
the launcher sends one JSON message ({"args", "env", "cwd", "launcher"}) with its stdin, stdout
and stderr (SCM_RIGHTS) and is answered {"pid": N}. The zygote ends with the process that started
it (PR_SET_PDEATHSIG) and when told to (SIGTERM). Run by path.
"""
import ctypes
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading


def _child(request: dict, fds: list[int], *socks: socket.socket) -> None:
    """In the forked child: become `python -m ipykernel_launcher ARGS`, started by the launcher."""
    for sock in socks:
        sock.close()
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0:0] = [request["cwd"]]  # as `python -m` puts it
    launcher = os.pidfd_open(request["launcher"])

    def end_with_the_launcher():  # Jupyter kills the launcher's process group, which this is not in
        select.select([launcher], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=end_with_the_launcher, name="guide-kernel-launcher", daemon=True).start()
    # IPKernelApp reads JPY_PARENT_PID as it is imported (the default of parent_handle): given again here.
    jpy_parent = request["env"].get("JPY_PARENT_PID")
    parent = [f"--IPKernelApp.parent_handle={jpy_parent}"] if jpy_parent else []
    sys.argv = ["ipykernel_launcher", *request["args"], *parent]
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _serve(conn: socket.socket, listener: socket.socket) -> None:
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    if not msg:
        return
    request = json.loads(msg)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(request, fds, conn, listener)
    for fd in fds:
        os.close(fd)
    conn.send(json.dumps({"pid": pid}).encode())


def main(path: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a notebook's interrupt is not for the zygote
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels are reaped by the kernel (the OS)
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG; a forked kernel does not inherit it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(8)  # a launcher may connect now; it waits for READY
    import altair  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import ipywidgets  # noqa: F401
    import pandas  # noqa: F401
    import vllm.benchmarks.serve  # noqa: F401
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    print(f"[kernel zygote] imported; threads besides the main one: {threads or 'none'}", flush=True)
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
    main(sys.argv[1])
