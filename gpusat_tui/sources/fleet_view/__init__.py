"""The fleet view: every host's exported figures and verdicts, read from a Prometheus HTTP API
and made into Frames like any other source."""
