# Before measuring: with one request in flight each step is tiny (one token through the model), so
# what decides is the time of one small step, not how much work runs in parallel.
# - TP=2 splits that small step over two ranks, and
#   every step then waits for two all-reduces per layer.
# - Two replicas: the one request runs on one replica; the other replica idles.
# - TP=1 runs the whole step in one rank, on the cores vLLM's binding gives it (on `auto` on x86,
#   one core of the node is left out of the rank's set, unless that would leave none:
#   `_get_autobind_cpu_ids`; how many each layout computed on is printed after the measurement).
# A small step split in two pays the all-reduces whatever the cores, so the prediction leans to TP=1
# unless its rank computes on far fewer cores than the others.
# After measuring, read it from the rows: the lowest median TPOT wins, unless the best two differ by
# less than the run-to-run noise. The median over the streams that showed a pace: a stream that
# reached the client in one chunk counts 0 ms and, two of four, would halve it (rows.paced leaves
# them out, and gives None where over a quarter of a split's streams came in one chunk).
import helpers as H

rows = {option: H.results.rows.paced(measured[(option, "one user")]) for option in LAYOUTS}
if any(row is None for row in rows.values()):
    one_user_choice = None  # a pace not seen: the check says it cannot check
else:
    best, second = sorted(rows, key=lambda o: rows[o]["median_tpot_ms"])[:2]
    one_user_choice = (
        "too close to call"
        if H.verdicts.within_noise(rows[best], rows[second], "median_tpot_ms")
        else best
    )
