"""Self-checking exercises in the style of Kaggle's learntools: `q.check(answer)`,
`q.hint()`, `q.solution()`. Checks compare with values measured on a real engine or
computed from the model's own config; known wrong answers get a specific explanation.
Solutions live apart, in labs/solutions/ and notebooks/solutions/, so a learner opens them on
purpose.

A chapter's exercise is a `Question` (a number) or a `Choice` (one of a few named answers). Both
take `expected` as a function, called only at check time, so a "predict, then measure" exercise
can be written before the measurement exists: the learner fills in the answer, runs the
measurement, then checks.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from helpers.i18n import tr

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "labs" / "solutions"
SOLUTION_DIRS = (SOLUTIONS, ROOT / "notebooks" / "solutions")


def solution_path(name: str) -> Path:
    for folder in SOLUTION_DIRS:
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(tr("no solution file {name} in {value}", name=name,
                               value=', '.join((str(d) for d in SOLUTION_DIRS))))


class Question:
    def __init__(self, name: str, expected: Callable[[], float], tolerance: float, hint: str,
                 solution_file: str, known_wrong: dict[str, Callable[[], float]] | None = None, unit: str = ""):
        self.name, self._expected, self.tolerance, self._hint = name, expected, tolerance, hint
        self.solution_file, self.known_wrong, self.unit = solution_file, known_wrong or {}, unit
        self.passed = False

    def check(self, answer) -> bool:
        if answer is None or answer is Ellipsis:
            print(tr("✗ {name}: replace the ... with your answer first.").format(name=tr(self.name)))
            return False
        try:
            value = float(answer)
        except (TypeError, ValueError):
            print(tr("✗ {name}: expected a number, got {answer}.").format(name=tr(self.name), answer=repr(answer)))
            return False
        want = self._expected()
        if want is None or (isinstance(want, float) and math.isnan(want)):  # NaN: a row without the figure
            return self._unchecked()
        # a slip that lands within the 0.5 % floor of the right answer cannot be told from it: not named
        wrongs = {why: w for why, wrong in self.known_wrong.items()
                  if (w := wrong()) is not None and math.isfinite(w) and w != want
                  and not (math.isfinite(want) and abs(w - want) <= 0.005 * abs(want))}
        tolerance = self._tolerance(want, wrongs.values())
        close = math.isfinite(want) and abs(value - want) <= tolerance * abs(want)
        if value == want or close:  # an infinite answer ("never") passes only as itself
            self.passed = True
            print(tr("✓ {name}: never (math.inf).").format(name=tr(self.name)) if math.isinf(want) else
                  tr("✓ {name}: {value} {unit} — within {tolerance} of {want}.").format(
                      name=tr(self.name), value=_num(value), unit=tr(self.unit), tolerance=f"{tolerance:.1%}",
                      want=_num(want)))
            return True
        if math.isinf(value) and math.isfinite(want):
            print(tr("✗ {name}: not never (math.inf): here it is a finite number. Try q.hint().").format(
                name=tr(self.name)))
            return False
        step = _last_digit(answer)
        # a named mistake only where the answer lies nearer it than the right answer does
        right = abs(value - want) if math.isfinite(want) else math.inf
        near = {why: abs(value - w) for why, w in wrongs.items()
                if (value == w or abs(value - w) <= max(0.01, tolerance) * abs(w)) and abs(value - w) < right}
        # the nearest named mistake(s); where several lie within the answer's last digit, each of them: a
        # slip that lands near another's figure is not that other slip
        nearest = min(near.values(), default=0.0)
        matched = [why for why, d in near.items()
                   if d <= nearest * (1 + 1e-6) + 1e-12 or (step and d <= step / 2 * (1 + 1e-6))]
        if matched and step and math.isfinite(want) and \
                all(abs(wrongs[why] - want) < step for why in matched):  # too few digits to tell them apart
            print(tr("✗ {name}: {value} has too few digits to tell the right answer from a known mistake (they differ "
                    "by less than {step}): give more significant digits.").format(
                name=tr(self.name), value=_num(value), step=f"{step:g}"))
            return False
        if matched:  # two mistakes can give the same number: name each
            print(tr("✗ {name}: {value} is what you get if {mistakes}.").format(
                name=tr(self.name), value=_num(value), mistakes=tr(", or if ").join(tr(why) for why in matched)))
            return False
        if step and math.isfinite(want) and abs(value - want) < step / 2:  # right, to the digits typed
            narrowed = tr(", because a known mistake lies close") if tolerance < self.tolerance else ""
            print(tr("✗ {name}: {value} rounds the right answer too far to check it (within {tolerance} here"
                    "{narrowed}): give more significant digits.").format(
                name=tr(self.name), value=_num(value), tolerance=f"{tolerance:.1%}", narrowed=narrowed))
            return False
        off = (tr("off by {share}").format(share=f"{abs(value - want) / abs(want):.0%}") if want and math.isfinite(want)
               else tr("not {want} (math.inf: never)").format(want=f"{want:g}") if math.isinf(want)
               else tr("not {want}").format(want=f"{want:g}"))
        print(tr("✗ {name}: {value} {unit} is {off}. Try q.hint().").format(
            name=tr(self.name), value=_num(value), unit=tr(self.unit), off=off))
        return False

    def _tolerance(self, want: float, wrongs) -> float:
        """The tolerance, narrowed to half the distance to the nearest known wrong answer where that
        lies within it: a check that accepts a named mistake is too loose (the nominal 8 in flight for
        the measured 5.9, a floor without its KV term). Never below 0.5 %: closer than that, the two
        cannot be told apart by a number typed with a few digits."""
        if not want or not math.isfinite(want):
            return self.tolerance
        gaps = [abs(w - want) / abs(want) for w in wrongs]
        nearest = min(gaps, default=math.inf)
        return max(min(self.tolerance, nearest / 2), 0.005) if nearest < self.tolerance else self.tolerance

    def _unchecked(self) -> bool:
        """No expectation could be computed (a GPU run without the row it needs, a premise that
        failed): say so instead of judging."""
        print(tr("– {name}: cannot be checked here: this run has no figure to check it against (its rows lack what "
                "the check reads, or the measurement cannot be judged).").format(name=tr(self.name)))
        return False

    def hint(self) -> None:
        print(tr("Hint ({name}): {hint}").format(name=tr(self.name), hint=tr(self._hint)))

    def solution(self) -> None:
        print(solution_path(self.solution_file).read_text())


def _last_digit(answer) -> float | None:
    """The step of the last digit the answer was given with (0.048 → 0.001, 5.0 → 0.1, 23 → 1), None for inf."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        return None
    if isinstance(answer, int):
        return 1.0
    text = repr(answer)  # a float keeps the digits typed: 5.0 → 0.1
    if "e" in text:
        return None
    return 10.0 ** -len(text.split(".")[1])


