"""One home per chapter and lab: everything that belongs to one notebook and to no other.

A home holds its notebook's designs (loads, prompts, the configurations it compares), the run
functions of its control panels, its exercise expectations and its claims, each with the rule
that judges it from the rows the notebook measured, so the notebook's "What we measured" cell is
one line (`H.verdicts.show(ch3.claims(...))`). Homes are named by the notebook's registry entry
(helpers/registry.py): `ch0` to `ch7`, `lab1` to `lab5`, `room` (the workshop notebook); a big one is a
package (`ch6/`). Each has one test file, tests/chapters/test_<home>.py, on recorded rows, and its
solutions live beside its notebook (notebooks/solutions/chNN_qM.py, labs/solutions/labNN_qM.py).

A home may import any layer below it and another chapter's home (a lab builds on its chapter);
the generic layers import no home.
"""
