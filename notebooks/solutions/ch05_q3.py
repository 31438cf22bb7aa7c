# Exercise 3 (chapter 5): one rank or two? Read the measured median TPOT of both splits (the mean
# counts a stream that reached the client in one chunk as 0 ms). If they differ by no more than the
# allowance (the ratio's interval holds ×1: never narrower than the start-to-start floor, ×÷1.3
# for a time per token in chapter 0, wider where the repeats or one run's requests spread further),
# a run cannot tell them apart. A median of 0 means over half the streams came in one chunk: no
# pace was seen.
import helpers as H

one, two = parallel.loc["TP=1"], parallel.loc["TP=2"]
if not (one.median_tpot_ms > 0 and two.median_tpot_ms > 0):
    answer3 = None  # nothing to compare: the check says it cannot check
elif H.verdicts.within_noise(one, two, "median_tpot_ms"):
    answer3 = "too close to call"
else:
    answer3 = "TP=1" if one.median_tpot_ms < two.median_tpot_ms else "TP=2"
