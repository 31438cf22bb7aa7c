"""vLLM's own result files read as rows (helpers/results/formats/vllm.py): `vllm bench serve --save-result`
(with and without --save-detailed, --append-result), vLLM's 2024 benchmark_serving.py, `vllm bench sweep serve`
folders, and the way back; each figure is the file's own."""
import json
import shutil

import pytest

from helpers import slo, verdicts
from helpers.results import other_tools, workshop
from helpers.results.formats import vllm
from helpers.results.other_tools import ImportFileError
from tests.unit.import_files import DATA, DETAILED, SUMMARY, SWEEP, room_with


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
    df = workshop.room(room_with(rows))
    r = workshop.ratios(df, "output_throughput", baseline="seqs2")
    got = r.set_index("config_label")["ratio"]
    assert got["seqs8"] == pytest.approx(rows[1]["output_throughput"] / rows[0]["output_throughput"])


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


def test_a_sweep_combination_folder_names_its_server_and_benchmark_parts():
    _comb_names = vllm.comb_names
    assert _comb_names("SERVE--seqs2-BENCH--conc4") == ("seqs2", "conc4")
    assert _comb_names("SERVE--max_num_seqs=8") == ("max_num_seqs=8", None)
    assert _comb_names("BENCH--max_concurrency=4") == (None, "max_concurrency=4")
    assert _comb_names("my-run") == ("my-run", None)


def test_a_run_in_which_every_request_failed_has_no_latencies_and_says_why(tmp_path, capsys):
    """vLLM writes 0.0 for every latency when nothing completed (calculate_metrics): not a perfect run."""
    blob = json.loads(SUMMARY.read_text())
    failed = {**blob, "completed": 0, "failed": blob["num_prompts"], "output_throughput": 0.0,
              **{k: 0.0 for k in blob if vllm.LATENCY_KEY.match(k)}}
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
    assert vllm.BENCH_ARGUMENTS == {a.dest for a in parser._actions} - {"help"}


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


def test_a_sweep_folder_given_from_above_or_beside_a_copy_gives_each_combination_once(tmp_path):
    """Issue 48.7: a sweep folder given three levels up imported 5 rows for its 2 combinations. Runs are found by
    their own files, a run file found twice (the sweep kept beside a copy of it) counts once, and the rows and
    their ids are the same from any level, so importing again adds nothing."""
    top = tmp_path / "work"
    shutil.copytree(SWEEP, top / "results" / "sweeps" / "seqs")
    shutil.copytree(SWEEP, top / "backup" / "seqs")
    shutil.copytree(SWEEP / "SERVE--seqs2-BENCH--conc4", top / "backup" / "seqs2-only" / "SERVE--seqs2-BENCH--conc4")
    here = other_tools.from_file(SWEEP)
    for folder in (top, top / "results", top / "results" / "sweeps", top / "results" / "sweeps" / "seqs"):
        rows = other_tools.from_file(folder)
        assert [r["config_label"] for r in rows] == ["seqs2", "seqs8"], folder
        assert [r["repeats"] for r in rows] == [2, 2]
        assert [r["run_id"] for r in rows] == [r["run_id"] for r in here]
        assert [r["output_throughput"] for r in rows] == [r["output_throughput"] for r in here]


def test_a_sweep_combination_with_a_failed_run_says_so_and_takes_medians_of_the_runs_that_have_them(tmp_path):
    """The reader's W5 and M6: a run in which nothing completed gave the combination run 0's figures as its median
    and hid the failures; a copy with other line endings counted every run twice; other files were skipped
    silently (M7)."""
    copy = tmp_path / "seqs"
    shutil.copytree(SWEEP, copy)
    run = copy / "SERVE--seqs8-BENCH--conc4" / "run=1.json"
    blob = json.loads(run.read_text())
    run.write_text(json.dumps({**blob, "completed": 0, "failed": blob["num_prompts"], "output_throughput": 0.0,
                               **{k: 0.0 for k in blob if vllm.LATENCY_KEY.match(k)}}))
    shutil.copy(DATA / "vllm_bench_summary.json", copy / "other.json")
    seqs2, seqs8 = other_tools.from_file(copy)
    run0 = json.loads((SWEEP / "SERVE--seqs8-BENCH--conc4" / "run=0.json").read_text())
    # throughputs over every run, 0 for the run that served nothing (pass 19: counts and rates over the same runs)
    assert seqs8["output_throughput"] == run0["output_throughput"] / 2 and seqs8["repeats"] == 2
    assert "run 1: no request completed" in seqs8["import_failures"]
    assert seqs8["completed"] == (run0["completed"] + 0) / 2, "a median over the runs, as a measured row's repeats"
    assert seqs2["import_failures"] is None and "median over the combination's 2 run file(s)" in seqs2["import_figures"]
    assert "other.json" in other_tools.summary_line([seqs2, seqs8], set())
    crlf = tmp_path / "top"
    shutil.copytree(SWEEP, crlf / "results" / "seqs")
    # beside it, a copy with other line endings and indentation
    shutil.copytree(SWEEP, crlf / "backup" / "seqs")
    for p in (crlf / "backup" / "seqs").rglob("run=*.json"):
        p.write_text(json.dumps(json.loads(p.read_text()), indent=2).replace("\n", "\r\n"))
    rows = other_tools.from_file(crlf)
    assert [r["repeats"] for r in rows] == [2, 2]
    assert [r["run_id"] for r in rows] == [r["run_id"] for r in other_tools.from_file(crlf / "results" / "seqs")]


