"""Chapter 6a's home (read the start-up log, then tune toward a latency target): a package, since the
service it tunes and the loops that tune it are also lab 4's.

  service   the service it tunes (a chat load, a latency target derived from this machine's unloaded
            latency, the rate to tune at) and the capstone lab's pass rule: pure functions of rows
  runs      loops that measure and judge as they go: the rate sweep, the tuning walk, the service's
            preparation (`measure` can be handed in, so tests run them on recorded rows)
  claims    the tuning path's steps and the rule that judges each claim from the rows notebook 06a measured

The notebook (and lab 4, which tunes the same service) reads every name from here: `ch6a.walk(...)`.
"""
from helpers.chapters.ch6a.claims import (
    FULL_PCT,
    GOODPUT_RULE,
    KV_SHARE_BANDS,
    NO_SHARES,
    band_claim,
    explain,
    kv_share_band,
    kv_shares,
    opposite_order,
    order_claim,
    parallel_step,
    share_text,
    startup_claims,
    tuning_claims,
    tuning_steps,
)
from helpers.chapters.ch6a.pictures import busiest, front_points, front_sentence, inside_the_busiest
from helpers.chapters.ch6a.runs import prepare_service, rate_sweep, walk
from helpers.chapters.ch6a.service import (
    ANSWER,
    QUESTION,
    RATE_STEPS,
    SHARE,
    SYSTEM_PROMPT,
    TPOT_HEADROOM,
    TTFT_HEADROOM,
    Service,
    Verdict,
    capstone_verdict,
    goodput_mistakes,
    one_at_a_time_rate,
    rates_for,
    service_load,
    slo_for,
    tuning_rate,
    unloaded_load,
)

# The template every home follows (helpers/chapters/__init__.py says what each part is).
DESIGNS = ("SYSTEM_PROMPT", "QUESTION", "ANSWER", "service_load", "unloaded_load", "one_at_a_time_rate",
           "rates_for", "RATE_STEPS", "tuning_rate", "Service", "tuning_steps", "parallel_step", "opposite_order",
           "rate_sweep", "walk", "prepare_service")
PANELS = ()
CHECKS = ("TTFT_HEADROOM", "TPOT_HEADROOM", "SHARE", "slo_for", "goodput_mistakes", "Verdict", "capstone_verdict")
CLAIMS = ("FULL_PCT", "GOODPUT_RULE", "KV_SHARE_BANDS", "NO_SHARES", "kv_shares", "share_text", "kv_share_band",
          "explain", "startup_claims", "band_claim",
          "tuning_claims", "order_claim", "busiest", "inside_the_busiest", "front_points",
          "front_sentence")
