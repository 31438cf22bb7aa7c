# Before measuring: with one request in flight each step is tiny (one token through the model).
# - TP=2 splits that small step over two ranks, and every step then waits for two all-reduces per layer.
# - Two replicas: the one request runs on one replica, alone on its core; the other replica idles.
# - TP=1 also computes on one core, but vLLM's automatic binding keeps the other core free for the server.
# Expect TP=1 (or a tie with the replicas); splitting a tiny step rarely pays.
# After measuring, read it from the rows: the lowest median TPOT wins, unless the best two differ by less
# than the run-to-run noise.
import helpers as H

rows = {option: measured[(option, "one user")] for option in LAYOUTS}
best, second = sorted(rows, key=lambda o: rows[o]["median_tpot_ms"])[:2]
one_user_choice = "too close to call" if H.verdicts.within_noise(rows[best], rows[second], "median_tpot_ms") else best
