# Before measuring: with eight requests in flight each step carries eight tokens' work, enough that the
# all-reduces cost little next to it. What decides is how many cores compute: on vLLM's automatic CPU
# binding a single rank keeps one core free for the server, while two ranks compute on a core each.
# Expect TP=2 to give more output tokens per second where the machine has the cores for it.
# After measuring, read it from the rows: the higher output throughput wins, unless the two differ by
# less than the run-to-run noise.
a, b = measured[("TP=1", "eight users")], measured[("TP=2", "eight users")]
if report.within_noise(a, b, "output_throughput"):
    eight_users_choice = "too close to call"
else:
    eight_users_choice = "TP=1" if a["output_throughput"] > b["output_throughput"] else "TP=2"
