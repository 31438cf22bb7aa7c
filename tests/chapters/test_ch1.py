"""Chapter 1's home on recorded rows: its rules can say "held" and "did not hold"; its solutions pass its checks."""
import pandas as pd
import pytest

from helpers import verdicts
from helpers.chapters import ch1
from helpers.exercises import Question
from helpers.load import Load
from tests.solutions import run_solution


def row(**kw):
    base = {"p99_itl_ms": 1000.0, "p99_ttft_ms": 3000.0, "output_throughput": 100.0, "repeats": 1,
            "kv_cache_tokens": 10_000.0, "max_concurrency": 5.0, "peak_running": 8.0, "peak_waiting": 8.0,
            "peak_kv_cache_usage_pct": 95.0}
    return pd.Series({**base, **kw})


def test_stock_vs_tuned():
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=150.0)).verdict == verdicts.HELD
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=450.0, output_throughput=103.0)).verdict == verdicts.PARTLY
    # no change at all, one run each: a P99's ×÷2 floor reaches the article's ×2, so the run cannot tell...
    flat = ch1.stock_vs_tuned(row(), row(p99_itl_ms=970.0, p99_ttft_ms=2950.0, output_throughput=99.0))
    assert flat.verdict == verdicts.CANNOT_TELL
    # ...while three close repeats a side still cannot narrow it below that floor: the same
    tight = lambda v: dict(repeats=3, runs=[{"p99_itl_ms": x} for x in (0.98 * v, v, 1.02 * v)])
    assert ch1.stock_vs_tuned(row(**tight(1000.0)), row(p99_itl_ms=970.0, output_throughput=99.0,
                                                        **tight(970.0))).verdict == verdicts.CANNOT_TELL
    # ...but with repeats spread wider than ×2 itself, the run cannot tell
    wide = lambda v: dict(repeats=3, runs=[{"p99_itl_ms": x} for x in (v / 2, v, 2.2 * v)])
    assert ch1.stock_vs_tuned(row(**wide(1000.0)), row(p99_itl_ms=970.0, output_throughput=99.0,
                                                       **wide(970.0))).verdict == verdicts.CANNOT_TELL
    # throughput up, P99 ITL unmoved: a P99's ×÷2 floor still holds the article's ×2, so the latency half is not
    # refuted and the claim holds partly
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=1000.0, output_throughput=150.0)).verdict == verdicts.PARTLY
    claim = ch1.stock_vs_tuned(row(), row(p99_itl_ms=2500.0, p99_ttft_ms=4000.0))
    assert claim.verdict == verdicts.NOT_HELD and claim.rule
    # each half in its own direction: lost throughput, or a better TTFT beside a worse ITL, is not "held"
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=70.0)).verdict == verdicts.NOT_HELD
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=2500.0, p99_ttft_ms=1000.0)).verdict == verdicts.NOT_HELD
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
    assert noise.verdict == verdicts.CANNOT_TELL and "compute" in noise.evidence  # chapter 0's ?, with the reason
    fell = ch1.chain_throughput(small, row(peak_running=16.0, peak_waiting=0.0, output_throughput=60.0), 18_000)
    assert fell.verdict == verdicts.NOT_HELD


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


WIDE = {"repeats": 3, "runs": [{"p99_itl_ms": v} for v in (80.0, 120.0, 170.0)]}  # repeats far apart


@pytest.mark.parametrize("stock_itl, tuned_itl, verdict, spread", [
    (120.0, 118.0, verdicts.CANNOT_TELL, {}),  # no change, but ×1.3 lies inside the ×÷1.5 floor of a P99
    (120.0, 118.0, verdicts.CANNOT_TELL, WIDE),   # no change, but ×1.3 lies inside this interval too
    (900.0, 300.0, verdicts.HELD, {}), (300.0, 900.0, verdicts.NOT_HELD, {})])
def test_chapter1_predict_then_measure_solution(stock_itl, tuned_itl, verdict, spread):
    """ch01_q2.py measures (it calls H.measure); here `measure` hands back recorded rows instead."""
    import types

    from helpers.exercises import Choice
    rows = {"stock": {"p99_itl_ms": stock_itl, "repeats": 1, **spread},
            "tuned": {"p99_itl_ms": tuned_itl, "repeats": 1, **spread}}
    H = types.SimpleNamespace(measure=lambda config, load, tag="": rows[config], verdicts=verdicts)
    env = run_solution("ch01_q2.py", {"H": H, "configs": {"stock": "stock", "tuned": "tuned"}, "short_only": None})
    want = verdicts.judge_change("tuned is better", rows["stock"], rows["tuned"], "p99_itl_ms", better="lower",
                               held_at=1.3).verdict
    assert want == verdict
    q = Choice("q2", [verdicts.HELD, verdicts.NOISE, verdicts.CANNOT_TELL, verdicts.NOT_HELD, verdicts.PARTLY],
               lambda: want, "",
               "ch01_q2.py")
    assert q.check(env["verdict"])
    assert not q.check(verdicts.PARTLY)  # a known-wrong answer: none of these rows is "held partly"


