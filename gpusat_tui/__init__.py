"""gpusat-tui: is my accelerator saturated, and if not, why?"""

# ``__version__`` is looked up on first use (PEP 562): importlib.metadata costs more than
# everything ``gpusat-tui status`` does, and a status bar runs that every few seconds.


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'gpusat_tui' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("gpusat-tui")
    except PackageNotFoundError:  # running from a source tree
        value = "0.1.0"
    globals()["__version__"] = value
    return value
