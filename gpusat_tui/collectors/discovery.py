"""Where a tool's executable is: an explicit override, its variable, PATH, vendor folders.

Apart from `base` because a vendor-keyed override (``--tool amd=PATH``) is resolved against
every collector's executable names, which only the package's registry knows.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec


def find_executable(
    spec: ToolSpec,
    overrides: Mapping[str, str] | None = None,
    path: str | None = None,
    vendor_names: Collection[str] | None = None,
) -> tuple[str | None, list[str]]:
    """Locate a tool: explicit override, then its env variable, then PATH, then vendor folders.

    Returns ``(path or None, places searched)`` so that "nothing found" can say where it looked.
    ``overrides`` maps a vendor name or tool name to an executable path (``--tool``);
    ``vendor_names`` (every executable name of this vendor's tools, default: all collectors')
    decides which tool a vendor-keyed override belongs to.
    """
    searched: list[str] = []
    overrides = overrides or {}
    for key in (spec.tool, *spec.names):
        if key in overrides:
            return overrides[key], [f"--tool {key}"]
    if spec.vendor in overrides:
        candidate = overrides[spec.vendor]
        # A vendor key applies to the tool whose executable name it points to
        # (``--tool amd=/opt/rocm/bin/rocm-smi`` is rocm-smi, never amd-smi). A file name that
        # is no known tool's (a wrapper script, say) applies to every tool of the vendor, and
        # the group's order picks the one that answers.
        base = Path(candidate).name
        if vendor_names is None:
            vendor_names = {n for s in all_specs() if s.vendor == spec.vendor for n in s.names}
        if base in spec.names or base not in vendor_names:
            return candidate, [f"--tool {spec.vendor}"]
    env = os.environ.get(spec.env_var)
    if env:
        return env, [f"${spec.env_var}"]
    searched.append(f"${spec.env_var}")
    search_path = path if path is not None else os.environ.get("PATH", "")
    for name in spec.names:
        found = shutil.which(name, path=search_path)
        if found:
            return found, searched
    searched.append("PATH")
    for folder in spec.search_dirs:
        for name in spec.names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate, searched
        searched.append(folder)
    return None, searched
