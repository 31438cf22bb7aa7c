# fp8 stores each number in 1 byte instead of 2, so the same KV memory holds twice the tokens.
# Scale by the KV memory each engine actually got (free memory varies between starts):
fp8_tokens = auto_row["kv_cache_tokens"] * 2 * fp8_row["kv_cache_gib"] / auto_row["kv_cache_gib"]
