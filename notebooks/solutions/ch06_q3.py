# Exercise 3 (chapter 6): did tiny prefill chunks
# raise the long prompts' median TTFT by over a tenth?
before, after = (
    backfire["default budget"]["median_ttft_ms"],
    backfire["tiny chunks"]["median_ttft_ms"],
)
answer3 = "yes" if after > 1.1 * before else "no"
