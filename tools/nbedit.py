"""Edit notebook cells in place by exact string replacement (authoring aid; keeps outputs empty).

    python tools/nbedit.py NOTEBOOK CELL_ID OLD NEW   (OLD must occur exactly once in that cell)
Used from scripts as `replace(path, cell_id, old, new)`.
"""
import json
import sys


def replace(path: str, cell_id: str, old: str, new: str) -> None:
    nb = json.load(open(path))
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    src = "".join(cell["source"])
    if src.count(old) != 1:
        raise SystemExit(f"{path} {cell_id}: expected one match, found {src.count(old)}:\n{old}")
    cell["source"] = src.replace(old, new).splitlines(keepends=True)
    with open(path, "w") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")


def source(path: str, cell_id: str) -> str:
    nb = json.load(open(path))
    return "".join(next(c for c in nb["cells"] if c.get("id") == cell_id)["source"])


if __name__ == "__main__":
    replace(*sys.argv[1:5])
