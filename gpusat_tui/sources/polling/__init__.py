"""Live polling: finding the vendor tools, asking them on a schedule (one call or one stream per
tool), and the process monitor's and probe files' figures, made into one `Frame` a poll."""
