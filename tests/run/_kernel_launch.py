"""Entry point of every notebook kernel the test run starts (the run's `python3` kernelspec,
tests/run/kernels.py): it asks the run's kernel zygote (_kernel_zygote.py) to fork an IPython
kernel that already imported what every kernel imports, then stands in for it. Jupyter signals and
kills this process's group, so it passes each signal on; the kernel ends when this process does,
and this process when the kernel or the Jupyter process that launched it does. Where no zygote
serves its environment, it becomes `python -m ipykernel_launcher` itself.

Run by path; standard library only (it starts before every notebook).
"""
import hashlib
import json
import os
import select
import signal
import socket
import sys

SOCKET, KEY = "GUIDE_KERNEL_ZYGOTE", "GUIDE_KERNEL_ZYGOTE_KEY"
# What the zygote's imports read from the environment: helpers/engine/server.py's _SERVER_READS (less
# what vLLM itself writes into os.environ once imported, which a process that has run a load carries and
# one that has not lacks), and Python's own path. Kept here because this file imports nothing of the guide.
_READ_AT_IMPORT = ("VLLM_", "HF_", "OMP_", "KMP_", "MKL_", "OPENAI_", "CUDA_VISIBLE_DEVICES", "TOKENIZERS_",
                   "DO_NOT_TRACK", "PYTHONPATH", "PYTHONHASHSEED")
_VLLM_WRITES = {"VLLM_WORKER_MULTIPROC_METHOD", "VLLM_DISABLE_SHARED_EXPERTS_STREAM", "VLLM_SSM_CONV_STATE_LAYOUT"}


def key(env) -> str:
    reads = {k: v for k, v in env.items() if k.startswith(_READ_AT_IMPORT) and k not in _VLLM_WRITES}
    if "PYTHONPATH" in reads:  # the same path named twice (helpers.book adds the repository again) is one path
        reads["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in reads["PYTHONPATH"].split(os.pathsep) if p))
    return hashlib.sha256(json.dumps(reads, sort_keys=True).encode()).hexdigest()[:16]


def _tell(forked: bool) -> None:
    """One line in the run's tempo log (tests/run/tempo.py counts the kernels forked)."""
    path = os.environ.get("GUIDE_TEMPO_LOG")
    if path:
        try:
            with open(path, "a") as f:
                who = os.environ.get("GUIDE_NOTEBOOK")
                f.write(json.dumps({"event": "kernel", "forked": forked, "who": who}) + "\n")
        except OSError:
            pass


def _forked(args: list[str]) -> int | None:
    """The pid of a kernel the zygote forked for `args`, or None where it does not serve this environment."""
    path = os.environ.get(SOCKET)
    if not path or os.environ.get(KEY) != key(os.environ):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        if sock.recv(16) != b"READY":
            return None
        request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "launcher": os.getpid()}
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
        return int(json.loads(sock.recv(4096))["pid"])
    except (OSError, ValueError, KeyError):
        return None
    finally:
        sock.close()


def main(args: list[str]) -> None:
    pid = _forked(args)
    _tell(pid is not None)
    if pid is None:
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *args])
    try:
        kernel, parent = os.pidfd_open(pid), os.pidfd_open(os.getppid())
    except OSError:  # it has already ended
        return

    def pass_on(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, pass_on)
    ended, _, _ = select.select([kernel, parent], [], [])  # retried after a signal (PEP 475)
    if kernel not in ended:  # the Jupyter process that started it ended: a kernel polls for that and exits
        pass_on(signal.SIGKILL, None)


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)
    main(sys.argv[1:])
