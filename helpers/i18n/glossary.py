"""The glossary's rule, checked on every catalog: one Chinese term per idea (locales/<lang>/GLOSSARY.md).

A translated entry whose English mentions a glossary term (outside code spans) must use that term's
Chinese (or, for an abbreviation, may keep the abbreviation); in each notebook the first entry that uses
the Chinese term carries the English in brackets, 首 token 延迟（TTFT）.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from helpers.i18n import LOCALES

_CODE = re.compile(r"`[^`]*`|\{[^{}]*\}")  # a code span, or a run-time template's {field}: not words a learner reads


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    abbr: bool

    def mentioned_in(self, english_text: str) -> bool:
        text = _CODE.sub(" ", english_text)
        flags = 0 if self.abbr else re.IGNORECASE
        return re.search(rf"(?<![\w-]){re.escape(self.english)}s?(?![\w-])", text, flags) is not None

    def bracketed(self, text: str) -> bool:
        """The English term inside brackets, full-width or not: 前缀缓存（prefix caching）."""
        flags = 0 if self.abbr else re.IGNORECASE
        return re.search(rf"[（(][^）)]*{re.escape(self.english)}[^）)]*[）)]", text, flags) is not None


def terms(lang: str = "zh_CN") -> list[Term]:
    out = []
    for line in (LOCALES / lang / "GLOSSARY.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2] in ("abbr", "term"):
            out.append(Term(cells[0], cells[1], cells[2] == "abbr"))
    return out


def problems(entries: list[tuple[str, str]], name: str, lang: str = "zh_CN", first_use: bool = True) -> list[str]:
    """entries: (English, translation) in the notebook's order; the translated ones are checked. The run-time
    catalog (first_use=False) has no reading order, so only the term rule applies to it."""
    out, introduced = [], set()
    for english, chinese in entries:
        if not chinese:
            continue
        for t in terms(lang):
            if not t.mentioned_in(english):
                continue
            if t.chinese not in chinese and not (t.abbr and t.english in chinese):
                out.append(f"{name}: {t.english!r} is translated without the glossary's {t.chinese!r}: "
                           f"{chinese[:60]!r}")
            elif first_use and t.chinese in chinese and t.english not in introduced:
                introduced.add(t.english)
                if not t.bracketed(chinese):
                    out.append(f"{name}: the first {t.chinese!r} needs the English in brackets "
                               f"({t.chinese}（{t.english}）): {chinese[:60]!r}")
    return out


def check_catalog(po: Path, lang: str = "zh_CN") -> list[str]:
    from helpers.i18n.catalogs import read_catalog

    entries = [(m.id, m.string) for m in read_catalog(po) if m.id and not m.fuzzy]
    return problems(entries, po.resolve().relative_to(LOCALES).as_posix(), lang, first_use=po.name != "guide.po")
