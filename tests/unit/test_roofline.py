"""The decode roofline of a row (helpers/results/roofline.py) and the probes that give its roofs
(helpers/probes.py), on small arrays and recorded rows: no engine."""
import json

import pytest

from helpers import models, probes
from helpers.results import roofline

ROOF = {"bandwidth_gbs": 10.0, "threads": 2, "compute_gflops": 100.0}


def _row(**over):
    # The embedded model in float32 on a 2-core AVX2 host: 46,080 KV bytes per token.
    row = {"cfg_model": "embedded", "model_folder": str(models.prepare_embedded()), "cfg_dtype": "float32",
           "mean_tpot_ms": 60.0, "kv_cache_tokens": 100_000,
           "kv_cache_gib": 100_000 * 46_080 / 2**30, "load_input_len": 128, "load_output_len": 32,
           "load_num_prompts": 8, "load_max_concurrency": 1, "env_cpu_cores": 2}
    return {**row, **over}


def test_weights_widen_to_float32_and_quantized_copies_keep_their_integers():
    folder = models.prepare_embedded()
    files = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    assert roofline.weight_bytes(folder, "bfloat16") == files
    assert roofline.weight_bytes(folder, "float32") == 2 * files
    int8 = models.prepare_quantized("embedded-int8")
    int8_files = sum(f.stat().st_size for f in int8.glob("*.safetensors"))
    lm_head = 49152 * 576 * 2
    assert roofline.weight_bytes(int8, "float32") == int8_files + lm_head  # only the bf16 output layer widens
    assert roofline.weight_bytes(int8, "float32") < roofline.weight_bytes(folder, "float32") / 2


def test_floor_and_mbu_of_a_row():
    row = roofline.annotate(_row(), ROOF)
    weights = 2 * sum(f.stat().st_size for f in models.prepare_embedded().glob("*.safetensors"))
    want = (weights + 1 * (128 + 16) * 46_080) / 10e9 * 1e3
    assert row["roofline_tpot_ms"] == pytest.approx(want)
    assert row["mbu"] == pytest.approx(want / 60.0)
    assert row["roof_threads"] == 2


def test_the_batch_is_what_metrics_saw_else_what_the_load_allows():
    assert roofline.decode_batch(_row(mean_running=3.5)) == 3.5
    assert roofline.decode_batch(_row(load_max_concurrency=None)) == 8
    assert roofline.decode_batch(_row(load_max_concurrency=16)) == 8


def test_rows_without_tpot_model_or_roof_are_left_alone():
    for row, roof in ((_row(mean_tpot_ms=None), ROOF), (_row(model_folder="/not/here"), ROOF),
                      (_row(model_folder=None), ROOF), (_row(), None)):
        assert "mbu" not in roofline.annotate(row, roof)


def test_worker_threads_come_from_vllms_binding_else_all_cores():
    assert roofline.worker_threads(_row(worker_cores=1)) == 1
    assert roofline.worker_threads(_row()) == 2


def test_crossover_exists_only_where_compute_outgrows_the_kv_read():
    # 1 GB of weights at 10 GB/s = 100 ms; each sequence 1 GFLOP at 100 GFLOP/s = 10 ms, KV 10 MB = 1 ms.
    assert roofline.crossover_batch(1e9, 1e9, 1e7, 10.0, 100.0) == pytest.approx(100 / 9)
    assert roofline.crossover_batch(1e9, 1e8, 1e8, 10.0, 100.0) is None  # KV 10 ms > compute 1 ms: never


def test_linear_params_of_the_embedded_model():
    # SmolLM2-135M: 134.5 M parameters in its linear layers and the (tied) output layer.
    assert roofline.linear_params(models.prepare_embedded()) == pytest.approx(134.48e6, rel=0.01)


