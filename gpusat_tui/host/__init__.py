"""What the monitor reads of this host's processes: trainers and their workers (`processes`,
read through `procfs` on Linux or `proc_readers.PsutilReader` elsewhere), and the files the
in-trainer probe publishes (`probe_files`)."""
