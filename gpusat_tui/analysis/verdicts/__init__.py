"""The verdict: a window's facts and evidence judged per card and per job, the causes and their
rules, the stall, and the tracker that holds a verdict over time."""
