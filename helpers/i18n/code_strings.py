"""The English an exercise prints, where it is written in a code cell: a code cell is never translated,
so `Question("bytes per token", …, "every layer stores …", unit="bytes", known_wrong={"you forgot …": …})`
would stay English. Its name, hint, unit and the reasons of its known mistakes are collected here into
the `guide` catalog, and `helpers.exercises` shows each through `tr()`."""
from __future__ import annotations

import ast

CALLS = {"Question": {0: "name", 3: "hint"}, "Choice": {0: "name", 3: "hint"}}
KEYWORDS = ("name", "hint", "unit")


def exercise_strings(source: str) -> list[str]:
    """Each literal string a Question or Choice built in `source` prints: its name, hint, unit and the
    reasons (keys) of its `known_wrong`. A string computed at run time (an f-string) is left out."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython magics: nothing an exercise prints
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called not in CALLS:
            continue
        values = [a for i, a in enumerate(node.args) if i in CALLS[called]]
        values += [k.value for k in node.keywords if k.arg in KEYWORDS]
        values += [key for k in node.keywords if k.arg == "known_wrong" and isinstance(k.value, ast.Dict)
                   for key in k.value.keys]
        found += [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value]
    return list(dict.fromkeys(found))


def notebook_strings(nb: dict) -> list[str]:
    """exercise_strings over a notebook's code cells, in order, each once."""
    found: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            found += exercise_strings("".join(cell["source"]))
    return list(dict.fromkeys(found))


__all__ = ["exercise_strings", "notebook_strings"]
