# Q5: MBU = floor ÷ measured TPOT; near the floor means at least chapter 7's threshold: 0.6 times
# the most the worker's cores allow (their roof over the machine's, printed above as `need`).
from helpers.chapters import ch7

mbu = rows[1]["roofline_tpot_ms"] / rows[1]["mean_tpot_ms"]
ceiling = min(1.0, rows[1]["worker_roof_gbs"] / rows[1]["roof_bandwidth_gbs"])
near = "yes" if mbu >= ch7.NEAR_FLOOR * ceiling else "no"
