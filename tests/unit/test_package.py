"""The package's lazy names resolve to what notebooks expect (a subpackage must never
shadow an exported function: `H.measure` once became a module)."""
import importlib
import subprocess
import sys

import helpers


def test_exported_names_are_the_documented_objects():
    for name in helpers._EXPORTS:
        obj = getattr(helpers, name)
        assert not isinstance(obj, type(sys)), f"helpers.{name} is a module, not the exported object"
    for mod in helpers._MODULES:
        importlib.import_module(f"helpers.{mod}")  # every submodule imports
    for name in helpers._EXPORTS:  # ...and still after all submodules are imported
        assert not isinstance(getattr(helpers, name), type(sys)), name


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


def test_config_does_not_import_models():
    # models imports errors (ConfigError), not config; the checks that need model files live in
    # engine/preflight.py, so the two never import each other.
    code = "import sys, helpers.config; print('helpers.models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
