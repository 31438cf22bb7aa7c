"""Self-checking exercises in the style of Kaggle's learntools: `q.check(answer)`,
`q.hint()`, `q.solution()`. Checks compare with values measured on a real engine or
computed from the model's own config; known wrong answers get a specific explanation.
Solutions live apart, in labs/solutions/, so a learner opens them on purpose.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

SOLUTIONS = Path(__file__).resolve().parent.parent / "labs" / "solutions"


class Question:
    def __init__(self, name: str, expected: Callable[[], float], tolerance: float, hint: str,
                 solution_file: str, known_wrong: dict[str, Callable[[], float]] | None = None, unit: str = ""):
        self.name, self._expected, self.tolerance, self._hint = name, expected, tolerance, hint
        self.solution_file, self.known_wrong, self.unit = solution_file, known_wrong or {}, unit
        self.passed = False

    def check(self, answer) -> bool:
        if answer is None or answer is Ellipsis:
            print(f"✗ {self.name}: replace the ... with your answer first.")
            return False
        try:
            value = float(answer)
        except (TypeError, ValueError):
            print(f"✗ {self.name}: expected a number, got {answer!r}.")
            return False
        want = self._expected()
        if abs(value - want) <= self.tolerance * abs(want):
            self.passed = True
            print(f"✓ {self.name}: {value:,.2f} {self.unit} — within {self.tolerance:.0%} of {want:,.2f}.")
            return True
        for why, wrong in self.known_wrong.items():
            w = wrong()
            if abs(value - w) <= 0.01 * abs(w):
                print(f"✗ {self.name}: {value:,.2f} is what you get if {why}.")
                return False
        print(f"✗ {self.name}: {value:,.2f} {self.unit} is off by {abs(value - want) / abs(want):.0%}. Try q.hint().")
        return False

    def hint(self) -> None:
        print(f"Hint ({self.name}): {self._hint}")

    def solution(self) -> None:
        print((SOLUTIONS / self.solution_file).read_text())
