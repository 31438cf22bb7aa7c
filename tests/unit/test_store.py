"""The append-only result store and its keys."""
import json

import numpy as np

from helpers.config import EngineConfig
from helpers.load.workloads import Load
from helpers.results import ResultStore, fingerprint, load_all, result_key


def test_path_is_per_environment(tmp_path):
    store = ResultStore(tmp_path)
    assert store.path == tmp_path / f"{fingerprint()['env_id']}.jsonl"


def test_empty_store(tmp_path):
    store = ResultStore(tmp_path / "none-yet")
    assert store.rows() == []
    assert store.get("k") is None
    assert store.frame().empty


def test_append_and_get_newest(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "a", "v": 1})
    store.append({"key": "b", "v": 10})
    store.append({"key": "a", "v": 2})
    assert store.get("a")["v"] == 2
    assert store.get("b")["v"] == 10
    assert store.get("missing") is None
    assert [r["v"] for r in store.rows()] == [1, 10, 2]
    assert len(store.frame()) == 3


def test_append_creates_folder(tmp_path):
    store = ResultStore(tmp_path / "a" / "b")
    store.append({"key": "x"})
    assert store.path.exists()


def test_numpy_scalars_are_stored_plainly(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "n", "f": np.float64(1.5), "i": np.int64(3), "b": np.bool_(True)})
    assert store.get("n") == {"key": "n", "f": 1.5, "i": 3, "b": True}


def test_numpy_arrays_are_stored_as_lists(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "n", "a": np.array([1, 2])})
    assert store.get("n") == {"key": "n", "a": [1, 2]}


def test_torn_last_line_is_skipped(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "a", "v": 1})
    store.append({"key": "a", "v": 2})
    with open(store.path, "a") as f:
        f.write('{"key": "a", "v": 3, "trunc')  # a crash mid-write: no closing brace, no newline
    assert store.get("a")["v"] == 2
    assert len(store.rows()) == 2


def test_blank_lines_are_ignored(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "a"})
    with open(store.path, "a") as f:
        f.write("\n\n")
    store.append({"key": "b"})
    assert [r["key"] for r in store.rows()] == ["a", "b"]


def test_row_after_torn_line_survives(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "a", "v": 1})
    with open(store.path, "a") as f:
        f.write('{"key": "a", "v": 2, "trunc')
    store.append({"key": "b", "v": 3})
    assert store.get("b") == {"key": "b", "v": 3}


def test_load_all_pools_files(tmp_path):
    (tmp_path / "laptop1.jsonl").write_text(json.dumps({"key": "a", "who": 1}) + "\n"
                                             + json.dumps({"key": "b", "who": 1}) + "\n")
    (tmp_path / "laptop2.jsonl").write_text(json.dumps({"key": "a", "who": 2}) + "\n" + '{"torn')
    (tmp_path / "notes.txt").write_text("not results\n")
    df = load_all(tmp_path)
    assert len(df) == 3
    assert sorted(df["who"]) == [1, 1, 2]


def test_load_all_includes_this_machine(tmp_path):
    ResultStore(tmp_path).append({"key": "mine"})
    (tmp_path / "other.jsonl").write_text(json.dumps({"key": "theirs"}) + "\n")
    assert set(load_all(tmp_path)["key"]) == {"mine", "theirs"}


def test_load_all_empty_folder(tmp_path):
    assert load_all(tmp_path).empty


def test_default_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path / "r"))
    assert ResultStore().folder == tmp_path / "r"


def test_result_key():
    cfg = EngineConfig(device="cpu").as_dict()
    load = Load().as_dict()
    key = result_key(cfg, load, "env1", "load")
    assert key == result_key(dict(reversed(list(cfg.items()))), load, "env1", "load")  # order-free
    assert len(key) == 16
    others = {
        result_key(EngineConfig(device="cpu", max_num_seqs=4).as_dict(), load, "env1", "load"),
        result_key(cfg, Load(num_prompts=32).as_dict(), "env1", "load"),
        result_key(cfg, None, "env1", "load"),
        result_key(cfg, load, "env2", "load"),
        result_key(cfg, load, "env1", "capacity"),
    }
    assert key not in others
    assert len(others) == 5


def test_a_run_stored_again_counts_once_as_its_newest_record(tmp_path):
    store = ResultStore(tmp_path)
    store.append({"key": "a", "run_id": "r1", "mbu": None})
    store.append({"key": "b", "run_id": "r2"})
    store.append({"key": "a", "run_id": "r1", "mbu": 0.4})  # the same run, its floor added
    store.append({"key": "roof", "kind": "roof"})  # no run id: kept as written
    assert [(r["key"], r.get("mbu")) for r in store.rows()] == [("b", None), ("a", 0.4), ("roof", None)]


def test_reuse_or_measure_is_the_one_way_a_row_is_reused_and_says_why_it_measured(tmp_path):
    from helpers.experiment import base_row
    from helpers.results import reuse_or_measure

    store, taken = ResultStore(tmp_path), []

    def take():
        taken.append(1)
        return {"output_throughput": 10.0 * len(taken)}

    first = base_row(EngineConfig(max_num_seqs=8), Load(num_prompts=4), "t", "load")
    row = reuse_or_measure(first, take, store=store)
    assert not row["reused"] and "nothing of kind 'load'" in row["measured_because"]
    again = reuse_or_measure(base_row(EngineConfig(max_num_seqs=8), Load(num_prompts=4), "t", "load"), take,
                             store=store)
    assert again["reused"] and again["measured_because"] is None and again["run_id"] == row["run_id"]
    assert len(taken) == 1 and "reused" not in store.rows()[-1] and "measured_because" not in store.rows()[-1]
    other = reuse_or_measure(base_row(EngineConfig(max_num_seqs=16), Load(num_prompts=4), "t", "load"), take,
                             store=store)
    assert not other["reused"] and "cfg_max_num_seqs (8 stored, 16 now)" in other["measured_because"]
    forced = reuse_or_measure(first, take, store=store, force=True)
    assert not forced["reused"] and forced["measured_because"] == "force=True" and len(taken) == 3
