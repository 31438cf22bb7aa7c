"""The Chinese edition: catalogs in step with the English, translated notebooks made from them, the glossary's
rule, and the run-time strings in the learner's language."""
import json
import string
from pathlib import Path

import pytest

from helpers.i18n import LANGUAGES, code_strings, glossary, paragraphs
from helpers.i18n.catalogs import ROOT, TRANSLATED, notebooks, po_path, read_catalog, status, translated_notebook

SAMPLE = """## A heading

A paragraph that runs
over two lines, with `code` and **bold**.

* an item
  that wraps
* another item

| mark | meaning |
|---|---|
| ✓ | held |
"""


def test_a_cell_is_cut_into_the_units_sphinx_extracts():
    units = [(u.kind, u.msgid) for u in paragraphs.units(SAMPLE, "c1")]
    assert units == [("heading", "A heading"),
                     ("paragraph", "A paragraph that runs over two lines, with `code` and **bold**."),
                     ("paragraph", "an item that wraps"), ("paragraph", "another item"),
                     ("cell", "mark"), ("cell", "meaning"), ("cell", "✓"), ("cell", "held")]


def test_a_translated_cell_keeps_its_markdown_around_each_unit():
    out = paragraphs.translate_cell(SAMPLE, lambda msgid: f"<{msgid}>" if msgid != "✓" else None)
    assert out.splitlines()[:4] == ["## <A heading>", "", "<A paragraph that runs over two lines, with `code` and "
                                    "**bold**.>", ""]
    assert "* <an item that wraps>\n* <another item>" in out
    assert "| <mark> | <meaning> |" in out and "| ✓ | <held> |" in out  # no translation: the English stays


@pytest.mark.parametrize("nb_path", notebooks(), ids=lambda p: p.name)
def test_each_catalog_holds_exactly_the_notebooks_paragraphs(nb_path):
    """A changed English paragraph is a new msgid: until `python -m helpers.i18n extract` runs (which keeps the old
    translation as a fuzzy entry), the catalog lacks it, and this names the notebook and the paragraph."""
    nb = json.loads(nb_path.read_text())
    for lang in LANGUAGES:
        po = po_path(nb_path, lang)
        assert po.exists(), f"{po} is missing: run python -m helpers.i18n extract"
        ids = {m.id for m in read_catalog(po) if m.id}
        units = {u.msgid: u.cell_id for u in paragraphs.notebook_units(nb)}
        new = [f"cell {units[m]}: {m[:70]!r}" for m in units if m not in ids]
        gone = [m[:70] for m in ids - set(units)]
        assert not new and not gone, (f"{nb_path.relative_to(ROOT)}: catalog {po.relative_to(ROOT)} is out of step "
                                      f"(run python -m helpers.i18n extract, then translate): new {new}, gone {gone}")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_paragraph_of_a_translated_notebook_has_a_current_translation(lang):
    only = [ROOT / p for p in TRANSLATED[lang]]
    problems = [f"{st.notebook}: {p}" for st in status(lang, only) for p in st.problems]
    assert not problems, "untranslated or fuzzy (python -m helpers.i18n status):\n" + "\n".join(problems)


