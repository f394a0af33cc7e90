"""Loaded by Python at start-up in every process that ``gpusat-tui run`` starts.

``run`` puts this folder first on ``PYTHONPATH``. This file loads the probe package from the
folder above under a private name (the trainer's interpreter may not have gpusat-tui
installed, and the probe needs only the standard library), enables it, then runs the
``sitecustomize`` it shadows, if there is one, so a distribution's or site's own keeps working.
"""
import contextlib


def _gpusat_probe_boot() -> None:
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        if "_gpusat_tui_probe" not in sys.modules:
            package_dir = os.path.dirname(here)
            spec = importlib.util.spec_from_file_location(
                "_gpusat_tui_probe", os.path.join(package_dir, "__init__.py"),
                submodule_search_locations=[package_dir],
            )
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules["_gpusat_tui_probe"] = module
                spec.loader.exec_module(module)
                module.enable()
    except Exception as exc:  # the job runs, with or without its probe
        with contextlib.suppress(Exception):
            sys.stderr.write(f"gpusat-tui probe: not loaded ({type(exc).__name__}: {exc})\n")
    # Chain-load the sitecustomize this file shadows (its errors are its own, as without us).
    paths = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_gpusat_probe_boot()
del _gpusat_probe_boot