class Choice(Question):
    """An answer picked from named options; `expected` returns the right option (computed from data),
    or a set of options a run cannot tell apart (each within the noise of the best)."""

    def __init__(self, name: str, options: list[str], expected: Callable[[], str], hint: str, solution_file: str,
                 why: Callable[[], str] | None = None, why_when_wrong: bool = True):
        super().__init__(name, expected, 0.0, hint, solution_file)
        self.options, self._why, self._why_when_wrong = list(options), why, why_when_wrong

    def check(self, answer) -> bool:
        unanswered = answer is None or answer is Ellipsis
        try:  # first, so an answer of None where nothing can be checked is told that, not "replace the ..."
            want = self._expected()
        except Exception:  # noqa: BLE001 — an unanswered check before its measurement: say what to do first
            if not unanswered:
                raise
            want = ...
        if want is None or (isinstance(want, str) and want not in self.options) or \
                (isinstance(want, (set, frozenset)) and not want & set(self.options)):  # "not measured", "no data"
            reason = tr(" ({why})", why=self._why()) if self._why else ""
            print(tr("– {name}: cannot be checked here{reason}: the measurement cannot be judged.").format(
                name=tr(self.name), reason=reason))
            return False
        if unanswered:
            print(tr("✗ {name}: replace the ... with one of {options}.").format(
                name=tr(self.name), options=self.options))
            return False
        if answer not in self.options:
            print(tr("✗ {name}: {answer} is not one of {options}.").format(
                name=tr(self.name), answer=repr(answer), options=self.options))
            return False
        reason = tr(" ({why})", why=self._why()) if self._why else ""
        tied = sorted(want) if isinstance(want, (set, frozenset)) else [want]
        others = [o for o in tied if o != answer]
        if answer in tied:
            self.passed = True
            also = (tr("; within noise of it here, so also right: {others}").format(others=", ".join(map(str, others)))
                    if others else "")
            print(tr("✓ {name}: {answer}{reason}{also}.", name=tr(self.name), answer=answer, reason=reason, also=also))
            return True
        right = (tr(" (here: {tied}, within noise of each other)").format(tied=tr(" or ").join(map(str, tied)))
                 if len(tied) > 1 else "")
        reason = reason if self._why_when_wrong else ""  # a why that would give the answer away waits for a pass
        # the measured figures behind the expectation, without naming it: enough to see why, and try again
        print(tr("✗ {name}: not {answer} on this machine{right}{reason}. Try q.hint().").format(
            name=tr(self.name), answer=repr(answer), right=right, reason=reason))
        return False


def _num(value: float) -> str:
    """Two decimals, or three significant digits below 1 (a memory fraction of 0.0065 is not "0.01")."""
    return f"{value:,.2f}" if abs(value) >= 1 or value == 0 or not math.isfinite(value) else f"{value:.3g}"
