# Memory the fraction must cover = what is not KV cache + the KV tokens the load needs at its peak.
bytes_per_token = ref["kv_cache_gib"] * 2**30 / ref["kv_cache_tokens"]
fit_fraction = (ref["non_kv_gib"] + need_tokens * bytes_per_token / 2**30) / ref["node_memory_gib"]
