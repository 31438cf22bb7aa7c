"""Other tools' result files, read into the guide's rows: recorded files of each kind, written here by
`vllm bench serve --save-result` (with and without --save-detailed), `vllm bench sweep serve` and
GuideLLM 0.8.1 against the guide's engine (tests/data/imports/), and the bad files a team will bring."""
import json
import shutil

import pytest

from helpers import slo, verdicts
from helpers.results import other_tools, workshop
from helpers.results.other_tools import ImportFileError
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "imports"
DETAILED, SUMMARY = DATA / "vllm_bench_detailed.json", DATA / "vllm_bench_summary.json"
SWEEP, GUIDELLM = DATA / "sweep" / "seqs", DATA / "guidellm_benchmarks.json"


def test_a_detailed_vllm_bench_file_gives_its_figures_and_every_request():
    blob = json.loads(DETAILED.read_text())
    [row] = other_tools.from_file(DETAILED)
    assert row["engine_location"] == "imported" and row["import_tool"] == "vllm bench serve"
    assert row["import_tool_version"] is None, "vllm bench serve does not write its version: left empty"
    for k in ("completed", "duration", "output_throughput", "median_ttft_ms", "p99_tpot_ms", "p99_itl_ms",
              "mean_e2el_ms"):
        assert row[k] == pytest.approx(blob[k]), k
    assert len(row["request_ttft_ms"]) == len(row["request_tpot_ms"]) == blob["completed"] == 16
    # TPOT per request as vLLM computes it: their mean is the file's mean TPOT.
    assert sum(row["request_tpot_ms"]) / 16 == pytest.approx(blob["mean_tpot_ms"], abs=0.05)
    assert (row["load_num_prompts"], row["load_max_concurrency"], row["load_request_rate"]) == (16, 4, None)
    assert (row["load_input_len"], row["load_output_len"]) == (128, 32), "each request's lengths, all equal"
    assert row["engine_tensor_parallel_size"] == 1 and row["meta_team"] == "demo", "--metadata, by what it names"
    assert slo.goodput(row, 10_000, 1_000) == pytest.approx(16 / blob["duration"])
    assert slo.goodput(row, 1, 1_000) == 0


def test_a_summary_only_file_leaves_per_request_figures_empty_and_says_why():
    blob = json.loads(SUMMARY.read_text())
    [row] = other_tools.from_file(SUMMARY)
    assert row["output_throughput"] == pytest.approx(blob["output_throughput"])
    assert row["request_ttft_ms"] is None and slo.goodput(row, 10_000, 1_000) is None
    assert row["load_input_len"] is None and row["mean_input_tokens"] == 128, "a mean, not a guessed length"
    assert row["mean_e2el_ms"] is None, "e2el was not in --percentile-metrics"
    assert "--save-detailed" in other_tools.missing(row, "request_ttft_ms")
    assert "--percentile-metrics" in other_tools.missing(row, "p99_e2el_ms")
    assert other_tools.missing(row, "output_throughput") is None
    knee = slo.knee([{**row, "load_request_rate": 1.0}], slo.SLO(1000, 100))
    assert knee.best_rate is None and "--save-detailed" in knee.text(slo.SLO(1000, 100))


def test_a_sweep_folder_gives_a_row_per_combination_with_its_runs_as_repeats():
    rows = other_tools.from_file(SWEEP)
    assert [r["config_label"] for r in rows] == ["seqs2", "seqs8"]
    for r in rows:
        runs = [json.loads(p.read_text())
                for p in sorted((SWEEP / f"SERVE--{r['config_label']}-BENCH--conc4").glob("run=*.json"))]
        assert r["repeats"] == len(runs) == 2
        values = sorted(x["output_throughput"] for x in runs)
        assert (r["output_throughput_min"], r["output_throughput_max"]) == pytest.approx(values)
        assert r["engine_max_num_seqs"] == runs[0]["max_num_seqs"], "the sweep's server parameter"
        assert r["load_max_concurrency"] == 4 and r["load_label"].startswith("conc4 · ")
    assert len({r["tag"] for r in rows}) == 1 and len({r["load_label"] for r in rows}) == 1, "one experiment"
    # The room's ratio to a baseline works on a sweep: max_num_seqs 8 against 2, in the same file.
    df = workshop.room(_room_with(rows))
    r = workshop.ratios(df, "output_throughput", baseline="seqs2")
    got = r.set_index("config_label")["ratio"]
    assert got["seqs8"] == pytest.approx(rows[1]["output_throughput"] / rows[0]["output_throughput"])


