"""The sub-commands, one module each, with what each prints.

``dashboard`` (the default), ``check``, ``report``, ``export`` and ``run``; `cli` parses the
command line once into typed options and calls one of them. Only ``dashboard`` imports Textual.
"""
