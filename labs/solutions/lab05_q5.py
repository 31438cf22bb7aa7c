# Q5: MBU = floor ÷ measured TPOT; near the floor means at least chapter 7's NEAR_FLOOR.
mbu = rows[1]["roofline_tpot_ms"] / rows[1]["mean_tpot_ms"]
near = "yes" if mbu >= 0.6 else "no"
