"""The probe's publications read into figures: its per-rank facts, step rates, sampled stack
shares, words and session, the measured figures and the straggling rank. Reads only the window's
ground (thresholds, the window's numbers), so every room above can use it."""