REF = pd.Series({"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": 20.0, "non_kv_gib": 3.0,
                 "block_size": 128})
CHAIN_LOAD = Load(num_prompts=16, input_len=256, output_len=128, max_concurrency=16)


def test_exercise3_solution_passes_and_a_known_wrong_answer_does_not(capsys):
    design = ch1.chain_design(REF, CHAIN_LOAD, 2048)
    q = ch1.q_fits_at(lambda: design, lambda: REF)
    env = run_solution("ch01_q3.py", {"ref": REF, "need_tokens": design.need_tokens})
    assert q.check(env["fit_fraction"])
    forgot = design.need_tokens * 2.0 / 100_000 / 20.0  # the KV share alone, without the weights
    assert not q.check(forgot) and "left out the memory that is not KV" in capsys.readouterr().out


@pytest.mark.parametrize("ref", [
    pd.Series({"kv_cache_gib": 2.0, "kv_cache_tokens": 100_000, "node_memory_gib": float("nan"),
               "non_kv_gib": float("nan"), "block_size": 16}),            # a GPU's report: no node memory
    pd.Series({"kv_cache_gib": float("nan"), "kv_cache_tokens": 100_000, "node_memory_gib": 20.0,
               "non_kv_gib": 3.0, "block_size": 128}),                    # an imported row without the KV GiB
    {"kv_cache_tokens": 100_000}])                                         # no memory figures, no block size
def test_exercise3_cannot_be_checked_where_the_report_lacks_the_memory_figures(ref, capsys):
    design = ch1.chain_design(ref, CHAIN_LOAD, 2048, fixed=(0.5, 0.9))
    assert design.fits_at is None and design.fractions == [0.5, 0.9]
    q = ch1.q_fits_at(lambda: design, lambda: ref)
    assert q.check(0.4) is False and "cannot be checked here" in capsys.readouterr().out


def test_exercise3_confirming_run_is_judged():
    fit = {"peak_running": 16.0, "peak_waiting": 3.0, "preemptions": 0.0, "peak_kv_cache_usage_pct": 97.0}
    held = ch1.fit_claim(fit, CHAIN_LOAD)
    assert held.verdict == verdicts.HELD and held.rule  # waiting for the token budget does not count against it
    assert ch1.fit_claim({**fit, "peak_running": 11.0}, CHAIN_LOAD).verdict == verdicts.NOT_HELD
    assert ch1.fit_claim({**fit, "preemptions": 2.0}, CHAIN_LOAD).verdict == verdicts.NOT_HELD
    assert ch1.fit_claim({"peak_running": float("nan")}, CHAIN_LOAD).verdict == verdicts.UNTESTED


def test_stock_dtype_beside_vllm_serves():
    """vLLM's `_resolve_auto_dtype` keeps a bf16 model in bf16 on every x86 CPU, and turns float32 into bf16."""
    assert ch1.serve_dtype("bfloat16") == ch1.serve_dtype("float32") == "bfloat16"
    assert ch1.serve_dtype("float16") == "float16" and ch1.serve_dtype("bfloat16", "cuda") is None
    assert "as `vllm serve` would" in ch1.dtype_note("bfloat16", "bfloat16")
    note = ch1.dtype_note("float32", "bfloat16")
    assert "`vllm serve` would run in bfloat16" in note and "chapter 0" in note


def test_the_need_counts_the_null_block_and_the_confirming_run_clears_the_tolerance():
    design = ch1.chain_design(REF, CHAIN_LOAD, 2048)
    assert design.need_tokens == CHAIN_LOAD.peak_kv_tokens(128) + 128  # BlockPool keeps one block back
    # an answer at the low edge of the check's tolerance (narrowed by the GB slip) still runs above it
    low = design.fits_at * 0.997
    assert ch1.q_fits_at(lambda: design, lambda: REF).check(low)
    run_at = ch1.confirming_fraction(low, design)
    assert run_at >= design.fits_at * 1.04 and round(run_at, 3) == run_at
    assert ch1.confirming_fraction(0.98, design) == 0.99  # never past the engine's own limit


