"""The guide as an executed book: every notebook run, then rendered by Sphinx (myst-nb, with
sphinx-book-theme's sidebar, search and previous/next links) into static HTML that needs no kernel
and no network: charts as SVG, panels drawn from their saved widget state by a local copy of the
Jupyter widget manager, this machine's fingerprint on each page.

    bash guide.sh book                      # every notebook, into artifacts/book/
    python -m helpers.book 01 90 --out DIR  # some of them (a file name's start picks one)

The guide executes the notebooks itself (it knows the GPU-only ones and writes the error header);
Sphinx only renders (`nb_execution_mode = "off"`). Measurements are stored as they are taken and a
re-run reads a stored row instead of measuring again, so a second build takes the time of the
notebooks' own code. Executed copies go to the build's source folder only: the committed
notebooks stay output-free.
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers.i18n import N_

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "book"
VEGALITE = "application/vnd.vegalite.v"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# The standalone Jupyter widget manager (npm, BSD-3-Clause), fetched by `bash guide.sh book`'s set-up:
# its embed.js draws saved widget state with no kernel, and finds its icon fonts beside itself. The
# folder holds only those files and their licence, and is the book's static folder as it is.
WIDGETS_VERSION = "1.0.15"
WIDGETS = ROOT / ".cache" / "book" / f"widgets-{WIDGETS_VERSION}"
WIDGETS_SHA256 = "2b9d65cb7913e1c7d671757a10008b32c9c2448d4429513371e55c07d6107638"
WIDGETS_URL = f"https://registry.npmjs.org/@jupyter-widgets/html-manager/-/html-manager-{WIDGETS_VERSION}.tgz"


def order(chapters: list[dict]) -> list[dict]:
    """Chapters by number (parts by file name), then labs, then the workshop notebook."""
    return sorted(chapters, key=lambda c: (bool(c.get("workshop")), "lab" in c,
                                           c.get("chapter", c.get("lab", 0)), c["path"].name))


def machine_line() -> str:
    from helpers import run_size
    from helpers.results import fingerprint
    from helpers.results.workshop import machine_label
    fp = fingerprint()
    return (f"Executed {time.strftime('%Y-%m-%d %H:%M')} at size {run_size.size()} with vLLM {fp['vllm']} on "
            f"{machine_label({f'env_{k}': v for k, v in fp.items()})}")


def execute(nb_path: Path, timeout: int = 1800):
    """Run a notebook in a fresh kernel, in its own folder, keeping the widgets' state. Returns the
    notebook with its outputs and the first error ("cell 7: ValueError: …") or None; it stops at
    that error, as a learner's Run All would."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(nb_path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(nb_path.parent)}})
    try:
        client.execute()
        return nb, None
    except CellExecutionError as e:
        cell = next((i for i, c in enumerate(nb.cells)
                     if any(o.get("output_type") == "error" for o in c.get("outputs", []))),
                    None)
        return nb, f"cell {cell}: {e.ename}: {e.evalue}"


def output_lists(nb):
    """Every list of outputs in a notebook: the cells', and those saved inside Output widgets
    (where the panels draw their charts)."""
    for cell in nb.cells:
        yield cell.get("outputs", [])
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model in state.values():
        outputs = (model.get("state") or {}).get("outputs")
        if isinstance(outputs, list):
            yield outputs


PANEL_NOTE = "*This panel shows its last run. Its controls work in JupyterLab (`bash guide.sh`), not in the book.*"
PANELS = ("VBoxModel", "GridBoxModel")  # the guide's panels; a progress bar is an HBox


