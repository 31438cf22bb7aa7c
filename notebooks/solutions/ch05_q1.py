# Exercise 1 (chapter 5): KV tokens an fp8 cache gets in the fixed memory.
# One byte per number instead of two: bytes per token = 2 (key, value) × layers × KV heads × head
# size × 1. The engine allocates whole blocks (`block`, printed above: 128 tokens on the CPU
# backend), so round down to a multiple of the block size.
per_token = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * 1
answer = (kv_bytes // per_token) // block * block
