"""The capstone lab's check, hint and solution, on rows shaped like the harness's (per-request
TTFT/TPOT, the advisor's figures), with a stand-in for `measure` that counts engine runs."""
import re

import pytest

from helpers import run_size
from helpers.chapters import ch6a, lab4
from helpers.config import ConfigError, EngineConfig
from helpers.slo import SLO

BASE = EngineConfig(device="cpu")


ADVISED_CFG = BASE.replace(max_num_batched_tokens=256)


GOOD_CFG = ADVISED_CFG.replace(long_prefill_token_threshold=128)


BAD_CFG = BASE.replace(max_num_seqs=2)


def _row(good: int, total: int = 12, duration: float = 4.0, **figures) -> dict:
    """A service-load row: `good` of `total` requests within 1,000 ms TTFT and 50 ms TPOT."""
    ttfts, tpots = [400.0] * good + [3000.0] * (total - good), [30.0] * total
    base = {"median_ttft_ms": 400.0 if good > total // 2 else 3000.0, "median_tpot_ms": 30.0, "median_e2el_ms": 1300.0,
            "max_itl_ms": 60.0, "median_itl_ms": 30.0, "mean_tpot_ms": 30.0, "peak_kv_cache_usage_pct": 5.0,
            "preemptions": 0.0, "peak_running": 4.0, "peak_waiting": 0.0, "engine_max_num_seqs": 256,
            "load_kind": "prefix", "load_num_prompts": total, "load_num_prefixes": 2, "load_prefix_len": 384,
            "prefix_cache_hit_rate": 0.6, "block_size": 128, "reused": False,
            "runs": [{"request_ttft_ms": ttfts, "request_tpot_ms": tpots, "duration": duration}]}
    return {**base, **figures}


STALLED = dict(max_itl_ms=980.0, median_itl_ms=50.0)  # the baseline's long prefill stalls (advisor rule 3)


ROWS = {BASE: _row(5, **STALLED), ADVISED_CFG: _row(8), GOOD_CFG: _row(11), BAD_CFG: _row(3, peak_waiting=9.0,
                                                                                        peak_running=2.0,
                                                                                        engine_max_num_seqs=2)}


UNLOADED = {"median_ttft_ms": 240.0, "median_tpot_ms": 24.0, "median_e2el_ms": 1000.0}


class FakeEngine:
    """measure(): the row for a config; counts the runs that would have needed an engine."""

    def __init__(self):
        self.runs, self.stored = [], set()

    def __call__(self, config, load, *, tag="", force=False, progress=True):
        if load.max_concurrency == 1:
            return dict(UNLOADED)
        key = (config, load)
        reused = key in self.stored and not force
        if not reused:
            self.runs.append(config)
            self.stored.add(key)
        return {**ROWS[config], "reused": reused}


def _sweep(config, load, rates, slo, tag="", say=print):
    return [{**_row(12 if r < 3 else 4), "load_request_rate": r} for r in rates]


@pytest.fixture
def lab(monkeypatch):
    monkeypatch.setattr(run_size, "_size", "smoke")
    engine = FakeEngine()
    lab = lab4.Capstone.prepare(BASE, measure=engine, sweep=_sweep, say=lambda _: None)
    return lab, engine


def test_prepare_derives_the_service_and_measures_baseline_and_advice(lab):
    lab, engine = lab
    assert (lab.slo.ttft_ms, lab.slo.tpot_ms) == (960, 48)  # ×4 and ×2 the unloaded medians
    assert lab.service.rate == 4  # the first rate the sweep missed (1, 2, 4, 8 × one per second)
    assert lab.advice.change == {"max_num_batched_tokens": 256} and lab.advice.chapter == 3
    assert engine.runs == [BASE, ADVISED_CFG]
    text = lab.describe() + lab.references()
    assert "×4 and TPOT ×2" in text and "You tune at 4 req/s" in text and "at 4 req/s it was missed" in text
    assert "goodput 1.25 req/s" in text and "goodput 2.00 req/s" in text  # 5 and 8 of 12 in 4 s