def offline(nb):
    """A copy whose Vega-Lite charts are SVG (vl-convert: no browser, no network), in cell outputs
    and in the saved state of Output widgets, and whose panels say that their controls need
    JupyterLab. myst-nb renders no Vega-Lite, and Altair's own HTML would load Vega from a CDN."""
    import nbformat
    import vl_convert as vlc

    nb = copy.deepcopy(nb)
    for outputs in output_lists(nb):
        for out in outputs:
            data = out.get("data", {})
            for mime in [m for m in data if m.startswith(VEGALITE)]:
                data["image/svg+xml"] = vlc.vegalite_to_svg(data.pop(mime))
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        views = [o for o in cell.get("outputs", []) if (state.get((o.get("data", {}).get(
            "application/vnd.jupyter.widget-view+json") or {}).get("model_id")) or {}).get("model_name") in PANELS]
        if views:
            cell.outputs.append(nbformat.v4.new_output("display_data", data={"text/markdown": PANEL_NOTE}))
    return nb


def with_header(nb, header: str):
    """The run's line (machine, vLLM, date, size, time taken or why not executed) under the title."""
    import nbformat
    nb = copy.deepcopy(nb)
    nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, nbformat.v4.new_markdown_cell(header))
    return nb


CONF = '''# Written by helpers/book.py for one build; edit that file instead.
project = "vLLM performance tuning, by measurement"
extensions = ["myst_nb"]
nb_execution_mode = "off"                # the guide executed every notebook before this build
nb_render_markdown_format = "myst"       # .ipynb links in Markdown outputs (the contents) become page links
nb_merge_streams = True
nb_output_stderr = "remove"              # progress bars and library notices; errors are error outputs, kept
nb_ipywidgets_js = {"embed.js": {}}      # the local widget manager in _static, not a CDN
html_theme = "sphinx_book_theme"
html_title = project
html_theme_options = {"show_navbar_depth": 1, "use_download_button": False, "use_fullscreen_button": False,
                      "search_bar_text": "Search the book"}
exclude_patterns = ["_build"]
suppress_warnings = ["mystnb.unknown_mime_type"]   # widget views without state: their text stays
'''


def index_page(chapters: list[dict], line: str, status: dict) -> str:
    """The start page: what the book is, the run's line, and the sidebar's three parts from the registry."""
    from helpers.i18n import tr

    parts = {tr("Chapters"): [c for c in chapters if "lab" not in c and not c.get("workshop")],
             tr("Labs"): [c for c in chapters if "lab" in c],
             tr("Workshop"): [c for c in chapters if c.get("workshop")]}
    lines = ["# " + tr("vLLM performance tuning, by measurement"), "", f"*{line}.*", "",
             tr("Every figure on these pages was measured on that machine when the book was built. The panels show "
                "their last run; their controls work in JupyterLab (`bash guide.sh`)."), ""]
    for caption, entries in parts.items():
        lines += ["```{toctree}", f":caption: {caption}", ":maxdepth: 1", ""]
        lines += [ch["path"].relative_to(ROOT).with_suffix("").as_posix() for ch in entries]
        lines += ["```", ""]
    lines += ["```{toctree}", ":caption: " + tr("Lab solutions (not executed here)"), ":maxdepth: 1", ""]
    lines += [p.relative_to(ROOT).with_suffix("").as_posix()
              for p in sorted((ROOT / "labs" / "solutions").glob("*.ipynb"))]
    lines += ["```", ""]
    skipped = [f"- {ch['title']}: {status[ch['path']]}" for ch in chapters if status.get(ch["path"], "ok") != "ok"]
    return "\n".join(lines + ([tr("Not executed in this build:"), "", *skipped] if skipped else []))


def _jobs() -> int:
    """Two kernels at a time where this machine has stored rows: a notebook's time is then mostly its
    kernel's start and imports. On an empty store one at a time, so that two notebooks do not take the
    one engine from each other between their measurements (each turn would be a start)."""
    from helpers.results import ResultStore, fingerprint
    here = fingerprint()["env_id"]
    stored = any(r.get("env_env_id") == here and r.get("kind") == "load" for r in ResultStore().rows())
    return max(1, min(2 if stored else 1, os.cpu_count() or 1))


