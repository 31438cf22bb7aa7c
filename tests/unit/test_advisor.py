"""Each diagnosis of the tuning advisor, on rows shaped like the harness's (figures, resolved
settings, /metrics peaks)."""
from helpers import advisor, hardware
from helpers.config import EngineConfig

CPU = EngineConfig(device="cpu")


def _row(**figures):
    base = {"peak_kv_cache_usage_pct": 20.0, "preemptions": 0.0, "peak_running": 4.0, "peak_waiting": 0.0,
            "engine_max_num_seqs": 128, "max_itl_ms": 80.0, "median_itl_ms": 30.0, "mean_tpot_ms": 31.0,
            "load_kind": "random", "block_size": 128}
    return {**base, **figures}


def test_a_full_cache_asks_for_memory_first():
    a = advisor.advise(_row(peak_kv_cache_usage_pct=100.0, preemptions=5.0), CPU)
    assert a.limit == "KV cache full" and a.change == {"gpu_memory_utilization": 0.38} and a.chapter == 2
    assert "5 preemption(s)" in a.evidence and "Try gpu_memory_utilization=0.38" in a.text()


def test_a_fixed_cache_is_released_before_anything_else():
    cfg = CPU.replace(num_gpu_blocks_override=8)
    a = advisor.advise(_row(preemptions=2.0), cfg)
    assert a.change == {"num_gpu_blocks_override": None, "kv_cache_memory_bytes": None}
    assert a.apply(cfg).num_gpu_blocks_override is None


def test_at_the_memory_ceiling_fp8_or_fewer_seats(monkeypatch):
    cfg = CPU.replace(gpu_memory_utilization=0.5)
    monkeypatch.setattr(hardware, "has_avx512", lambda: True)
    assert advisor.advise(_row(preemptions=1.0), cfg).change == {"kv_cache_dtype": "fp8"}
    monkeypatch.setattr(hardware, "has_avx512", lambda: False)
    assert advisor.advise(_row(preemptions=1.0, peak_running=8.0), cfg).change == {"max_num_seqs": 4}


def test_queueing_at_the_seat_cap():
    a = advisor.advise(_row(engine_max_num_seqs=4, peak_running=4.0, peak_waiting=12.0), CPU.replace(max_num_seqs=4))
    assert a.limit == "Requests queue for a seat" and a.change == {"max_num_seqs": 8} and a.chapter == 3
    full = _row(engine_max_num_seqs=4, peak_running=4.0, peak_waiting=12.0, peak_kv_cache_usage_pct=100.0)
    said = [d.limit for d in advisor.diagnose(full, CPU.replace(max_num_seqs=4))]
    assert "Requests queue for a seat" not in said  # the cache has no room: more seats would wait for blocks


def test_stalled_decodes_get_a_smaller_budget_then_a_prefill_cap():
    stalled = _row(max_itl_ms=3500.0, median_itl_ms=40.0)
    assert advisor.advise(stalled, CPU).change == {"max_num_batched_tokens": 256}
    assert advisor.advise(stalled, CPU.replace(max_num_batched_tokens=256)).change == \
        {"long_prefill_token_threshold": 128}
    off = CPU.replace(enable_chunked_prefill=False, max_num_batched_tokens=4096)
    assert advisor.advise(stalled, off).change == {"enable_chunked_prefill": True}
    mixed = _row(short_max_itl_ms=3000.0, short_median_itl_ms=30.0, max_itl_ms=None)
    assert advisor.advise(mixed, CPU).limit == "Long prefills stall decoding"
    # a GPU server resolves more seats (e.g. 1024); vLLM refuses a budget below them, so the advice stays above
    gpu = advisor.advise(_row(max_itl_ms=3500.0, median_itl_ms=40.0, engine_max_num_seqs=1024),
                         EngineConfig(device="cuda"))
    assert gpu.change == {"max_num_batched_tokens": 1024}


def test_a_missed_prefix():
    shared = dict(load_kind="prefix", load_num_prompts=16, load_num_prefixes=1, prefix_cache_hit_rate=0.0,
                  load_prefix_len=512)
    off = advisor.advise(_row(**shared, engine_enable_prefix_caching=False), CPU.replace(enable_prefix_caching=False))
    assert off.change == {"enable_prefix_caching": True} and off.chapter == 4
    short = advisor.advise(_row(**{**shared, "load_prefix_len": 100}), CPU)
    assert short.change == {"block_size": 64}
    tiny = advisor.advise(_row(**{**shared, "load_prefix_len": 20}), CPU)
    assert tiny.change == {} and "lengthen" in tiny.why
    churn = _row(**{**shared, "load_num_prefixes": 16})
    assert advisor.advise(churn, CPU).limit == "Each decode step costs the time"  # nothing repeated to reuse