def test_a_second_lab_run_reuses_every_row(lab):
    lab, engine = lab
    again = lab4.Capstone.prepare(BASE, measure=engine, sweep=_sweep, say=lambda _: None)
    assert len(engine.runs) == 2 and again.baseline["reused"] and again.advised["reused"]
    assert "(a stored row, reused)" in again.references()


def test_the_unchanged_config_costs_no_run_and_does_not_pass(lab, capsys):
    lab, engine = lab
    before = len(engine.runs)
    assert lab.check(BASE.replace()) is False
    out = capsys.readouterr().out
    assert len(engine.runs) == before and "change at least one setting" in out and "a stored row, reused" in out
    assert lab.check(BASE.replace(max_num_seqs=None, block_size=128)) is False  # defaults spelled out: the same


def test_pass_only_by_beating_the_advisor(lab, capsys):
    lab, engine = lab
    assert lab.check(GOOD_CFG)  # 11 of 12 against the advisor's 8 of 12: ×1.38, beyond one repeat's ×÷1.3 floor
    assert "Passed: your configuration keeps the target's promise" in capsys.readouterr().out
    assert GOOD_CFG in engine.runs[-3:]  # then the same on fresh prompts, and the reference on them
    one_more = ch6a.capstone_verdict(_row(9), lab.baseline, lab.advised, lab.slo)
    assert not one_more.passed  # 9 of 12: ×1.12, but one request more is one request's luck
    v = ch6a.capstone_verdict(_row(8), lab.baseline, lab.advised, lab.slo)
    assert not v.passed and "within the noise of the advisor's" in v.text
    assert not lab.check(ADVISED_CFG)  # the advice itself is not an answer
    assert "advisor's own change" in capsys.readouterr().out
    v = ch6a.capstone_verdict(_row(11), lab.baseline, lab.advised, lab.slo)
    assert v.passed and "the advisor's" in v.text  # 11 vs 8 of 12


def test_fail_says_not_yet_with_the_figures(lab, capsys):
    lab, _ = lab
    assert not lab.check(BAD_CFG)
    out = capsys.readouterr().out
    assert out.startswith("✗ Not yet") and "your goodput 0.75 req/s" in out and "needed" in out
    assert "Does not pass yet" in lab.summary([])


def test_bad_input_is_refused_with_the_setting_named(lab):
    lab, engine = lab
    with pytest.raises(ConfigError, match="MY_CONFIG"):
        lab.check({"max_num_seqs": 4})
    with pytest.raises(ConfigError, match="max_num_batched_tokens"):  # the harness's own check, before any run
        lab.panel_run(max_num_batched_tokens=8, max_num_seqs=16)
    with pytest.raises(ConfigError, match="looks like seconds"):
        SLO(ttft_ms=1.6, tpot_ms=0.065)  # both in seconds: TPOT is caught
    assert len(engine.runs) == 2


def test_an_unmeetable_target_says_so_and_shows_the_closest(lab):
    lab, _ = lab
    said = lab.try_target(SLO(ttft_ms=100, tpot_ms=10))
    assert said.startswith("No offered rate met the target") and "Closest" in said
    assert "highest offered rate that met the target: 2 req/s" in lab.try_target(lab.slo)


def test_the_panel_measures_the_base_with_its_settings(lab):
    lab, engine = lab
    row = lab.panel_run(max_num_batched_tokens=256, long_prefill_token_threshold=128)
    assert engine.runs[-1] == GOOD_CFG and row[lab4.GOODPUT] == pytest.approx(11 / 4)
    assert row[lab4.MET] == pytest.approx(11 / 12) and "Passes" in lab.summary([row])


def test_hint_reads_the_last_run_and_names_its_chapter(lab, capsys):
    lab, _ = lab
    lab.hint()
    out = capsys.readouterr().out
    assert "the baseline" in out and "Long prefills stall decoding" in out and "max_num_batched_tokens" in out
    assert "03_batching_and_chunked_prefill.ipynb" in out and "nothing yet" in out
    lab.run(BAD_CFG)
    lab.hint()
    out = capsys.readouterr().out
    assert "your last run" in out and "Requests queue for a seat" in out and "max_num_seqs" in out
    assert "Changed from the baseline so far: max_num_seqs" in out


