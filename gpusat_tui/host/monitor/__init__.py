"""The process monitor: who is a trainer and who its DataLoader workers, each one's rates
between ticks, and the host's CPU (`processes` runs the tick), read through `/proc` or psutil."""
