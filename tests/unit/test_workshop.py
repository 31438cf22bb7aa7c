"""Pooling a room: packing one machine's rows (cleaned), reading them on another machine, and
each machine's ratio to its own baseline, with versions never mixed silently. Rows are
constructed for two fake machines (different env id, CPU and vLLM) plus this one."""
import gzip
import json

import pandas as pd
import pytest

from helpers import charts
from helpers.config import EngineConfig
from helpers.experiment import base_row
from helpers.load import Load
from helpers.results import fingerprint, load_all, workshop
from helpers.results.store import MEASUREMENT_VERSION, ResultStore

ME = fingerprint()


def machine(env_id, cpu, vllm, machine_id, cores=8, gpu=None):
    return {"env_env_id": env_id, "env_cpu_model": cpu, "env_cpu_cores": cores, "env_cpu_isa": "AVX2",
            "env_ram_gib": 16.0, "env_gpu": gpu, "env_vllm": vllm, "env_machine_id": machine_id}


LAPTOP = machine("aaaa11112222", "AMD Ryzen 7", "0.32.0", "11111111")
SERVER = machine("bbbb33334444", "Intel Xeon", "0.32.0", "22222222", cores=32, gpu="NVIDIA L4")
OLDVLLM = machine("cccc55556666", "Apple M2", "0.31.0", "33333333")


def row(env, label, tput, tag="ch1-ablation", t="2026-12-01T10:00:00", version=MEASUREMENT_VERSION, **kw):
    return {"run_id": f"{env['env_env_id'][:4]}-{label}-{t}", "key": f"{env['env_env_id']}-{label}", "kind": "load",
            "tag": tag, "time": t, "config_label": label, "load_label": "mixed: 8 short", "cfg_model": "embedded",
            "measurement_version": version, "output_throughput": tput, **env, **kw}


