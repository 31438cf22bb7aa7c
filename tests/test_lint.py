"""ruff keeps the library, the tests, the benchmarks and the notebooks' code cells clean (the rules
and line lengths are in pyproject.toml and notebooks/ruff.toml, labs/ruff.toml). The notebooks' code
is also kept in ruff's format: a learner reads it beside the prose, at 100 columns."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _ruff() -> str:
    found = Path(sys.executable).with_name("ruff")
    if found.exists():
        return str(found)
    if shutil.which("ruff"):
        return shutil.which("ruff")
    pytest.fail("ruff is not installed: bash guide.sh test installs it (requirements/test.txt)")


def test_ruff_finds_nothing():
    done = subprocess.run([_ruff(), "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"ruff check (run `ruff check --fix .`, then fix the rest):\n{done.stdout[-4000:]}"


def test_notebook_code_is_in_ruffs_format():
    done = subprocess.run([_ruff(), "format", "--no-cache", "--check", "notebooks", "labs"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"run `ruff format notebooks labs`:\n{done.stdout[-4000:]}"