def test_a_guidellm_report_is_recomputed_from_its_requests_with_vllms_tpot():
    blob = json.loads(GUIDELLM.read_text())
    [row] = other_tools.from_file(GUIDELLM)
    b = blob["benchmarks"][0]
    reqs = b["requests"]["successful"]
    assert row["import_tool"] == "guidellm" and row["import_tool_version"] == blob["metadata"]["guidellm_version"]
    assert row["completed"] == len(reqs) == 16 and row["import_detail"] == "per request"
    assert row["output_throughput"] == pytest.approx(sum(r["output_tokens"] for r in reqs) / b["duration"])
    # vLLM's TPOT is GuideLLM's inter-token latency; GuideLLM's own TPOT counts the first token too.
    itl = sorted(r["inter_token_latency_ms"] for r in reqs)
    assert row["median_tpot_ms"] == pytest.approx((itl[7] + itl[8]) / 2)
    assert row["median_tpot_ms"] < b["metrics"]["time_per_output_token_ms"]["successful"]["median"]
    assert row["p99_itl_ms"] is None and "GuideLLM" in other_tools.missing(row, "p99_itl_ms")
    assert (row["load_max_concurrency"], row["load_input_len"], row["load_output_len"]) == (4, 128, 32)
    assert slo.goodput(row, 10_000, 1_000) == pytest.approx(16 / b["duration"])


def test_a_verdict_on_imported_rows_is_computed_where_the_figure_exists_and_not_in_this_file_otherwise():
    [guidellm], [bench] = other_tools.from_file(GUIDELLM), other_tools.from_file(SUMMARY)
    held = verdicts.judge_change("throughput higher", guidellm, bench, "output_throughput", "higher", 1.0)
    assert held.verdict in (verdicts.HELD, verdicts.NOISE, verdicts.NOT_HELD, verdicts.PARTLY)
    gap = verdicts.judge_change("the worst token gap lower", bench, guidellm, "p99_itl_ms", "lower", 1.0)
    assert gap.verdict == verdicts.UNTESTED and gap.evidence.startswith("not in this file (guidellm_benchmarks.json)")
    # A rule on imported rows can still say "did not hold": the same row cannot be twice as fast as itself.
    assert verdicts.judge_change("twice the throughput", bench, bench, "output_throughput", "higher", 2.0).verdict \
        == verdicts.NOT_HELD
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


def _room_of_one_guide_row(tmp_path, requests: int, prompt: int, answer: int):
    """A room folder holding one measured guide row of a load at concurrency 4, machine "me"."""
    room = tmp_path / "room"
    room.mkdir()
    guide = {"run_id": "g", "kind": "load", "cfg_model": "SmolLM2-135M-Instruct", "env_env_id": "me", "tag": "ch0",
             "time": "2026-12-01T10:00:00", "measurement_version": 5, "env_vllm": "0.32.0", "config_label": "default",
             "engine_location": "local", "load_num_prompts": requests, "load_input_len": prompt,
             "load_output_len": answer, "load_max_concurrency": 4, "load_request_rate": None,
             "output_throughput": 50.0, "median_ttft_ms": 800.0}
    (room / "me.jsonl").write_text(json.dumps(guide) + "\n")
    return room


def test_imported_rows_are_shown_beside_the_rooms_rows_of_the_same_load(tmp_path):
    room = _room_of_one_guide_row(tmp_path, 16, 128, 32)
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


