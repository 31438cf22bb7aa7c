"""One home per notebook: everything that belongs to one notebook and to no other.

Homes are named by the notebook's registry entry (helpers/registry.py, `home`): `ch0` to `ch7` with a
part letter where a chapter has two notebooks (`ch4a`, `ch4b`, `ch6a`, `ch6b`), `ch90` (the workshop
notebook) and `lab1` to `lab5`. A notebook imports its home by that one name
(`from helpers.chapters import ch3`). A home that needs several modules is a package (`ch6a/`: the
service it tunes and the loops that tune it, which lab 4 reuses).

Every home has the same four parts, and ends with four tuples naming what belongs to each, so a
reader finds any name's part at the bottom of the file (tests/test_environment.py keeps every
public name in exactly one):

  DESIGNS  what the notebook measures: its loads and prompts, the configurations it compares, and
           the runs vLLM's benchmark client cannot send (each through `results.reuse_or_measure`)
  PANELS   the run functions of its control panels (`widgets.Panel` calls them with the controls'
           values), where the choices are more than settings; `widgets.measuring` serves the rest
  CHECKS   its exercises: `Question`s and `Choice`s, the figures they are checked against, and the
           known mistakes each one names
  CLAIMS   its claims, each with the rule that judges it from the rows the notebook measured, and
           `claims(...)`, the notebook's verdict table, where it has one (`H.verdicts.show(ch3.claims(...))`)

Each home has one test file, tests/chapters/test_<home>.py, on recorded rows, and its solutions live
beside its notebook (notebooks/solutions/chNN_qM.py, labs/solutions/labNN_qM.py).

A home may import any layer below it and another notebook's home (a lab builds on its chapter);
the generic layers import no home.
"""
