"""`bash guide.sh book` on one notebook, really executed: the workshop notebook (it starts no
engine) on a room the test prepares, two fake machines and this one. Pages exist, the chart is
inline SVG, no output holds a traceback, and the committed notebook stays output-free."""
import json
import os

from helpers import book
from helpers.config import EngineConfig
from helpers.experiment import base_row
from helpers.load import Load
from helpers.results import ResultStore
from tests.conftest import ROOT


def test_book_of_the_workshop_notebook(tmp_path, monkeypatch):
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
    page = (tmp_path / "book" / "notebooks" / "90_workshop_room.html").read_text()
    assert "<svg" in page
    assert "Traceback" not in page
    assert "read 6 stored row(s) from 3 machine environment(s)" in page
    assert "Executed" in page and "cores" in page  # the machine's fingerprint line
    assert not book.EXTERNAL_SCRIPT.search(page)
    index = (tmp_path / "book" / "index.html").read_text()
    assert 'href="notebooks/90_workshop_room.html"' in index and index.index("chapter 1") < index.index("workshop")
    executed = json.loads((tmp_path / "book" / "notebooks" / "90_workshop_room.ipynb").read_text())
    outputs = [o for c in executed["cells"] for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert (ROOT / "notebooks" / "90_workshop_room.ipynb").read_text() == before
    assert (tmp_path / "results" / "hand-in").is_dir()  # the notebook's hand-in cell packed beside the results
