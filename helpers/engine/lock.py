"""One vLLM engine per machine at a time.

Two engines on a 2-core machine halve each other's cores and can exhaust memory, so the
harness takes an exclusive `flock` before it starts one. The lock's file descriptor is
inherited by the server process, so the lock is held for exactly as long as the server
lives, even if the Python process that started it is gone.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from helpers.i18n import tr

# How long a start waits, when the engine holding the lock has exited, for its last child to close it.
SHUTDOWN_GRACE_S = 60.0


def alive(pid: int) -> bool:
    """True for a running process; False for one that is gone or has exited (a zombie, possibly
    with a last thread still closing its files: that one releases the lock by itself)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def group_alive(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (the engine core and workers outlive their
    leader for a moment after a SIGKILL: the kernel frees gigabytes of memory first)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


class EngineBusyError(RuntimeError):
    """Another vLLM engine started by this guide is running on this machine."""


def lock_path() -> Path:
    base = Path(os.environ.get("GUIDE_LOCK_DIR", "/tmp"))
    return base / f"vllm-guide-engine-{os.getuid()}.lock"


class EngineLock:
    def __init__(self, path: Path | None = None):
        self.path = path or lock_path()
        self.fd: int | None = None

    def acquire(self, what: str, wait_s: float | None = None) -> "EngineLock":
        """Take the lock, or raise EngineBusyError. GUIDE_LOCK_WAIT=seconds queues instead."""
        if wait_s is None:
            wait_s = float(os.environ.get("GUIDE_LOCK_WAIT", 0))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline, graced = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    if not graced and self._holder_gone(fd):
                        # The engine's own processes are gone; a last child still closing holds the
                        # lock for a few more seconds. Wait for it rather than refuse.
                        deadline, graced = time.monotonic() + SHUTDOWN_GRACE_S, True
                        continue
                    holder, still = self._holder(fd), self._processes_holding()
                    os.close(fd)
                    raise EngineBusyError(
                        tr("Another vLLM engine is already running on this machine ({holder}). Only one runs at a "
                           "time: two would split 2 cores and may exhaust memory. Stop it first: `bash guide.sh "
                           "stop`, or `helpers.stop_all()` in a notebook, or end the process named above. Lock "
                           "file: {path}", holder=holder, path=self.path)
                        + (tr(". Processes holding it now: {still}", still=still) if still else "")) from None
                time.sleep(0.1)  # a stopping engine lets go within a second or so: take it as soon as it does
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what, "since": time.strftime("%H:%M:%S")}).encode(), 0)
        self.fd = fd
        return self

    def note_server(self, server_pid: int, what: str) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps({"pid": os.getpid(), "server_pid": server_pid, "what": what,
                                           "since": time.strftime("%H:%M:%S")}).encode(), 0)

    def hand_to_server(self) -> None:
        """Close this process's copy of the lock; the server's inherited copy keeps it held for
        exactly as long as the server lives, whoever stops it (helpers/engine/shared.py)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def release(self) -> None:
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    @staticmethod
    def _holder_gone(fd: int) -> bool:
        """True when the process that took the lock and its server have both exited."""
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            return False
        if info.get("server_pid"):  # the server holds the lock; the process that started it may live on
            return not alive(info["server_pid"])
        return bool(info.get("pid")) and not alive(info["pid"])

    def _processes_holding(self) -> str:
        """'pid (command)' of each process with the lock file open, read from /proc (Linux)."""
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            if int(proc.name) == os.getpid():
                continue
            try:  # every thread's view: an exited process's last thread still holds its files
                holds = any(os.readlink(fd) == str(self.path)
                            for task in (proc / "task").iterdir() for fd in (task / "fd").iterdir())
                if holds:
                    cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                    found.append(f"{proc.name} ({cmd[:80] or 'exiting'})")
            except OSError:
                continue
        return "; ".join(found)

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            return "holder unknown"
        parts = [tr("started by pid {value}", value=info.get('pid'))]
        if info.get("server_pid"):
            parts.append(tr("server pid {server_pid}", server_pid=info['server_pid']))
        if info.get("what"):
            parts.append(info["what"])
        if info.get("since"):
            parts.append(f"since {info['since']}")
        return ", ".join(parts)
