"""The importer's one entry point (helpers/results/other_tools.py): which files it takes and refuses, what it
adds to a room, and a room mixing every tool's rows."""
import json
import re
import shutil

import pytest

from helpers import verdicts
from helpers.results import other_tools, workshop
from helpers.results.other_tools import ImportFileError
from tests.unit.import_files import AIPERF_DIR, DATA, DETAILED, GUIDELLM, SUMMARY, SWEEP, room_of_one_guide_row


def test_a_verdict_on_imported_rows_is_computed_where_the_figure_exists_and_not_in_this_file_otherwise():
    [guidellm], [bench] = other_tools.from_file(GUIDELLM), other_tools.from_file(SUMMARY)
    held = verdicts.judge_change("throughput higher", guidellm, bench, "output_throughput", "higher", 1.0)
    assert held.verdict in (verdicts.HELD, verdicts.NOISE, verdicts.CANNOT_TELL, verdicts.NOT_HELD, verdicts.PARTLY)
    gap = verdicts.judge_change("the worst token gap lower", bench, guidellm, "p99_itl_ms", "lower", 1.0)
    assert gap.verdict == verdicts.UNTESTED and gap.evidence.startswith("not in this file (guidellm_benchmarks.json)")
    # A rule on imported rows can still exclude a claimed size: the same row is not twice as fast as itself.
    assert verdicts.judge_change("twice the throughput", bench, bench, "output_throughput", "higher", 2.0).verdict \
        == verdicts.NOISE
    slower = {**bench, "output_throughput": bench["output_throughput"] / 2}
    assert verdicts.judge_change("faster", bench, slower, "output_throughput", "higher", 1.2).verdict \
        == verdicts.NOT_HELD


@pytest.mark.parametrize("make, needle", [
    (lambda p: p.write_bytes(DETAILED.read_bytes()[:5000]), "ends mid-way"),
    (lambda p: p.write_text(json.dumps({"format": "vllm-guide-results", "rows": []})), "neither a vllm bench serve"),
    (lambda p: p.write_text("[1, 2]"), "neither"),
    (lambda p: p.write_text(json.dumps({k: v for k, v in json.loads(SUMMARY.read_text()).items()
                                        if k != "output_throughput"})), "has no 'output_throughput'"),
    (lambda p: p.write_text(json.dumps({**json.loads(GUIDELLM.read_text()), "metadata": {"version": 3}})),
     "schema version 3 (field metadata.version)"),
    (lambda p: p.write_text(json.dumps({**json.loads(GUIDELLM.read_text()), "benchmarks": []})), "no benchmarks"),
    (lambda p: p.write_text((SWEEP / "SERVE--seqs2-BENCH--conc4" / "summary.json").read_text()),
     "the sweep's experiment folder"),
])
def test_a_bad_file_gets_an_error_naming_the_file_and_the_field(tmp_path, make, needle):
    bad = tmp_path / "bad.json"
    make(bad)
    with pytest.raises(ImportFileError, match="Try:") as e:
        other_tools.from_file(bad)
    assert needle in str(e.value) and str(e.value).startswith("bad.json")


def test_a_folder_without_run_files_is_named(tmp_path):
    with pytest.raises(ImportFileError, match="no run=N.json files"):
        other_tools.from_file(tmp_path)


def test_adding_files_to_a_room_keeps_the_good_ones_and_adds_nothing_twice(tmp_path, capsys):
    room = tmp_path / "room"
    bad = tmp_path / "cut.json"
    bad.write_bytes(GUIDELLM.read_bytes()[:1000])
    assert other_tools.main([str(DETAILED), str(bad), str(GUIDELLM), "--room", str(room)]) == 1
    out, err = capsys.readouterr()
    assert "cut.json: NOT imported" in err and "ends mid-way" in err
    assert "1 row(s) from guidellm 0.8.1" in out and "1 row(s) from vllm bench serve" in out
    files = sorted(room.glob("imported-*.jsonl"))
    assert len(files) == 2
    before = [p.read_text() for p in files]
    assert other_tools.main([str(DETAILED), "--room", str(room)]) == 0
    assert [p.read_text() for p in files] == before, "the same file imported twice adds nothing"


def test_a_file_of_another_model_is_its_own_group_in_the_room(tmp_path, capsys):
    room = tmp_path / "room"
    room.mkdir()
    mine = {"run_id": "a", "kind": "load", "cfg_model": "/m/SmolLM2-135M-Instruct", "env_env_id": "me", "tag": "ch1",
            "time": "2026-12-01T10:00:00", "measurement_version": 5, "env_vllm": "0.32.0", "config_label": "stock",
            "output_throughput": 50.0}
    (room / "me.jsonl").write_text(json.dumps(mine) + "\n")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(SUMMARY.read_text()), "model_id": "meta-llama/Llama-3.1-8B"}))
    assert other_tools.main([str(other), "--room", str(room)]) == 0
    assert "its model is not the room's (SmolLM2-135M-Instruct)" in capsys.readouterr().out
    df = workshop.room(room, me="me")
    imported = df.loc[df["engine_location"] == "imported"].iloc[0]
    assert imported["group"] == "imported · vllm bench serve · Llama-3.1-8B" and not imported["compatible"]
    assert imported["machine"] == "imported: other.json (vllm bench serve)"
    assert df.loc[df["env_env_id"] == "me", "compatible"].all(), "the room's own rows keep their group"
    assert len(df) == 2, "nothing lost"


