# Goodput: requests inside both targets, per second of the run.
run = first["runs"][0]
met = sum(t <= 1000 and p <= 50 for t, p in zip(run["request_ttft_ms"], run["request_tpot_ms"]))
strict_goodput = met / run["duration"]
