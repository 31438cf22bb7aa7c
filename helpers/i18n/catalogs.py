"""The catalogs: extracted from the English notebooks by Sphinx, kept in step by sphinx-intl, read back to
make the translated notebooks, and checked for entries an English change left behind.

    python -m helpers.i18n extract      # Sphinx's gettext builder, then sphinx-intl update (the book's tools)
    python -m helpers.i18n status       # per notebook: translated, fuzzy, missing (names each paragraph)
    python -m helpers.i18n notebooks    # the Chinese notebooks, made from the English ones and the catalogs
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from helpers.i18n import HEADING, LOCALES, ROOT
from helpers.i18n.code_strings import (
    claim_strings,
    exercise_strings,
    module_constants,
    notebook_headings,
    notebook_strings,
)
from helpers.i18n.paragraphs import notebook_units, translated_notebook

CACHE = ROOT / ".cache" / "i18n"
SOURCES = ("notebooks", "labs")  # the folders whose notebooks are translated (not their solutions/)
# The notebooks whose every paragraph has a translation (tests hold them to it, and the suite runs their
# translated copy); a translated copy of any other keeps each untranslated paragraph in English.
TRANSLATED = {"zh_CN": tuple(sorted(f"{folder}/{p.name}" for folder in SOURCES
                                    for p in (ROOT / folder).glob("*.ipynb")))}


def notebooks() -> list[Path]:
    """Every notebook a learner opens: the chapters, the labs and the workshop notebook."""
    return sorted(p for folder in SOURCES for p in (ROOT / folder).glob("*.ipynb"))


def po_path(nb: Path, lang: str) -> Path:
    """locales/<lang>/LC_MESSAGES/notebooks/03_….po: where Sphinx's docname puts a notebook's catalog."""
    return LOCALES / lang / "LC_MESSAGES" / nb.relative_to(ROOT).with_suffix(".po")


def read_catalog(po: Path):
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        return read_po(f)


def lookup(nb: Path, lang: str):
    """msgid → its translation, or None where the catalog has none (missing, empty or fuzzy)."""
    po = po_path(nb, lang)
    if not po.exists():
        return lambda msgid: None
    done = {m.id: m.string for m in read_catalog(po) if m.id and m.string and not m.fuzzy}
    return done.get


@dataclass
class Status:
    """One notebook's catalog against its English text."""
    notebook: str
    units: int = 0
    translated: int = 0
    problems: list[str] = field(default_factory=list)  # "cell c03c: fuzzy: 'How a figure is …'"


def status(lang: str, only: list[Path] | None = None) -> list[Status]:
    """For each notebook: how many of its paragraphs the catalog translates, and each one it does not
    (missing: the English changed or is new; fuzzy: sphinx-intl kept an old translation that needs a look)."""
    out = []
    for nb_path in only or notebooks():
        nb = json.loads(nb_path.read_text())
        po = po_path(nb_path, lang)
        entries = {m.id: m for m in read_catalog(po) if m.id} if po.exists() else {}
        st = Status(nb_path.relative_to(ROOT).as_posix())
        for u in notebook_units(nb):
            st.units += 1
            m = entries.get(u.msgid)
            why = "missing" if m is None else "fuzzy" if m.fuzzy else "empty" if not m.string else None
            if why:
                st.problems.append(f"cell {u.cell_id}: {why}: {u.msgid[:70]!r}")
            else:
                st.translated += 1
        out.append(st)
    return out


