"""Two sizes, one code path: `smoke` (CI, a few minutes a notebook) and `full` (learners).

Set GUIDE_SIZE=smoke|full before starting Jupyter, or call `set_size` in a notebook.
"""
from __future__ import annotations

import os

from helpers.i18n import tr

_size = os.environ.get("GUIDE_SIZE", "full")


def size() -> str:
    return _size


def set_size(name: str) -> None:
    global _size
    if name not in ("smoke", "full"):
        raise ValueError(tr("size must be 'smoke' or 'full'"))
    _size = name


def smoke_or_full(smoke, full):
    """The smoke value under CI's size, the full one otherwise."""
    return smoke if _size == "smoke" else full


def repeats() -> int:
    """How many times `measure` runs a load by default: once for a smoke check, three times
    for a learner, so that tables show the run-to-run spread and verdicts can allow for it."""
    return smoke_or_full(1, 3)
