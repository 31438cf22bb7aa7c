# The ablation: stock's P99 ITL divided by each single
# change's. The larger factor did more of the work.
gains = {
    "max_model_len": ablation.loc["stock", "p99_itl_ms"]
    / ablation.loc["stock + max_model_len", "p99_itl_ms"],
    "max_num_batched_tokens": ablation.loc["stock", "p99_itl_ms"]
    / ablation.loc["stock + budget", "p99_itl_ms"],
}
setting = max(gains, key=gains.get)
