"""Chapter 6b's home on recorded rows: the combinations that backfire, their loads and rules, exercise 3."""
import json
import re

import pytest

from helpers import verdicts
from helpers.chapters import ch6b
from tests.conftest import ROOT
from tests.solutions import run_solution

CHURN = {"load_num_prefixes": 8, "load_prefix_len": 512, "load_input_len": 32, "load_output_len": 16,
         "load_num_prompts": 24, "load_max_concurrency": 4, "block_size": 128}


def test_backfire_claims():
    rows = {ch6b.ROOMY: {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN},
            ch6b.TIGHT: {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300, "kv_cache_tokens": 3200, **CHURN},
            ch6b.HIGH_FRACTION: {"prefix_cache_hit_rate": 0.6, "cfg_gpu_memory_utilization": 0.5,
                                 "kv_cache_tokens": 2000},
            ch6b.SEATS_HIGH: {"request_throughput": 12.0, "peak_running": 400, "engine_max_num_seqs": 1024},
            ch6b.SEATS_DEFAULT: {"request_throughput": 8.0, "peak_running": 128, "engine_max_num_seqs": 128},
            ch6b.BUDGET: {"median_ttft_ms": 1000.0}, ch6b.TINY: {"median_ttft_ms": 2000.0}}
    # the tight cache loses its hits; the high fraction does not; more seats were faster; tiny chunks slower
    assert [x.verdict for x in ch6b.claims(rows)] == [verdicts.HELD, verdicts.NOT_HELD, verdicts.NOT_HELD,
                                                      verdicts.HELD]
    assert len(ch6b.claims({ch6b.BUDGET: rows[ch6b.BUDGET]})) == 0  # a pair is needed
    rows[ch6b.SEATS_HIGH]["peak_running"] = 128  # the flood never used the extra seats
    assert ch6b.claims(rows)[2].verdict == verdicts.UNTESTED
    rows[ch6b.SEATS_HIGH]["peak_running"] = 160  # a quarter more than the default: far from "very high"
    assert ch6b.claims(rows)[2].verdict == verdicts.UNTESTED and "×1.25" in ch6b.claims(rows)[2].evidence
    assert ch6b.very_many_seats(128, full=False) == 256 and ch6b.very_many_seats(1024, full=True) == 2048


@pytest.mark.parametrize("full", [False, True])
def test_backfire_loads_are_the_ones_the_chapter_always_measured(full):
    """6.3's loads, with the parameters chapter 6 had before its split (stored rows keep matching)."""
    churn, flood, long_prompts = ch6b.backfire_loads(128, full)
    assert (churn.kind, churn.num_prompts, churn.num_prefixes, churn.prefix_len, churn.input_len, churn.output_len,
            churn.max_concurrency) == ("prefix", 48 if full else 24, 16 if full else 8, 512, 32, 16, 4)
    # a quarter over the "very high" seats (smoke size: over the engine's default)
    assert flood.num_prompts == (ch6b.very_many_seats(128, full) if full else 128) * 5 // 4
    assert (flood.input_len, flood.output_len, flood.max_concurrency) == (32, 16, None)
    assert (long_prompts.num_prompts, long_prompts.input_len, long_prompts.output_len,
            long_prompts.max_concurrency) == (12 if full else 4, 1536, 8, None)
    assert ch6b.backfire_loads(128, full) == ch6b.backfire_loads(128.0, full)  # a float read from a row: the same loads


