"""Chapter 5's home on recorded rows: its rules and exercises."""
import pandas as pd

from helpers.chapters import ch5
from helpers.exercises import Choice, Question
from helpers.verdicts import CANNOT_TELL, HELD, NOT_HELD, PARTLY, UNTESTED
from tests.solutions import run_solution


def _weights(int8_tpot=35.0, int4_tpot=62.0, ppl=(19.0, 21.5, 29.0)):
    return pd.DataFrame({
        "checkpoint_gib": [0.25, 0.15, 0.11], "kv_cache_tokens": [174976, 176128, 183040],
        "mean_tpot_ms": [40.0, int8_tpot, int4_tpot], "perplexity": list(ppl), "token_agreement": [1.0, 0.58, 0.31],
        "repeats": [1, 1, 1]}, index=[ch5.BF16, ch5.INT8, ch5.INT4])


def test_weight_claims_judge_each_half_from_the_rows():
    memory, speed, accuracy, by_task = ch5.weight_claims(_weights())
    assert by_task.verdict == UNTESTED and by_task.evidence.startswith("cannot be judged here, because")
    assert memory.verdict == HELD  # 1.7× and 2.3× smaller
    assert speed.verdict == NOT_HELD  # INT4 slower beyond noise (INT8's ×1.14 is inside the floor)
    assert ch5.weight_claims(_weights(int8_tpot=25.0))[1].verdict == NOT_HELD  # INT8 faster, INT4 slower
    assert ch5.weight_claims(_weights(int8_tpot=25.0, int4_tpot=38.0))[1].verdict == PARTLY  # INT4 within noise
    assert accuracy.verdict == NOT_HELD and "21.50" in accuracy.evidence
    assert ch5.weight_claims(_weights(ppl=(19.0, 19.5, 20.0)))[2].verdict == HELD
    assert ch5.weight_claims(_weights(int8_tpot=30.0, int4_tpot=30.0))[1].verdict == HELD


def _kv(fp8_tokens=6144):
    return pd.DataFrame({"kv_cache_tokens": [3072, fp8_tokens], "kv_cache_gib": [0.07, 0.07],
                         "max_concurrency": [1.5, 3.0], "peak_running": [5.0, 12.0], "peak_waiting": [11.0, 9.0],
                         "preemptions": [4.0, 1.0], "output_throughput": [57.0, 71.0], "repeats": [1, 1]},
                        index=[ch5.AUTO, ch5.FP8])


def _drift(fp8_first, auto_first, fp8_gap=(0.08, 0.02), auto_gap=(0.0, 0.0)):
    prompts = ["bicycle", "lighthouse"]
    return pd.DataFrame({"kv": ["fp8", "fp8", "auto", "auto"], "prompt": prompts * 2, "tokens": [64] * 4,
                         "first_divergence": [*fp8_first, *auto_first], "mean_logprob_gap": [*fp8_gap, *auto_gap]})


def test_kv_claims():
    double, running, drifts = ch5.kv_claims(_kv(), _drift([4, None], [None, None]))
    assert (double.verdict, running.verdict, drifts.verdict) == (HELD, HELD, HELD)
    assert "1 of 2 fp8 answers" in drifts.evidence and "0 of 2 of the control's" in drifts.evidence
    assert ch5.kv_claims(_kv(fp8_tokens=4000), _drift([4, None], [None, None]))[0].verdict == PARTLY
    same = _kv()
    same.loc[ch5.FP8, "peak_running"] = 5.0  # as many ran as before: the claim is refuted, not lost in noise
    assert ch5.kv_claims(same, _drift([4, None], [None, None]))[1].verdict == NOT_HELD


