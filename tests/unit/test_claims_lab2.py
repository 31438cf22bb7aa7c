"""Lab 2's hit rule and closing notes, on loads built as the lab builds them."""
from helpers.claims import lab2
from helpers.load import Load

B = 128


def test_the_rule_counts_whole_blocks_of_a_shared_start():
    shared = Load(kind="prefix", num_prompts=8, prefix_len=2 * B, input_len=32, output_len=8, num_prefixes=1)
    assert lab2.rule(shared, B) == (7 * 2 * B, 8 * (2 * B + 32))
    short = Load(kind="prefix", num_prompts=8, prefix_len=B // 2, input_len=32, output_len=8, num_prefixes=1)
    assert lab2.rule(short, B)[0] == 0  # under one block: nothing to find
    sampled = Load(num_prompts=4, input_len=3 * B, output_len=8, n=4)
    assert lab2.rule(sampled, B) == (4 * 3 * 2 * B, 4 * 4 * 3 * B)  # (len - 1) // B full blocks per extra sample


def test_notes_say_where_the_engine_found_a_block_fewer():
    shared = Load(kind="prefix", num_prompts=8, prefix_len=2 * B, input_len=32, output_len=8, num_prefixes=1)
    rows = {"one template": {"prefix_cache_hits": 7 * 2 * B - B, "prefix_cache_queries": 8 * (2 * B + 32),
                             "prefix_cache_hit_rate": 0.8, "median_ttft_ms": 50.0}}
    table = lab2.summary({"one template": shared}, rows, B)
    lines = lab2.notes(table, B, 8)
    assert lines[0].startswith("- The rule gave the measured hits exactly for 0 of 1 designs")
    assert "1 block(s) fewer" in lines[1]