def test_the_tight_cache_is_a_demonstration_whose_premise_is_checked():
    roomy = {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN}
    tight = {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300, "kv_cache_tokens": 3200, **CHURN}
    # 25 blocks, one of them the null block; four running requests hold 5 each, 4 of them their prefix's
    # (shared with the cache), so 1 of their own: 20 left for 8 prefixes of 4 blocks
    assert ch6b.prefix_space(tight) == (20, 32) and ch6b.prefix_space(roomy)[0] > 32
    shown = ch6b.tight_cache_claim(roomy, tight)
    assert shown.verdict == verdicts.HELD and "demonstration" in shown.text and "demonstration" in shown.rule
    assert "20 tight, for 32 blocks" in shown.evidence
    kept = ch6b.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": 0.6})  # the prefixes came back in time
    assert kept.verdict == verdicts.NOT_HELD
    assert ch6b.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": 0.45}).verdict in (verdicts.PARTLY,
                                                                                               verdicts.HELD)
    # a drop within the noise (0.60 → 0.55) is not even partly
    assert ch6b.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": 0.55}).verdict == verdicts.NOT_HELD
    roomier = ch6b.tight_cache_claim(roomy, {**tight, "kv_cache_tokens": 10_000})  # room for every prefix
    assert roomier.verdict == verdicts.UNTESTED and "was not short" in roomier.evidence
    cold = ch6b.tight_cache_claim({**roomy, "prefix_cache_hit_rate": 0.0}, tight)  # no hits to lose
    assert cold.verdict == verdicts.UNTESTED and "no hits" in cold.evidence
    bare = ch6b.tight_cache_claim({"prefix_cache_hit_rate": 0.6}, {"prefix_cache_hit_rate": 0.1})
    assert bare.verdict == verdicts.UNTESTED and "lack" in bare.evidence


def test_6b_measures_every_row_it_shows_and_6a_measures_none_of_them():
    """One notebook, one home: 6b takes its loads from its own home and measures them itself; 6a does not
    measure them for it."""
    cells = {name: json.loads((ROOT / "notebooks" / name).read_text())["cells"]
             for name in ("06a_tuning_toward_a_target.ipynb", "06b_combinations_that_backfire.ipynb")}
    a, b = ("\n".join("".join(c["source"]) for c in nb if c["cell_type"] == "code") for nb in cells.values())
    assert "backfire_loads" not in a and "ch6b" not in a
    assert re.search(r"^churn, flood, long_prompts = ch6b\.backfire_loads\(", b, flags=re.M)
    assert "ch6b.claims(backfire, high_why)" in b


def test_chapter6b_solution():
    backfire = {"default budget": {"median_ttft_ms": 1000.0}, "tiny chunks": {"median_ttft_ms": 1500.0}}
    env = run_solution("ch06_q3.py", {"backfire": backfire})
    assert env["answer3"] == "yes"


def test_exercise3_follows_the_chapters_verdict_on_the_same_rows():
    """A question about this run's two medians: ×2 "yes", ×1.05 "no", ×0.5 "no"."""
    from helpers.exercises import Choice
    budget = {"median_ttft_ms": 1000.0}
    assert ch6b.raised_by_a_tenth(budget, {"median_ttft_ms": 2000.0}) == "yes"
    assert ch6b.raised_by_a_tenth(budget, {"median_ttft_ms": 1050.0}) == "no"  # a question about this run
    assert ch6b.raised_by_a_tenth(budget, {"median_ttft_ms": 500.0}) == "no"
    q = Choice("q3", ["yes", "no"], lambda: ch6b.raised_by_a_tenth(budget, {"median_ttft_ms": 2000.0}), "", "x.py")
    assert not q.check("no")


def test_a_hit_rate_drop_is_judged_on_its_interval():
    """Pass 30: a drop inside the floor at about the claimed size cannot tell (it read did not hold); a rate that
    stayed put refutes the claim; no hit at all holds."""
    roomy = {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN}
    tight = {"prefix_cache_hit_rate": 0.1, "median_ttft_ms": 300, "kv_cache_tokens": 3200, **CHURN}
    at = lambda rate: ch6b.tight_cache_claim(roomy, {**tight, "prefix_cache_hit_rate": rate}).verdict  # noqa: E731
    assert at(0.6 * 0.78) == verdicts.CANNOT_TELL and at(0.6) == verdicts.NOT_HELD and at(0.0) == verdicts.HELD


def test_a_high_fraction_the_engine_refused_is_not_measured_with_its_reason():
    roomy = {"prefix_cache_hit_rate": 0.6, "median_ttft_ms": 100, "kv_cache_tokens": 100_000, **CHURN}
    why = "Available memory on node 0 (9.1/15.5 GiB) on startup is less than desired CPU memory utilization"
    high = ch6b.claims({ch6b.ROOMY: roomy}, why)[0]
    assert high.verdict == verdicts.UNTESTED and why in high.evidence