def test_fp8_drift_is_judged_against_the_control():
    judge = lambda *a, **k: ch5.drift_claim(_drift(*a, **k))  # noqa: E731
    # fp8 left the reference only where the control also left it: the engine's own difference, not the dtype's
    assert judge([4, None], [10, None]).verdict == PARTLY  # ...though fp8's log-probabilities moved more
    assert judge([4, None], [10, None], fp8_gap=(0.0, 0.0)).verdict == CANNOT_TELL  # short answers cannot refute "may"
    assert judge([None, None], [None, None], fp8_gap=(0.0, 0.0)).verdict == CANNOT_TELL
    # a gap a hair above the control's is rounding, not drift; a missing gap cannot be judged
    assert judge([None, None], [None, None], fp8_gap=(0.004, 0.004)).verdict == CANNOT_TELL
    assert judge([None, None], [None, None], fp8_gap=(0.03, 0.03), auto_gap=(0.025, 0.025)).verdict == CANNOT_TELL
    assert judge([None, None], [None, None], fp8_gap=(0.05, 0.05), auto_gap=(0.02, 0.02)).verdict == PARTLY
    nan = judge([None, None], [None, None], fp8_gap=(float("nan"), float("nan")))
    assert nan.verdict == UNTESTED and "no log-probability gap" in nan.evidence
    assert judge([None, 7], [None, None]).verdict == HELD  # a prompt the control kept, fp8 left
    every = judge([4, 7], [10, 12])  # the control left on every prompt: nothing to compare against
    assert every.verdict == UNTESTED and "every prompt" in every.evidence
    no_control = ch5.drift_claim(pd.DataFrame({"first_divergence": [4, None], "mean_logprob_gap": [0.08, 0.0]}))
    assert no_control.verdict == UNTESTED and "control" in no_control.evidence


def _parallel(kv_gib=(1.0, 1.02)):
    return pd.DataFrame({"kv_cache_tokens": [528384, 1081088], "kv_cache_gib": list(kv_gib),
                         "median_tpot_ms": [13.7, 29.2],
                         "output_throughput": [183.0, 117.0], "same_tokens": [True, True], "repeats": [1, 1]},
                        index=[ch5.TP1, ch5.TP2])


def test_parallel_claims():
    offload, split, slower = ch5.parallel_claims(_parallel())
    assert offload.verdict == UNTESTED and (split.verdict, slower.verdict) == (HELD, HELD)
    assert len(ch5.parallel_claims(_parallel(), device="cuda")) == 3
    faster = _parallel().assign(median_tpot_ms=[13.7, 9.0])
    assert ch5.parallel_claims(faster)[2].verdict == CANNOT_TELL  # one faster machine cannot refute "not always"


def test_the_split_is_judged_on_kv_bytes_per_rank_not_on_equal_tokens():
    """Two ranks that each kept every head (the same KV bytes per token per rank) did not split the
    model, whatever tokens they answered."""
    whole = _parallel(kv_gib=(1.0, 2.05))  # twice the tokens in twice the memory: the same bytes a token
    split = ch5.parallel_claims(whole)[1]
    assert split.verdict == NOT_HELD and "correctness note" in split.evidence


def test_fp8_is_judged_against_the_ratio_of_bytes_per_number():
    """In float32 (a CPU without bf16 instructions) fp8 holds ×4 the tokens: that is the mechanism, held."""
    f32 = _kv(fp8_tokens=12288).assign(cfg_dtype=["float32", "float32"])
    assert ch5.kv_claims(f32, _drift([4, None], [None, None]))[0].verdict == HELD
    assert ch5.kv_claims(_kv(fp8_tokens=12288), _drift([4, None], [None, None]))[0].verdict == PARTLY  # ×4 of bf16


def test_quantized_memory_is_judged_on_what_the_engine_holds():
    held = _weights().assign(non_kv_gib=[0.96, 0.86, 0.83])  # saved 0.10 and 0.13 GiB of 0.10 and 0.14
    assert ch5.weight_claims(held)[0].verdict == HELD
    runtime_only = _weights().assign(non_kv_gib=[0.96, 0.95, 0.95])  # the checkpoints shrank, the engine did not
    assert ch5.weight_claims(runtime_only)[0].verdict == PARTLY


