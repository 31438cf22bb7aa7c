# Tensor parallelism gives each rank an equal share of
# the KV heads (it needs the head counts to divide).
heads_per_rank = syn["num_key_value_heads"] / tp2_cfg.tensor_parallel_size
