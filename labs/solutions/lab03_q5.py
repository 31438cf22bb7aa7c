# Before measuring: with one request in flight each step is tiny (one token through the model), so
# splitting it over two ranks saves little compute, and every step now waits for two all-reduces per
# layer between the ranks. On a CPU the single rank also had a core kept free for the server, while the
# two ranks share theirs with it. Expect TP=1 to give the lower time per token, or a tie.
# After measuring, read it from the rows: the lower median TPOT wins, unless the two differ by less
# than the run-to-run noise.
a, b = measured[("TP=1", "one user")], measured[("TP=2", "one user")]
if report.within_noise(a, b, "median_tpot_ms"):
    one_user_choice = "too close to call"
else:
    one_user_choice = "TP=1" if a["median_tpot_ms"] < b["median_tpot_ms"] else "TP=2"
