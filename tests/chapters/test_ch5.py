"""Chapter 5's home on recorded rows: its rules and exercises."""
import pandas as pd

from helpers.chapters import ch5
from helpers.exercises import Choice, Question
from helpers.verdicts import HELD, NOT_HELD, PARTLY, UNTESTED
from tests.solutions import run_solution


def _weights(int8_tpot=35.0, int4_tpot=62.0, ppl=(19.0, 21.5, 29.0)):
    return pd.DataFrame({
        "checkpoint_gib": [0.25, 0.15, 0.11], "kv_cache_tokens": [174976, 176128, 183040],
        "mean_tpot_ms": [40.0, int8_tpot, int4_tpot], "perplexity": list(ppl), "token_agreement": [1.0, 0.58, 0.31],
        "repeats": [1, 1, 1]}, index=[ch5.BF16, ch5.INT8, ch5.INT4])


def test_weight_claims_judge_each_half_from_the_rows():
    memory, speed, accuracy = ch5.weight_claims(_weights())
    assert memory.verdict == HELD  # 1.7× and 2.3× smaller
    assert speed.verdict == PARTLY  # INT8 faster, INT4 slower
    assert accuracy.verdict == NOT_HELD and "21.50" in accuracy.evidence
    assert ch5.weight_claims(_weights(ppl=(19.0, 19.5, 20.0)))[2].verdict == HELD
    assert ch5.weight_claims(_weights(int8_tpot=30.0, int4_tpot=30.0))[1].verdict == HELD


def _kv(fp8_tokens=6144):
    return pd.DataFrame({"kv_cache_tokens": [3072, fp8_tokens], "kv_cache_gib": [0.07, 0.07],
                         "max_concurrency": [1.5, 3.0], "peak_running": [5.0, 12.0], "peak_waiting": [11.0, 9.0],
                         "preemptions": [4.0, 1.0], "output_throughput": [57.0, 71.0], "repeats": [1, 1]},
                        index=[ch5.AUTO, ch5.FP8])


def test_kv_claims():
    drift = pd.DataFrame({"first_divergence": [4, None], "mean_logprob_gap": [0.08, 0.0]})
    double, running, drifts = ch5.kv_claims(_kv(), drift)
    assert (double.verdict, running.verdict, drifts.verdict) == (HELD, HELD, HELD)
    assert "1 of 2" in drifts.evidence
    assert ch5.kv_claims(_kv(fp8_tokens=4000), drift)[0].verdict == PARTLY
    none = pd.DataFrame({"first_divergence": [None, None], "mean_logprob_gap": [0.0, 0.0]})
    assert ch5.kv_claims(_kv(), none)[2].verdict == NOT_HELD


def test_parallel_claims():
    rows = pd.DataFrame({"kv_cache_tokens": [528384, 1081088], "mean_tpot_ms": [13.7, 29.2],
                         "output_throughput": [183.0, 117.0], "same_tokens": [True, True], "repeats": [1, 1]},
                        index=[ch5.TP1, ch5.TP2])
    offload, split, slower = ch5.parallel_claims(rows)
    assert offload.verdict == UNTESTED and (split.verdict, slower.verdict) == (HELD, HELD)
    assert len(ch5.parallel_claims(rows, device="cuda")) == 2


def test_chapter5_solutions():
    import pandas as pd
    shape = {"num_hidden_layers": 30, "num_key_value_heads": 3, "head_dim": 64}
    env = run_solution("ch05_q1.py", {"shape": shape, "kv_bytes": 24 * 128 * 23040})
    assert Question("q1", lambda: 6144.0, 0.05, "", "ch05_q1.py").check(env["answer"])
    weights = pd.DataFrame({"non_kv_gib": [1.08, 0.91], "kv_cache_gib": [3.85, 4.0],
                            "kv_cache_tokens": [174976, 183040]}, index=["bf16", "int4"])
    env = run_solution("ch05_q2.py", {"weights": weights, "small": "int4"})
    assert Question("q2", lambda: 183040 - 174976, 0.25, "", "ch05_q2.py").check(env["answer"])
    parallel = pd.DataFrame({"mean_tpot_ms": [13.7, 29.2]}, index=["TP=1", "TP=2"])
    env = run_solution("ch05_q3.py", {"parallel": parallel})
    assert Choice("q3", ["TP=1", "TP=2"], lambda: "TP=1", "", "ch05_q3.py").check(env["answer3"])
