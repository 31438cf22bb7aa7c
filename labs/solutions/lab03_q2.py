# Same memory fraction, same non-KV memory: the fp8 engine gets the same KV memory as the default
# one. A token takes one byte per number there instead of per_number bytes, in every layer.
fp8_bytes_per_token = (
    2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * 1
)
answer = base["kv_cache_gib"] * GIB / fp8_bytes_per_token
