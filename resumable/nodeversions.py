"""Version helpers only the nodes need: the Ansible filters, the facts module and the emulated
installers compare versions and read ``version.info`` ranges with them, on top of
:mod:`resumable.versions`.

The nodes do not have resumable installed, so scripts/gen-node-versions.py writes the collection's
``plugins/module_utils/ascend_version.py``: resumable/versions.py verbatim, then everything of this
file from the ``node side`` line on (:data:`MARKER`). Both sides order versions the same by
construction; here ruff and mypy check the helpers like any other module, and
tests/versions/test_ansible_versions.py runs the same tables through both and fails when the copy is not what
the script writes. Standard library only, Python 3.7 (the nodes' oldest).
"""

from __future__ import annotations

import re
from typing import Optional, Union

from .versions import Version

#: where the part the nodes get begins
MARKER = "# --- node side:"

# --- node side: comparisons for the filters and version.info ranges ---------------------------------

# version.info compatibility ranges: "[lo,hi],[lo,hi.]" (HDK-FILES)
_RANGE = re.compile(r"\[([^,\]]+),([^\]]+)\]")


def compare(left: Union[str, int, float], right: Union[str, int, float]) -> int:
    """-1, 0 or 1, like cmp(left, right). Raises VersionError for a non-version."""
    a, b = Version(left), Version(right)
    return (a > b) - (a < b)


def in_ranges(version: object, ranges: object) -> Optional[bool]:
    """Is ``version`` inside one of the ``compatible_version_*`` ranges of a version.info?

    ``"[7.0.0,7.7.99],[25.2.0,25.2.0.]"``: a trailing dot on the upper bound means "that version
    or any version spelled with it as a prefix" (``25.2.0.1``). None when either side is empty,
    so callers can tell "unknown" from "no" (HDK-FILES; ADEPLOY downloader/software).
    """
    if not version or not ranges:
        return None
    wanted = Version(str(version))
    text = str(version).strip().lower()
    for low, high in _RANGE.findall(str(ranges)):
        low, high = low.strip(), high.strip()
        if wanted < Version(low):
            continue
        if high.endswith("."):
            if wanted <= Version(high[:-1]) or text.startswith(high.lower()):
                return True
        elif wanted <= Version(high):
            return True
    return False
