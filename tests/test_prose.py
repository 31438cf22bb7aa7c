"""Every number a learner reads comes from this run, the model's config or the engine.

The rule, checked on every markdown cell of the notebooks and labs: a number followed by a
unit of measurement (time, memory, tokens, requests, sequences, blocks, cores, bytes, per cent,
"×", before or after) may
not be typed into prose. Such a number must be printed by code (an f-string, or a `Markdown`
output computed from the data). Two things stay allowed, because they are not measurements:
text in backticks (code, settings such as `max_num_batched_tokens=256`, the article's own
formula) and headings' section numbers. Quote the article's figures in backticks too, so they
read as the article's, not as ours.
"""
import json
import re

import pytest

from tests.conftest import ROOT

UNITS = (r"ms|s|sec|seconds?|min|minutes?|hours?|h|GiB|GB|MiB|MB|KiB|kB|tokens?|requests?|sequences?|seqs|"
         r"blocks?|%|×|x|tokens/s|percent|cores?|CPUs?|bytes?")
MEASUREMENT = re.compile(rf"(?<![\w.])(~|about |around )?(?:×\s*\d[\d,.]*|\d[\d,.]*(?:\s*[–-]\s*\d[\d,.]*)?\s*"
                         rf"(?:{UNITS})(?![\w]))")
CODE = re.compile(r"`[^`]*`")
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("labs/*.ipynb")])


def typed_numbers(markdown: str) -> list[str]:
    """Measurement-like numbers in one markdown cell, outside code spans and fenced blocks."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    found = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):  # a heading: "## 2.1 Three targets" is a section number
            continue
        found += [m.group(0).strip() for m in MEASUREMENT.finditer(CODE.sub("", line))]
    return found


@pytest.mark.parametrize("text, hits", [
    ("It starts in about 30–45 s here.", ["about 30–45 s"]),
    ("16 requests of about 1,100 tokens need 17,500 tokens", ["16 requests", "about 1,100 tokens", "17,500 tokens"]),
    ("a budget of `max_num_batched_tokens=256` and the article's `30–40 %`", []),
    ("## 2.1 Three targets\nTwo bytes a number; chapter 3", []),
    ("a 24 GiB machine, 53.2% used, ×2.1 faster, 2x slower", ["24 GiB", "53.2%", "×2.1", "2x"]),
    ("on 2 cores, 4 bytes a number, ×2 the tokens", ["2 cores", "4 bytes", "×2"]),
])
def test_the_rule(text, hits):
    assert typed_numbers(text) == hits


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_no_typed_measurements_in_prose(nb):
    cells = json.loads(nb.read_text())["cells"]
    bad = {c.get("id", i): found for i, c in enumerate(cells)
           if c["cell_type"] == "markdown" and (found := typed_numbers("".join(c["source"])))}
    assert not bad, (f"{nb.name}: numbers with units typed into prose (print them from code, or put a "
                     f"setting / the article's figure in backticks): {bad}")
