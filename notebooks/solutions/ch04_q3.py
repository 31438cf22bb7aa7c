# Exercise 3 (chapter 4): after how many output tokens has the compiled engine caught up?
# After T output tokens an engine has spent start + T / throughput seconds. Equal times:
# T = (start_compiled - start_eager) / (1 / throughput_eager - 1 / throughput_compiled).
# A compiled engine that started no later had nothing to catch up: it has caught up at 0 tokens
# (the formula gives a negative T where it also runs faster, a crossing before either engine
# started; where it runs slower, a positive T, where the eager engine overtakes it).
import math

e, c = eager_rows[1], compiled_rows[1]
extra_start = c["start_seconds"] - e["start_seconds"]
saved_per_token = 1 / e["output_throughput"] - 1 / c["output_throughput"]
if extra_start <= 0:
    answer3 = 0
else:
    answer3 = extra_start / saved_per_token if saved_per_token > 0 else math.inf
