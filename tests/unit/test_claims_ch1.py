"""Chapter 1's verdicts from recorded-shape rows."""
import pandas as pd

from helpers import report
from helpers.claims import ch1


def row(**kw):
    base = {"p99_itl_ms": 1000.0, "p99_ttft_ms": 3000.0, "output_throughput": 100.0, "repeats": 1,
            "kv_cache_tokens": 10_000.0, "max_concurrency": 5.0, "peak_running": 8.0, "peak_waiting": 8.0,
            "peak_kv_cache_usage_pct": 95.0}
    return pd.Series({**base, **kw})


def test_stock_vs_tuned():
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=130.0)).verdict == report.HELD
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=700.0, output_throughput=103.0)).verdict == report.PARTLY
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=970.0, p99_ttft_ms=2950.0, output_throughput=99.0)).verdict == report.NOISE
    claim = ch1.stock_vs_tuned(row(), row(p99_itl_ms=1500.0, p99_ttft_ms=4000.0))
    assert claim.verdict == report.NOT_HELD and claim.rule
    # each half in its own direction: lost throughput, or a better TTFT beside a worse ITL, is not "held"
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=400.0, output_throughput=70.0)).verdict == report.PARTLY
    assert ch1.stock_vs_tuned(row(), row(p99_itl_ms=2000.0, p99_ttft_ms=1000.0)).verdict == report.NOT_HELD
    # a starved front end delivers tokens in bursts: no gaps at all, nothing to judge
    assert ch1.stock_vs_tuned(row(p99_itl_ms=0.0), row()).verdict == report.UNTESTED


def test_attribution_names_each_single_change():
    df = pd.DataFrame([row(), row(p99_itl_ms=900.0), row(p99_itl_ms=500.0), row(p99_itl_ms=450.0)],
                      index=["stock", "stock + max_model_len", "stock + budget", "tuned"])
    shares = ch1.attribution(df)
    assert max(shares, key=shares.get) == "tuned" and shares["stock + budget"] == 2.0


def test_chain_throughput_is_untested_when_memory_was_not_the_limit():
    large = row(kv_cache_tokens=40_000.0, peak_running=16.0, peak_kv_cache_usage_pct=40.0)
    assert ch1.chain_throughput(row(peak_kv_cache_usage_pct=50.0), large, 18_000).verdict == report.UNTESTED
    assert ch1.chain_throughput(row(peak_running=16.0), large, 18_000).verdict == report.UNTESTED


def test_chain_throughput_judges_the_throughput_when_the_cache_was_short():
    small = row(peak_running=8.0, peak_waiting=8.0, output_throughput=80.0)
    assert ch1.chain_throughput(small, row(peak_running=16.0, peak_waiting=0.0, output_throughput=120.0),
                                18_000).verdict == report.HELD
    noise = ch1.chain_throughput(small, row(peak_running=16.0, peak_waiting=0.0, output_throughput=83.0), 18_000)
    assert noise.verdict == report.NOISE and "compute" in noise.evidence


def test_chain_capacity():
    chain = pd.DataFrame([row(), row(kv_cache_tokens=20_000.0, max_concurrency=10.0)])
    assert ch1.chain_capacity(chain).verdict == report.HELD
