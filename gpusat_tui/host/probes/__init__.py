"""The monitor's side of the probe: reading the files `gpusat-tui run` jobs write, checking
who wrote them, and tying each to its card."""
