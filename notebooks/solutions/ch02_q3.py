# Exercise 3: KV tokens at another fraction, from the memory split and the full formula.
# KV memory = fraction × node memory − what the worker already holds (weights, working memory).
kv_gib = q3_fraction * ref["node_memory_gib"] - ref["non_kv_gib"]
answer = kv_gib * 2**30 / full  # full = 2 × layers × kv_heads × head_dim × bytes per number
print(
    f"({q3_fraction} × {ref['node_memory_gib']:.2f} − {ref['non_kv_gib']:.2f}) GiB / {full:,.0f} B "
    f"= {answer:,.0f} tokens"
)
