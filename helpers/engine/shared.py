"""The machine's one engine, handed between notebooks, labs, tests and scripts.

Only one vLLM engine runs on a machine at a time (two would split 2 cores and may exhaust
memory). Instead of refusing a second notebook, the harness hands the engine over:

- same configuration, engine idle: the newcomer uses it (no start) and prints whose it was;
- another configuration, engine idle: it is stopped and the new one started, with a line
  saying so; the notebook that used it gets an engine again, with a line saying why, the
  next time it measures;
- a load in flight: the newcomer waits, printing whose load and for how long, up to
  GUIDE_ENGINE_WAIT seconds (600), then raises EngineBusyError. A running load is never cut off.

Three files beside the engine lock (`lock.lock_path()`):
- the *turn* (`….turn`): an flock held while a process starts, stops or loads the engine; it
  holds a line of JSON saying who holds it and for what;
- the *record* (`….json`): the running engine (pid, port, configuration key, who started it,
  the processes that used it), or how the last one ended;
- the engine lock itself, held by the server process for as long as it lives.

An engine outlives the kernel that started it only while someone may still use it: the guard
thread inside the server (`_launch.py`) stops it once none of the processes in the record's
`users` has been alive for GUIDE_ENGINE_GRACE seconds (60). `H.stop()` takes this process off
the users; `H.stop_all()` and `bash guide.sh stop` stop the engine at once.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

from helpers.config import EngineConfig
from helpers.engine.lock import EngineBusyError, alive, lock_path
from helpers.engine.server import Server, layout_for, server_reads, stop_private
from helpers.i18n import tr

WAIT_S = float(os.environ.get("GUIDE_ENGINE_WAIT", 600))
GRACE_S = float(os.environ.get("GUIDE_ENGINE_GRACE", 60))

_mine: Server | None = None  # the engine this process last used
_turn = threading.RLock()
_turn_state = {"fd": None, "depth": 0}


# -- where things are ----------------------------------------------------------------------
def record_path() -> Path:
    return lock_path().with_suffix(".json")


def turn_path() -> Path:
    return lock_path().with_suffix(".turn")


# Who hears of each start, reuse and measured load: a function of one dict (event, who, label, key,
# seconds, layout, server_pid, time, after). Empty for a learner; the test run's tempo log listens
# (tests/run/tempo.py).
LISTENERS: list = []


def process_id(pid: int | None = None) -> list:
    """[pid, start time]: a pid the kernel may hand to another process later is not enough."""
    pid = pid or os.getpid()
    try:
        return [pid, int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])]
    except (OSError, IndexError, ValueError):
        return [pid, 0]


def who() -> str:
    """A name for this process that a learner recognises: the notebook, the test, or the script."""
    name = (os.environ.get("GUIDE_NOTEBOOK") or os.environ.get("JPY_SESSION_NAME")
            or (os.environ.get("PYTEST_CURRENT_TEST") or "").split(" ")[0]
            or Path(sys.argv[0] if sys.argv and sys.argv[0] else "python").name)
    return f"{Path(name).name if '/' in name and '::' not in name else name} (pid {os.getpid()})"


# -- the record ------------------------------------------------------------------------------
def read_record() -> dict:
    try:
        return json.loads(record_path().read_text() or "{}")
    except (OSError, ValueError):
        return {}


def _write_record(record: dict) -> None:
    """Write the record; how earlier engines ended is kept (the last ten), so a notebook whose
    engine was replaced can be told why even after another engine started."""
    old = read_record()
    ended = [*(old.get("ended_before") or []), *([old["ended"]] if old.get("ended") else [])]
    if record.get("ended"):
        ended = [e for e in ended if e.get("server_pid") != record["ended"].get("server_pid")]
    record = {**record, "ended_before": ended[-10:]}
    tmp = record_path().with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, record_path())


def live_record() -> dict | None:
    """The record of the engine running now, or None (none started, or it has ended)."""
    rec = read_record()
    if rec.get("server_pid") and alive(rec["server_pid"]):
        return rec
    return None


def key_for(config: EngineConfig) -> str:
    """Two configurations share an engine when vLLM would be started the same way: the same
    arguments, environment and process layout (the port aside)."""
    from helpers import models
    # The server inherits this process's environment: what vLLM, torch and the Hugging Face
    # libraries read from it (an API key, a logging level, thread counts) is part of the engine.
    inherited = server_reads(os.environ)
    what = {"args": config.server_args(models.resolve(config.model), 0), "env": {**inherited, **config.server_env()},
            "layout": layout_for(config), "isa": os.environ.get("GUIDE_CPU_ISA")}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


# -- the turn ----------------------------------------------------------------------------------
@contextlib.contextmanager
def turn(what: str, wait_s: float | None = None):
    """Hold the machine's turn on its engine (re-entrant within this process)."""
    with _turn:
        if _turn_state["depth"] == 0:
            _turn_state["fd"] = _take_turn(what, WAIT_S if wait_s is None else wait_s)
        _turn_state["depth"] += 1
        try:
            yield
        finally:
            _turn_state["depth"] -= 1
            if _turn_state["depth"] == 0:
                fd, _turn_state["fd"] = _turn_state["fd"], None
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


