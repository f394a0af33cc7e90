"""What the monitor reads of this host: its trainers and their workers (`monitor`), the files
the in-trainer probe publishes (`probes`), and each process's job and launcher (`scheduler`)."""
