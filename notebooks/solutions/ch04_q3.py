# Exercise 3 (chapter 4): after how many output tokens has the compiled engine caught up?
# After T output tokens an engine has spent start + T / throughput seconds. Equal times:
# T = (start_compiled - start_eager) / (1 / throughput_eager - 1 / throughput_compiled).
import math

e, c = eager_rows[1], compiled_rows[1]
extra_start = c["start_seconds"] - e["start_seconds"]
saved_per_token = 1 / e["output_throughput"] - 1 / c["output_throughput"]
answer3 = extra_start / saved_per_token if saved_per_token > 0 else math.inf