def test_every_lever_has_a_chapter_and_the_solution_exists(capsys):
    assert set(lab4.LEVERS.values()) == set(lab4.TOPICS)
    for chapter in lab4.TOPICS:
        assert re.match(rf"notebooks/0{chapter}[a-z]?_", lab4.chapter_file(chapter))  # 04a: a chapter in parts
    lab4.Capstone.solution(None)
    assert "lab04_solution.ipynb" in capsys.readouterr().out


def test_labels_name_the_weights():
    assert ADVISED_CFG.replace(model="embedded-int8").label() == "weights=int8, budget=256"
    assert ADVISED_CFG.label() == "budget=256"


def test_one_lucky_request_does_not_pass_when_both_references_met_nothing(lab, monkeypatch, capsys):
    lab, _ = lab
    lab.baseline, lab.advised = _row(0), _row(0)  # neither reference met the target for any request
    assert "Neither reference met the target for any request" in lab.references()
    monkeypatch.setitem(ROWS, GOOD_CFG, _row(1))  # one request of twelve within the target
    assert not lab.check(GOOD_CFG)
    assert "neither reference met the target" in capsys.readouterr().out
    monkeypatch.setitem(ROWS, BAD_CFG, _row(4))  # a third of them, in another configuration: more than luck
    assert lab.check(BAD_CFG) and "goodput of 0 raised" in capsys.readouterr().out


def test_where_the_advice_meets_every_request_the_lab_moves_to_a_higher_rate(monkeypatch):
    """12 of 12 within the target: goodput is then fixed by the arrival schedule and nothing can beat the
    advice (the lab's own solution read "Not yet"). The lab judges at the sweep's next rate, where the
    advice misses some, measured on the advisor's engine; the baseline's row there is the sweep's."""
    monkeypatch.setattr(run_size, "_size", "smoke")
    seen = []

    def measure(config, load, *, tag="", force=False, progress=True):
        if load.max_concurrency == 1:
            return dict(UNLOADED)
        seen.append((config, load.request_rate))
        if config == ADVISED_CFG:
            return _row(12 if load.request_rate <= 4 else 7)
        return {**ROWS[config], "reused": False}

    said = []
    lab = lab4.Capstone.prepare(BASE, measure=measure, sweep=_sweep, say=said.append)
    assert lab.service.rate == 4 and lab.rate == 8 and seen[-1] == (ADVISED_CFG, 8)
    assert lab.baseline["load_request_rate"] == 8  # the sweep's own row, not measured again
    assert "met the target for 100% of the requests at 4 req/s" in said[-1] and "You tune at 8 req/s" in lab.describe()
    lab.run(GOOD_CFG)
    assert seen[-1] == (GOOD_CFG, 8)  # the learner's runs at the lab's rate


def test_a_pass_by_crossing_the_target_must_hold_on_fresh_prompts(lab, monkeypatch, capsys):
    """Pass 13: one borderline request can carry a crossing; the lab re-runs the config on fresh prompts."""
    lab, engine = lab
    lab.baseline, lab.advised = _row(10), _row(10)  # 10 of 12: both miss a 90 % target
    monkeypatch.setitem(ROWS, GOOD_CFG, _row(11))  # 11 of 12 on the service's prompts: a crossing
    service_seed = lab.load.seed

    def fresh_aware(config, load, **kw):
        row = engine(config, load, **kw)
        return {**row, **(_row(10) if load.seed != service_seed else {})}
    lab.measure = fresh_aware
    assert not lab.check(GOOD_CFG)
    assert "not on fresh ones" in capsys.readouterr().out
    lab.measure = engine  # the same share on fresh prompts: the crossing holds
    assert lab.check(GOOD_CFG)
    said = capsys.readouterr().out
    # said of the learner's configuration, before the figures (not run into "the advisor's 1.88")
    assert "held on fresh prompts" in said and said.index("held on fresh prompts") < said.index("your goodput")


