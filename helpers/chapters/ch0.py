"""Chapter 0 · start here: the answer its "predict first" exercise is checked against.

The other two exercises read one figure of the first row (its throughput) or recompute goodput
(`helpers.slo.goodput`, in one repeat: `helpers.slo.first_repeat_goodput`); this one compares the two parts of
a request's time.
"""
from __future__ import annotations

from helpers.i18n import tr
from helpers.load import Load
from helpers.slo import first_repeat_goodput  # noqa: F401  (exercise 3's expectation)

FIRST_TOKEN, THE_REST = "first token", "the rest"
TIE = 0.10  # two figures of one run within ×÷1.1 of each other: either answer


def where_the_time_goes(row: dict, load: Load) -> str | set[str]:
    """Which part of one request took longer on average: the wait for the first token (mean TTFT)
    or every token after it (mean TPOT × the output tokens after the first). Both, where the two lie
    within TIE of each other: two figures of one run (no second start between them), and on another machine
    they can swap."""
    first, rest = row["mean_ttft_ms"], row["mean_tpot_ms"] * (load.output_len - 1)
    if first and rest and 1 / (1 + TIE) <= first / rest <= 1 + TIE:
        return {FIRST_TOKEN, THE_REST}
    return FIRST_TOKEN if first > rest else THE_REST


def time_split(row: dict, load: Load) -> str:
    """The two figures `where_the_time_goes` compared, for the check's explanation."""
    rest = row["mean_tpot_ms"] * (load.output_len - 1)
    return (tr("mean TTFT {mean_ttft_ms:.0f} ms vs {output_len} × {mean_tpot_ms:.1f} ms = {rest:.0f} ms",
               mean_ttft_ms=row['mean_ttft_ms'], output_len=load.output_len - 1, mean_tpot_ms=row['mean_tpot_ms'],
               rest=rest))


# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("FIRST_TOKEN", "THE_REST", "where_the_time_goes", "time_split")
PANELS = ()
CHECKS = ()
CLAIMS = ("TIE",)
