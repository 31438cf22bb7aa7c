"""Tiny helper to write a notebook from a list of (kind, source) cells, outputs-free.

Used while authoring; the committed .ipynb files are the source of truth.
"""
import json


def write(path, cells, guide_meta):
    nb = {"cells": [], "metadata": {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}, "guide": guide_meta}, "nbformat": 4, "nbformat_minor": 5}
    for i, (kind, src) in enumerate(cells):
        src = src.strip("\n")
        cell = {"cell_type": "markdown" if kind == "md" else "code", "id": f"c{i:02d}", "metadata": {},
                "source": src.splitlines(keepends=True)}
        if kind != "md":
            cell.update(execution_count=None, outputs=[])
        nb["cells"].append(cell)
    with open(path, "w") as f:
        json.dump(nb, f, sort_keys=True, indent=1, ensure_ascii=False)  # as Jupyter and ruff write it
        f.write("\n")
