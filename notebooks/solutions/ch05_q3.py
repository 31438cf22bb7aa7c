# Exercise 3 (chapter 5): one rank or two? Read the measured mean TPOT of both layouts.
answer3 = min(parallel.index, key=lambda name: parallel.loc[name, "mean_tpot_ms"])
