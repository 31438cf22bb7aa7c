# Before measuring: with eight requests in flight each step carries eight tokens' work, so what
# decides is how many cores compute, and how often they wait for each other.
# - TP=1 computes on the cores vLLM's binding gives its one rank (on `auto` on x86, one core is left
#   out of the rank's set, unless that would leave none; nothing else is pinned to it).
# - TP=2 computes on the cores of both ranks, but the
#   ranks meet at two all-reduces per layer in every step.
# - Two replicas compute on their own cores and never wait
#   for each other: each takes about half of the requests.
# With cores to spare, expect the replicas (where memory allows a second copy of the weights and KV
# cache) or TP=2. With few cores, remember that the API server, the scheduler and the load's own
# client need CPU too: the layout that leaves them a core can win.
# After measuring, read it from the rows: the highest output throughput wins, unless the best two
# differ by less than the run-to-run noise.
import helpers as H

rows = {option: measured[(option, "eight users")] for option in LAYOUTS}
best, second = sorted(rows, key=lambda o: rows[o]["output_throughput"], reverse=True)[:2]
eight_users_choice = (
    "too close to call"
    if H.verdicts.within_noise(rows[best], rows[second], "output_throughput")
    else best
)