def test_a_sweeps_own_failure_and_warm_up_files_are_read_for_what_they_are(tmp_path):
    """The reader's M1 and M2 (pass 17), with the files vLLM 0.32's sweep writes (sweep/serve.py run_comb, run_combs):
    run=N.failure.json for a run that failed under --continue-on-error, warmup.json for --warmup-num-prompts,
    SERVE-<name>-failure.json for a server combination that never served."""
    copy = tmp_path / "seqs"
    shutil.copytree(SWEEP, copy)
    comb = copy / "SERVE--seqs2-BENCH--conc4"
    (comb / "run=1.json").unlink()
    (comb / "run=1.failure.json").write_text(json.dumps({"run_number": 1, "error_type": "RuntimeError",
                                                         "error": "Server disconnected", "serve_overrides": {},
                                                         "bench_overrides": {}}))
    shutil.copy(comb / "run=0.json", comb / "warmup.json")
    (copy / "SERVE-seqs16-failure.json").write_text(json.dumps({"error_type": "TimeoutError", "error": "not ready",
                                                               "serve_overrides": {"max_num_seqs": 16}}))
    seqs2, seqs8 = other_tools.from_file(copy)
    assert seqs2["repeats"] == 1 and "run 1 failed: RuntimeError: Server disconnected" in seqs2["import_failures"]
    line = other_tools.summary_line([seqs2, seqs8], set())
    assert "server combination seqs16 never served: TimeoutError" in line
    assert "warmup.json" not in line and "not read (give them as files)" not in line


def test_a_sweep_run_file_given_alone_keeps_the_load_apart_from_the_server(tmp_path):
    """The reader's W3 (pass 17): a run file's bench parameters (merged in by the sweep) became engine settings."""
    blob = {**json.loads((SWEEP / "SERVE--seqs2-BENCH--conc4" / "run=0.json").read_text()), "random_input_len": 128}
    (tmp_path / "run=0.json").write_text(json.dumps(blob))
    [row] = other_tools.from_file(tmp_path / "run=0.json")
    assert "engine_random_input_len" not in row and row["engine_max_num_seqs"] == 2


def test_a_sweep_imported_again_after_it_grew_replaces_its_rows_in_the_room(tmp_path):
    """The reader's M4 (pass 17): a grown sweep, or one of its combination folders, added every combination again."""
    copy = tmp_path / "seqs"
    shutil.copytree(SWEEP, copy)
    room = tmp_path / "room"
    other_tools.add([copy], room)
    other_tools.add([copy / "SERVE--seqs2-BENCH--conc4"], room)
    comb = copy / "SERVE--seqs8-BENCH--conc4"
    run = json.loads((comb / "run=1.json").read_text())
    (comb / "run=2.json").write_text(json.dumps({**run, "run_number": 2, "output_throughput": 1.0}))
    other_tools.add([copy], room)
    df = workshop.room(room, me="me")
    assert sorted(df["config_label"]) == ["seqs2", "seqs8"], "each combination once"
    assert df.set_index("config_label").loc["seqs8", "repeats"] == 3, "the grown combination's last row"


