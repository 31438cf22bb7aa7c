# Exercise 3 (chapter 5): one rank or two? Read the median TPOT of both splits over the streams that
# showed a pace (a stream that reached the client in one chunk counts 0 ms, in the mean and in the
# median: two of four halve it). If they differ by no more than the
# allowance (the ratio's interval holds ×1: never narrower than the start-to-start floor, ×÷1.3
# for a time per token in chapter 0, wider where the repeats or one run's requests spread further),
# a run cannot tell them apart.
import helpers as H

# the median over the streams that showed a pace (a one-chunk stream counts 0 ms): None where over a
# quarter of a split's streams came in one chunk
one, two = (H.results.rows.paced(parallel.loc[split]) for split in ("TP=1", "TP=2"))
if one is None or two is None or not (one["median_tpot_ms"] > 0 and two["median_tpot_ms"] > 0):
    answer3 = None  # nothing to compare: the check says it cannot check
elif H.verdicts.within_noise(one, two, "median_tpot_ms"):
    answer3 = "too close to call"
else:
    answer3 = "TP=1" if one["median_tpot_ms"] < two["median_tpot_ms"] else "TP=2"