def extract(lang: str = "zh_CN") -> Path:
    """Sphinx's gettext builder over the English notebooks (output-free, as committed), then sphinx-intl
    update: a new paragraph gets an empty entry, a changed one a fuzzy entry with its old translation."""
    pot = CACHE / "pot"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        for nb in notebooks():
            (src / nb.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(nb, src / nb.relative_to(ROOT))
        (src / "conf.py").write_text('project = "vLLM performance tuning, by measurement"\n'
                                     'extensions = ["myst_nb"]\nnb_execution_mode = "off"\ngettext_compact = False\n'
                                     'suppress_warnings = ["myst.xref_missing", "toc.not_included", '
                                     '"mystnb.unknown_mime_type"]\n')
        (src / "index.md").write_text("# index\n")
        shutil.rmtree(pot, ignore_errors=True)
        _run([sys.executable, "-m", "sphinx", "-b", "gettext", "-q", str(src), str(pot)])
    (pot / "index.pot").unlink(missing_ok=True)
    runtime_pot(pot / "guide.pot")
    _run([sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-d", str(LOCALES), "-l", lang,
          "--line-width", "-1"])
    _update_contexts(LOCALES / lang / "LC_MESSAGES" / "guide.po", pot / "guide.pot")
    for po in (LOCALES / lang / "LC_MESSAGES").rglob("*.po"):  # no source line numbers: they change each edit
        _drop_locations(po)
    return pot


def _update_contexts(po: Path, pot: Path) -> None:
    """sphinx-intl keeps one entry per msgid, so a table heading (context "heading") that reads like an entry
    already there is left out; Babel's own update keeps both (the new one empty or fuzzy, as sphinx-intl would)."""
    from babel.messages.pofile import read_po, write_po

    catalog = read_catalog(po)
    with pot.open("rb") as f:
        catalog.update(read_po(f))
    with po.open("wb") as f:
        write_po(f, catalog, width=0)


def runtime_pot(target: Path) -> Path:
    """The `guide` domain: every `tr("…")` and `N_("…")` in helpers/ (what a learner reads at run time), by
    Babel's extractor, the way `pybabel extract -k tr -k N_` would; then what each exercise prints where a
    notebook's code cell or a chapter's home builds it (`code_strings`); table headings (`heading_("…")` in
    helpers/, a table a code cell builds) under the context "heading", so a heading and a unit word or a
    sentence that reads the same are translated apart."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir
    from babel.messages.pofile import write_po

    catalog = Catalog(project="vLLM performance tuning, by measurement")
    for filename, lineno, message, comments, context in extract_from_dir(
            str(ROOT / "helpers"), method_map=[("**.py", "python")], keywords={"tr": None, "N_": None}):
        catalog.add(message, locations=[(f"helpers/{filename}", lineno)], auto_comments=comments, context=context)
    for filename, lineno, message, comments, _ in extract_from_dir(  # table headings: their own context
            str(ROOT / "helpers"), method_map=[("**.py", "python")], keywords={"heading_": None}):
        catalog.add(message, locations=[(f"helpers/{filename}", lineno)], auto_comments=comments, context=HEADING)
    for py in sorted((ROOT / "helpers").rglob("*.py")):
        for text in exercise_strings(py.read_text()) + claim_strings(py.read_text()):
            catalog.add(text, locations=[(py.relative_to(ROOT).as_posix(), 0)])
    for nb in notebooks():
        for text in notebook_strings(json.loads(nb.read_text())):
            catalog.add(text, locations=[(nb.relative_to(ROOT).as_posix(), 0)])
        for text in notebook_headings(json.loads(nb.read_text())):
            catalog.add(text, locations=[(nb.relative_to(ROOT).as_posix(), 0)], context=HEADING)
    # Extraction is a build step over the whole package (like `python -m helpers.book`), so it imports the
    # modules above this layer by name: each setting's axis title (charts.setting_titles, from config.SETTINGS)
    # and each chapter home's constants. At run time nothing here imports them.
    import importlib
    for text in importlib.import_module("helpers.charts").setting_titles().values():
        catalog.add(text, locations=[("helpers/config.py", 0)])
    for py in sorted((ROOT / "helpers" / "chapters").rglob("*.py")):
        name = ".".join(py.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for text in module_constants(importlib.import_module(name)):
            catalog.add(text, locations=[(py.relative_to(ROOT).as_posix(), 0)])
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as f:
        write_po(f, catalog, width=0)
    return target


def _drop_locations(po: Path) -> None:
    from babel.messages.pofile import write_po

    catalog = read_catalog(po)
    with po.open("wb") as f:
        write_po(f, catalog, width=0, no_location=True, omit_header=False, sort_output=False)


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{(done.stderr or done.stdout)[-3000:]}")


def write_notebooks(lang: str = "zh_CN", out: Path | None = None) -> list[Path]:
    """The translated notebooks under <lang>/notebooks and <lang>/labs (output-free, code and cell ids as
    in English; a paragraph with no translation stays English). Links out of the folder are moved one
    level up, so ../docs/… still resolves."""
    out = out or ROOT / lang
    written = []
    for nb_path in notebooks():
        nb = json.loads(nb_path.read_text())
        new = translated_notebook(nb, lookup(nb_path, lang), lang)
        for cell in new["cells"]:
            if cell["cell_type"] == "markdown":
                cell["source"] = [line.replace("](../", "](../../") for line in cell["source"]]
        target = out / nb_path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(new, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m helpers.i18n", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["extract", "status", "notebooks"])
    p.add_argument("--lang", default="zh_CN")
    args = p.parse_args(argv)
    if args.command == "extract":
        print(f"catalogs updated from {extract(args.lang)}")
    elif args.command == "notebooks":
        print(f"{len(write_notebooks(args.lang))} notebooks written under {ROOT / args.lang}")
    else:
        for st in status(args.lang):
            print(f"{st.notebook}: {st.translated} of {st.units} paragraphs translated")
            for line in st.problems[:5]:
                print("   ", line)
            if len(st.problems) > 5:
                print(f"    … and {len(st.problems) - 5} more")
    return 0