def test_a_crossing_the_reference_also_makes_on_fresh_prompts_cannot_tell(lab, monkeypatch, capsys):
    """Pass 31: the baseline meets the target on the fresh prompts too, so yours meeting it there proves
    nothing (chapter 6a's rule on the same rows reads cannot tell)."""
    lab, engine = lab
    lab.baseline, lab.advised = _row(10), _row(10)
    monkeypatch.setitem(ROWS, GOOD_CFG, _row(11))
    service_seed = lab.load.seed

    def everyone_meets_it_fresh(config, load, **kw):
        row = engine(config, load, **kw)
        return {**row, **(_row(12) if load.seed != service_seed else {})}
    lab.measure = everyone_meets_it_fresh
    assert not lab.check(GOOD_CFG)
    assert "cannot tell" in capsys.readouterr().out


def test_where_the_references_miss_was_luck_the_lab_moves_to_a_higher_rate(monkeypatch):
    """Pass 32: only crossing the target could pass (one request short, the pace capped), and the better
    reference meets the target on fresh prompts: its miss was luck, nothing could pass there, so the lab
    judges at the sweep's next rate, where the reference misses on fresh prompts too."""
    from helpers import tuning
    monkeypatch.setattr(run_size, "_size", "smoke")
    monkeypatch.setattr(tuning, "pace_ceiling", lambda before, after=None: 1.05)
    service_seed = []

    def measure(config, load, *, tag="", force=False, progress=True):
        if load.max_concurrency == 1:
            return dict(UNLOADED)
        fresh = bool(service_seed) and load.seed != service_seed[0]
        if config == ADVISED_CFG:
            return _row(8 if fresh and load.request_rate <= 4 else 7 if load.request_rate <= 4 else 4, total=8)
        service_seed.append(load.seed) if not service_seed else None
        return {**ROWS[config], "reused": False}

    said = []
    lab = lab4.Capstone.prepare(BASE, measure=measure, sweep=_sweep, say=said.append)
    assert lab.rate == 8 and "one request's luck" in said[-1]


def test_a_clear_winner_passes_on_fresh_prompts_even_below_the_targets_share(lab, monkeypatch, capsys):
    """Pass 33: a crossing row that also beats the reference beyond noise on the fresh prompts passes, though
    it falls one request short of the target's share there (it failed as 'one request's luck')."""
    lab, engine = lab
    lab.baseline, lab.advised = _row(20, total=32, duration=10.0), _row(21, total=32, duration=10.0)
    monkeypatch.setitem(ROWS, GOOD_CFG, _row(29, total=32, duration=10.0))
    service_seed = lab.load.seed

    def fresh(config, load, **kw):
        row = engine(config, load, **kw)
        if load.seed == service_seed:
            return row
        return {**row, **(_row(28, total=32, duration=10.0) if config == GOOD_CFG else
                          _row(21, total=32, duration=10.0))}
    lab.measure = fresh
    assert lab.check(GOOD_CFG), capsys.readouterr().out


def test_the_note_says_why_there_is_no_higher_rate_and_where_the_advice_was_read(monkeypatch):
    """Pass 34: a tuning rate that is the sweep's last read 'it stopped where the baseline overloaded' and 'Why not'
    the very rate it tuned at."""
    monkeypatch.setattr(run_size, "_size", "smoke")
    engine = FakeEngine()
    lab = lab4.Capstone.prepare(BASE, measure=engine, sweep=_sweep, say=lambda _: None)
    lab.service = lab.service.__class__(**{**lab.service.__dict__, "sweep": [r for r in lab.service.sweep
                                                                          if r["load_request_rate"] <= lab.rate]})
    lab.harder(say=lambda _: None)
    assert "overloaded" not in lab.note and "is its last" in lab.note
    assert "Why not" not in lab.describe() and "Note:" in lab.describe()