def test_compute_bound_compiles_then_quantizes():
    calm = _row()
    assert advisor.diagnose(calm, CPU)[0].change == {"enforce_eager": False}
    assert advisor.advise(calm, CPU.replace(enforce_eager=False)).change == {"model": "embedded-int8"}
    assert advisor.advise(calm, CPU.replace(enforce_eager=False, model="/my/model")).change == {}


def test_mbu_decides_between_fewer_bytes_and_less_overhead():
    near = _row(mbu=0.8, roofline_tpot_ms=25.0)  # the step is mostly reading bytes: only fewer bytes help
    assert advisor.advise(near, CPU).change == {"model": "embedded-int8"}
    assert "MBU 0.80" in advisor.advise(near, CPU).evidence
    far = _row(mbu=0.2, roofline_tpot_ms=6.0)  # mostly overhead: compile first, as without a floor
    assert advisor.advise(far, CPU).change == {"enforce_eager": False}


def test_several_limits_are_listed_most_pressing_first():
    both = _row(peak_kv_cache_usage_pct=99.0, max_itl_ms=4000.0, median_itl_ms=40.0)
    assert [a.limit for a in advisor.diagnose(both, CPU)] == ["KV cache full", "Long prefills stall decoding"]


def test_the_missed_half_of_the_target_decides_the_advice():
    from helpers.slo import SLO
    slo = SLO(ttft_ms=1000.0, tpot_ms=50.0, share=0.9)
    runs = lambda ttft, tpot: [{"request_ttft_ms": [ttft] * 10, "request_tpot_ms": [tpot] * 10}]
    # TPOT missed, TTFT met, eight requests sharing each step: fewer seats (it would be wrong for TTFT)
    crowded = _row(peak_running=8.0, runs=runs(200.0, 90.0))
    a = advisor.advise(crowded, CPU, slo)
    assert a.limit.startswith("TPOT missed") and a.change == {"max_num_seqs": 4}
    assert advisor.missed(crowded, slo) == "TPOT"
    # TTFT missed at the seat limit: more seats, never fewer
    queued = _row(engine_max_num_seqs=4, peak_running=4.0, peak_waiting=12.0, runs=runs(5000.0, 20.0))
    a = advisor.advise(queued, CPU.replace(max_num_seqs=4), slo)
    assert a.limit.startswith("TTFT missed") and a.change == {"max_num_seqs": 8}
    # both halves missed: no "fewer seats", which would lengthen the queue
    both = _row(peak_running=8.0, runs=runs(5000.0, 90.0))
    assert all("max_num_seqs" not in a.change for a in advisor.diagnose(both, CPU, slo))
    # met: nothing to change
    assert advisor.advise(_row(runs=runs(100.0, 10.0)), CPU, slo).change == {}


def test_missed_counts_both_halves_together_and_failures_as_misses():
    """One request misses only TTFT, another only TPOT: each half met 90 %, the target 80 %."""
    from helpers.slo import SLO
    slo = SLO(1000, 50, share=0.9)
    split = {"runs": [{"request_ttft_ms": [100.0] * 9 + [5000.0], "request_tpot_ms": [60.0] + [20.0] * 9,
                       "duration": 5.0}]}
    assert advisor.missed(split, slo) is not None
    failed = {"runs": [{"request_ttft_ms": [100.0] * 8, "request_tpot_ms": [20.0] * 8, "duration": 5.0, "failed": 2}]}
    assert advisor.missed(failed, slo) is not None
    met = {"runs": [{"request_ttft_ms": [100.0] * 10, "request_tpot_ms": [20.0] * 10, "duration": 5.0}]}
    assert advisor.missed(met, slo) is None


def test_a_larger_fraction_is_not_proposed_past_what_the_node_has_free(monkeypatch):
    """vLLM's CPUWorker refuses a fraction above the node's available memory: a start the advice would crash."""
    monkeypatch.setattr(hardware, "available_ram_gib", lambda: 0.5)
    full = _row(peak_kv_cache_usage_pct=100.0, preemptions=5.0, node_memory_gib=16.0, memory_budget_gib=4.0)
    a = advisor.advise(full, CPU)  # 0.9 × (0.5 + 4) / 16 = 0.25: no room above the fraction already asked
    assert a.change.get("gpu_memory_utilization") is None
    monkeypatch.setattr(hardware, "available_ram_gib", lambda: 12.0)
    assert advisor.advise(full, CPU).change == {"gpu_memory_utilization": 0.38}
