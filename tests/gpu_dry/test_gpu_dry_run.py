"""Every notebook and lab, top to bottom, as if on one CUDA GPU (an H200), without one.

The hardware probe reports one GPU (GUIDE_DEVICE=cuda, GUIDE_GPUS), and the engine layer answers
from a simulated GPU server (simulated_server.py: vLLM's CUDA start-up wording, a /metrics page, a
small scheduler). Its figures are made up: rows are labelled `simulated` and kept in a temporary
store. What is checked is that the GPU path runs: no cell raises, no CPU-only setting reaches an
engine's arguments or environment, a two-GPU part is refused before a start and says so. A test
harness, not something a learner sees; it starts no vLLM engine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("notebooks/[0-9]*.ipynb"), *ROOT.glob("labs/lab*.ipynb")])
SETUP = (
    f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
    "from tests.gpu_dry import in_kernel\nin_kernel.install()\ndel in_kernel"
)

pytestmark = pytest.mark.gpu_dry


@pytest.fixture(scope="module")
def gpu_machine(tmp_path_factory):
    """The environment every kernel of this module inherits: one simulated H200, a throw-away
    store, cache and lock folder (so nothing here meets a real engine or a real row)."""
    base = tmp_path_factory.mktemp("gpu_dry")
    cache = base / "cache"
    cache.mkdir()
    real_models = ROOT / ".cache" / "models"
    real_models.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(real_models)  # the embedded model and its quantized copies: read, not remade
    env = {
        "GUIDE_DEVICE": "cuda",
        "GUIDE_GPUS": "NVIDIA H200",
        "GUIDE_SIZE": "smoke",
        "GUIDE_RESULTS": str(base / "results"),
        "GUIDE_CACHE": str(cache),
        "GUIDE_LOCK_DIR": str(base),
        "GUIDE_ENGINE_GRACE": "5",
        "GUIDE_DRY_STARTS": str(base / "starts.jsonl"),
        "GUIDE_ZYGOTE": "0",
        "GUIDE_SIM_GPU_GIB": "140",
        "GUIDE_TEMPO_LOG": str(base / "tempo.jsonl"),
    }  # not the run's tempo
    saved = {
        k: os.environ.get(k)
        for k in [
            *env,
            "GUIDE_ZYGOTE_SOCKET",
            "GUIDE_ZYGOTE_KEY",
            "GUIDE_ENDPOINT",
            "GUIDE_ENGINE_LAYOUT",
            "GUIDE_CPU_ISA",
            "GUIDE_NOTEBOOK",
        ]
    }
    for k in saved:
        os.environ.pop(k, None)
    os.environ.update(env)
    yield base
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_runs_on_one_gpu(page, gpu_machine, monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("GUIDE_NOTEBOOK", page.stem)
    nb = nbformat.read(page, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(SETUP))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(page.parent)}})
    try:
        client.execute()
    except CellExecutionError as e:
        cell = next(
            (
                i - 1
                for i, c in enumerate(nb.cells)
                if any(o.get("output_type") == "error" for o in c.get("outputs", []))
            ),
            None,
        )
        pytest.fail(
            f"{page.name} cell {cell} raised on one simulated GPU: {e.ename}: {e.evalue}\n{str(e)[-3000:]}",
            pytrace=False,
        )
    starts = (
        [json.loads(line) for line in (gpu_machine / "starts.jsonl").read_text().splitlines()]
        if (gpu_machine / "starts.jsonl").exists()
        else []
    )
    mine = [s for s in starts if s["notebook"] == page.stem]
    assert not [s for s in mine if s["cpu_only"]], mine
    text = "\n".join(
        str(o.get("text", "")) + json.dumps(o.get("data", {})) for c in nb.cells for o in c.get("outputs", [])
    )
    assert "Traceback" not in text, f"{page.name} printed a traceback"