def test_pass_18_sweeps_failed_combinations_experiments_partial_copies_and_run_zero(tmp_path):
    """Pass 18 of the fresh reader: a combination whose every run failed (vLLM's run=N.failure.json only) gets a
    row that says so, and a sweep in which every run failed is not called "not a sweep" (W5); two experiments under
    one folder each keep their own file, so importing the folder after one experiment adds nothing twice (W6); a
    partial copy under another name joins its combination (W7); a failed run 0 does not lend the row its empty
    load, and every percentile is a median (W9)."""
    top = tmp_path / "sweeps"
    shutil.copytree(SWEEP, top / "seqs")
    comb = top / "seqs" / "SERVE--seqs8-BENCH--conc4"
    for n in (0, 1):
        (comb / f"run={n}.json").unlink()
        (comb / f"run={n}.failure.json").write_text(json.dumps({"run_number": n, "error_type": "RuntimeError",
                                                                "error": "engine died"}))
    seqs2, seqs8 = other_tools.from_file(top / "seqs")
    assert seqs8["config_label"] == "seqs8" and seqs8["output_throughput"] is None
    assert seqs8["import_failures"].startswith("no request completed: every run failed (run 0 failed: RuntimeError")
    lone = tmp_path / "lone"
    shutil.copytree(comb, lone / "exp" / comb.name)
    [row] = other_tools.from_file(lone)
    assert "every run failed" in row["import_failures"]
    # two experiments: the folder after one of them adds nothing twice
    shutil.copytree(SWEEP, top / "tp")
    for p in (top / "tp").rglob("run=*.json"):  # another experiment: its own runs (an identical file is a copy)
        p.write_text(json.dumps({**json.loads(p.read_text()), "date": "20261206-120000"}))
    room = tmp_path / "room"
    other_tools.add([top / "seqs"], room)
    other_tools.add([top], room)
    df = workshop.room(room, me="me")
    assert len(df) == 4 and df.groupby("tag").size().to_dict() == {"imported · vllm bench sweep · seqs": 2,
                                                                  "imported · vllm bench sweep · tp": 2}
    # a partial copy of one run per combination, under another name
    part = tmp_path / "part"
    shutil.copytree(SWEEP, part / "seqs")
    for c in ("SERVE--seqs2-BENCH--conc4", "SERVE--seqs8-BENCH--conc4"):
        (part / "aaa-copy" / c).mkdir(parents=True)
        shutil.copy(SWEEP / c / "run=0.json", part / "aaa-copy" / c / "run=0.json")
    rows = other_tools.from_file(part)
    assert [(r["import_file"], r["repeats"]) for r in rows] == [("seqs/SERVE--seqs2-BENCH--conc4", 2),
                                                                ("seqs/SERVE--seqs8-BENCH--conc4", 2)]
    # a failed run 0: the load and every percentile from the runs that served
    copy = tmp_path / "seqs"
    shutil.copytree(SWEEP, copy)
    run0 = copy / "SERVE--seqs8-BENCH--conc4" / "run=0.json"
    blob = json.loads(run0.read_text())
    run0.write_text(json.dumps({**blob, "completed": 0, "failed": blob["num_prompts"], "output_throughput": 0.0,
                                "total_input_tokens": 0, "total_output_tokens": 0,
                                **{k: 0.0 for k in blob if vllm.LATENCY_KEY.match(k)}}))
    seqs2, seqs8 = other_tools.from_file(copy)
    assert seqs8["load_label"] == seqs2["load_label"], "the load of the run that served"
    runs = [json.loads((SWEEP / "SERVE--seqs2-BENCH--conc4" / f"run={n}.json").read_text()) for n in (0, 1)]
    assert seqs2["std_ttft_ms"] == pytest.approx((runs[0]["std_ttft_ms"] + runs[1]["std_ttft_ms"]) / 2)


def test_an_append_result_file_imported_again_after_it_grew_adds_only_the_new_run(tmp_path):
    """Pass 18's W8: each run's id comes from its own line, the file's from its first line."""
    lines = (DATA / "vllm_bench_append.jsonl").read_text().splitlines()
    grown = tmp_path / "runs.jsonl"
    grown.write_text(lines[0] + "\n" + lines[1])
    room = tmp_path / "room"
    other_tools.add([grown], room)
    third = lines[0].replace('"max_concurrency": 4', '"max_concurrency": 3')
    grown.write_text(lines[0] + "\n" + lines[1] + "\n" + third)
    other_tools.add([grown], room)
    df = workshop.room(room, me="me")
    assert sorted(df["load_max_concurrency"]) == [2, 3, 4] and df["env_env_id"].nunique() == 1


def test_a_folder_of_vllm_bench_files_is_refused_naming_them(tmp_path):
    """Pass 18's U1."""
    shutil.copy(SUMMARY, tmp_path / "a.json")
    shutil.copy(DETAILED, tmp_path / "b.json")
    with pytest.raises(ImportFileError, match=r"vllm bench serve results \(a.json, b.json\): give them as files"):
        other_tools.from_file(tmp_path)