def test_the_status_names_a_paragraph_whose_english_changed(tmp_path):
    nb_path = ROOT / TRANSLATED["zh_CN"][0]
    nb = json.loads(nb_path.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    cell["source"] = ["# A title nobody translated\n"]
    copy = ROOT / ".cache" / "i18n" / "test_copy.ipynb"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(nb))
    try:
        import helpers.i18n.catalogs as catalogs
        real = catalogs.po_path
        catalogs.po_path = lambda nb, lang: real(nb_path, lang)
        [st] = status("zh_CN", [copy])
    finally:
        catalogs.po_path = real
        copy.unlink()
    assert st.problems == [f"cell {cell['id']}: missing: 'A title nobody translated'"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_translated_notebooks_are_made_from_the_english_and_the_catalogs(lang):
    """zh_CN/… is what `python -m helpers.i18n notebooks` writes: code, cell ids and metadata of the English
    notebook, its prose from the catalog. A stale copy fails here."""
    from helpers.i18n.catalogs import lookup
    for nb_path in notebooks():
        english = json.loads(nb_path.read_text())
        copy = ROOT / lang / nb_path.relative_to(ROOT)
        assert copy.exists(), f"{copy} is missing: run python -m helpers.i18n notebooks"
        made = translated_notebook(english, lookup(nb_path, lang), lang)
        for cell in made["cells"]:
            if cell["cell_type"] == "markdown":
                cell["source"] = [line.replace("](../", "](../../") for line in cell["source"]]
        have = json.loads(copy.read_text())
        assert have == made, f"{copy.relative_to(ROOT)} is stale: run python -m helpers.i18n notebooks"
        assert [c.get("id") for c in have["cells"]] == [c.get("id") for c in english["cells"]]
        assert all(a["source"] == b["source"] for a, b in zip(english["cells"], have["cells"])
                   if a["cell_type"] == "code")


@pytest.mark.parametrize("po", sorted((ROOT / "locales").rglob("*.po")), ids=lambda p: p.name)
def test_every_catalog_uses_the_glossarys_terms(po):
    assert not glossary.check_catalog(po)


def test_the_glossary_rule_catches_a_synonym_and_a_first_use_without_the_english():
    bad = glossary.problems([("Prefix caching helps.", "前缀快取有帮助。")], "x")
    assert bad and "前缀缓存" in bad[0]
    first = glossary.problems([("Prefix caching helps.", "前缀缓存有帮助。")], "x")
    assert first and "brackets" in first[0]
    assert not glossary.problems([("Prefix caching helps.", "前缀缓存（prefix caching）有帮助。"),
                                  ("Prefix caching again.", "又是前缀缓存。")], "x")
    assert not glossary.problems([("`enable_prefix_caching` is a flag.", "`enable_prefix_caching` 是个参数。")], "x")
    assert not glossary.problems([("- {text}: *{verdict}*", "- {text}：*{verdict}*")], "x", first_use=False)  # a field


def _fields(template: str) -> list:
    """A template's fields with their formats (`{tokens:,.0f}`), as `tr(text, **fields)` fills them."""
    try:
        return sorted((name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template)
                      if name is not None)
    except ValueError:
        return [("unbalanced braces", template)]


def test_run_time_translations_keep_every_placeholder():
    """A translated template keeps each field and its format (a `{tokens:,.0f}` written `{tokens}` would
    print a bare float; one written `{token}` would raise a KeyError in the Chinese notebook)."""
    for lang in LANGUAGES:
        for m in read_catalog(ROOT / "locales" / lang / "LC_MESSAGES" / "guide.po"):
            if m.id and m.string and not m.fuzzy:
                assert _fields(m.id) == _fields(m.string), m.id


def test_the_placeholder_rule_catches_a_lost_format():
    assert _fields("{tokens:,.0f} KV tokens") != _fields("{tokens} 个 KV token")
    assert _fields("{a} and {b:g}") == _fields("{b:g} 与 {a}")


def test_the_learners_language_chooses_the_run_time_strings(monkeypatch):
    from helpers import charts, verdicts
    monkeypatch.delenv("GUIDE_LANG", raising=False)
    assert verdicts.said(verdicts.HELD) == "held" and charts.title("p99_ttft_ms") == "P99 TTFT (ms)"
    monkeypatch.setenv("GUIDE_LANG", "zh")
    assert verdicts.said(verdicts.HELD) == "成立" and verdicts.said(verdicts.CANNOT_TELL) == "此处无法判断"
    assert charts.title("p99_ttft_ms") == "P99 首 token 延迟（ms）"
    assert verdicts.HELD == "held"  # the constants the rules compare stay English
    claim = verdicts.judge("x", True, "e")
    assert "✓ 成立" in verdicts.markdown([claim]) and "论断" in verdicts.markdown([claim])


def test_the_catalogs_match_what_sphinx_extracts(tmp_path):
    """The units cut here are the ones Sphinx's gettext builder writes (what sphinx-intl keeps in step)."""
    pytest.importorskip("myst_nb", reason="the book's tools (bash guide.sh test installs them)")
    import subprocess
    import sys

    from babel.messages.pofile import read_po
    src = tmp_path / "src"
    for nb in notebooks():
        (src / nb.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        (src / nb.relative_to(ROOT)).write_text(nb.read_text())
    (src / "conf.py").write_text('extensions = ["myst_nb"]\nnb_execution_mode = "off"\ngettext_compact = False\n'
                                 'suppress_warnings = ["myst.xref_missing", "toc.not_included"]\n')
    (src / "index.md").write_text("# index\n")
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "gettext", "-q", str(src), str(tmp_path / "pot")],
                   check=True, capture_output=True)
    for nb in notebooks():
        pot = tmp_path / "pot" / nb.relative_to(ROOT).with_suffix(".pot")
        with pot.open("rb") as f:
            theirs = {m.id for m in read_po(f) if m.id}
        mine = {u.msgid for u in paragraphs.notebook_units(json.loads(nb.read_text()))}
        assert mine == theirs, (nb.name, sorted(mine ^ theirs)[:3])


