# Exercise 1 (chapter 7): the MBU with one request in flight, from the sweep's row.
# MBU = floor ÷ measured TPOT: the floor is the bytes one step reads at the bandwidth roof.
one = sweep_rows[1]
answer1 = one["roofline_tpot_ms"] / one["mean_tpot_ms"]
