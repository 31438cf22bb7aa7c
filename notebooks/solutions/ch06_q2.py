# Exercise 2 (chapter 6): goodput of the baseline at the tuning rate, by hand.
# A request counts when both its TTFT and its TPOT are within the target; goodput is the count per
# second of the run.
run = baseline_row["runs"][0]
met = sum(
    ttft <= slo.ttft_ms and tpot <= slo.tpot_ms
    for ttft, tpot in zip(run["request_ttft_ms"], run["request_tpot_ms"])
)
answer = met / run["duration"]
