"""What to install for an optional part of kosong: the command an ImportError's message gives.

kosong's distribution is `kosong-tools` (the name `kosong` on the package index is another
project), and it is installed from a clone or a built wheel, so `pip install 'kosong[mcp]'`
would install someone else's package. What always works is installing the extra's own
requirements, read here from the installed distribution's metadata.
"""

from __future__ import annotations

import re
from importlib import metadata

__all__ = ["DISTRIBUTION", "install_hint"]

DISTRIBUTION = "kosong-tools"
"""kosong's distribution name (its import name is `kosong`)."""


def install_hint(extra: str) -> str:
    """`pip install ...` adding kosong's `extra`, e.g. `pip install 'mcp==2.3.0' 'click>=8.1'`.

    The requirements come from the installed metadata; without it (kosong run from a source
    tree), the editable install of the clone.
    """
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        requirements = []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    wanted = [
        requirement.split(";", 1)[0].strip().replace(" ", "")
        for requirement in requirements
        if ";" in requirement and marker.search(requirement.split(";", 1)[1])
    ]
    if not wanted:
        return f"pip install -e '.[{extra}]' in your clone of kosong"
    return "pip install " + " ".join(f"'{r}'" for r in wanted) + f" (kosong's `{extra}` extra)"
