# Q2: weights + one sequence's KV at its mean context, at the bandwidth roof (every core).
bytes_per_number = 4 if base.dtype == "float32" else 2
kv_token = (
    2
    * shape["num_hidden_layers"]
    * shape["num_key_value_heads"]
    * shape["head_dim"]
    * bytes_per_number
)
context = loads[1].input_len + loads[1].output_len / 2
nbytes = lab5.weights_mb(folder, base.dtype) * 1e6 + 1 * context * kv_token
floor_one = nbytes / (roof["bandwidth_gbs"] * 1e9) * 1e3  # ms