def test_the_probes_report_both_methods_and_a_matmul_on_small_arrays():
    found = probes.probe(1, "float32", (16, 64, 64), repeats=2)
    for method in ("numpy", "torch"):
        assert set(found[method]) == {"read", "copy", "triad"}
        assert all(k["best_gbs"] >= k["median_gbs"] >= k["min_gbs"] > 0 for k in found[method].values())
    reads = {f"{m} read": found[m]["read"]["best_gbs"] for m in ("numpy", "torch")}
    # decode only reads: the roof is the faster read, the best triad beside it as the mixed-traffic figure
    assert found["bandwidth_gbs"] == max(reads.values()) == reads[found["bandwidth_kernel"]]
    triads = {f"{m} triad": found[m]["triad"]["best_gbs"] for m in ("numpy", "torch")}
    assert found["mixed_gbs"] == max(triads.values()) == triads[found["mixed_kernel"]]
    assert found["methods_ratio"] == pytest.approx(reads["numpy read"] / reads["torch read"])  # like with like
    assert found["methods_ratio"] > 0 and found["compute_gflops"] > 0
    json.dumps(found)  # storable as a row


def test_startup_log_gives_the_workers_cores():
    from helpers.engine.startup_log import parse_startup
    log = ("INFO (EngineCore pid=1) OpenMP thread binding info: \n\tVLLM_CPU_OMP_THREADS_BIND='auto', auto_setup=True\n"
           "\tlocal_world_size=1, reserve_cpu_num=1\n\tlocal_rank=0, core ids=[0]\n\treserved_cpus=[1]")
    assert parse_startup(log).worker_cores == 1
    assert parse_startup("no binding here").worker_cores is None


def test_split_engines_read_with_every_ranks_cores():
    assert roofline.worker_threads(_row(worker_cores=1, cfg_tensor_parallel_size=2)) == 2
    assert roofline.worker_threads(_row(worker_cores=1, cfg_tensor_parallel_size=4)) == 2  # no more than the machine


def test_a_remote_servers_row_gets_empty_roofline_columns_never_this_machines():
    remote = roofline.unknown(_row(engine_location="remote"))
    assert all(remote[c] is None for c in roofline.COLUMNS)
    assert roofline.annotate(remote, ROOF)["mbu"] is None


def test_with_floor_uses_the_machines_roof_and_the_workers_and_stores_the_run_once(monkeypatch, tmp_path):
    from helpers import experiment
    from helpers.results import ResultStore
    roofs = {2: {"bandwidth_gbs": 20.0, "threads": 2}, 1: {"bandwidth_gbs": 12.0, "threads": 1}}
    monkeypatch.setattr(experiment, "roof", lambda threads=None, store=None, **kw: roofs[threads or 2])
    store = ResultStore(tmp_path)
    row = _row(key="k", run_id="r", worker_cores=1)  # vLLM's layout: the worker on one core of two
    store.append(row)
    out = experiment.with_floor(row, store)
    assert out["roof_threads"] == 2 and out["worker_threads"] == 1
    assert out["worker_floor_ms"] == pytest.approx(out["roofline_tpot_ms"] * 20 / 12)
    assert out["mbu"] < out["worker_mbu"]
    experiment.with_floor(row, store)  # asked again: nothing new to store
    assert [r.get("mbu") for r in store.rows()] == [out["mbu"]]
    assert sum(1 for _ in open(store.path)) == 2
    assert all(v is None for k, v in experiment.with_floor(_row(engine_location="remote"), store).items()
               if k in roofline.COLUMNS)


def test_weight_bytes_leave_out_an_untied_input_table_and_read_a_float32_checkpoint_as_stored(tmp_path):
    """A step reads one row of an untied input embedding per token, not the table; a float32
    checkpoint holds four bytes a number, so a bf16 engine reads half of its files."""
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 10_000)
    config = {"vocab_size": 10, "hidden_size": 50, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert roofline.weight_bytes(tmp_path, "bfloat16") == 10_000 - 10 * 50 * 2
    (tmp_path / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": True,
                                                      "torch_dtype": "float32"}))
    assert roofline.weight_bytes(tmp_path, "bfloat16") == 5_000 and roofline.weight_bytes(tmp_path, "float32") == 10_000
