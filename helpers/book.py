"""The guide as an executed book: every notebook run, then written as static HTML pages with
their outputs, charts as inline SVG (readable with no kernel and no network), this machine's
fingerprint on each page, and a contents page in chapter order.

    bash guide.sh book                      # every notebook, into artifacts/book/
    python -m helpers.book 01 90 --out DIR  # some of them (a file name's start picks one)

Measurements are stored as they are taken, and a notebook re-run reads a stored row instead
of measuring again, so a second build takes the time of the notebooks' own code, not of the
measurements. Executed copies go to the output folder only: the committed notebooks stay
output-free.
"""
from __future__ import annotations

import argparse
import base64
import copy
import html
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "artifacts" / "book"
VEGALITE = re.compile(r"application/vnd\.vegalite\.v\d+\+json")
EXTERNAL_SCRIPT = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>')
SVG_IMG = re.compile(r'<img[^>]*?\ssrc="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"[^>]*>')
NEEDS_JS = ("application/vnd.jupyter.widget-view+json", "application/javascript")


def order(chapters: list[dict]) -> list[dict]:
    """Chapters by number, then labs, then the workshop notebook."""
    return sorted(chapters, key=lambda c: (bool(c.get("workshop")), "lab" in c, c.get("chapter", c.get("lab", 0))))


def page_path(nb_path: Path, out: Path) -> Path:
    return out / nb_path.parent.relative_to(ROOT) / (nb_path.stem + ".html")


def machine_line() -> str:
    from helpers import run_size
    from helpers.results import fingerprint
    from helpers.results.workshop import machine_label
    return (f"Executed {time.strftime('%Y-%m-%d %H:%M')} at size {run_size.size()} on "
            f"{machine_label({f'env_{k}': v for k, v in fingerprint().items()})}")


def needs_gpu_here(meta: dict) -> bool:
    """The test runner's rule (conftest.py): a notebook without CPU in its accelerators is
    skipped on a machine without a CUDA GPU."""
    from helpers import hardware
    return "CPU" not in meta.get("accelerator", ["CPU"]) and not hardware.describe()["gpu_count"]


def execute(nb_path: Path, timeout: int = 1800):
    """Run a notebook in a fresh kernel, in its own folder. Returns the notebook with its
    outputs and the first error ("cell 7: ValueError: …") or None; it stops at that error,
    as a learner's Run All would."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(nb_path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(nb_path.parent)}})
    try:
        client.execute()
        return nb, None
    except CellExecutionError as e:
        cell = next((i for i, c in enumerate(nb.cells) if any(o.get("output_type") == "error" for o in c.get("outputs", []))),
                    None)
        return nb, f"cell {cell}: {e.ename}: {e.evalue}"


def offline(nb):
    """A copy fit for a static page: each Vega-Lite chart rendered to SVG here (vl-convert,
    no browser, no network), widget views dropped (their text fallback stays)."""
    import vl_convert as vlc

    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            for mime in [m for m in data if VEGALITE.fullmatch(m)]:
                data["image/svg+xml"] = vlc.vegalite_to_svg(data.pop(mime))
            for mime in NEEDS_JS:
                data.pop(mime, None)
    return nb


def to_html(nb, header: str) -> str:
    """One page: the notebook with a header line, links to other notebooks pointing at their pages."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(header))
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    body = EXTERNAL_SCRIPT.sub("", body)  # require.js and MathJax from a CDN: no page here needs them
    # Charts inline (searchable text, no data: URL), as the template's own option would, were it not escaping them.
    body = SVG_IMG.sub(lambda m: base64.b64decode(m.group(1)).decode(), body)
    return re.sub(r'href="([^"#:]+)\.ipynb(#[^"]*)?"', r'href="\1.html\2"', body)


def build(names: list[str] | None = None, out: str | Path = OUT, timeout: int = 1800, log=print) -> dict:
    """Execute the chosen notebooks (all by default) and write the site. Returns
    {notebook path: "ok" | "failed: …" | "skipped: …"}; the contents page lists every chapter."""
    import nbformat
    from helpers import registry

    out = Path(out)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    chapters = order(registry.chapters())
    chosen = [c for c in chapters if not names or any(c["path"].name.startswith(n) or c["path"].stem == n for n in names)]
    if names and not chosen:
        raise SystemExit(f"No notebook matches {names}; names start like {[c['path'].stem for c in chapters]}")
    line = machine_line()
    status = {}
    for ch in chosen:
        path, page = ch["path"], page_path(ch["path"], out)
        page.parent.mkdir(parents=True, exist_ok=True)
        if needs_gpu_here(ch):
            status[path] = "skipped: needs a CUDA GPU (metadata guide.accelerator)"
            page.write_text(_plain_page(ch["title"], f"<p>{line}</p><p>Not executed here: {status[path][9:]}.</p>"))
            log(f"{path.name}: {status[path]}")
            continue
        t0 = time.monotonic()
        nb, error = execute(path, timeout)
        seconds = time.monotonic() - t0
        nbformat.write(nb, page.with_suffix(".ipynb"))  # the executed copy, beside its page
        header = (f"*{line} · ran in {seconds:.0f} s · [contents]({os.path.relpath(out / 'index.html', page.parent)})*"
                  + (f"\n\n**This notebook stopped with an error at {error}.**" if error else ""))
        page.write_text(to_html(offline(nb), header))
        status[path] = f"failed: {error}" if error else "ok"
        log(f"{path.name}: {status[path]} ({seconds:.0f} s) → {page}")
    (out / "index.html").write_text(contents_page(chapters, out, line, status))
    log(f"contents: {out / 'index.html'}")
    return status


def contents_page(chapters: list[dict], out: Path, line: str, status: dict) -> str:
    rows = []
    for ch in chapters:
        page = page_path(ch["path"], out)
        where = ("lab {}".format(ch["lab"]) if "lab" in ch else "workshop" if ch.get("workshop")
                 else "chapter {}".format(ch.get("chapter", "")))
        title = html.escape(ch["title"])
        link = f'<a href="{page.relative_to(out)}">{title}</a>' if page.exists() else f"{title} (not built yet)"
        note = status.get(ch["path"], "from an earlier build" if page.exists() else "")
        rows.append(f"<tr><td>{where}</td><td>{link}</td><td>{html.escape(note)}</td></tr>")
    table = "<table><tr><th></th><th>notebook</th><th>this build</th></tr>" + "".join(rows) + "</table>"
    return _plain_page("vLLM performance tuning, by measurement",
                       f"<p>{html.escape(line)}</p><p>Every figure on these pages was measured on that machine "
                       f"when the book was built.</p>{table}")


def _plain_page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
            "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
            "td,th{padding:.3em .8em;text-align:left;border-bottom:1px solid #ddd}</style></head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="guide.sh book", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", help="file-name starts (01, 90, lab01); default: every notebook")
    p.add_argument("--out", default=str(OUT), help="output folder (default: artifacts/book, git-ignored)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one cell may run")
    args = p.parse_args(argv)
    status = build(args.notebooks, args.out, args.timeout)
    failed = [f"{p.name}: {s}" for p, s in status.items() if s.startswith("failed")]
    if failed:
        print("Stopped with an error:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
