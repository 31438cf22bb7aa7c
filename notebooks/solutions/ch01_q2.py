# Reasoning first: with only short prompts, no prefill is longer than a small budget, so a step at
# budget 256 holds the same work as at the default budget. Expect no change. The claim asks for
# ×1.3, which lies outside a ±10 % noise band: a run that sees no change would have seen ×1.3, so it
# says "did not hold" (with a spread wider than 23 % across repeats (1 - 1/1.3) it would say "within
# noise here"). Then measure and judge:
short_rows = {
    name: H.measure(configs[name], short_only, tag="ch1-exercise") for name in ("stock", "tuned")
}
verdict = H.verdicts.judge_change(
    "tuned is better",
    short_rows["stock"],
    short_rows["tuned"],
    "p99_itl_ms",
    better="lower",
    held_at=1.3,
).verdict
