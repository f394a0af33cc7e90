"""The host's evidence about the trainer's processes: each process tied to its card, the host
figures of a poll, their fold over the window, and the sentences that write them."""
