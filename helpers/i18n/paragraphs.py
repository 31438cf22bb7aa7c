"""A notebook's prose as the units a translator works in, and a notebook rebuilt from their translations.

The units are the ones Sphinx's gettext builder extracts from a MyST notebook (`python -m helpers.i18n
extract`): a heading's text, a paragraph (a list item's too) with its line breaks as spaces, a table
cell. Cutting them here with the same parser MyST uses (markdown-it) lets a Chinese notebook be made from
the catalogs without Sphinx, and a test checks that both cut every notebook alike. Code cells are never
touched: the Chinese notebook runs the English one's code, cell for cell, with the same cell ids.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Unit:
    """One translatable piece of a markdown cell: its text as the catalog keys it, and where it sits."""
    msgid: str
    cell_id: str
    kind: str  # "heading", "paragraph" or "cell" (a table cell)
    lines: tuple[int, int]  # the cell's source lines [start, end) it came from


def _key(content: str) -> str:
    return " ".join(line.strip() for line in content.split("\n")).strip()


def units(source: str, cell_id: str = "") -> list[Unit]:
    """The translatable pieces of one markdown cell's source, in order."""
    out, tokens = [], _MD.parse(source)
    for i, tok in enumerate(tokens):
        if tok.type != "inline" or not tok.content.strip():
            continue
        opener = tokens[i - 1]
        kind = {"heading_open": "heading", "paragraph_open": "paragraph"}.get(opener.type, "cell")
        where = opener.map or tok.map or _row_map(tokens, i)
        out.append(Unit(_key(tok.content), cell_id, kind, tuple(where) if where else (0, 0)))
    return out


def _row_map(tokens, i: int):
    """A table cell's row lines: markdown-it maps the row (tr), not the cell."""
    for tok in reversed(tokens[:i]):
        if tok.type == "tr_open":
            return tok.map
    return None


def notebook_units(nb: dict) -> list[Unit]:
    """Every translatable piece of a notebook's markdown cells."""
    return [u for c in nb["cells"] if c["cell_type"] == "markdown"
            for u in units("".join(c["source"]) if isinstance(c["source"], list) else c["source"], c.get("id", ""))]


def translate_cell(source: str, lookup) -> str:
    """The cell's markdown with each piece replaced by lookup(msgid) where it gives one (None keeps the
    English): a paragraph becomes one line after its own prefix (a list marker, indentation), a heading
    keeps its hashes, a table row keeps its pipes."""
    lines = source.split("\n")
    tokens = _MD.parse(source)
    replaced: dict[int, str] = {}  # first line of a piece → its new text; other lines of the piece dropped
    dropped: set[int] = set()
    rows: dict[int, list[tuple[str, str]]] = {}  # table row line → [(cell text, translation)]
    for i, tok in enumerate(tokens):
        if tok.type != "inline" or not tok.content.strip():
            continue
        new = lookup(_key(tok.content))
        if new is None:
            continue
        opener = tokens[i - 1]
        if opener.type in ("heading_open", "paragraph_open") and opener.map:
            start, end = opener.map
            first = tok.content.split("\n")[0].strip()
            at = lines[start].find(first)
            if at < 0:
                continue  # a line the parser rewrote (an escape): leave the English
            replaced[start] = lines[start][:at] + new
            dropped.update(range(start + 1, end))
        elif (row := _row_map(tokens, i)) is not None:
            rows.setdefault(row[0], []).append((tok.content.strip(), new))
    for line, cells in rows.items():
        parts = lines[line].split("|")
        for text, new in cells:
            for k, part in enumerate(parts):
                if part.strip() == text:
                    parts[k] = part.replace(text, new, 1)
                    break
        replaced[line] = "|".join(parts)
    return "\n".join(replaced.get(n, line) for n, line in enumerate(lines) if n not in dropped)


def translated_notebook(nb: dict, lookup, language: str = "zh_CN") -> dict:
    """A copy of the notebook with its markdown cells translated and everything else as it is (code,
    cell ids, metadata; outputs cleared), and the language in its metadata."""
    out = copy.deepcopy(nb)
    for cell in out["cells"]:
        if cell["cell_type"] == "markdown":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = translate_cell(src, lookup).splitlines(True)
        elif cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    out.setdefault("metadata", {})["language_info"] = {**out["metadata"].get("language_info", {})}
    out["metadata"].setdefault("guide", {})["language"] = language
    return out
