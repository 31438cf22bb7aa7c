"""The package's structure, read from its imports (those inside functions too): no module imports
one that imports it back, no module imports one from a higher layer (helpers/README.md draws
them), and the functions that judge rows never reach for an engine."""
import ast
from pathlib import Path

import helpers

ROOT = Path(helpers.__file__).parent
JUDGING = ("helpers.slo", "helpers.tuning", "helpers.chapters.ch6a.service", "helpers.advisor", "helpers.verdicts")
RUNNING = ("helpers.experiment", "helpers.chapters.ch6a.runs", "helpers.engine")
# Lowest first. A module may import its own layer or a lower one; a new module gets a layer here.
LAYERS = {
    "settings and errors": ("errors", "settings", "hardware", "probes", "run_size", "quantize", "i18n"),
    "config": ("config", "cpu_refusals", "models"),
    "engine": ("engine",),
    "loads and results": ("load", "results"),
    "runs": ("experiment", "correctness"),
    "judging rows": ("slo", "tuning", "advisor", "verdicts", "scheduler_rule"),
    "presentation": ("tables", "charts", "widgets", "registry", "exercises"),
    "chapters' homes": ("chapters",),
    "tools": ("doctor", "book", "helpers"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The guide's modules that `path` imports, anywhere in the file. `from helpers.x import y`
    counts as helpers.x.y where that is a module, else helpers.x."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                     for a in node.names]
        else:
            continue
        found |= {n for n in names if n in known}
    return found - {"helpers"}  # the package's face imports the rest; no module imports it back


def graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: imports_of(path, set(mods)) - {name} for name, path in mods.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_reader_finds_a_circle_where_there_is_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_one_that_imports_it_back():
    assert circles(graph()) == []


def test_judging_rows_never_reaches_for_an_engine():
    g = graph()
    for judge in JUDGING:
        reached = {m for m in g[judge] if m.startswith(RUNNING)}
        assert not reached, f"{judge} imports {reached}: judging is a function of rows"


def layer_of(module: str) -> int:
    name = module.removeprefix("helpers.").split(".")[0] if module != "helpers" else "helpers"
    for i, members in enumerate(LAYERS.values()):
        if name in members:
            return i
    raise AssertionError(f"{module} has no layer: add it to LAYERS in tests/unit/test_import_graph.py")


def arrows_up(g: dict[str, set[str]]) -> list[str]:
    return [f"{a} -> {b}" for a in sorted(g) for b in sorted(g[a]) if layer_of(b) > layer_of(a)]


def test_the_reader_finds_an_arrow_up():
    assert arrows_up({"helpers.config": {"helpers.experiment"}}) == ["helpers.config -> helpers.experiment"]
    assert arrows_up({"helpers.experiment": {"helpers.config"}}) == []


def test_no_module_imports_from_a_higher_layer():
    assert arrows_up(graph()) == []


def test_no_module_imports_another_modules_private_name():
    private = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
                private += [f"{name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == [], "make it public (no leading underscore) or keep it in its module"


def test_one_name_one_meaning():
    """A public function or class name is defined in one module only, apart from interfaces every
    chapter or tool implements (`claims`, `main`) and charts named after what they draw."""
    by_name: dict[str, list[str]] = {}
    for name, path in _modules().items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                by_name.setdefault(node.name, []).append(name)
    shared = {n: sorted(m) for n, m in by_name.items() if len(m) > 1 and n not in ("claims", "main")}
    drawn = {n: m for n, m in shared.items() if len(m) == 2 and "helpers.charts" in m}
    assert {n: m for n, m in shared.items() if n not in drawn} == {}
