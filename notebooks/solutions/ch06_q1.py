# Exercise 1 (chapter 6): requests of the full max_model_len that fit in the KV cache at once.
# One such request holds max_model_len tokens of KV cache; the engine has kv_cache_tokens in all.
answer = cap["kv_cache_tokens"] / base.max_model_len
