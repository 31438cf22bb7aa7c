# Exercise 2 (chapter 5): extra KV tokens the INT4 engine got at the same memory fraction.
# The budget (fraction × node memory) is the same; KV = budget − non-KV memory. What the smaller
# weights saved goes to the cache, at the bf16 engine's GiB per KV token.
bf, i4 = weights.loc["bf16"], weights.loc["int4"]
saved_gib = bf["non_kv_gib"] - i4["non_kv_gib"]
gib_per_token = bf["kv_cache_gib"] / bf["kv_cache_tokens"]
answer = saved_gib / gib_per_token
