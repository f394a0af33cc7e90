"""Stacks dumped from outside the trainer (py-spy): where each stands and how it is written."""
