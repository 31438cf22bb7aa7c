"""The test run's notebook kernels: forked from one process that imported their common imports once.

A kernel otherwise imports IPython's kernel, pandas, Altair and vLLM's benchmark client afresh:
8-10 s of a core each, for each of the run's ~70 kernels (nbval's English and Chinese notebooks,
the GPU dry run's pages, the book's, JupyterLab's in the browser tests). `share` starts the run's
kernel zygote (_kernel_zygote.py) and puts a `python3` kernelspec of the run's own first on
JUPYTER_PATH; its launcher (_kernel_launch.py) forks each kernel from the zygote, or, where the
zygote does not serve the kernel's environment, starts it as usual. The kernel that results runs
the same code under the same environment; only its imports were made before the fork. A learner's
Jupyter never comes here. GUIDE_KERNEL_ZYGOTE=0 turns it off.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.run._kernel_launch import KEY, SOCKET, key

_proc: subprocess.Popen | None = None


def share(folder: Path, log_path: Path) -> bool:
    """Start the zygote (socket and kernelspec in `folder`); True if started."""
    global _proc
    if os.environ.get(SOCKET) == "0":
        return False
    spec_dir = folder / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = json.loads((Path(sys.prefix) / "share/jupyter/kernels/python3/kernel.json").read_text())
    spec["argv"] = [sys.executable, str(Path(__file__).with_name("_kernel_launch.py")), "-f", "{connection_file}"]
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    path = folder / "kernels.sock"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        _proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_kernel_zygote.py")), str(path)],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("JUPYTER_PATH")) if p)
    os.environ[SOCKET], os.environ[KEY] = str(path), key(os.environ)
    return True


def stop() -> None:
    global _proc
    if _proc is not None:
        _proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            _proc.wait(timeout=10)
        if _proc.poll() is None:
            _proc.kill()
        _proc = None
