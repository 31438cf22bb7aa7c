"""The recorded result files of other tools (tests/data/imports/, its README says which tool wrote each)
and small rooms to import them into, shared by the importer's test files."""

import json
import tempfile
from pathlib import Path

from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "imports"
DETAILED, SUMMARY = DATA / "vllm_bench_detailed.json", DATA / "vllm_bench_summary.json"
SWEEP, GUIDELLM = DATA / "sweep" / "seqs", DATA / "guidellm_benchmarks.json"
AIPERF_DIR = DATA / "aiperf"


def room_of_one_guide_row(tmp_path, requests: int, prompt: int, answer: int):
    """A room folder holding one measured guide row of a load at concurrency 4, machine "me"."""
    room = tmp_path / "room"
    room.mkdir()
    guide = {
        "run_id": "g",
        "kind": "load",
        "cfg_model": "SmolLM2-135M-Instruct",
        "env_env_id": "me",
        "tag": "ch0",
        "time": "2026-12-01T10:00:00",
        "measurement_version": 5,
        "env_vllm": "0.32.0",
        "config_label": "default",
        "engine_location": "local",
        "load_num_prompts": requests,
        "load_input_len": prompt,
        "load_output_len": answer,
        "load_max_concurrency": 4,
        "load_request_rate": None,
        "output_throughput": 50.0,
        "median_ttft_ms": 800.0,
    }
    (room / "me.jsonl").write_text(json.dumps(guide) + "\n")
    return room


def room_with(rows):
    folder = Path(tempfile.mkdtemp())
    with open(folder / "imported.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return folder
