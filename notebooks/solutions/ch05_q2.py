# Exercise 2 (chapter 5): extra KV tokens the quantized engine (`small`) got at the same memory fraction.
# The budget (fraction × node memory) is the same; KV = budget − non-KV memory. What the smaller
# weights saved goes to the cache, at the bf16 engine's GiB per KV token.
bf, q = weights.loc["bf16"], weights.loc[small]
saved_gib = bf["non_kv_gib"] - q["non_kv_gib"]
gib_per_token = bf["kv_cache_gib"] / bf["kv_cache_tokens"]
answer = saved_gib / gib_per_token
