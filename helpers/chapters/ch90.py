"""Notebook 90 · the workshop room: which of the pooled experiments its chart can compare.

Pooling, ratios to each machine's baseline, the room's spread and imported files are generic
(`helpers.results.workshop`, `helpers.results.other_tools`); this is the notebook's own choice of rows.
"""
from __future__ import annotations

import pandas as pd


def compared(ratios: pd.DataFrame) -> pd.DataFrame:
    """The experiments measured with more than one configuration: one configuration alone is
    its own baseline, a ratio of 1 that says nothing."""
    if not len(ratios):
        return ratios
    return ratios.loc[ratios.groupby("experiment")["config_label"].transform("nunique") > 1]


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("compared",)
PANELS = ()
CHECKS = ()
CLAIMS = ()