def test_pass_19_sweep_identity_resume_leftovers_and_failures(tmp_path):
    """Pass 19: two teams' sweeps under one experiment name stay apart (W5); failure records a --resume left beside
    runs that then served are no failures (W6); a sweep whose servers all failed says so (W7); a failure record given
    as a file is named (U1); a sweep's warm-up given alone says it is one (N1); a run that completed nothing adds a 0
    rate, so a row never says "no request completed in any run" beside a rate (W4)."""
    room = tmp_path / "room"
    for team, model in (("a", None), ("b", "org/OtherModel")):
        copy = tmp_path / team / "baseline"
        shutil.copytree(SWEEP, copy)
        if model:
            for p in copy.rglob("run=*.json"):
                p.write_text(json.dumps({**json.loads(p.read_text()), "model_id": model}))
        other_tools.add([copy], room)
    assert len(workshop.room(room, me="me")) == 4
    res = tmp_path / "res"
    shutil.copytree(SWEEP, res)
    (res / "SERVE-seqs2-failure.json").write_text(json.dumps({"error_type": "TimeoutError", "error": "slow start"}))
    (res / "SERVE--seqs8-BENCH--conc4" / "run=1.failure.json").write_text(
        json.dumps({"run_number": 1, "error_type": "ReadTimeout", "error": "x"}))
    rows = other_tools.from_file(res)
    line = other_tools.summary_line(rows, set())
    assert "never served" not in line and not any(r["import_failures"] for r in rows)
    dead = tmp_path / "dead" / "exp"
    dead.mkdir(parents=True)
    (dead / "SERVE-seqs2-failure.json").write_text(json.dumps({"error_type": "RuntimeError", "error": "no memory"}))
    with pytest.raises(ImportFileError, match="no server combination served: server combination seqs2 never served"):
        other_tools.from_file(dead)
    with pytest.raises(ImportFileError, match="record that a server combination failed"):
        other_tools.from_file(dead / "SERVE-seqs2-failure.json")
    warm = {**json.loads((SWEEP / "SERVE--seqs2-BENCH--conc4" / "run=0.json").read_text()), "run_number": -1}
    (tmp_path / "warmup.json").write_text(json.dumps(warm))
    [row] = other_tools.from_file(tmp_path / "warmup.json")
    assert "warm-up run" in other_tools.summary_line([row], set())
    grown = tmp_path / "grown"
    shutil.copytree(SWEEP, grown)
    comb = grown / "SERVE--seqs2-BENCH--conc4"
    for n in (0, 1):
        blob = json.loads((comb / f"run={n}.json").read_text())
        (comb / f"run={n}.json").write_text(json.dumps({**blob, "completed": 0, "failed": 12, "output_throughput": 0.0,
                                                        **{k: 0.0 for k in blob if vllm.LATENCY_KEY.match(k)}}))
    (comb / "run=2.json").write_text((SWEEP / "SERVE--seqs2-BENCH--conc4" / "run=0.json").read_text())
    seqs2 = other_tools.from_file(grown)[0]
    assert "no request completed in any run" not in (seqs2["import_failures"] or "")
    assert seqs2["output_throughput"] == 0.0 and seqs2["completed"] == 0.0, "the median of 0, 0 and one run's"


def test_pass_20_sweeps_teams_run_numbers_resume_layouts_and_ci_files(tmp_path):
    """Pass 20: two teams' sweeps of one name under a common folder stay apart (W2); a failed run is named by its
    run number (W3); a --resume leftover beside a combination without a BENCH part is no failure (W4); vLLM's
    run=N.pytorch.json is not read as a run (W5)."""
    for team, factor in (("teamA", 1), ("teamB", 2)):
        copy = tmp_path / "teams" / team / "baseline"
        shutil.copytree(SWEEP, copy)
        for p in copy.rglob("run=*.json"):
            blob = json.loads(p.read_text())
            p.write_text(json.dumps({**blob, "date": f"2026120{factor}-100000",
                                     "output_throughput": blob["output_throughput"] * factor}))
    rows = other_tools.from_file(tmp_path / "teams")
    assert len(rows) == 4 and sorted(r["repeats"] for r in rows) == [2, 2, 2, 2]
    assert len({r["run_id"] for r in rows}) == 4
    many = tmp_path / "many" / "exp" / "SERVE--seqs2"
    many.mkdir(parents=True)
    run = json.loads((SWEEP / "SERVE--seqs2-BENCH--conc4" / "run=0.json").read_text())
    for n in range(12):
        done = {**run, "run_number": n} if n != 10 else {**run, "run_number": n, "completed": 0, "failed": 12,
                                                          **{k: 0.0 for k in run if vllm.LATENCY_KEY.match(k)}}
        (many / f"run={n}.json").write_text(json.dumps(done))
    (many / "run=3.pytorch.json").write_text(json.dumps([{"benchmark": {"name": "vLLM benchmark"}}]))
    (many.parent / "SERVE-seqs2-failure.json").write_text(json.dumps({"error_type": "TimeoutError", "error": "slow"}))
    [row] = other_tools.from_file(tmp_path / "many")
    assert row["repeats"] == 12 and row["import_failures"].startswith("run 10: no request completed")
    assert "never served" not in other_tools.summary_line([row], set())