def test_the_split_is_timed_on_the_median_not_the_mean():
    """A stored TP=1 row: three of eight streams reached the client in one chunk (TPOT 0), so its mean
    (6.7 ms) lay below every stream that did stream; the median (9.3 ms) does not."""
    rows = _parallel().assign(mean_tpot_ms=[6.73, 19.8], median_tpot_ms=[9.31, 19.8])
    assert "median TPOT 9.3 ms with one rank" in ch5.parallel_claims(rows)[2].evidence
    lost = _parallel().assign(median_tpot_ms=[0.0, 19.8])  # over half the streams came in one chunk
    assert ch5.parallel_claims(lost)[2].verdict == UNTESTED


def test_parallel_claims_without_the_tp2_row_say_why():
    one = _parallel().loc[[ch5.TP1]]
    offload, split, slower = ch5.parallel_claims(one, device="cuda", tp2_why="this machine has one GPU")
    assert split.verdict == slower.verdict == UNTESTED and "one GPU" in split.evidence


def _offload(before=8.0, after=30.0, moved=0.1):
    row = lambda tpot: {"mean_tpot_ms": tpot, "repeats": 1, "engine_cpu_offload_gb": moved}  # noqa: E731
    return {ch5.NO_OFFLOAD: {**row(before), "engine_cpu_offload_gb": 0.0}, ch5.OFFLOADED: row(after)}


def test_offload_is_judged_on_mean_tpot_on_a_gpu():
    assert ch5.offload_claim(_offload(), "cuda").verdict == HELD  # ×3.75 slower per token
    assert ch5.offload_claim(_offload(after=12.0), "cuda").verdict == HELD  # slower beyond noise: the claim has no size
    assert ch5.offload_claim(_offload(after=6.0), "cuda").verdict == NOT_HELD  # faster: the claim failed
    assert ch5.offload_claim(_offload(), "cpu").verdict == UNTESTED
    assert ch5.offload_claim(None, "cuda", why="no GPU free").verdict == UNTESTED
    nothing = ch5.offload_claim(_offload(moved=0.0), "cuda")
    assert nothing.verdict == UNTESTED and "no offloaded weights" in nothing.evidence


def test_cores_each_layout_computed_on_come_from_its_log_lines():
    rows = {"TP=1": {"bound_ranks": ["worker rank 0 on core(s) [0]"], "cores_kept_free": ["1"]},
            "TP=2": {"bound_ranks": ["Worker rank 0 on core(s) [0]", "Worker rank 1 on core(s) [1]"]}}
    assert ch5.cores_sentence(rows) == "TP=1 computed on 1 core(s) and kept core(s) 1 free; TP=2 computed on 2 core(s)."
    assert "not known here" in ch5.cores_sentence({"TP=1": {}})


