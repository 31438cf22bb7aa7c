"""Each chapter's claims and the rule that judges each one, kept beside the measurements'
names so a notebook's "What we measured" cell is one line (`report.show(ch3.claims(...))`)
and shows the table, not the plumbing.

One module per chapter (`ch1`, `ch2`, `ch3`, ...). Each exposes `claims(...) -> list[Claim]`,
taking the tables and rows the notebook measured, and nothing else: no engine starts here.
Every Claim carries a one-line `rule` that says what "held" needs, shown beside the verdict.
Unit tests feed recorded rows (tests/unit/test_claims_*.py).
"""
