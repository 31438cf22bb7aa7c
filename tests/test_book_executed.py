"""`bash guide.sh book` on one notebook, really executed and rendered by Sphinx: the workshop notebook
(it starts no engine) on a room the test prepares, two fake machines and this one. Every page exists
(the others unexecuted), the chart is an SVG, no output holds a traceback, no page loads a script from
the network, and the committed notebook stays output-free."""
import json
import os
import re

import pytest

from helpers import book
from helpers.config import EngineConfig
from helpers.experiment import base_row
from helpers.load import Load
from helpers.results import ResultStore
from tests.conftest import ROOT


def test_book_of_the_workshop_notebook(tmp_path, monkeypatch):
    pytest.importorskip("myst_nb", reason="the book's tools are not installed (bash guide.sh test installs them)")
    if not (book.WIDGETS / "embed.js").exists():
        pytest.skip(f"the widget manager is not fetched ({book.WIDGETS}; bash guide.sh test fetches it)")
    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # build() adds the repository; undone after
    load = Load(num_prompts=4)
    for label, tput in [("stock", 50.0), ("tuned", 65.0)]:
        cfg = EngineConfig(max_model_len=2048 if label == "tuned" else 4096)
        ResultStore().append({**base_row(cfg, load, "ch1-ablation", "load"), "config_label": label,
                              "output_throughput": tput})
    for env, cpu, ratio in [("aaaa11112222", "AMD Ryzen 7", 1.1), ("bbbb33334444", "Intel Xeon", 1.6)]:
        rows = [{**row, "run_id": f"{env}-{row['config_label']}", "env_env_id": env, "env_cpu_model": cpu,
                 "env_machine_id": env[:8], "output_throughput": row["output_throughput"] * (ratio if i else 1)}
                for i, row in enumerate(ResultStore().rows())]
        (tmp_path / "results" / f"{env}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = (ROOT / "notebooks" / "90_workshop_room.ipynb").read_text()

    status = book.build(["90"], tmp_path / "book", timeout=300, log=lambda *_: None)

    assert list(status.values()) == ["ok"]
    out = tmp_path / "book"
    page = (out / "notebooks" / "90_workshop_room.html").read_text()
    charts = re.findall(r'<img[^>]*src="([^"]+\.svg)"', page)
    assert charts and all((out / "notebooks" / c).resolve().exists() for c in charts), "the room's chart, as SVG"
    assert "Traceback" not in page
    assert "read 6 stored row(s) from 3 machine environment(s)" in page
    assert "Executed" in page and "cores" in page  # the machine's fingerprint line
    for html in out.rglob("*.html"):
        assert not re.search(r'<script[^>]*src="https?://', html.read_text()), html
    index = (out / "index.html").read_text()
    assert 'href="notebooks/90_workshop_room.html"' in index
    assert 'href="notebooks/04a_samples_and_prefix_caching.html"' in index
    assert (out / "searchindex.js").exists() and (out / "_static" / "embed.js").exists()
    executed = json.loads((tmp_path / "book-src" / "notebooks" / "90_workshop_room.ipynb").read_text())
    outputs = [o for c in executed["cells"] for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert (ROOT / "notebooks" / "90_workshop_room.ipynb").read_text() == before
    assert (tmp_path / "results" / "hand-in").is_dir()  # the notebook's hand-in cell packed beside the results