def write(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    by = {}
    for r in rows:
        by.setdefault(r["env_env_id"], []).append(r)
    for env, rs in by.items():
        (folder / f"{env}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))


@pytest.fixture
def room_dir(tmp_path):
    rows = [row(LAPTOP, "stock", 50.0, t="2026-12-01T10:00:00"), row(LAPTOP, "tuned", 60.0, t="2026-12-01T10:01:00"),
            row(SERVER, "stock", 400.0, t="2026-12-01T09:00:00"), row(SERVER, "tuned", 600.0, t="2026-12-01T09:01:00"),
            row(OLDVLLM, "stock", 80.0), row(OLDVLLM, "tuned", 20.0, t="2026-12-01T10:05:00")]
    write(tmp_path / "room", rows)
    return tmp_path / "room"


def test_rows_carry_the_measurement_version():
    r = base_row(EngineConfig(), Load(num_prompts=4), "t", "load")
    assert r["measurement_version"] == MEASUREMENT_VERSION


def test_ratios_are_to_each_machines_own_baseline(room_dir):
    df = workshop.room(room_dir, me=LAPTOP["env_env_id"])
    r = workshop.ratios(df.loc[df.compatible])
    tuned = r.loc[~r.is_baseline].set_index("env_env_id")["ratio"]
    assert tuned.to_dict() == pytest.approx({LAPTOP["env_env_id"]: 1.2, SERVER["env_env_id"]: 1.5})
    assert set(r.baseline) == {"stock"}  # measured first on every machine
    s = workshop.room_spread(r).set_index("config_label").loc["tuned"]
    assert (s.machines, s.lowest, s.highest, s.yours) == (2, pytest.approx(1.2), pytest.approx(1.5), pytest.approx(1.2))


def test_other_vllm_versions_are_separated_not_mixed(room_dir):
    df = workshop.room(room_dir, me=LAPTOP["env_env_id"])
    assert df.loc[df.env_env_id == OLDVLLM["env_env_id"], "compatible"].eq(False).all()
    assert df.loc[df.env_env_id == SERVER["env_env_id"], "compatible"].all()
    assert df.group.nunique() == 2 and "vLLM 0.31.0" in " ".join(df.group)
    r = workshop.ratios(df)  # even unfiltered, the ratio never crosses groups
    assert set(r.loc[r.group.str.contains("0.31.0"), "env_env_id"]) == {OLDVLLM["env_env_id"]}
    assert r.loc[(r.env_env_id == OLDVLLM["env_env_id"]) & ~r.is_baseline, "ratio"].tolist() == [pytest.approx(0.25)]


def test_other_measurement_versions_and_models_are_other_groups(tmp_path):
    rows = [row(LAPTOP, "stock", 50.0), row(SERVER, "stock", 400.0, version=MEASUREMENT_VERSION - 1),
            {**row(OLDVLLM, "stock", 80.0, version=None), "env_vllm": "0.32.0"},
            {**row(machine("dddd", "x", "0.32.0", "44"), "stock", 9.0), "cfg_model": "/home/ana/models/Qwen3-0.6B"}]
    write(tmp_path, rows)
    df = workshop.room(tmp_path, me=LAPTOP["env_env_id"])
    assert df.compatible.tolist().count(True) == 1
    assert {g.split(" · ")[0] for g in df.group} == {f"measurement v{MEASUREMENT_VERSION}",
                                                     f"measurement v{MEASUREMENT_VERSION - 1}", "measurement v?"}
    assert "Qwen3-0.6B" in set(df.model)


def test_reference_group_without_my_rows_is_the_largest(room_dir):
    df = workshop.room(room_dir, me="not-in-the-room")
    assert not df.you.any()
    assert set(df.loc[df.compatible, "env_env_id"]) == {LAPTOP["env_env_id"], SERVER["env_env_id"]}


def test_explicit_baseline_and_missing_baseline(room_dir):
    df = workshop.room(room_dir, me=LAPTOP["env_env_id"])
    r = workshop.ratios(df.loc[df.compatible], baseline={"ch1-ablation": "tuned"})
    assert r.loc[r.env_env_id == SERVER["env_env_id"]].set_index("config_label").ratio["stock"] \
        == pytest.approx(400 / 600)
    assert workshop.ratios(df, baseline="no such config").empty


def test_empty_and_single_machine_rooms(tmp_path):
    assert workshop.room(tmp_path / "nothing").empty
    assert workshop.ratios(workshop.room(tmp_path / "nothing")).empty
    assert workshop.room_spread(workshop.ratios(workshop.room(tmp_path / "nothing"))).empty
    write(tmp_path / "one", [row(LAPTOP, "stock", 50.0), row(LAPTOP, "tuned", 60.0, t="2026-12-01T10:01:00")])
    df = workshop.room(tmp_path / "one", me=LAPTOP["env_env_id"])
    assert df.env_env_id.nunique() == 1 and df.compatible.all()
    assert workshop.room_spread(workshop.ratios(df)).machines.eq(1).all()


def test_newest_row_wins_for_a_measured_again_config(room_dir):
    write(room_dir / "again", [row(LAPTOP, "stock", 50.0), row(LAPTOP, "tuned", 60.0, t="2026-12-01T10:01:00"),
                               {**row(LAPTOP, "tuned", 70.0, t="2026-12-01T11:00:00")}])
    r = workshop.ratios(workshop.room(room_dir / "again", me=LAPTOP["env_env_id"]))
    assert r.set_index("config_label").ratio["tuned"] == pytest.approx(1.4)


def test_room_chart_renders(room_dir):
    df = workshop.room(room_dir, me=LAPTOP["env_env_id"])
    spec = charts.room(workshop.ratios(df.loc[df.compatible]), "output_throughput").to_dict()
    assert "facet" in spec
    import vl_convert as vlc
    assert "<svg" in vlc.vegalite_to_svg(spec)


def test_clean_drops_logs_paths_and_keys():
    r = workshop.clean({"cfg_model": "/home/ana/models/Qwen3-0.6B", "startup_lines": ["Loading /home/ana/x"],
                    "api_key": "sk-abcdefghijkl", "first_error": "FileNotFoundError: /home/ana/.cache/x/model.bin",
                    "note": "auth Bearer abc.def", "runs": [{"err": "see /tmp/vllm/log.txt"}],
                    "load_label": "random 256→64 ×16 @ conc 8", "url": "http://127.0.0.1:8000/v1/completions",
                    "cfg_log_level": "info", "hub": "Qwen/Qwen3-0.6B", "output_throughput": 5.0})
    assert r["cfg_model"] == "Qwen3-0.6B"
    assert "startup_lines" not in r and "api_key" not in r
    assert r["first_error"] == "FileNotFoundError: model.bin" and r["runs"] == [{"err": "see log.txt"}]
    assert "abc.def" not in r["note"]
    assert r["load_label"] == "random 256→64 ×16 @ conc 8" and r["url"] == "http://127.0.0.1:8000/v1/completions"
    assert (r["cfg_log_level"], r["hub"], r["output_throughput"]) == ("info", "Qwen/Qwen3-0.6B", 5.0)


def test_pack_on_one_machine_loads_on_another(tmp_path):
    """What a learner hands in is only their machine's rows, cleaned, and a leader's machine
    (another fingerprint) reads it into a room folder and pools it."""
    mine = ResultStore(tmp_path / "results")
    mine.append({**base_row(EngineConfig(), Load(num_prompts=4), "ch0-words", "load"), "output_throughput": 90.0,
                 "startup_lines": ["INFO loading /home/me/.cache/model"]})
    other = {**row(SERVER, "guide default", 400.0), "env_machine_id": "someone-else"}
    (tmp_path / "results" / "bbbb33334444.jsonl").write_text(json.dumps(other) + "\n")  # a copied-in file
    packed = workshop.pack(tmp_path / "out" / "mine.guide.json.gz", folder=tmp_path / "results")
    with gzip.open(packed, "rt") as f:
        text = f.read()
    assert "/home/me" not in text and "startup_lines" not in text and "someone-else" not in text
    assert workshop.read_pack(packed)[0]["env_env_id"] == ME["env_id"]

    leader = tmp_path / "leader"
    write(leader, [row(LAPTOP, "guide default", 50.0, tag="ch0-words")])
    workshop.unpack(packed, leader)
    workshop.unpack(packed, leader)  # handed in twice: still one row
    pooled = load_all(leader)
    assert len(pooled) == 2 and set(pooled.env_env_id) == {LAPTOP["env_env_id"], ME["env_id"]}
    df = workshop.room(leader, me=LAPTOP["env_env_id"])
    assert df.env_env_id.nunique() == 2

    (tmp_path / "direct").mkdir()  # a leader may also drop the packed files into the folder as they are
    (tmp_path / "direct" / packed.name).write_bytes(packed.read_bytes())
    assert workshop.room(tmp_path / "direct").you.all()


def test_pack_without_results_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="run a notebook first"):
        workshop.pack(tmp_path / "x.guide.json.gz", folder=tmp_path / "none")
    (tmp_path / "junk.guide.json.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="guide.sh pack"):
        workshop.read_pack(tmp_path / "junk.guide.json.gz")


def test_pack_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GUIDE_RESULTS", str(tmp_path / "results"))
    ResultStore().append({**base_row(EngineConfig(), Load(num_prompts=4), "t", "load"), "output_throughput": 1.0})
    assert workshop.main(["pack", str(tmp_path / "p.guide.json.gz")]) == 0
    assert str(tmp_path / "p.guide.json.gz") in capsys.readouterr().out
    assert workshop.main(["bogus"]) == 2


def test_machines_rank_by_their_own_mbu():
    df = pd.DataFrame({"machine": ["laptop", "laptop", "server", "old"], "you": [True, True, False, False],
                       "mbu": [0.5, 0.7, 0.9, None], "roof_bandwidth_gbs": [10.0, 10.0, 80.0, 5.0]})
    ranked = workshop.by_mbu(df)
    assert list(ranked.machine) == ["server", "laptop"]  # a machine without MBU rows is not ranked
    assert ranked.set_index("machine").loc["laptop", "median_mbu"] == pytest.approx(0.6)
    assert workshop.by_mbu(df.drop(columns="mbu")).empty