def test_chapter5_solutions():
    import pandas as pd
    shape = {"num_hidden_layers": 30, "num_key_value_heads": 3, "head_dim": 64}
    env = run_solution("ch05_q1.py", {"shape": shape, "kv_bytes": 24 * 128 * 23040, "block": 128})
    assert Question("q1", lambda: 6144.0, 0.05, "", "ch05_q1.py").check(env["answer"])
    env = run_solution("ch05_q1.py", {"shape": shape, "kv_bytes": 24 * 16 * 23040, "block": 16})  # a GPU's blocks
    assert Question("q1", lambda: 768.0, 0.05, "", "ch05_q1.py").check(env["answer"])
    weights = pd.DataFrame({"non_kv_gib": [1.08, 0.91], "kv_cache_gib": [3.85, 4.02],
                            "kv_cache_tokens": [174976, 182912]}, index=["bf16", "int4"])
    q2 = Question("q2", lambda: ch5.tokens_per_mib_saved(weights, "int4"), 0.15, "", "ch05_q2.py",
                  known_wrong={"you stopped at the difference in KV tokens": lambda: 182912 - 174976,
                               "you divided by the GiB saved, not the MiB": lambda: 1024 * ch5.tokens_per_mib_saved(
                                   weights, "int4")})
    env = run_solution("ch05_q2.py", {"weights": weights, "small": "int4"})
    assert q2.check(env["answer"]) and 40 < env["answer"] < 50  # one MiB holds 45.5 tokens of 23,040 bytes
    assert not q2.check(182912 - 174976) and not q2.check(env["answer"] * 1024)
    same = weights.assign(non_kv_gib=[1.08, 1.08])  # nothing saved: nothing to share out
    assert ch5.tokens_per_mib_saved(same, "int4") is None
    assert ch5.tokens_per_mib_saved(weights.assign(non_kv_gib=[None, None]), "int4") is None  # neither figure
    gpu = weights.assign(non_kv_gib=[None, None], weights_gib=[0.25, 0.08])  # a GPU: the weights' memory
    env = run_solution("ch05_q2.py", {"weights": gpu, "small": "int4"})
    expected = ch5.tokens_per_mib_saved(gpu, "int4")
    assert expected and Question("q2", lambda: expected, 0.15, "", "ch05_q2.py").check(env["answer"])
    parallel = pd.DataFrame({"median_tpot_ms": [13.7, 29.2], "repeats": [1, 1]}, index=["TP=1", "TP=2"])
    env = run_solution("ch05_q3.py", {"parallel": parallel})
    q3 = Choice("q3", ["TP=1", "TP=2", ch5.TOO_CLOSE], lambda: ch5.faster_split(parallel), "", "ch05_q3.py")
    assert q3.check(env["answer3"]) and not q3.check("TP=2") and not q3.check(ch5.TOO_CLOSE)
    close = parallel.assign(median_tpot_ms=[13.7, 14.5])  # 6 %: within one reading's 10 %
    env = run_solution("ch05_q3.py", {"parallel": close})
    q3 = Choice("q3", ["TP=1", "TP=2", ch5.TOO_CLOSE], lambda: ch5.faster_split(close), "", "ch05_q3.py")
    assert env["answer3"] == ch5.TOO_CLOSE and q3.check(env["answer3"]) and not q3.check("TP=1")


def test_a_quantized_copy_slower_than_bf16_is_said_to_be_slower():
    """A stored smoke run: INT4 read ×0.4 of bf16's bytes and took ×1.29 of its time per token (inside the ×÷1.3
    floor); ×1.5 is past it."""
    assert ch5.time_against_bytes(1.29, 0.4) == "the time stayed within the noise of bf16's although the bytes fell."
    assert ch5.time_against_bytes(1.5, 0.4).startswith("the time rose although the bytes fell")
    assert ch5.time_against_bytes(0.7, 0.5) == "the time fell, but less than the bytes."
    assert ch5.time_against_bytes(0.5, 0.6) == "the time fell at least as much as the bytes."


def test_exercise2_names_the_checkpoint_and_mb_slips(capsys):
    import pandas as pd
    weights = pd.DataFrame({"non_kv_gib": [0.96, 0.81], "kv_cache_tokens": [216_000, 222_912],
                            "checkpoint_gib": [0.25, 0.11]}, index=["bf16", "int4"])
    want = ch5.tokens_per_mib_saved(weights, "int4")
    ckpt = ch5.tokens_per_mib_saved(weights, "int4", key="checkpoint_gib")
    q2 = Question("q2", lambda: want, 0.15, "", "ch05_q2.py",
                  known_wrong={"checkpoint": lambda: ckpt, "MB": lambda: want * 10**6 / 2**20})
    assert q2.check(want) and not q2.check(ckpt) and "checkpoint" in capsys.readouterr().out
    mb = 6_912 / ((0.96 - 0.81) * 2**30 / 1e6)  # divided by the megabytes saved: fewer tokens per unit
    assert not q2.check(mb) and "MB" in capsys.readouterr().out