def test_imported_rows_are_shown_beside_the_rooms_rows_of_the_same_load(tmp_path):
    room = room_of_one_guide_row(tmp_path, 16, 128, 32)
    other_tools.add([DETAILED, SUMMARY, GUIDELLM, SWEEP], room)
    side = workshop.beside(workshop.room(room, me="me"))
    assert side.loc[side["config_label"] == "seqs2", "not in this file"].item() == "per-request latencies (goodput)"
    same = side.loc[side["load"] == "16 requests 128→32 @ conc 4"]
    assert len(same) == 4 and same["source"].str.startswith("measured: ").sum() == 1, \
        "the guide's row beside three files'"
    assert (side.loc[side["load"] == "12 requests 128→32 @ conc 4", "config_label"] == ["seqs2", "seqs8"]).all(), \
        "the sweep's load, which no guide row has, still shows"
    assert side.loc[side["source"].str.contains("guidellm"), "p99_itl_ms"].isna().all()
    assert workshop.beside(workshop.room(tmp_path / "empty")).empty


def test_the_guides_vllm_benchs_guidellms_and_aiperfs_rows_of_one_load_sit_side_by_side(tmp_path):
    """The guide's import load (8 requests of 96 → 16 tokens at concurrency 4) as each tool wrote it on the
    guide's default engine: vllm_bench_import_load.json, guidellm07_warmup.json, aiperf/."""
    room = room_of_one_guide_row(tmp_path, 8, 96, 16)
    other_tools.add([DATA / "vllm_bench_import_load.json", DATA / "guidellm07_warmup.json", AIPERF_DIR], room)
    side = workshop.beside(workshop.room(room, me="me"))
    same = side.loc[side["load"] == "8 requests 96→16 @ conc 4"]
    assert len(same) == 4 and same["source"].str.contains("aiperf").sum() == 1
    assert same["source"].str.contains("vllm bench").sum() == 1
    assert same["source"].str.contains("guidellm").sum() == 1 and same["source"].str.startswith("measured").sum() == 1


def test_a_room_mixing_rows_with_and_without_failures_does_not_crash():
    """Issue 48.1: a table of rows with and without `import_failures` holds NaN where a reason is expected."""
    import pandas as pd

    from helpers.results import gaps
    rows = pd.DataFrame([{"engine_location": "imported", "import_tool": gaps.VLLM_BENCH, "import_file": "a.json",
                          "import_failures": "no request completed (3 failed)", "p99_ttft_ms": None},
                         {"engine_location": "imported", "import_tool": gaps.VLLM_BENCH, "import_file": "b.json",
                          "p99_ttft_ms": None}])
    first, second = (r for _, r in rows.iterrows())
    assert "no request completed" in gaps.missing(first, "p99_ttft_ms")
    assert "--percentile-metrics" in gaps.missing(second, "p99_ttft_ms")


@pytest.mark.parametrize("content, said", [
    (b"", "is empty"), (b"\x00\x01\x02PK", "not text"), (b"\xff\xfe\xfa", "not text"),
    (b"benchmark,rate,ttft_ms\nsync,1.0,300\n", "a CSV table"),
    ((SWEEP / "summary.csv").read_bytes(), "a vllm bench sweep's summary.csv (give the sweep's experiment folder"),
    (b"<!DOCTYPE html>\n<html><body>GuideLLM</body></html>", "GuideLLM's benchmarks.html"),
    (b"metadata:\n  version: 2\nbenchmarks: []\n", "GuideLLM's benchmarks.yaml"),
    (GUIDELLM.read_bytes()[:100_000], "ends mid-way"),  # the reader's W2: not "AIPerf's per-request records"
])
def test_a_file_that_is_not_json_is_named_for_what_it_is(tmp_path, content, said):
    """Issue 48.6: an empty file, a binary file and a CSV all read "not complete JSON" before."""
    (tmp_path / "f.json").write_bytes(content)
    with pytest.raises(other_tools.ImportFileError, match=re.escape(said)):
        other_tools.from_file(tmp_path / "f.json")


