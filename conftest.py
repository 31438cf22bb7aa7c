"""Test-run wiring: notebooks run at smoke size, GPU-only notebooks skip with a reason, the
tests marked after_notebooks and then the browser tests run last (they reuse what the
notebooks stored), and the run ends with
one line on its tempo: engine starts, distinct configurations, seconds spent starting.
`bash guide.sh test --quick` (GUIDE_QUICK=1) runs only what starts no engine, and fails a test that tries.

The test run starts single-rank CPU engines in the "merged" layout (the worker inside the
engine-core process: two processes import vLLM instead of three, about half the start time
here). Every row records `engine_layout`, so these rows never match a learner's; the
parallel-layout comparisons (synthetic model) keep vLLM's layout. Every start, in either
layout, forks its API server and engine core from one process that imported vLLM once (the
run's shared zygote, tests/run/zygote.py); only vLLM's workers import it again. Every notebook
kernel, likewise, is forked from one process that imported IPython's kernel, pandas, Altair and
vLLM's benchmark client once (tests/run/kernels.py; GUIDE_KERNEL_ZYGOTE=0 turns it off). That machinery and
the tempo log live in tests/run/, hooked into every kernel by an IPython startup file.
tests/engine/test_handover_engine.py runs vLLM's own layout end to end the way a learner's
start runs it, unforked. GUIDE_ENGINE_LAYOUT=vllm runs the whole suite in vLLM's layout instead.
"""
import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("GUIDE_SIZE", "smoke")  # inherited by the kernels nbval starts
os.environ.setdefault("GUIDE_ENGINE_LAYOUT", "merged")
os.environ.setdefault("GUIDE_TEMPO_LOG", str(Path(tempfile.gettempdir()) / f"guide-tempo-{os.getpid()}.jsonl"))
_ROOT = Path(__file__).resolve().parent


def _hook_kernels_into_the_run() -> Path:
    """Every kernel the run starts (nbval's, the browser test's JupyterLab's) runs tests/run's
    install() first: an IPython startup file in an IPYTHONDIR of the run's own, and the repository on
    PYTHONPATH so that the kernels, started in the notebooks' folders, find `tests.run`."""
    ipython = Path(tempfile.mkdtemp(prefix="guide-ipython-"))
    startup = ipython / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-guide-test-run.py").write_text("from tests.run import install\ninstall()\n")
    os.environ["IPYTHONDIR"] = str(ipython)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
    return ipython


_IPYTHONDIR = _hook_kernels_into_the_run()
# Removed at exit, after an IPython shell of this process (registered later, run earlier) has
# written its history there: removing it at session end made that write fail on every run.
atexit.register(shutil.rmtree, _IPYTHONDIR, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    from helpers import registry
    for item in items:
        path = str(item.fspath)
        if path.endswith(".ipynb"):
            meta = json.loads(open(path).read())["metadata"].get("guide", {})
            if not registry.runs_here(meta):
                item.add_marker(pytest.mark.skip(reason="this notebook needs a CUDA GPU (metadata guide.accelerator)"))
    items.sort(key=_order)


def _order(item) -> int:
    """Notebooks and other tests first; then the tests that read what the notebooks stored; the
    browser tests (which reuse the notebooks' rows too) last."""
    return 2 if item.get_closest_marker("browser") else 1 if item.get_closest_marker("after_notebooks") else 0


def pytest_sessionstart(session):
    """One zygote for the whole run (every kernel's first start finds vLLM imported), and this
    process hooked into the run like the kernels (tests/engine starts engines from here)."""
    from tests.run import forbid_engines, install, kernels, zygote
    if os.environ.get("GUIDE_QUICK"):  # bash guide.sh test --quick: no engine, so no zygote either
        forbid_engines()
        return
    zygote.share(Path(tempfile.mkdtemp(prefix="guide-zygote-")))
    from helpers.engine.server import log_dir
    kernels.share(Path(tempfile.mkdtemp(prefix="guide-kernels-")), log_dir() / "kernel-zygote.log")
    install()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Name the notebook for the kernel nbval is about to start (engine messages and the tempo line), and
    its language: a translated notebook (zh_CN/…) prints what helpers say at run time in that language."""
    path = Path(str(item.fspath))
    os.environ["GUIDE_NOTEBOOK"] = f"{path.parent.name}/{path.name}" if path.suffix == ".ipynb" else ""
    lang = _language_of(path)
    if lang:
        os.environ["GUIDE_LANG"] = lang
    else:
        os.environ.pop("GUIDE_LANG", None)


def _language_of(path: Path) -> str | None:
    from helpers.i18n import LANGUAGES
    rel = path.resolve().relative_to(_ROOT) if path.resolve().is_relative_to(_ROOT) else path
    return rel.parts[0] if rel.parts and rel.parts[0] in LANGUAGES else None


def pytest_ignore_collect(collection_path, config):
    """A translated notebook runs in the suite only once every paragraph of it is translated
    (helpers.i18n.catalogs.TRANSLATED): the others are their English twins, already run."""
    path = Path(collection_path)
    lang = _language_of(path)
    if not lang or path.suffix != ".ipynb":
        return None
    from helpers.i18n.catalogs import TRANSLATED
    return path.resolve().relative_to(_ROOT / lang).as_posix() not in TRANSLATED.get(lang, ())


def pytest_sessionfinish(session):
    """The run leaves no engine of its own behind, even for the grace an idle engine otherwise
    gets; an engine it did not start (a learner's notebook, another test run) is left alone."""
    from helpers.engine import shared
    from tests.run import kernels, tempo, zygote
    rec = shared.live_record()
    if rec and rec["server_pid"] in tempo.started_in(Path(os.environ["GUIDE_TEMPO_LOG"])):
        shared.stop_engine("the test run ended", wait_for_load=False)
    folder = Path(os.environ.get("GUIDE_ZYGOTE_SOCKET", "")).parent
    zygote.stop_shared()
    if folder.name.startswith("guide-zygote-"):
        shutil.rmtree(folder, ignore_errors=True)
    folder = Path(os.environ.get("GUIDE_KERNEL_ZYGOTE", "")).parent
    kernels.stop()
    if folder.name.startswith("guide-kernels-"):
        shutil.rmtree(folder, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    from tests.run import tempo
    line = tempo.summary(Path(os.environ["GUIDE_TEMPO_LOG"]))
    if line:
        terminalreporter.write_line(f"[tempo] {line}")
