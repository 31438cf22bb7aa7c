"""Verdicts computed from what was just measured, and the closing "What we measured" table.

A notebook never types a verdict: it passes the measured numbers and the rule, and this
module says held / held partly / did not hold.
"""
from __future__ import annotations

from dataclasses import dataclass

HELD, PARTLY, NOT_HELD, UNTESTED = "held", "held partly", "did not hold", "not measured here"
_ICON = {HELD: "✅", PARTLY: "◐", NOT_HELD: "❌", UNTESTED: "·"}


@dataclass
class Claim:
    text: str
    verdict: str
    evidence: str

    def markdown_row(self) -> str:
        return f"| {self.text} | {_ICON[self.verdict]} {self.verdict} | {self.evidence} |"


def judge(text: str, held: bool, evidence: str, partly: bool = False) -> Claim:
    """held → held; else partly → held partly; else did not hold."""
    return Claim(text, HELD if held else (PARTLY if partly else NOT_HELD), evidence)


def untested(text: str, why: str) -> Claim:
    return Claim(text, UNTESTED, why)


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def table(claims: list[Claim], title: str = "What we measured") -> str:
    lines = [f"### {title}", "", "| claim | verdict on this machine | measured |", "|---|---|---|"]
    lines += [c.markdown_row() for c in claims]
    return "\n".join(lines)


def show(claims: list[Claim], title: str = "What we measured") -> None:
    from IPython.display import Markdown, display
    from helpers.results import fingerprint

    fp = fingerprint()
    where = f"{fp['cpu_model']} ({fp['cpu_isa']}), {fp['cpu_cores']} cores" + (f", {fp['gpu']}" if fp["gpu"] else "")
    display(Markdown(table(claims, title) + f"\n\n*Measured on {where}, vLLM {fp['vllm']} ({fp['vllm_build']}).*"))
