"""The guide in more than one language, from one English source.

Prose: each notebook's and lab's paragraphs are extracted into a gettext catalog of their own
(`locales/zh_CN/LC_MESSAGES/notebooks/<name>.po`, by Sphinx's gettext builder and sphinx-intl:
`python -m helpers.i18n extract`), and a Chinese notebook is made from the English one and its
catalog (`python -m helpers.i18n notebooks`: code, cell ids and metadata unchanged). A changed English
paragraph leaves its old entry fuzzy (sphinx-intl) or missing, and `status` names it.

What a learner reads at run time (verdict words, table headings, check messages) comes through
`tr()` from the `guide` catalog, in the language `GUIDE_LANG` names (`zh_CN`; English otherwise).
Numbers, units, setting names and vLLM's own flags and log lines stay as they are.
"""
from __future__ import annotations

import functools
import gettext
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LOCALES = ROOT / "locales"
LANGUAGES = ("zh_CN",)
ALIASES = {"zh": "zh_CN", "zh_cn": "zh_CN", "zh-cn": "zh_CN", "zh_CN": "zh_CN", "en": "en", "": "en"}


def language() -> str:
    """The language a learner reads: GUIDE_LANG (zh, zh_CN), else English."""
    lang = os.environ.get("GUIDE_LANG", "")
    return ALIASES.get(lang, ALIASES.get(lang.lower(), "en"))


@functools.lru_cache(maxsize=None)
def _translation(lang: str) -> gettext.NullTranslations:
    if lang == "en":
        return gettext.NullTranslations()
    po = LOCALES / lang / "LC_MESSAGES" / "guide.po"
    if not po.exists():
        return gettext.NullTranslations()
    with compiled(po).open("rb") as f:
        return gettext.GNUTranslations(f)


def compiled(po: Path) -> Path:
    """The .mo of a catalog (fuzzy entries left out), under .cache/i18n/, rebuilt when the .po is newer."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    mo = ROOT / ".cache" / "i18n" / po.relative_to(LOCALES).with_suffix(".mo")
    if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
        mo.parent.mkdir(parents=True, exist_ok=True)
        with po.open("rb") as f:
            catalog = read_po(f)
        with mo.open("wb") as f:
            write_mo(f, catalog)
    return mo


def tr(text: str, /, **fields) -> str:
    """`text` in the learner's language where the `guide` catalog has it; the English otherwise (and an
    empty text stays empty: gettext would answer it with the catalog's header). With `fields`, `text` is a
    template (`"{tokens:,.0f} KV tokens"`) filled after translation, so the catalog holds one entry for
    every run's figures and a translation may put the figures where its grammar wants them."""
    said = _translation(language()).gettext(text) if text else text
    return said.format(**fields) if fields else said


HEADING = "heading"  # the catalog's context for a table heading: a unit word ("tokens" → "个 token") never matches one


def heading(text: str) -> str:
    """A table heading in the learner's language, where the `guide` catalog has it as a heading (marked
    `heading_()` in helpers/, or built by a notebook's code cell); the English otherwise."""
    return _translation(language()).pgettext(HEADING, text) if text else text


def heading_(text: str) -> str:
    """Marks a table heading for the catalog (context "heading"), shown with `heading()` (helpers.tables)."""
    return text


def N_(text: str) -> str:
    """Marks a string for the catalog where it is defined (a table of axis titles) and translated where it
    is shown, with `tr()`."""
    return text


__all__ = ["HEADING", "LANGUAGES", "N_", "compiled", "heading", "heading_", "language", "tr"]
