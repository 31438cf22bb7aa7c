# The KV cache holds kv_cache_tokens tokens of max_model_len each at most:
max_sequences = auto_row["kv_cache_tokens"] / auto_row["cfg_max_model_len"]
