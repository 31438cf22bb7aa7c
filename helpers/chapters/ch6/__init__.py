"""Chapter 6 · tuning toward a target: the home of both its notebooks (06a: the start-up log, the target,
the tuning path; 06b: the combinations that backfire), in three parts.

  service   the service it tunes (a chat load, a latency target derived from this machine's unloaded
            latency, the rate to tune at) and the capstone lab's pass rule: pure functions of rows
  runs      loops that measure and judge as they go: the rate sweep, the tuning walk, the service's
            preparation (`measure` can be handed in, so tests run them on recorded rows)
  claims    the chapter's designs (the tuning steps, the backfiring combinations and their loads) and the
            rule that judges each claim from the rows the notebooks measured

Both notebooks (and lab 4, which tunes the same service) read every name from here: `ch6.walk(...)`.
"""
from helpers.chapters.ch6.service import (SYSTEM_PROMPT, QUESTION, ANSWER, TTFT_HEADROOM, TPOT_HEADROOM,
    SHARE, RATE_STEPS, service_load, unloaded_load, slo_for, one_at_a_time_rate, rates_for, tuning_rate,
    Service, Verdict, capstone_verdict)
from helpers.chapters.ch6.runs import (rate_sweep, walk, prepare_service)
from helpers.chapters.ch6.claims import (ROOMY, TIGHT, HIGH_FRACTION, SEATS_HIGH, SEATS_DEFAULT, BUDGET,
    TINY, FULL_PCT, HIT_DROP, very_many_seats, BackfireLoads, backfire_loads, tuning_steps, parallel_step,
    startup_claims, band_claim, tuning_claims, order_claim, backfire_claims, prefix_room, tight_cache_claim,
    GOODPUT_RULE, KV_SHARE_BANDS, kv_share_band, explain)
