"""The test run's forked notebook kernels (tests/run/kernels.py): the launcher forks a kernel only where
the zygote's imports were made under the same environment, judged by the server zygote's own rule, and
the run's tempo line says how many kernels were forked."""
import json

import pytest

from helpers.engine import server
from tests.run import _kernel_launch as launch
from tests.run import tempo

BASE = {"VLLM_LOGGING_LEVEL": "INFO", "HF_HUB_OFFLINE": "1", "PATH": "/bin", "PYTHONPATH": "/repo"}


def test_the_launchers_rule_is_the_server_zygotes():
    assert launch._READ_AT_IMPORT[: len(server._SERVER_READS)] == server._SERVER_READS
    assert launch._VLLM_WRITES == server._VLLM_WRITES


def test_a_kernel_launched_after_vllm_wrote_its_settings_is_still_forked():
    """The pytest process imports vLLM in the engine tests, which writes torch's settings, LD_PRELOAD and the
    worker start method into its environment; the notebooks' kernels, launched later, inherit them."""
    after_a_load = {**BASE, "TORCHINDUCTOR_CACHE_DIR": "/tmp/x", "LD_LIBRARY_PATH": "/x", "LD_PRELOAD": "/y",
                    "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert launch.key(after_a_load) == launch.key(BASE)
    # The guide's own settings are read when the guide is imported, after the fork.
    assert launch.key({**BASE, "GUIDE_LANG": "zh_CN", "GUIDE_SIZE": "full"}) == launch.key(BASE)
    # What vLLM or Python read as they are imported is not.
    assert launch.key({**BASE, "VLLM_LOGGING_LEVEL": "DEBUG"}) != launch.key(BASE)
    assert launch.key({**BASE, "PYTHONPATH": "/elsewhere"}) != launch.key(BASE)
    assert launch.key({**BASE, "PYTHONPATH": "/repo:/repo"}) == launch.key(BASE)  # helpers.book adds it again


def test_the_tempo_line_counts_the_forked_kernels(tmp_path):
    log = tmp_path / "tempo.jsonl"
    events = [{"event": "kernel", "forked": True}, {"event": "kernel", "forked": False}]
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert "notebook kernels forked: 1 of 2" in tempo.summary(log)


@pytest.mark.after_notebooks
def test_every_notebook_kernel_of_this_run_was_forked():
    """A kernel that silently falls back to a plain start costs the run 8-10 s, unnoticed: in the whole
    suite, every kernel launched so far was forked."""
    path = tempo.log_path()
    entries = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path and path.exists() else []
    kernels = [e for e in entries if e["event"] == "kernel"]
    if not kernels:
        pytest.skip("no notebook kernel was launched before this test (run alone)")
    plain = [e.get("who") or "?" for e in kernels if not e["forked"]]
    assert not plain, f"{len(plain)} of {len(kernels)} not forked: {plain}"