def test_a_guide_row_written_as_vllm_bench_reads_back_with_the_same_figures_and_goodput(tmp_path):
    [row] = other_tools.from_file(DETAILED)
    row = {**row, "runs": [{"duration": row["duration"], "request_ttft_ms": row["request_ttft_ms"],
                            "request_tpot_ms": row["request_tpot_ms"]}] * 2, "repeats": 2, "cfg_model": "SmolLM2"}
    [path] = other_tools.write_vllm_bench([row], tmp_path)
    blob = json.loads(path.read_text())
    assert blob["request_rate"] == "inf" and blob["max_concurrency"] == 4 and blob["num_prompts"] == 16
    [back] = other_tools.from_file(path)
    for k in ("completed", "output_throughput", "median_ttft_ms", "p99_tpot_ms", "p99_itl_ms", "mean_e2el_ms"):
        assert back[k] == pytest.approx(row[k]), k
    assert slo.goodput(back, 900, 60) == pytest.approx(slo.goodput(row, 900, 60))
    assert back["repeats"] == 2 and back["import_detail"] == "per request"


def test_a_sweep_folder_copied_with_a_torn_run_file_is_named(tmp_path):
    copy = tmp_path / "seqs"
    shutil.copytree(SWEEP, copy)
    run = copy / "SERVE--seqs8-BENCH--conc4" / "run=1.json"
    run.write_text(run.read_text()[:300])
    with pytest.raises(ImportFileError, match=r"run=1.json: is not complete JSON"):
        other_tools.from_file(copy)


def _room_with(rows):
    import tempfile
    from pathlib import Path
    folder = Path(tempfile.mkdtemp())
    with open(folder / "imported.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return folder


def test_goodput_steps_and_the_roofline_say_not_in_this_file_for_a_summary_file():
    from helpers import tuning
    from helpers.config import ConfigError
    [row] = other_tools.from_file(SUMMARY)
    with pytest.raises(ConfigError, match=r"not in this file \(vllm_bench_summary.json\).*--save-detailed"):
        tuning.effect(row, row, slo.SLO(1000, 100))
    assert row["mbu"] is None and "memory bandwidth" in other_tools.missing(row, "mbu")
    [detailed] = other_tools.from_file(DETAILED)
    assert tuning.effect(detailed, detailed, slo.SLO(10_000, 1_000)) == (tuning.NOTHING, 1.0)


def test_pack_as_vllm_bench_writes_this_machines_load_rows_cleaned(results_dir):
    from helpers.results import fingerprint
    [row] = other_tools.from_file(DETAILED)
    fp = fingerprint()
    mine = {**row, "engine_location": "local", "env_machine_id": fp["machine_id"], "env_env_id": fp["env_id"],
            "cfg_model": "/home/ana/models/SmolLM2-135M-Instruct", "run_id": "r1"}
    results_dir.mkdir(parents=True)
    (results_dir / f"{fp['env_id']}.jsonl").write_text(
        json.dumps(mine) + "\n" + json.dumps({**mine, "kind": "roof", "run_id": "r2"}) + "\n")
    folder = workshop.pack(style="vllm-bench")
    [path] = sorted(folder.glob("*.json"))
    blob = json.loads(path.read_text())
    assert blob["model_id"] == "SmolLM2-135M-Instruct", "a local path leaves as its last part"
    assert "/home/ana" not in path.read_text()
    [back] = other_tools.from_file(path)
    assert back["output_throughput"] == pytest.approx(row["output_throughput"]) \
        and back["import_detail"] == "per request"
    with pytest.raises(ValueError, match="the styles are"):
        workshop.pack(style="csv")


@pytest.mark.parametrize("strategy, conc, rate", [
    ({"type_": "constant", "rate": 2.0, "max_concurrency": None}, None, 2.0),
    ({"type_": "poisson", "rate": 1.5, "max_concurrency": 8}, 8, 1.5),
    ({"type_": "synchronous"}, 1, None),
    ({"type_": "throughput", "max_concurrency": 16}, 16, None),
])
def test_a_guidellm_strategy_becomes_the_rows_concurrency_and_rate(tmp_path, strategy, conc, rate):
    blob = json.loads(GUIDELLM.read_text())
    blob["benchmarks"][0]["config"]["strategy"] = strategy
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(blob))
    [row] = other_tools.from_file(path)
    assert (row["load_max_concurrency"], row["load_request_rate"]) == (conc, rate)
    assert (f"({strategy['type_']})" in row["load_label"]) == (strategy["type_"] in ("constant", "poisson"))