def _take_turn(what: str, wait_s: float) -> int:
    fd = os.open(turn_path(), os.O_RDWR | os.O_CREAT, 0o644)
    t0, said = time.monotonic(), 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            waited = time.monotonic() - t0
            holder = _holder_text(fd)
            if waited >= wait_s:
                os.close(fd)
                raise EngineBusyError(
                    tr(
                        "The engine is still busy after {waited:.0f} s: {holder}. Only one engine runs on a machine "
                        "and a running load is never cut off. Try: wait for it to finish and run this cell again, "
                        "set GUIDE_ENGINE_WAIT to more seconds (now {wait_s:.0f}), or stop it at once with `bash "
                        "guide.sh stop` (its results so far stay stored).",
                        waited=waited,
                        holder=holder,
                        wait_s=wait_s,
                    )
                ) from None
            if waited - said >= 30 or said == 0:
                print(
                    tr(
                        "[engine] waiting for the engine: {holder} (waited {waited:.0f} s of up to {wait_s:.0f})",
                        holder=holder,
                        waited=waited,
                        wait_s=wait_s,
                    ),
                    flush=True,
                )
                said = waited or 1e-9
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"who": who(), "what": what, "since": time.time()}).encode(), 0)
    return fd


def _holder_text(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "another process holds it"
    return tr(
        "{value} is running {value_2} ({time:.0f} s so far)",
        value=info.get("who", "?"),
        value_2=info.get("what", "?"),
        time=time.time() - info.get("since", time.time()),
    )


# -- handing the engine over ------------------------------------------------------------------
def engine(config: EngineConfig, progress=True) -> Server:
    """The machine's engine for `config`: this process's own, another's idle one (reused), or a
    new one (after stopping an idle engine of another configuration)."""
    global _mine
    key = key_for(config)
    with turn(f"a start of {config.label()}"):
        rec = live_record()
        if _mine is not None and (rec is None or rec["server_pid"] != _mine.pid):
            _say_why_gone(_mine)
            _mine = None
        if rec is not None and rec["key"] == key:
            if _mine is None:
                _mine = Server.attach(config, rec)
                print(
                    tr(
                        "[engine] reusing the idle engine for {label} that {started_by} started {ago} ago (no start)",
                        label=rec["label"],
                        started_by=rec["started_by"],
                        ago=_ago(rec["started_at"]),
                    ),
                    flush=True,
                )
                _tell("reuse", rec["label"], key, 0.0, rec.get("layout"))
            _add_user()
            return _mine
        # Why no engine of this config was running: another one was, or how the last one ended.
        before = f"{rec['label']} was running" if rec is not None else (read_record().get("ended") or {}).get("why")
        if rec is not None:
            print(
                tr(
                    "[engine] stopping the idle engine for {label} (started by {started_by}) to start {label_2}",
                    label=rec["label"],
                    started_by=rec["started_by"],
                    label_2=config.label(),
                ),
                flush=True,
            )
            stop_engine(f"replaced by {who()}'s {config.label()}")
        server = Server(config, progress=progress).start()
        server.shared = True
        server._lock.hand_to_server()
        _write_record(
            {
                "server_pid": server.pid,
                "server_start": process_id(server.pid)[1],
                "port": server.port,
                "key": key,
                "label": config.label(),
                "model_path": server.model_path,
                "log_path": str(server.log_path),
                "layout": server.layout,
                "start_seconds": server.start_seconds,
                "warmed_up": False,
                "started_by": who(),
                "started_at": time.time(),
                "users": [process_id()],
            }
        )
        _tell("start", config.label(), key, server.start_seconds, server.layout, server.pid, before)
        _mine = server
        return server


def note_warm(server: Server) -> None:
    """The engine has had its warm-up load: a process that reuses it does not warm it again."""
    server.warmed_up = True
    rec = read_record()
    if rec.get("server_pid") == server.pid:
        _write_record({**rec, "warmed_up": True})


def release() -> None:
    """This process no longer needs the engine: it stops once no user is left (after the grace)."""
    global _mine
    if _mine is None:
        return
    with contextlib.suppress(EngineBusyError), turn("a release", wait_s=5):
        rec = read_record()
        if rec.get("server_pid") == _mine.pid:
            me = process_id()
            _write_record({**rec, "users": [u for u in rec.get("users", []) if u != me]})
    _mine = None


def stop_engine(why: str, wait_for_load: bool = True) -> bool:
    """Stop the machine's engine now (whoever started it). False when none was running."""
    global _mine
    ctx = turn(f"a stop ({why})") if wait_for_load else contextlib.nullcontext()
    with ctx:
        rec = live_record()
        if rec is None:
            return False
        server = _mine if _mine is not None and _mine.pid == rec["server_pid"] else Server.attach(None, rec)
        _write_record(
            {
                "ended": {
                    "label": rec["label"],
                    "server_pid": rec["server_pid"],
                    "why": why,
                    "by": who(),
                    "at": time.time(),
                }
            }
        )
        server.stop()
        if _mine is server:
            _mine = None
        return True


def _add_user() -> None:
    rec = read_record()
    me = process_id()
    if me not in rec.get("users", []):
        _write_record({**rec, "users": [*rec.get("users", []), me]})


def _say_why_gone(server: Server) -> None:
    rec = read_record()
    ended = next(
        (
            e
            for e in [rec.get("ended") or {}, *reversed(rec.get("ended_before") or [])]
            if e.get("server_pid") == server.pid
        ),
        {},
    )
    if ended:
        why = f"{ended['why']} ({_ago(ended['at'])} ago)"
    else:
        why = tr("it exited (see its log: ") + str(server.log_path) + ")"
    print(
        tr(
            "[engine] the engine this notebook used ({label}) was stopped: {why}; this notebook gets an engine again",
            label=server.config.label(),
            why=why,
        ),
        flush=True,
    )


def _ago(t: float) -> str:
    s = max(0.0, time.time() - t)
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def _tell(
    event: str,
    label: str,
    key: str,
    seconds: float | None,
    layout: str | None,
    server_pid: int | None = None,
    after: str | None = None,
) -> None:
    """Tell the listeners of a start, a reuse or a measured load; `after` says how the engine before
    a start ended (why it was needed), or what a load was."""
    if not LISTENERS:
        return
    entry = {
        "event": event,
        "who": who().rsplit(" (pid", 1)[0],
        "label": label,
        "key": key,
        "seconds": round(seconds or 0.0, 1),
        "layout": layout,
        "server_pid": server_pid,
        "time": time.time(),
        "after": after,
    }
    for listen in LISTENERS:
        listen(entry)


def note_work(what: str, label: str, seconds: float) -> None:
    """A load or reading ran on the engine for `seconds` (the listeners learn where minutes went)."""
    _tell("work", label, "", seconds, None, after=what)


def stop_all() -> None:
    """Stop the machine's engine now, and every server this process started for itself."""
    stop_engine("stop_all()")
    stop_private()


atexit.register(release)


def main(argv: list[str]) -> int:
    """`python -m helpers.engine stop|status` (bash guide.sh stop)."""
    cmd = argv[0] if argv else "status"
    if cmd == "stop":
        stopped = stop_engine("bash guide.sh stop", wait_for_load=False)
        print(
            tr("[engine] stopped the guide's engine") if stopped else tr("[engine] no engine of the guide is running")
        )
        return 0
    rec = live_record()
    print(
        tr(
            "[engine] {label} on 127.0.0.1:{port}, started by {started_by}; it stops by itself {grace_s:.0f} s "
            "after the last notebook or script using it ends (GUIDE_ENGINE_GRACE), so that the next one can take "
            "it over without a start; `bash guide.sh stop` stops it now",
            label=rec["label"],
            port=rec["port"],
            started_by=rec["started_by"],
            grace_s=GRACE_S,
        )
        if rec
        else tr("[engine] no engine of the guide is running")
    )
    return 0
