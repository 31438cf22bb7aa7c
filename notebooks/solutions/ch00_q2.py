# One request's time = TTFT + (output tokens - 1) x TPOT. Compare the two parts.
first_token = first["mean_ttft_ms"]
the_rest = first["mean_tpot_ms"] * (first_load.output_len - 1)
prediction = "first token" if first_token > the_rest else "the rest"
