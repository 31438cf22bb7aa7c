"""Test-run wiring: notebooks run at smoke size, GPU-only notebooks skip with a reason,
and the browser test runs last (it reuses what the notebooks stored)."""
import json
import os

import pytest

os.environ.setdefault("GUIDE_SIZE", "smoke")  # inherited by the kernels nbval starts


def _gpu_count() -> int:
    from helpers import hardware
    return hardware.describe()["gpu_count"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = str(item.fspath)
        if path.endswith(".ipynb"):
            meta = json.loads(open(path).read())["metadata"].get("guide", {})
            if "CPU" not in meta.get("accelerator", ["CPU"]) and not _gpu_count():
                item.add_marker(pytest.mark.skip(reason="this notebook needs a CUDA GPU (metadata guide.accelerator)"))
    items.sort(key=lambda it: it.get_closest_marker("browser") is not None)