def test_a_sweep_combination_folder_names_its_server_and_benchmark_parts():
    from helpers.results.other_tools import _comb_names
    assert _comb_names("SERVE--seqs2-BENCH--conc4") == ("seqs2", "conc4")
    assert _comb_names("SERVE--max_num_seqs=8") == ("max_num_seqs=8", None)
    assert _comb_names("BENCH--max_concurrency=4") == (None, "max_concurrency=4")
    assert _comb_names("my-run") == ("my-run", None)


def test_a_guidellm_warm_up_is_left_out_as_guidellm_leaves_it_out():
    """A real GuideLLM 0.8.1 report (tests/data/imports/guidellm_warmup.json: `--profile
    kind=concurrent,streams=4,warmup=4 --constraint kind=max_requests,count=12`, 96 → 16 tokens, against
    the guide's default engine): its request list holds all 12 requests, its figures the 7 that ended
    after the warm-up. The row keeps those 7, and says what its duration covers."""
    path = DATA / "guidellm_warmup.json"
    b = json.loads(path.read_text())["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert len(b["requests"]["successful"]) == 12 and b["metrics"]["request_totals"]["successful"] == 7
    assert row["completed"] == row["import_requests_kept"] == 7 and row["import_detail"] == "per request"
    assert row["duration"] == pytest.approx(b["duration"]) and row["total_output_tokens"] == 7 * 16
    assert row["output_throughput"] == pytest.approx(7 * 16 / b["duration"])
    assert len(row["request_ttft_ms"]) == 7 and row["median_ttft_ms"] <= row["p99_ttft_ms"]
    assert "warm-up before it (5 request(s))" in row["import_duration_covers"], row["import_duration_covers"]
    [whole] = other_tools.from_file(GUIDELLM)  # no warm-up: the whole run
    assert whole["import_duration_covers"].startswith("GuideLLM's whole run")


def test_a_request_that_finished_as_the_warm_up_ended_is_counted_as_guidellm_counted_it():
    """Another real report (tests/data/imports/guidellm_warmup_edge.json: benchmarks/imports.py's load, 32
    requests of 128 → 64 tokens at 4 streams plus `warmup=4`, GuideLLM 0.8.1 against the guide's
    default engine): GuideLLM counted 31 of 36, one of them finishing 6 ms before the window's
    recorded start. The row keeps the 31 that finished last, so every figure is there."""
    path = DATA / "guidellm_warmup_edge.json"
    b = json.loads(path.read_text())["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert b["metrics"]["request_totals"]["successful"] == row["completed"] == row["import_requests_kept"] == 31
    assert row["total_output_tokens"] == 31 * 64 and row["output_throughput"] is not None
    assert row["output_throughput"] == pytest.approx(31 * 64 / b["duration"])


def test_a_run_in_which_every_request_failed_has_no_latencies_and_says_why(tmp_path, capsys):
    """vLLM writes 0.0 for every latency when nothing completed (calculate_metrics): not a perfect run."""
    blob = json.loads(SUMMARY.read_text())
    failed = {**blob, "completed": 0, "failed": blob["num_prompts"], "output_throughput": 0.0,
              **{k: 0.0 for k in blob if other_tools.LATENCY_KEY.match(k)}}
    (tmp_path / "failed.json").write_text(json.dumps(failed))
    [row] = other_tools.from_file(tmp_path / "failed.json")
    assert row["median_ttft_ms"] is None and row["p99_tpot_ms"] is None
    assert row["import_failures"] == f"no request completed: 0 of {blob['num_prompts']}"
    assert "no request completed" in other_tools.missing(row, "median_ttft_ms")
    [good] = other_tools.from_file(SUMMARY)
    claim = verdicts.judge_change("cuts median TTFT", good, row, "median_ttft_ms", "lower", 1.2)
    assert claim.verdict == verdicts.UNTESTED and "no request completed" in claim.evidence
    # issue 48.5: no rate either; a throughput comparison cannot be judged (it read "held ×inf")
    assert row["output_throughput"] is None and "no latency or rate" in other_tools.missing(row, "output_throughput")
    claim = verdicts.judge_change("raises throughput", row, good, "output_throughput", "higher", 1.2)
    assert claim.verdict == verdicts.UNTESTED
    assert other_tools.main([str(tmp_path / "failed.json"), "--room", str(tmp_path / "room")]) == 0
    assert "no request completed: 0 of" in capsys.readouterr().out


def test_a_partly_failed_run_says_how_many_failed(tmp_path, capsys):
    blob = {**json.loads(SUMMARY.read_text()), "failed": 2}
    (tmp_path / "partly.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "partly.json")
    assert row["median_ttft_ms"] == pytest.approx(blob["median_ttft_ms"])
    assert row["import_failures"].startswith(f"2 of {blob['num_prompts']} requests failed")
    other_tools.main([str(tmp_path / "partly.json"), "--room", str(tmp_path / "room")])
    assert "2 of" in capsys.readouterr().out


def test_an_append_result_file_gives_one_row_per_line(tmp_path):
    """vllm bench serve --append-result appends one JSON result per line to the same file."""
    one, two = json.loads(SUMMARY.read_text()), json.loads(DETAILED.read_text())
    (tmp_path / "appended.json").write_text(json.dumps(one) + "\n" + json.dumps(two) + "\n")
    rows = other_tools.from_file(tmp_path / "appended.json")
    assert [r["completed"] for r in rows] == [one["completed"], two["completed"]]
    assert len({r["run_id"] for r in rows}) == 2


def test_a_hub_cache_path_names_the_model_not_its_snapshot_hash(tmp_path):
    path = ("/home/ana/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M/snapshots/"
            "12fd25f77366fa6b3b4b768ec3050bf629380bac/")
    (tmp_path / "hub.json").write_text(json.dumps({**json.loads(SUMMARY.read_text()), "model_id": path}))
    [row] = other_tools.from_file(tmp_path / "hub.json")
    assert row["endpoint_model"] == "HuggingFaceTB/SmolLM2-135M"
    assert other_tools.model_name("embedded") == "embedded"


def test_every_percentile_in_the_file_is_kept_and_only_absent_ones_get_a_reason(tmp_path):
    blob = {**json.loads(SUMMARY.read_text()), "p90_ttft_ms": 12.5, "p99.9_tpot_ms": 40.0}
    (tmp_path / "p90.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "p90.json")
    assert row["p90_ttft_ms"] == 12.5 and row["p99.9_tpot_ms"] == 40.0
    assert other_tools.missing(row, "p90_ttft_ms") is None
    assert "--percentile-metrics" in other_tools.missing(row, "p95_ttft_ms")


def test_a_key_spelled_like_vllms_own_is_named_not_kept(tmp_path):
    blob = {**json.loads(SUMMARY.read_text()), "request_througput": 3.0}
    (tmp_path / "typo.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "typo.json")
    assert "meta_request_througput" not in row and "request_througput" in row["import_ignored"]


def test_the_bench_arguments_are_the_installed_vllms():
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    assert other_tools.BENCH_ARGUMENTS == {a.dest for a in parser._actions} - {"help"}


def test_a_guidellm_report_without_a_version_is_called_older(tmp_path):
    blob = json.loads(GUIDELLM.read_text())
    blob["metadata"].pop("version")
    (tmp_path / "old.json").write_text(json.dumps(blob))
    with pytest.raises(ImportFileError, match="before 0.5"):
        other_tools.from_file(tmp_path / "old.json")


def test_a_guidellm_0_7_report_reads_as_0_8s_and_names_its_version():
    """A real GuideLLM 0.7.4 report (tests/data/imports/guidellm07_warmup.json: helpers.load.peers.guidellm with
    GuideLLM 0.7.4 in a venv of its own, `warmup=2`, 8 requests of 96 → 16 tokens at 4 streams, against the
    guide's default engine on an AMD EPYC Zen 4). 0.7 writes schema version 2 too: same fields, same rules."""
    path = DATA / "guidellm07_warmup.json"
    blob = json.loads(path.read_text())
    b = blob["benchmarks"][0]
    [row] = other_tools.from_file(path)
    assert blob["metadata"]["version"] == 2 and row["import_tool_version"] == "0.7.4"
    counted = b["metrics"]["request_totals"]["successful"]
    assert row["completed"] == row["import_requests_kept"] == counted == 8 and len(b["requests"]["successful"]) == 10
    assert row["total_output_tokens"] == 8 * 16 and row["output_throughput"] == pytest.approx(8 * 16 / b["duration"])
    assert "warm-up before it (2 request(s))" in row["import_duration_covers"]
    assert (row["load_input_len"], row["load_output_len"], row["load_max_concurrency"]) == (96, 16, 4)


def test_a_2024_benchmark_serving_file_reads_and_names_its_format(tmp_path):
    """tests/data/imports/benchmark_serving_2024.json: a real run of the guide's default engine (vllm bench
    serve, 8 requests of 128 → 16 tokens at 4 req/s, no concurrency cap, percentiles ttft,tpot,itl at 99:
    the 2024 script's defaults) written with the keys of vLLM's 2024 benchmarks/benchmark_serving.py:
    `best_of`, `use_beam_search`, no `max_concurrency`, no `latencies` (tests/data/imports/README.md)."""
    path = DATA / "benchmark_serving_2024.json"
    blob = json.loads(path.read_text())
    [row] = other_tools.from_file(path)
    for k in ("completed", "duration", "output_throughput", "median_ttft_ms", "p99_tpot_ms", "p99_itl_ms"):
        assert row[k] == pytest.approx(blob[k]), k
    assert row["load_max_concurrency"] is None and row["load_request_rate"] == 4.0  # uncapped, as the script sent
    assert "benchmark_serving.py" in row["import_format"] and "no latencies" in row["import_format"]
    assert "benchmark_serving.py" in other_tools.summary_line([row], set())
    assert not [k for k in row if k.startswith("meta_")]  # best_of / use_beam_search are the script's own keys
    # per-request TPOT from TTFT and the chunk gaps: (sum of gaps) / (tokens - 1), never 0 for a long answer
    want = [round(1000 * sum(g) / (n - 1), 2) for g, n in zip(blob["itls"], blob["output_lens"])]
    assert row["request_tpot_ms"] == want and min(want) > 0
    assert "2024 script" in other_tools.missing(row, "p90_ttft_ms")
    # without the itls as well, no TPOT at all rather than zeros
    bare = {k: v for k, v in blob.items() if k != "itls"}
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    assert other_tools.from_file(tmp_path / "bare.json")[0]["request_tpot_ms"] is None
    # a file with neither max_concurrency nor the old script's keys is still refused, naming the field
    other = {k: v for k, v in blob.items() if k not in ("best_of", "use_beam_search")}
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(other_tools.ImportFileError, match="max_concurrency"):
        other_tools.from_file(tmp_path / "other.json")


AIPERF_DIR = DATA / "aiperf"


def test_an_aiperf_export_reads_with_vllms_tpot_from_its_records():
    """tests/data/imports/aiperf/: AIPerf 0.13.0 in a venv of its own against the guide's default engine, the
    guide's import load (8 requests of 96 → 16 tokens at concurrency 4, streamed completions, ignore_eos), with
    --export-level records (tests/data/imports/README.md has the command)."""
    summary = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    records = [json.loads(x) for x in (AIPERF_DIR / "profile_export.jsonl").read_text().splitlines()]
    [row] = other_tools.from_file(AIPERF_DIR)  # the artifact folder, or the summary file itself
    assert other_tools.from_file(AIPERF_DIR / "profile_export_aiperf.json")[0]["run_id"] == row["run_id"]
    assert row["import_tool"] == "aiperf" and row["import_tool_version"] == "0.13.0"
    assert row["completed"] == 8 and row["duration"] == pytest.approx(summary["benchmark_duration"]["avg"])
    assert row["median_ttft_ms"] == pytest.approx(summary["time_to_first_token"]["p50"])
    assert row["p99_e2el_ms"] == pytest.approx(summary["request_latency"]["p99"])
    assert row["load_label"] == "8 requests 96→16 tokens @ conc 4" and row["import_detail"] == "per request"
    # TPOT is vLLM's, with the server's token count: AIPerf's own inter_token_latency counts its tokenizer's
    for rec, tpot in zip(records, row["request_tpot_ms"]):
        m = {k: v["value"] for k, v in rec["metrics"].items()}
        assert tpot == pytest.approx(
            (m["request_latency"] - m["time_to_first_token"]) / (m["usage_completion_tokens"] - 1))
    recounted = [r for r in records if r["metrics"]["output_sequence_length"]["value"]
                 != r["metrics"]["usage_completion_tokens"]["value"]]
    assert recounted, "this export has requests whose text AIPerf's tokenizer counted differently"
    assert row["total_output_tokens"] == summary["total_usage_completion_tokens"]["avg"]
    # ITL: every request's gaps between content responses, pooled as vLLM pools its chunk gaps
    gaps = [g for r in records for g in r["metrics"]["inter_chunk_latency"]["value"]]
    assert row["mean_itl_ms"] == pytest.approx(sum(gaps) / len(gaps)) and row["max_itl_ms"] == max(gaps)
    assert row["p99_itl_ms"] == pytest.approx(summary["inter_chunk_latency"]["p99"])


def test_an_aiperf_summary_alone_keeps_its_own_statistics_and_says_what_it_lacks(tmp_path):
    shutil.copy(AIPERF_DIR / "profile_export_aiperf.json", tmp_path)
    [row] = other_tools.from_file(tmp_path)
    summary = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    assert row["import_detail"] == "summary" and row["request_ttft_ms"] is None
    assert row["median_tpot_ms"] == pytest.approx(summary["inter_token_latency"]["p50"])
    assert row["p90_ttft_ms"] == pytest.approx(summary["time_to_first_token"]["p90"])
    assert "--export-level records" in other_tools.missing(row, "request_ttft_ms")


def test_aiperf_files_the_guide_cannot_read_are_named(tmp_path):
    with pytest.raises(ImportFileError, match="per-request records, not its summary"):
        other_tools.from_file(AIPERF_DIR / "profile_export.jsonl")
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    (tmp_path / "v2.json").write_text(json.dumps({**blob, "schema_version": "2.0"}))
    with pytest.raises(ImportFileError, match="schema version '2.0'"):
        other_tools.from_file(tmp_path / "v2.json")


def test_an_aiperf_run_in_which_some_requests_failed_counts_only_the_successful(tmp_path):
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    some = {**blob, "request_count": {"unit": "requests", "avg": 6.0},
            "error_summary": [{"error_details": {"code": 500, "message": "boom"}, "count": 2}]}
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(some))
    [row] = other_tools.from_file(tmp_path / "profile_export_aiperf.json")
    assert row["completed"] == 6 and row["import_failures"].startswith("2 of 8 requests failed")


def test_an_aiperf_run_in_which_every_request_failed_is_never_held(tmp_path):
    blob = json.loads((AIPERF_DIR / "profile_export_aiperf.json").read_text())
    # as AIPerf writes it: no request_count (no success), completed_request_count counting the failures too
    failed = {k: v for k, v in blob.items() if k != "request_count"}
    failed["error_summary"] = [{"error_details": {"code": 500, "message": "boom"}, "count": 8}]
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(failed))
    [row] = other_tools.from_file(tmp_path / "profile_export_aiperf.json")
    assert row["median_ttft_ms"] is None and row["import_failures"] == "no request completed: 0 of 8"
    [good] = other_tools.from_file(AIPERF_DIR)
    claim = verdicts.judge_change("cuts median TTFT", good, row, "median_ttft_ms", "lower", 1.2)
    assert claim.verdict == verdicts.UNTESTED and "no request completed" in claim.evidence


def test_the_guides_vllm_benchs_guidellms_and_aiperfs_rows_of_one_load_sit_side_by_side(tmp_path):
    """The guide's import load (8 requests of 96 → 16 tokens at concurrency 4) as each tool wrote it on the
    guide's default engine: vllm_bench_import_load.json, guidellm07_warmup.json, aiperf/."""
    room = _room_of_one_guide_row(tmp_path, 8, 96, 16)
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


def test_an_older_file_without_a_failed_key_shows_the_requests_that_did_not_complete(tmp_path):
    """Issue 48.3: benchmark_serving.py files of 2024 write no `failed`; 985 of 2000 completed is not clean."""
    blob = json.loads((DATA / "benchmark_serving_2024.json").read_text())
    assert "failed" not in blob
    [clean] = other_tools.from_file(DATA / "benchmark_serving_2024.json")
    assert clean["failed"] == 0 and not clean.get("import_failures")
    short = {**blob, "num_prompts": int(blob["completed"]) + 5}
    (tmp_path / "short.json").write_text(json.dumps(short))
    [row] = other_tools.from_file(tmp_path / "short.json")
    assert row["failed"] == 5 and "5 of" in row["import_failures"] and "no 'failed' key" in row["import_failures"]


@pytest.mark.parametrize("content, said", [(b"", "is empty"), (b"\x00\x01\x02PK", "not text"),
                                           (b"\xff\xfe\xfa", "not text"),
                                           (b"benchmark,rate,ttft_ms\nsync,1.0,300\n", "a CSV table")])
def test_a_file_that_is_not_json_is_named_for_what_it_is(tmp_path, content, said):
    """Issue 48.6: an empty file, a binary file and a CSV all read "not complete JSON" before."""
    (tmp_path / "f.json").write_bytes(content)
    with pytest.raises(other_tools.ImportFileError, match=said):
        other_tools.from_file(tmp_path / "f.json")


def test_a_run_against_another_server_names_it_in_its_label(tmp_path):
    """Issue 48.4: one file with a run against vLLM and one against SGLang gave both rows one label."""
    blob = json.loads(SUMMARY.read_text())
    lines = [json.dumps({**blob, "backend": "vllm"}), json.dumps({**blob, "backend": "sglang"})]
    (tmp_path / "two.jsonl").write_text("\n".join(lines) + "\n")
    vllm_row, sglang_row = other_tools.from_file(tmp_path / "two.jsonl")
    assert sglang_row["config_label"] == vllm_row["config_label"] + " (sglang)"


def test_an_append_result_file_written_by_vllm_bench_serve_reads_as_one_row_per_run():
    """Issue 48.8: tests/data/imports/vllm_bench_append.jsonl, written by the installed vLLM 0.32's `vllm bench
    serve --save-result --append-result` against the guide's default engine: 8 requests of 96 → 16 tokens at
    concurrency 4, then 2 (/tmp/make_append.py of the session of 2026-12-07; the README's table names it).
    vLLM writes a newline between runs and none after the last."""
    path = DATA / "vllm_bench_append.jsonl"
    blobs = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(blobs) == 2 and not path.read_text().endswith("\n")
    rows = other_tools.from_file(path)
    assert [r["load_max_concurrency"] for r in rows] == [4, 2]
    for row, blob in zip(rows, blobs):
        for k in ("completed", "duration", "output_throughput", "median_ttft_ms", "p99_itl_ms"):
            assert row[k] == pytest.approx(blob[k]), k
        assert not row.get("import_failures")