def layout_of_test_rows() -> str | None:
    """ "merged" where a smoke-size book would otherwise measure what a test run already stored: the test
    run measures in the merged layout (conftest.py), and a row's key includes its layout, so in vLLM's own
    layout none of its rows would match. None where GUIDE_ENGINE_LAYOUT is set, the size is full, or
    most of this machine's stored load rows are in vLLM's layout."""
    from helpers import run_size
    from helpers.results import ResultStore, fingerprint
    if os.environ.get("GUIDE_ENGINE_LAYOUT") or run_size.size() != "smoke":
        return None
    here = fingerprint()["env_id"]
    layouts = [r.get("engine_layout") for r in ResultStore().rows()
               if r.get("env_env_id") == here and r.get("kind") == "load"]
    return "merged" if layouts.count("merged") > layouts.count("vllm") else None


def build(names: list[str] | None = None, out: str | Path = OUT, timeout: int = 1800, log=print,
          jobs: int | None = None, lang: str | None = None) -> dict:
    """See `_build`; GUIDE_LANG is set for the kernels of a translated book and put back afterwards."""
    before = os.environ.get("GUIDE_LANG")
    try:
        if lang:
            os.environ["GUIDE_LANG"] = lang
        return _build(names, out, timeout, log, jobs, lang)
    finally:
        if before is None:
            os.environ.pop("GUIDE_LANG", None)
        else:
            os.environ["GUIDE_LANG"] = before


def _build(names, out, timeout, log, jobs, lang) -> dict:
    """Execute the chosen notebooks (all by default; `jobs` at a time, else `_jobs()`), then render every
    notebook with Sphinx (the others as they are, without outputs). `lang` ("zh_CN"): the translated
    notebooks under <lang>/ instead (helpers.i18n), executed with GUIDE_LANG set, the book's own words and
    search in that language. Returns {notebook path: "ok" | "failed: …" | "skipped: …"}."""
    import nbformat

    from helpers import registry

    out = Path(out)
    src = out.parent / (out.name + "-src")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    chapters = order(registry.chapters())
    if lang:  # the same chapters, read from the translated copies (same metadata, same code)
        chapters = [{**ch, "path": ROOT / lang / ch["path"].relative_to(ROOT)} for ch in chapters]
    chosen = [c for c in chapters
              if not names or any(c["path"].name.startswith(n) or c["path"].stem == n for n in names)]
    if names and not chosen:
        raise SystemExit(f"No notebook matches {names}; names start like {[c['path'].stem for c in chapters]}")
    line, status = machine_line(), {}
    if (layout := layout_of_test_rows()) is not None:  # the kernels inherit it: every start and row key in that layout
        os.environ["GUIDE_ENGINE_LAYOUT"] = layout
        line += (" · in the test run's merged process layout, whose rows it reads back (GUIDE_ENGINE_LAYOUT=vllm "
                 "measures in vLLM's own)")
        log("reading the test run's rows: executing in its merged process layout (GUIDE_ENGINE_LAYOUT=vllm: vLLM's)")

    rel = (lambda p: p.relative_to(ROOT / lang)) if lang else (lambda p: p.relative_to(ROOT))

    def one(ch):  # execute (or mark) one notebook and write its copy for Sphinx
        path, copy_to = ch["path"], src / rel(ch["path"])
        if not registry.runs_here(ch):
            status[path] = "skipped: needs a CUDA GPU (metadata guide.accelerator)"
            nb = with_header(nbformat.read(path, as_version=4), f"*{line} · not executed here: it needs a CUDA GPU.*")
        else:
            t0 = time.monotonic()
            nb, error = execute(path, timeout)
            status[path] = f"failed: {error}" if error else "ok"
            nb = with_header(offline(nb), f"*{line} · ran in {time.monotonic() - t0:.0f} s*"
                             + (f"\n\n**This notebook stopped with an error at {error}.**" if error else ""))
        nbformat.write(nb, copy_to)
        log(f"{path.name}: {status[path]}")

    for ch in chapters:
        copy_to = src / rel(ch["path"])
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        if ch not in chosen and not copy_to.exists():  # kept from an earlier build, else the notebook unexecuted
            nbformat.write(with_header(nbformat.read(ch["path"], as_version=4), "*Not executed in this build.*"),
                           copy_to)
    with ThreadPoolExecutor(max_workers=jobs or _jobs()) as pool:
        list(pool.map(one, chosen))
    for sol in (ROOT / "labs" / "solutions").glob("*.ipynb"):
        (src / "labs" / "solutions").mkdir(parents=True, exist_ok=True)
        nbformat.write(with_header(nbformat.read(sol, as_version=4), "*A lab's solution, not executed in the book.*"),
                       src / "labs" / "solutions" / sol.name)
    render(src, out, index_page([{**c, "path": ROOT / rel(c["path"])} for c in chapters], line,
                                {ROOT / rel(k): v for k, v in status.items()}), lang)
    log(f"book: {out / 'index.html'}")
    return status


