# Bytes per token scale with bytes per number, so the same KV memory holds proportionally more
# tokens. Scale by the KV memory each engine actually got too: on a CPU it is the budget minus
# what the worker holds (weights in the compute dtype, runtime), which differs between starts:
second_tokens = (
    auto_row["kv_cache_tokens"]
    * (first_bytes / second_bytes)
    * second_row["kv_cache_gib"]
    / auto_row["kv_cache_gib"]
)
