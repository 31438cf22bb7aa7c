# Exercise 3 (chapter 4): after how many output tokens has the compiled engine caught up?
# After T output tokens an engine has spent start + T / throughput seconds. Equal times:
# T = (start_compiled - start_eager) / (1 / throughput_eager - 1 / throughput_compiled).
# A compiled engine that started no later was never behind: it has caught up at 0 tokens (the
# formula would give a negative T, a crossing before either engine started).
import math

e, c = eager_rows[1], compiled_rows[1]
extra_start = c["start_seconds"] - e["start_seconds"]
saved_per_token = 1 / e["output_throughput"] - 1 / c["output_throughput"]
if extra_start <= 0:
    answer3 = 0
else:
    answer3 = extra_start / saved_per_token if saved_per_token > 0 else math.inf
