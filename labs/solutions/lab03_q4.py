# On the CPU backend each rank reserves the memory fraction of the node for itself, so each rank has
# about the KV memory the single rank had (a little more: it holds only its share of the weights).
# A rank keeps only its share of the KV heads, so a token takes fewer bytes there, and
# kv_cache_tokens counts tokens (each one spread over both ranks), not copies.
ranks = tp2_cfg.tensor_parallel_size
per_rank_bytes = (
    2
    * syn["num_hidden_layers"]
    * (syn["num_key_value_heads"] // ranks)
    * syn["head_dim"]
    * syn_per_number
)
tp2_tokens = tp1["kv_cache_gib"] * GIB / per_rank_bytes