def test_language_of_a_path():
    from conftest import _language_of
    assert _language_of(Path(ROOT / "zh_CN" / "notebooks" / "00_start_here.ipynb")) == "zh_CN"
    assert _language_of(Path(ROOT / "notebooks" / "00_start_here.ipynb")) is None


def test_an_exercises_printed_strings_are_collected_from_a_code_cell():
    from helpers.i18n.code_strings import exercise_strings
    source = ('q = H.Question("bytes per token", lambda: 1, 0.01, "every layer " "stores two", "lab01_q1.py",\n'
              '               unit="bytes", known_wrong={"you forgot the ×2": lambda: 0.5, f"{x} made": f})\n'
              'c = Choice("which", ["a", "b"], lambda: "a", "look at the rows", "q.py")\n%matplotlib')
    assert exercise_strings(source) == []  # a cell with a magic is not Python: nothing to collect
    assert exercise_strings(source.rsplit("\n", 1)[0]) == ["bytes per token", "every layer stores two", "bytes",
                                                           "you forgot the ×2", "which", "look at the rows"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_exercise_of_a_translated_notebook_prints_in_its_language(lang):
    """What a translated notebook's exercises print (name, hint, unit, the known mistakes' reasons) has a
    current entry in the run-time catalog, where the code cell or the chapter's home builds it."""
    from helpers.i18n.code_strings import exercise_strings, notebook_strings
    done = {m.id for m in read_catalog(ROOT / "locales" / lang / "LC_MESSAGES" / "guide.po")
            if m.id and m.string and not m.fuzzy}
    for nb in TRANSLATED[lang]:
        missing = [s for s in notebook_strings(json.loads((ROOT / nb).read_text())) if s not in done]
        assert not missing, f"{nb}: no {lang} entry in guide.po for {missing} (python -m helpers.i18n extract)"
    for home in sorted((ROOT / "helpers" / "chapters").rglob("*.py")):  # the chapters' own exercises
        missing = [s for s in exercise_strings(home.read_text()) if s not in done]
        assert not missing, f"{home.name}: no {lang} entry in guide.po for {missing}"


def test_a_check_speaks_the_learners_language(monkeypatch, capsys):
    from helpers.exercises import Question
    q = Question("bytes per token", lambda: 64.0, 0.01, "every layer stores a key AND a value, for each KV head "
                 "(not each query head), each head_dim numbers wide.", "lab01_q1.py", unit="bytes",
                 known_wrong={"you forgot the ×2 for key and value": lambda: 32.0})
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    q.check(32)
    q.hint()
    said = capsys.readouterr().out
    assert "每 token 字节数" in said and "你忘了 key 和 value 要 ×2" in said and "每一层都要" in said
    monkeypatch.delenv("GUIDE_LANG")
    q.check(64)
    assert "bytes per token: 64.00 bytes" in capsys.readouterr().out


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_run_time_string_has_a_current_translation(lang):
    """What `tr()` and `N_()` mark, and what the exercises print: a new or changed English string leaves its entry
    empty or fuzzy after `python -m helpers.i18n extract`, and this names it."""
    stale = [m.id for m in read_catalog(ROOT / "locales" / lang / "LC_MESSAGES" / "guide.po")
             if m.id and (m.fuzzy or not m.string)]
    assert not stale, f"guide.po ({lang}) has no current translation for: {stale}"


def test_the_run_time_catalog_holds_every_string_the_code_marks(tmp_path):
    """A `tr("…")` added or changed in helpers/ (or an exercise's text in a code cell) without running
    `python -m helpers.i18n extract` would print English in every language: name it."""
    from helpers.i18n.catalogs import runtime_pot
    marked = {m.id for m in read_catalog(runtime_pot(tmp_path / "guide.pot")) if m.id}
    for lang in LANGUAGES:
        have = {m.id for m in read_catalog(ROOT / "locales" / lang / "LC_MESSAGES" / "guide.po") if m.id}
        assert not marked - have, f"not in guide.po ({lang}; run python -m helpers.i18n extract): {marked - have}"


def test_a_claims_text_and_fixed_rule_are_collected_and_shown_in_the_learners_language(monkeypatch):
    from helpers import verdicts
    from helpers.i18n.code_strings import claim_strings
    source = ('STAYS_RULE = "held: nearer the per-step time"\n'
              'def f(x):\n    """2.2 A docstring is not a claim."""\n'
              '    text = "Tuned beats stock a lot"\n'
              '    return judge("2.2 A larger memory fraction gives more KV tokens", True, f"2.2 {x} built", '
              'rule="held: both rise", partly=False)\n'
              'judge(f"3.1 At {x} in flight", True, "e", rule=f"held at {x}")\n')
    assert claim_strings(source) == ["held: nearer the per-step time", "Tuned beats stock a lot",
                                     "2.2 A larger memory fraction gives more KV tokens", "held: both rise"]
    claim = verdicts.judge("2.2 A larger memory fraction gives more KV tokens", True, "117,632 → 336,896 tokens",
                           rule="held: both rise strictly with every larger fraction")
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    row = claim.markdown_row()
    assert "2.2 更大的内存占比带来更多 KV token" in row and "成立：每增大一次内存占比" in row
    assert "117,632 → 336,896 tokens" in row  # the evidence is this run's figures, as measured


def test_a_charts_title_from_a_code_cell_is_shown_in_the_learners_language(monkeypatch):
    import pandas as pd

    from helpers import charts
    df = pd.DataFrame({"config_label": ["a", "b"], "output_throughput": [10.0, 12.0]})
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    spec = charts.bars(df, "output_throughput", chart_title="Throughput rises with concurrency").to_dict()
    assert "吞吐随并发上升" in str(spec["title"])


def test_a_template_is_filled_after_translation(monkeypatch):
    from helpers.i18n import tr
    monkeypatch.delenv("GUIDE_LANG", raising=False)
    assert tr("{n:,.0f} KV tokens at {f:g}", n=12345.6, f=0.25) == "12,346 KV tokens at 0.25"
    assert tr("{'mode': 0} stays as written") == "{'mode': 0} stays as written"  # no fields: not formatted
    assert tr("{text}: {evidence}", text="a", evidence="b") == "a: b"  # a field may be called text
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    said = tr("peak KV usage {usage:.0f} %, up to {waiting:.0f} waiting, {preemptions:.0f} preemption(s)",
              usage=97.2, waiting=3, preemptions=0)
    assert "97 %" in said and "3" in said and "waiting" not in said


@pytest.mark.parametrize("nb_path", notebooks(), ids=lambda p: p.name)
def test_every_sentence_a_cell_prints_goes_through_the_catalog(nb_path):
    """A code cell's own print() or Markdown() sentence is an `H.tr()` template, so the Chinese notebook
    prints it in Chinese (numbers, setting names and vLLM's lines stay as they are)."""
    from helpers.i18n.code_strings import untranslated
    nb = json.loads(nb_path.read_text())
    found = [t for c in nb["cells"] if c["cell_type"] == "code" for t in untranslated("".join(c["source"]))]
    assert not found, f"{nb_path.name}: printed without H.tr(): {found[:5]}"


def test_the_untranslated_rule_finds_a_bare_sentence_and_passes_a_template():
    from helpers.i18n.code_strings import untranslated
    assert untranslated('print(f"peak running {n} of {m}")') == ["peak running {…} of {…}"]
    assert untranslated('display(Markdown("A full cache " + ("queues" if q else "waits here")))')
    assert not untranslated('print(H.tr("peak running {n} of {m}", n=n, m=m))')
    assert not untranslated('print(row["config_label"], f"{x:.1f}")')


def test_a_reading_is_judged_on_the_kind_not_on_the_translated_words(monkeypatch):
    from helpers.chapters import ch3
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    text, kind = ch3._way(100.0, 90.0, 1.0, "longer", "shorter")
    assert kind == "about" and not text.startswith("about")  # Chinese words, yet read as "about"
    assert ch3._reading(kind) == ch3.tr(": within noise, so this run does not show the page's reading")
    assert ch3._way(300.0, 100.0, 1.0, "longer", "shorter")[1] == "more"


def test_a_rule_passed_by_position_and_one_built_from_constants_reach_the_catalog():
    import types

    from helpers.i18n.code_strings import claim_strings, module_constants
    src = 'Claim(text, NOT_HELD, ev, "did not hold: both orders ended at one configuration")'
    assert claim_strings(src) == ["did not hold: both orders ended at one configuration"]
    home = types.SimpleNamespace(CLOSE=0.3, SPEED_RULE=f"held: ×{1 + 0.3:g} or more", label="not a rule",
                                 TEXT="7.3 INT8 weights speed decode")
    assert module_constants(home) == ["held: ×1.3 or more", "7.3 INT8 weights speed decode"]


def test_lab4s_verdict_keeps_its_figures_apart_for_another_reason(monkeypatch):
    from helpers.chapters.ch6a import service
    from helpers.slo import SLO
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    row = {"load_num_prompts": 4, "completed": 4, "runs": [{"request_ttft_ms": [10.0] * 4,
                                                             "request_tpot_ms": [5.0] * 4}], "duration": 2.0}
    v = service.capstone_verdict(row, row, row, SLO(ttft_ms=100, tpot_ms=50, share=0.9), same_as_baseline=True)
    assert v.figures and v.text.endswith(v.figures) and "goodput" not in v.figures  # Chinese, and apart


def test_a_refusal_stored_in_english_reads_back_in_the_learners_language(monkeypatch, tmp_path):
    """Chapter 2's refusals are stored (a second run reads them back): the stored parts are worded again
    when read, so the Chinese notebook, reading the English run's rows, shows them in Chinese."""
    from pathlib import Path

    from helpers import experiment
    from helpers.config import EngineConfig
    from helpers.engine import EngineStartError
    from helpers.engine.server import start_error_text
    from helpers.results import ResultStore
    parts = {"code": None, "fix": "lower gpu_memory_utilization (the guide's CPU default is 0.25), or free memory "
                                  "on this machine.", "value": 0.95}
    line = "ValueError: Available memory on node 0 (18.86/23.54 GiB) on startup is less than desired"

    def refuse(config, *a, **k):
        raise EngineStartError(start_error_text(parts, line, "gpu_memory_utilization", 0.95, "/tmp/log"), line,
                               "gpu_memory_utilization", Path("/tmp/log"), parts)
    monkeypatch.setattr(experiment, "engine_for", refuse)
    monkeypatch.delenv("GUIDE_LANG", raising=False)
    store = ResultStore(tmp_path)
    first = experiment.try_start(EngineConfig(gpu_memory_utilization=0.95), tag="t", store=store)
    assert "vLLM did not start" in str(first) and "unknown (forked)" in str(first)
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    again = experiment.try_start(EngineConfig(gpu_memory_utilization=0.95), tag="t", store=store)
    assert "did not start" not in str(again) and line in str(again) and "gpu_memory_utilization = 0.95" in str(again)


def test_a_tables_headings_are_collected_from_a_code_cell_and_shown_in_the_learners_language(monkeypatch):
    """A cell builds its table with English headings (later code picks columns by them); the headings reach
    the catalog under their own context, and a Chinese notebook shows them translated. Field names, setting
    labels and numbers stay, and a column of labels is translated only where the catalog has every one."""
    import pandas as pd

    from helpers.tables import in_language
    cell = ('pd.DataFrame({"offered rate (req/s)": rates, "goodput (req/s)": g}, index=["a", "b"])\n'
            'df.rename(columns={"kv_cache_tokens": "KV tokens (per replica for DP)"})\n'
            'df["step time vs bf16 (measured)"] = t; df["paced_tpot_ms"] = p\n'
            'pd.DataFrame({"x": [1]}, index=pd.Index([1], name="requests in flight")).rename(columns={"x": f"{n} s"})')
    found = code_strings.table_headings(cell)
    assert {"offered rate (req/s)", "goodput (req/s)", "KV tokens (per replica for DP)",
            "step time vs bf16 (measured)", "requests in flight"} <= set(found)
    assert "kv_cache_tokens" not in found and "paced_tpot_ms" not in found  # a field name stays
    assert not set(found) & set(code_strings.exercise_strings(cell)), "headings have a context of their own"
    df = pd.DataFrame({"figure": ["KV cache tokens", "max concurrency"], "how": ["KV GiB ÷ …", "blocks ÷ …"],
                       "goodput (req/s)": [1.5, 2.0], "mean_tpot_ms": [3.0, 4.0]},
                      index=pd.Index(["budget=256", "guide default"], name="requests in flight"))
    monkeypatch.delenv("GUIDE_LANG", raising=False)
    assert in_language(df).equals(df)
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    shown = in_language(df)
    assert list(shown.columns) == ["指标", "计算方法", "有效吞吐（req/s）", "mean_tpot_ms"]
    assert list(shown.iloc[:, 0]) == ["KV 缓存 token 数", "最大并发数"] and list(shown.iloc[:, 1]) == list(df.how)
    assert list(shown.index) == ["budget=256", "guide default"] and shown.index.name == "在途请求数"
    assert list(df.columns)[0] == "figure", "the notebook's own frame keeps its English headings"
    # A field named like a unit word or a chart title stays a field: only headings are looked up as headings.
    fields = in_language(pd.DataFrame({"tokens": [1], "preemptions": [0], "requests": [2]}))
    assert list(fields.columns) == ["tokens", "preemptions", "requests"]
    # A label column with an empty label (the baseline's "judged on") is still translated.
    assert list(in_language(pd.DataFrame({"judged on": ["", "pace"]})).iloc[:, 0]) == ["", "节奏"]


def test_the_advisor_says_both_halves_in_the_learners_language(monkeypatch):
    from helpers.advisor import _said
    monkeypatch.setenv("GUIDE_LANG", "zh_CN")
    assert _said("TTFT and TPOT") == "TTFT 和 TPOT" and _said("TPOT") == "TPOT"