def test_q3_rejects_a_gb_slip_and_a_cache_too_small_and_asks_for_digits(capsys):
    """A CI run's reference: 0.96 GiB non-KV, 23,052 bytes a token, a 23.54 GiB node, 8,320 tokens
    needed. The right fraction is 0.04837; a GB-for-GiB slip gives 0.0489 and a cache 15 % short 0.0472,
    both rejected with their reasons; four significant digits pass; three are told to give more, not
    blamed on the slip."""
    import pandas as pd
    ref = pd.Series({"kv_cache_gib": 23_052 * 100_000 / 2**30, "kv_cache_tokens": 100_000,
                     "node_memory_gib": 23.54, "non_kv_gib": 0.96})
    design = ch1.ChainDesign([0.05], 8_320, ch1.fraction_for(ref, 8_320), (0.5, 2))
    q = ch1.q_fits_at(lambda: design, lambda: ref)
    env = run_solution("ch01_q3.py", {"ref": ref, "need_tokens": 8_320})
    assert q.check(env["fit_fraction"])
    assert not q.check(ch1.fraction_for(ref, 0.85 * 8_320))
    assert not q.check((0.96 + 8_320 * 23_052 / 1e9) / 23.54) and "GB" in capsys.readouterr().out
    assert q.check(round(ch1.fraction_for(ref, 8_320), 5))
    assert not q.check(0.049) and "too few digits" in capsys.readouterr().out  # 3 decimals: GB or right?
    assert ch1.chain_capacity(pd.DataFrame({"kv_cache_tokens": [9000], "max_concurrency": [4.4]})).verdict == \
        verdicts.UNTESTED  # a chain of one fraction cannot show a rise


def test_q1_accepts_both_settings_where_their_effects_tie():
    import pandas as pd
    ablation = pd.DataFrame({"p99_itl_ms": [1000.0, 500.0, 480.0, 380.0], "repeats": [1] * 4},
                            index=["stock", "stock + max_model_len", "stock + budget", "tuned"])
    assert ch1.did_the_work(ablation) == {"max_model_len", "max_num_batched_tokens"}  # ×2.0 and ×2.08
    ablation.loc["stock + max_model_len", "p99_itl_ms"] = 990.0
    ablation.loc["stock + budget", "p99_itl_ms"] = 300.0  # ×3.3 apart: past a P99's ×÷2 floor
    assert ch1.did_the_work(ablation) == "max_num_batched_tokens"


def test_a_cache_too_small_can_show_as_preemptions_not_fewer_running():
    """vLLM admits on a prompt's blocks: all 16 run in both, the small cache preempts (a CI run: 165 → 269)."""
    small = row(peak_running=16.0, peak_waiting=0.0, output_throughput=165.0, preemptions=2.0,
                peak_kv_cache_usage_pct=98.0)
    large = row(peak_running=16.0, peak_waiting=0.0, output_throughput=269.0, preemptions=0.0)
    claim = ch1.chain_throughput(small, large, 6_272)
    assert claim.verdict == verdicts.HELD and "preemptions 2 → 0" in claim.evidence


def test_a_chain_step_smaller_than_the_start_to_start_movement_that_did_not_rise_is_noise():
    """Pass 13: at full size the first two fractions ask for caches about 25 MiB apart."""
    chain = pd.DataFrame({"kv_cache_tokens": [5000.0, 4990.0, 8000.0], "max_concurrency": [2.4, 2.43, 3.9],
                          "cfg_gpu_memory_utilization": [0.04627, 0.04732, 0.0568], "node_memory_gib": [23.54] * 3})
    assert ch1.chain_capacity(chain).verdict == verdicts.CANNOT_TELL
    far = chain.assign(cfg_gpu_memory_utilization=[0.04627, 0.0568, 0.07])
    assert ch1.chain_capacity(far).verdict == verdicts.NOT_HELD


def test_a_run_whose_tokens_came_in_bursts_is_named_beside_the_verdict():
    busy = {"median_itl_ms": 0.003, "median_tpot_ms": 53.4}
    assert "stock's median ITL 0.003 ms" in ch1.bursts_note(stock=busy, tuned={"median_itl_ms": 22.0,
                                                                               "median_tpot_ms": 62.0})
    assert ch1.bursts_note(stock={"median_itl_ms": 21.0, "median_tpot_ms": 59.0}, tuned={}) == ""
