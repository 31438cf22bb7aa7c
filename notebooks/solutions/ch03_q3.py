# Exercise 3 (chapter 3): the configuration that keeps the short answers' P99 token gap within
# max_gap_ms and, among those, serves the long prompts' first token soonest.
within = chunked[chunked.short_p99_itl_ms <= max_gap_ms]
answer = "none" if within.empty else within.long_mean_ttft_ms.idxmin()
print(answer)
