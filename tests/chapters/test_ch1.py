"""Chapter 1's home on recorded rows: its rules can say "held" and "did not hold"; its solutions pass its checks."""
import pandas as pd
import pytest

from helpers import verdicts
from helpers.chapters import ch1
from helpers.exercises import Question
from tests.solutions import run_solution


def row(**kw):
    base = {"p99_itl_ms": 1000.0, "p99_ttft_ms": 3000.0, "output_throughput": 100.0, "repeats": 1,
            "kv_cache_tokens": 10_000.0, "max_concurrency": 5.0, "peak_running": 8.0, "peak_waiting": 8.0,
            "peak_kv_cache_usage_pct": 95.0}
    return pd.Series({**base, **kw})


def test_stock_vs_tuned():
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=130.0)).verdict == verdicts.HELD
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=700.0, output_throughput=103.0)).verdict == verdicts.PARTLY
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=970.0, p99_ttft_ms=2950.0, output_throughput=99.0)).verdict == verdicts.NOISE
    claim = ch1.stock_vs_tuned(row(), row(p99_itl_ms=1500.0, p99_ttft_ms=4000.0))
    assert claim.verdict == verdicts.NOT_HELD and claim.rule
    # each half in its own direction: lost throughput, or a better TTFT beside a worse ITL, is not "held"
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=70.0)).verdict == verdicts.PARTLY
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=2000.0, p99_ttft_ms=1000.0)).verdict == verdicts.NOT_HELD
    # a starved front end delivers tokens in bursts: no gaps at all, nothing to judge
    assert ch1.stock_vs_tuned(row(p99_itl_ms=0.0), row()).verdict == verdicts.UNTESTED


def test_attribution_names_each_single_change():
    df = pd.DataFrame([row(), row(p99_itl_ms=900.0), row(p99_itl_ms=500.0), row(p99_itl_ms=450.0)],
                      index=["stock", "stock + max_model_len", "stock + budget", "tuned"])
    shares = ch1.attribution(df)
    assert max(shares, key=shares.get) == "tuned" and shares["stock + budget"] == 2.0


def test_chain_throughput_is_untested_when_memory_was_not_the_limit():
    large = row(kv_cache_tokens=40_000.0, peak_running=16.0, peak_kv_cache_usage_pct=40.0)
    assert ch1.chain_throughput(row(peak_kv_cache_usage_pct=50.0), large, 18_000).verdict == verdicts.UNTESTED
    assert ch1.chain_throughput(row(peak_running=16.0), large, 18_000).verdict == verdicts.UNTESTED


def test_chain_throughput_judges_the_throughput_when_the_cache_was_short():
    small = row(peak_running=8.0, peak_waiting=8.0, output_throughput=80.0)
    assert ch1.chain_throughput(small, row(peak_running=16.0, peak_waiting=0.0, output_throughput=120.0),
                                18_000).verdict == verdicts.HELD
    noise = ch1.chain_throughput(small, row(peak_running=16.0, peak_waiting=0.0, output_throughput=83.0), 18_000)
    assert noise.verdict == verdicts.NOISE and "compute" in noise.evidence


def test_chain_capacity():
    chain = pd.DataFrame([row(), row(kv_cache_tokens=20_000.0, max_concurrency=10.0)])
    assert ch1.chain_capacity(chain).verdict == verdicts.HELD


def test_chapter1_solutions():
    import pandas as pd
    ablation = pd.DataFrame({"p99_itl_ms": [1000.0, 950.0, 400.0, 380.0]},
                            index=["stock", "stock + max_model_len", "stock + budget", "tuned"])
    env = run_solution("ch01_q1.py", {"ablation": ablation})
    assert env["setting"] == "max_num_batched_tokens"
    ref = pd.Series({"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": 20.0, "non_kv_gib": 3.0})
    env = run_solution("ch01_q3.py", {"ref": ref, "need_tokens": 50_000})
    from helpers.chapters.ch1 import fraction_for
    assert Question("k", lambda: fraction_for(ref, 50_000), 0.03, "", "ch01_q3.py").check(env["fit_fraction"])


@pytest.mark.parametrize("stock_itl, tuned_itl, verdict", [(120.0, 118.0, verdicts.NOISE), (900.0, 300.0, verdicts.HELD),
                                                             (300.0, 900.0, verdicts.NOT_HELD)])
def test_chapter1_predict_then_measure_solution(stock_itl, tuned_itl, verdict):
    """ch01_q2.py measures (it calls H.measure); here `measure` hands back recorded rows instead."""
    import types

    from helpers.exercises import Choice
    rows = {"stock": {"p99_itl_ms": stock_itl, "repeats": 1}, "tuned": {"p99_itl_ms": tuned_itl, "repeats": 1}}
    H = types.SimpleNamespace(measure=lambda config, load, tag="": rows[config], verdicts=verdicts)
    env = run_solution("ch01_q2.py", {"H": H, "configs": {"stock": "stock", "tuned": "tuned"}, "short_only": None})
    want = verdicts.judge_change("tuned is better", rows["stock"], rows["tuned"], "p99_itl_ms", better="lower",
                               held_at=1.3).verdict
    assert want == verdict
    assert Choice("q2", [verdicts.HELD, verdicts.NOISE, verdicts.NOT_HELD, verdicts.PARTLY], lambda: want, "",
                  "ch01_q2.py").check(env["verdict"])
