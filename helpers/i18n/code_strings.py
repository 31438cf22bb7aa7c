"""English a learner reads that Babel's extractor over helpers/ does not find, collected into the `guide`
catalog, and shown through `tr()` where it is printed:

- a sentence a notebook's code cell prints: `print(H.tr("{tokens:,.0f} KV tokens at {fraction:g}",
  tokens=…, fraction=…))` (the template is the catalog's key; the figures are filled in after translation);

- an exercise's text in a code cell (a code cell is never translated): `Question("bytes per token", …,
  "every layer stores …", unit="bytes", known_wrong={"you forgot …": …})`: its name, hint, unit and the
  reasons of its known mistakes (`helpers.exercises`);
- a claim's text and a fixed rule in a chapter's home: every string constant that starts with the claim's
  number ("2.2 A larger memory fraction gives more KV tokens"), and every constant rule (a `…RULE = "…"`,
  a `rule="…"` argument) (`verdicts.Claim.markdown_row`). A text or rule built at run time from this
  run's figures (an f-string) stays English, and so does a claim's evidence.
"""
from __future__ import annotations

import ast
import re

CALLS = {"Question": {0: "name", 3: "hint"}, "Choice": {0: "name", 3: "hint"}}
KEYWORDS = ("name", "hint", "unit")


def exercise_strings(source: str) -> list[str]:
    """Each literal string a Question or Choice built in `source` prints: its name, hint, unit and the
    reasons (keys) of its `known_wrong`; each chart's literal title (`chart_title=`, which
    helpers.charts shows through tr()); each template a code cell passes to `H.tr()` (what the cell
    prints in its own sentences). A string computed at run time (an f-string) is left out."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython magics: nothing an exercise prints
        return []
    values: list = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "chart_title":
            values.append(node.value)
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called == "tr" and node.args:  # H.tr("… {tokens:,.0f} …", tokens=…) in a code cell
            values.append(node.args[0])
        if called not in CALLS:
            continue
        values += [a for i, a in enumerate(node.args) if i in CALLS[called]]
        values += [k.value for k in node.keywords if k.arg in KEYWORDS]
        values += [key for k in node.keywords if k.arg == "known_wrong" and isinstance(k.value, ast.Dict)
                   for key in k.value.keys]
    found = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value]
    return list(dict.fromkeys(found))


def table_headings(source: str) -> list[str]:
    """Each heading of a table a code cell builds, for the catalog's "heading" context (helpers.tables shows
    them translated; a module marks its own with `heading_()`): the keys of a dict literal inside
    `pd.DataFrame(...)` or `H.table({...})`, its `columns=`/`index=` lists, `.rename(columns={...})`'s new
    names, an index's `name=`, and a column (or named row) the cell adds by a name with a space
    (`df["step time vs bf16 (measured)"] = …`; a name without one is a field, and stays)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    values: list = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            values += [t.slice for t in node.targets if isinstance(t, ast.Subscript)
                       and isinstance(t.slice, ast.Constant) and " " in str(t.slice.value)]
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called in ("DataFrame", "table"):
            values += [key for part in ast.walk(node) if isinstance(part, ast.Dict) for key in part.keys]
            values += [e for k in node.keywords if k.arg in ("columns", "index") and isinstance(k.value, ast.List)
                       for e in k.value.elts]
        if called == "rename":
            values += [v for k in node.keywords if isinstance(k.value, ast.Dict) for v in k.value.values]
        if called == "Index":  # pd.Index(…, name="requests in flight")
            values += [k.value for k in node.keywords if k.arg == "name"]
    found = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value]
    return list(dict.fromkeys(found))


RULE_AT = {"Claim": 3, "untested": 2, "cannot_tell": 2}  # where a rule is passed by position
CLAIM = re.compile(r"^\d\.\d[a-z]? \S")  # "2.2 A larger …", "6.3a (demonstration) …", "3.1 …and …"


def claim_strings(source: str) -> list[str]:
    """Each claim text (a string constant starting with its number, on one line) and each constant rule in
    `source`; the pieces of an f-string and docstrings are left out."""
    tree = ast.parse(source)
    skip = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}  # docstrings, bare strings
    skip |= {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in ast.walk(node)}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and "\n" not in node.value and CLAIM.match(node.value):
            found.append(node.value)
        elif isinstance(node, ast.Assign) and _prose(node.value) and \
                any(isinstance(t, ast.Name) and (t.id.endswith("RULE") or t.id in ("text", "title"))
                    for t in node.targets):
            found.append(node.value.value)
        elif isinstance(node, ast.keyword) and node.arg in ("rule", "text") and _prose(node.value):
            found.append(node.value.value)
        elif isinstance(node, ast.Call) and (called := getattr(node.func, "attr", getattr(node.func, "id", ""))) \
                in RULE_AT and len(node.args) > RULE_AT[called] and _prose(node.args[RULE_AT[called]]):
            found.append(node.args[RULE_AT[called]].value)  # Claim(text, verdict, evidence, "did not hold: …")
    return list(dict.fromkeys(found))


def module_constants(module) -> list[str]:
    """A chapter home's rules and claim texts as the module holds them once imported: a `…RULE` built from
    other constants (`f"held: … ×{1 + CLOSE:g} …"`) is one fixed string at run time, which the catalog
    needs whole (`Claim.markdown_row` looks it up), though no extractor can read it from the source."""
    return [value for name, value in vars(module).items() if isinstance(value, str) and " " in value
            and (name.endswith("RULE") or CLAIM.match(value)) and "\n" not in value]


def _prose(node) -> bool:
    """A string constant that reads as a sentence (a column name such as `output_throughput_vllm_rule` does not)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value


PROSE = re.compile(r"[A-Za-z]{2,}[,:;]? [a-z(]{2,}")  # two words: a sentence, not a column name
SHOWN = ("print", "Markdown")


def untranslated(source: str) -> list[str]:
    """The prose a code cell prints or shows as Markdown without `H.tr()`: a literal or f-string with two
    words or more, passed to print() or Markdown() directly or through `+`, a conditional or `or`. A cell
    shows its sentences through the catalog, so the Chinese notebook prints them in Chinese."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in SHOWN:
            for arg in node.args:
                found += [_text(leaf) for leaf in _leaves(arg) if PROSE.search(_text(leaf))]
    return found


def _leaves(node):
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        yield node
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _leaves(node.left)
        yield from _leaves(node.right)
    elif isinstance(node, ast.IfExp):
        yield from _leaves(node.body)
        yield from _leaves(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for v in node.values:
            yield from _leaves(v)


def _text(node) -> str:
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    return node.value if isinstance(node.value, str) else ""


def notebook_strings(nb: dict) -> list[str]:
    """exercise_strings over a notebook's code cells, in order, each once."""
    found: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            found += exercise_strings("".join(cell["source"]))
    return list(dict.fromkeys(found))


def notebook_headings(nb: dict) -> list[str]:
    """table_headings over a notebook's code cells, in order, each once."""
    found: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            found += table_headings("".join(cell["source"]))
    return list(dict.fromkeys(found))


__all__ = ["CLAIM", "claim_strings", "exercise_strings", "module_constants", "notebook_headings", "notebook_strings",
           "table_headings", "untranslated"]
