"""The shared engine's bookkeeping, without an engine: the turn, the record, the tempo line."""
import json
import os
import subprocess
import sys
import time

import pytest

from helpers import EngineConfig
from helpers.engine import shared
from helpers.engine.lock import EngineBusyError
from helpers.engine.server import server_reads
from tests.conftest import ROOT
from tests.run import tempo


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GUIDE_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(shared, "_mine", None)


def _holder(seconds: float, tmp_path) -> subprocess.Popen:
    code = ("import time; from helpers.engine import shared\n"
            f"with shared.turn('the load 16 x 256 tokens on guide default'):\n"
            f"    print('HELD', flush=True); time.sleep({seconds})\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "GUIDE_LOCK_DIR": str(tmp_path), "GUIDE_NOTEBOOK": "03_chunked.ipynb"})
    assert proc.stdout.readline().strip() == "HELD"
    return proc


def test_a_newcomer_waits_with_a_message_then_gets_a_clear_error(tmp_path, capsys):
    holder = _holder(30, tmp_path)
    try:
        with pytest.raises(EngineBusyError) as err:
            with shared.turn("a start of seqs=4", wait_s=1.5):
                pass
    finally:
        holder.kill()
    said = capsys.readouterr().out
    assert "waiting for the engine: 03_chunked.ipynb" in said and "is running the load 16 x 256 tokens" in said
    assert "still busy after" in str(err.value) and "GUIDE_ENGINE_WAIT" in str(err.value)
    assert "never cut off" in str(err.value) and "Try:" in str(err.value)


def test_a_newcomer_proceeds_once_the_load_ends(tmp_path):
    holder = _holder(1.0, tmp_path)
    t0 = time.monotonic()
    with shared.turn("a start", wait_s=30):
        waited = time.monotonic() - t0
    holder.wait()
    assert 0.3 < waited < 30


def test_the_turn_is_reentrant_within_a_process():
    with shared.turn("outer", wait_s=0):
        with shared.turn("inner", wait_s=0):
            assert shared._turn_state["depth"] == 2
    assert shared._turn_state["fd"] is None


def test_same_settings_share_an_engine_and_other_settings_or_layouts_do_not(monkeypatch):
    monkeypatch.delenv("GUIDE_ENGINE_LAYOUT", raising=False)
    a = shared.key_for(EngineConfig())
    assert a == shared.key_for(EngineConfig(max_num_seqs=None))
    assert a != shared.key_for(EngineConfig(max_num_seqs=8))
    monkeypatch.setenv("GUIDE_ENGINE_LAYOUT", "merged")
    assert a != shared.key_for(EngineConfig())


def test_how_an_engine_ended_outlives_the_next_start():
    shared._write_record({"ended": {"server_pid": 11, "why": "replaced by 02.ipynb's seqs=4", "at": 1.0}})
    shared._write_record({"server_pid": 12, "label": "seqs=4", "users": []})
    shared._write_record({"ended": {"server_pid": 12, "why": "no process had used it for 60 s", "at": 2.0}})
    rec = shared.read_record()
    assert [e["server_pid"] for e in rec["ended_before"]] == [11]
    assert rec["ended"]["server_pid"] == 12 and shared.live_record() is None


def test_tempo_line_counts_starts_configurations_and_who_started_most(tmp_path):
    log = tmp_path / "tempo.jsonl"
    entries = [("start", "nb/03.ipynb", "a", 16.0), ("start", "nb/03.ipynb", "b", 17.0),
               ("reuse", "nb/04.ipynb", "b", 0), ("start", "nb/04.ipynb", "a", 15.5),
               ("start", "tests/engine", "c", 30.0)]
    log.write_text("".join(json.dumps({"event": e, "who": w, "label": k, "key": k, "seconds": s, "layout": "merged"})
                           + "\n" for e, w, k, s in entries))
    line = tempo.summary(log)
    assert line.startswith("engine starts: 4 of 3 distinct configurations, 78 s starting (layout merged)")
    assert "1 reuses" in line and "most starts: nb/03.ipynb 2, nb/04.ipynb 1, tests/engine 1" in line
    assert "started again: a ×2 (nb/04.ipynb: no engine)" in line
    assert tempo.summary(tmp_path / "missing.jsonl") is None
    with open(log, "a") as f:  # a start after an engine was replaced names how it ended
        f.write(json.dumps({"event": "start", "who": "nb/05.ipynb", "label": "c", "key": "c", "seconds": 9.0,
                            "after": "replaced by nb/04.ipynb's a"}) + "\n")
    assert "c ×2 (nb/05.ipynb: replaced by nb/04.ipynb's a)" in tempo.summary(log)


def test_an_engine_started_with_an_api_key_is_not_handed_to_a_process_without_one(monkeypatch):
    plain = shared.key_for(EngineConfig())
    monkeypatch.setenv("VLLM_API_KEY", "secret")
    assert shared.key_for(EngineConfig()) != plain


def test_importing_vllm_in_the_kernel_does_not_make_the_same_engine_look_like_another(monkeypatch):
    """A kernel imports vLLM's benchmark client at its first load, and vLLM writes settings of
    its own into the environment then: the running engine must still be found the same."""
    import subprocess
    code = ("from helpers import EngineConfig; from helpers.engine import shared\n"
            "before = shared.key_for(EngineConfig())\n"
            "import vllm.benchmarks.serve\n"
            "from vllm.engine.arg_utils import EngineArgs\n"
            "print(before == shared.key_for(EngineConfig()))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "True", out.stdout + out.stderr[-2000:]


def test_a_kernel_keeps_its_zygote_after_vllm_wrote_its_own_settings():
    base = {"VLLM_LOGGING_LEVEL": "INFO", "HF_HUB_OFFLINE": "1", "PATH": "/bin"}
    after_a_load = {**base, "TORCHINDUCTOR_CACHE_DIR": "/tmp/x", "LD_LIBRARY_PATH": "/x",
                    "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert server_reads(after_a_load) == server_reads(base)
    assert server_reads({**base, "VLLM_LOGGING_LEVEL": "DEBUG"}) != server_reads(base)


def test_one_zygote_serves_both_layouts_and_every_binding():
    """The layout and the thread binding are read when a server starts (after the fork), not when
    vLLM is imported: the run's zygote, imported for the merged layout, serves vLLM's too."""
    merged = {"VLLM_LOGGING_LEVEL": "INFO", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    vllms = {"VLLM_LOGGING_LEVEL": "INFO", "VLLM_CPU_OMP_THREADS_BIND": "0|1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
    assert server_reads(merged) == server_reads(vllms) == {"VLLM_LOGGING_LEVEL": "INFO"}