def test_a_room_of_the_guides_rows_failed_runs_and_a_guidellm_warm_up_renders_compares_and_judges(tmp_path):
    """Issue 48's room: the guide's row, a vLLM run in which every request failed, one in which some failed and a
    GuideLLM run with a warm-up, all of one load shape. The room, the side-by-side table, the ratios and a verdict
    work without an exception, and each failed run's row says how many failed."""
    room = room_of_one_guide_row(tmp_path, 16, 128, 32)
    blob = json.loads(SUMMARY.read_text())
    every = {**blob, "completed": 0, "failed": 16, **{k: 0.0 for k in blob if k.endswith("_ms")},
             "output_throughput": 0.0, "request_throughput": 0.0, "total_token_throughput": 0.0}
    some = {**blob, "completed": 14, "failed": 2}
    (tmp_path / "every.json").write_text(json.dumps(every))
    (tmp_path / "some.json").write_text(json.dumps(some))
    added, failed = other_tools.add([tmp_path / "every.json", tmp_path / "some.json", DATA / "guidellm_warmup.json",
                                     DETAILED], room)
    assert not failed and len(added) == 4
    df = workshop.room(room, me="me")
    side = workshop.beside(df)
    by_file = {r["source"].split(" ")[1]: r for r in side.to_dict("records") if r["source"].startswith("imported")}
    assert by_file["every.json"]["failed"] == "16 of 16" and by_file["some.json"]["failed"] == "2 of 16"
    assert by_file["every.json"]["output_throughput"] != by_file["every.json"]["output_throughput"], "empty, not 0"
    assert "no request completed" in by_file["every.json"]["not in this file"]
    gl = side.loc[side["source"].str.contains("guidellm")].iloc[0]
    assert gl[workshop.RULE] != gl[workshop.RULE], "after GuideLLM's warm-up no figure by vLLM's rule: empty, not 0"
    for metric in ("output_throughput", "median_ttft_ms", "p99_itl_ms"):
        workshop.ratios(df, metric)
    rows = {r["import_file"]: r for r in df.to_dict("records") if r.get("engine_location") == "imported"}
    for other in ("every.json", "some.json", "guidellm_warmup.json"):
        for metric in ("output_throughput", "median_ttft_ms", "p99_itl_ms"):
            claim = verdicts.judge_change("faster", rows["vllm_bench_detailed.json"], rows[other], metric,
                                          "higher", 1.1)
            assert claim.verdict in (verdicts.HELD, verdicts.NOISE, verdicts.CANNOT_TELL, verdicts.NOT_HELD,
                                     verdicts.PARTLY, verdicts.UNTESTED)
    assert verdicts.judge_change("faster", rows["vllm_bench_detailed.json"], rows["every.json"], "output_throughput",
                                 "higher", 1.1).verdict == verdicts.UNTESTED


def test_pass_19_the_rooms_side_by_side_chart_renders_and_imported_rows_stay_out_of_ratios(tmp_path):
    """Pass 19's W2, W3, W8 and M1: notebook 90's chart of the side-by-side table renders (its field name has no
    quote), two runs of one file are two bars, a room of imported files alone gives no ratio, and a GuideLLM row
    without a figure by vLLM's rule says so in the table."""
    import vl_convert as vlc

    from helpers import charts
    from helpers.chapters import ch90
    room = room_of_one_guide_row(tmp_path, 8, 96, 16)
    other_tools.add([DATA / "vllm_bench_append.jsonl", DATA / "guidellm07_warmup.json", AIPERF_DIR], room)
    side = workshop.beside(workshop.room(room, me="me"))
    bars = side.assign(row=[f"{i}. {s} · {c}" for i, (s, c) in enumerate(zip(side["source"], side["config_label"]), 1)])
    assert bars["row"].is_unique
    spec = charts.bars(bars, workshop.RULE, "Imported and measured rows", color="row", x_labels=False).to_dict()
    assert vlc.vegalite_to_svg(spec).startswith("<svg")
    gl = side.loc[side["source"].str.contains("guidellm")].iloc[0]
    assert "throughput by vLLM's rule" in gl["not in this file"]
    only = tmp_path / "only"
    other_tools.add([SWEEP], only)
    df = workshop.room(only, me="me")
    assert ch90.measured(df).empty and workshop.ratios(ch90.measured(df), "output_throughput").empty


def test_pass_20_folders_the_guides_own_files_and_the_tables_notes(tmp_path):
    """Pass 20: a GuideLLM folder with other result files beside it names them (M2); the guide's own results file
    and pack are refused with where they belong (U1); the side-by-side table carries what a file said of its run
    (M3)."""
    folder = tmp_path / "out"
    folder.mkdir()
    shutil.copy(GUIDELLM, folder / "benchmarks.json")
    shutil.copy(DETAILED, folder / "bench.json")
    [row] = other_tools.from_file(folder)
    assert "bench.json" in other_tools.summary_line([row], set())
    ours = tmp_path / "me.jsonl"
    ours.write_text(json.dumps({"run_id": "a", "env_env_id": "me", "kind": "load"}) + "\n" * 2)
    with pytest.raises(ImportFileError, match="the guide's own rows"):
        other_tools.from_file(ours)
    room = room_of_one_guide_row(tmp_path, 8, 96, 16)
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "profile_export_aiperf.json").write_text(json.dumps({**blob, "is_complete": False, "was_cancelled": True}))
    other_tools.add([cut], room)
    side = workshop.beside(workshop.room(room, me="me"))
    assert "AIPerf marked this run incomplete" in side.loc[side["source"].str.contains("aiperf"), "notes"].item()
