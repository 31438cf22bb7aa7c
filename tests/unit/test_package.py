"""The package's names resolve to what notebooks expect (a subpackage must never shadow an
exported function: `H.measure` once became a module), and Altair loads only for a chart."""
import importlib
import subprocess
import sys

import helpers

FUNCTIONS = [n for n in helpers.__all__ if not n.islower() or n in (
    "capacity", "engine_for", "goodput", "measure", "measure_each", "process_layout", "samples", "size",
    "smoke_or_full", "stop", "table", "with_floor")]


def test_exported_names_are_the_documented_objects():
    """The surface's functions and classes stay themselves, even after every submodule is imported."""
    for name in FUNCTIONS:
        assert not isinstance(getattr(helpers, name), type(sys)), f"helpers.{name} is a module, not the exported object"
    for mod in helpers._WITH_ALTAIR:
        importlib.import_module(f"helpers.{mod}")  # the lazy ones import...
    for name in FUNCTIONS:  # ...and no submodule shadows an exported name after all are imported
        assert callable(getattr(helpers, name)) and not isinstance(getattr(helpers, name), type(sys)), name


def test_importing_the_package_leaves_altair_for_the_first_chart():
    code = "import sys, helpers; print('altair' in sys.modules); helpers.charts; print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_server_entry_point_imports_only_the_standard_library():
    """Every server process starts through _launch.py, by path: anything it imports is paid
    for on every engine start (pandas and Altair once cost ~4 s here)."""
    import ast
    from pathlib import Path

    from helpers.engine import server
    launcher = Path(server.__file__).with_name("_launch.py")
    tree = ast.parse(launcher.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
