"""gpusat-tui: is my accelerator saturated, and if not, why?"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpusat-tui")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"