PROJECT = N_("vLLM performance tuning, by measurement")


def render(src: Path, out: Path, index: str, lang: str | None = None) -> None:
    """Sphinx over the executed copies; a warning (a broken cross-reference, a missing page) fails it. With
    `lang`, the theme's own words, the search and the title in that language."""
    from helpers.i18n import tr

    if not (WIDGETS / "embed.js").exists():
        raise SystemExit(f"The widget manager is missing ({WIDGETS}): `bash guide.sh book` fetches it "
                         f"(python -m helpers.book --fetch-widgets).")
    (src / "conf.py").write_text(CONF + f"html_static_path = [{str(WIDGETS)!r}]\n"
                                 + (f"language = {lang!r}\nproject = html_title = {tr(PROJECT)!r}\n" if lang else ""))
    (src / "index.md").write_text(index)
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                           str(src), str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit("Sphinx stopped the book:\n" + (done.stderr or done.stdout)[-4000:])


def fetch_widgets() -> Path:
    """The widget manager's npm package, checked against its pinned hash, unpacked under .cache/."""
    import hashlib
    import io
    import tarfile
    import urllib.request

    if (WIDGETS / "embed.js").exists():
        return WIDGETS
    data = urllib.request.urlopen(WIDGETS_URL, timeout=120).read()
    if hashlib.sha256(data).hexdigest() != WIDGETS_SHA256:
        raise SystemExit(f"{WIDGETS_URL} does not match its pinned hash: not unpacked.")
    WIDGETS.mkdir(parents=True, exist_ok=True)
    keep = ("embed.js", "embed.js.LICENSE.txt", "*.woff", "*.woff2", "*.ttf", "*.eot", "*.svg")  # + its icon fonts
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.startswith("package/dist/") and any(Path(m.name).match(k) for k in keep):
                (WIDGETS / Path(m.name).name).write_bytes(tar.extractfile(m).read())
    return WIDGETS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="guide.sh book", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", help="file-name starts (01, 90, lab01); default: every notebook")
    p.add_argument("--out", default=str(OUT), help="output folder (default: artifacts/book, git-ignored)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one cell may run")
    p.add_argument("--jobs", type=int, default=None,
                   help="notebooks executed at a time (default: 2 where this machine has stored rows, else 1)")
    p.add_argument("--fetch-widgets", action="store_true", help="only fetch the widget manager (set-up)")
    p.add_argument("--lang", choices=["zh_CN"], default=None,
                   help="the translated edition (zh_CN/ notebooks; default output artifacts/book-zh_CN)")
    args = p.parse_args(argv)
    if args.fetch_widgets:
        print(f"widget manager: {fetch_widgets()}")
        return 0
    out = args.out if args.out != str(OUT) or not args.lang else str(OUT.parent / f"book-{args.lang}")
    status = build(args.notebooks, out, args.timeout, jobs=args.jobs, lang=args.lang)
    failed = [f"{p.name}: {s}" for p, s in status.items() if s.startswith("failed")]
    if failed:
        print("Stopped with an error:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
