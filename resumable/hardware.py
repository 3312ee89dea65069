"""What hardware exists: the accelerator types MindCluster labels, the chip family each one carries,
how many NPUs a node has and a pod may take, which ones are SuperPoDs; the MindCluster releases;
the CPU architectures as wheel platform tags and image platforms.

The rules in :mod:`resumable.rules.hardware`, the chip suggestions of the profile binder, the
support matrix at the top of docs/profile.md and the descriptions in ``resumable schema`` all read
these tables.
"""

from __future__ import annotations

import re
from typing import Dict, NamedTuple, Optional, Tuple

from .choices import Arch, Chip
from .versions import Version, VersionError


class AcceleratorType(NamedTuple):
    """One value of the node label accelerator-type (INST01 Table 1) and what it implies."""

    label: str
    products: str
    #: ring-controller.atlas of its chips (YAMLCFG)
    chip: Chip
    #: NPUs in one node
    node_npus: int
    #: NPUs one pod may request (YAMLCFG "npus per pod")
    per_pod: Tuple[int, ...]
    #: whether the nodes form a SuperPoD, where sp-block applies (YAMLCFG sp-block)
    super_pod: bool


def _even(top: int) -> Tuple[int, ...]:
    return tuple(range(2, top + 1, 2))


#: Where :data:`ACCELERATOR_TYPES` comes from (codes of :mod:`resumable.sources`).
ACCELERATOR_SOURCE = (
    "INST01 Table 1 (accelerator-type per product); YAMLCFG (ring-controller.atlas, NPUs per pod, sp-block)"
)

#: The training accelerator types (inference servers and the Atlas 350/850/950 labels left out:
#: those run chip ascend-npu, whose labels the project does not check).
ACCELERATOR_TYPES: Dict[str, AcceleratorType] = {
    a.label: a
    for a in (
        AcceleratorType("module", "Atlas 800 training server (8 NPUs)", "ascend-910", 8, (1, 2, 4, 8), False),
        AcceleratorType(
            "half", "Atlas 800 training server, half configuration (4 NPUs)", "ascend-910", 4, (1, 2, 4), False
        ),
        AcceleratorType(
            "module-910b-8", "Atlas 800T A2, Atlas 900 A2 PoD", "ascend-910b", 8, tuple(range(1, 9)), False
        ),
        AcceleratorType("module-910b-16", "Atlas 200T A2 Box16", "ascend-910b", 16, tuple(range(1, 17)), False),
        AcceleratorType("card-910b-2", "Atlas 300T A2 training card", "ascend-910b", 2, (1, 2), False),
        AcceleratorType("module-a3-16", "Atlas 800T A3, Atlas A200T A3 Box8", "ascend-910b", 16, _even(16), False),
        AcceleratorType("module-a3-16-super-pod", "Atlas 900 A3 SuperPoD", "ascend-910b", 16, _even(16), True),
        AcceleratorType("module-a3-8-super-pod", "Atlas 9000 A3 SuperPoD", "ascend-910b", 8, _even(8), True),
    )
}

#: The Atlas A3 training products ("Atlas A3 训练系列产品" of the constraints pages, e.g. HA73-025).
A3_TYPES = ("module-a3-16", "module-a3-16-super-pod", "module-a3-8-super-pod")

#: Chip values users write for products whose ring-controller.atlas is another value: Atlas A3
#: (sold as "910C") and A2 ("910B1" to "910B4") chips are ascend-910b; Atlas 800 ("910A") is
#: ascend-910 (YAMLCFG ring-controller.atlas).
CHIP_HINTS: Dict[str, str] = {
    "ascend-910c": "ascend-910b (Atlas A3 machines, whose chips are sold as 910C, label ring-controller.atlas "
    "ascend-910b)",
    "ascend-910a": "ascend-910 (Atlas 800 training servers)",
    "ascend-910b1": "ascend-910b (all Atlas A2 chips)",
    "ascend-910b2": "ascend-910b (all Atlas A2 chips)",
    "ascend-910b3": "ascend-910b (all Atlas A2 chips)",
    "ascend-910b4": "ascend-910b (all Atlas A2 chips)",
    "ascend-a3": "ascend-910b (Atlas A3 machines label ring-controller.atlas ascend-910b)",
    "ascend-950": "ascend-npu (Atlas 350/850/950)",
    "ascend-850": "ascend-npu (Atlas 350/850/950)",
}

#: What each chip value covers (YAMLCFG ring-controller.atlas).
CHIP_PRODUCTS: Dict[str, str] = {
    "ascend-910": "Atlas 800 training servers, Atlas 300T",
    "ascend-910b": "Atlas A2 and A3 (800T A2, 900 A2 PoD, 200T A2 Box16, 800T A3, A200T A3 Box8, 900/9000 A3 SuperPoD)",
    "ascend-npu": "Atlas 350, 850, 950",
}


def types_of(chip: str) -> Tuple[str, ...]:
    return tuple(a.label for a in ACCELERATOR_TYPES.values() if a.chip == chip)


# --- MindCluster releases ---------------------------------------------------------------------------

#: Where :data:`MINDCLUSTER_RELEASES` comes from.
RELEASES_SOURCE = "MC: release tags v5.0.0 to v26.1.0 (6.0.RC1 to 6.0.RC3 are tagged v6.0.0-RC1 to v6.0.0-RC3)"

#: Every MindCluster release (the tags of Ascend/mind-cluster); service packs (``.SPC1``), builds
#: (``.B050``), betas and the ``.1`` patch of an RC are written after one of these.
MINDCLUSTER_RELEASES: Tuple[str, ...] = (
    "5.0.0",
    "5.0.1",
    "6.0.RC1",
    "6.0.RC2",
    "6.0.RC3",
    "6.0.0",
    "7.0.RC1",
    "7.1.RC1",
    "7.2.RC1",
    "7.3.0",
    "7.3.1",
    "7.3.2",
    "26.0.0",
    "26.0.1",
    "26.1.0",
)

_RELEASE = re.compile(
    r"^v?(?P<base>[0-9]+\.[0-9]+\.(?:[0-9]+|RC[0-9]+))(?P<suffix>(?:[.-](?:SPC[0-9]+|B[0-9]+|beta\.?[0-9]+|[0-9]+))*)$",
    re.IGNORECASE,
)


def newer_release(text: str) -> Optional[str]:
    """The release ``text`` names when it is written like one but is newer than every release here
    (``26.2.0``, ``27.0.RC1``): a release published after this version of the package; None otherwise."""
    m = _RELEASE.match(text.strip())
    if m is None or release_base(text) is not None:
        return None
    try:
        version = Version(m.group("base"))
        newest = Version(MINDCLUSTER_RELEASES[-1])
    except VersionError:
        return None
    return m.group("base").upper() if version > newest else None


def release_base(text: str) -> Optional[str]:
    """The MindCluster release ``text`` belongs to (``7.3.0.SPC1`` -> ``7.3.0``), None when it
    names none (``7.3.RC1``, ``8.0.0``)."""
    m = _RELEASE.match(text.strip())
    if m is None:
        return None
    base = m.group("base").upper()
    return base if base in MINDCLUSTER_RELEASES else None


# --- CPU architectures ----------------------------------------------------------------------------

#: The platform tag ending of a wheel built for each architecture (PEP427 platform tags such as
#: linux_aarch64, manylinux2014_x86_64).
WHEEL_ARCH: Dict[str, Arch] = {"aarch64": "aarch64", "arm64": "aarch64", "x86_64": "x86_64", "amd64": "x86_64"}

#: The OCI platform of an image for each architecture (``podman build --platform``).
IMAGE_PLATFORM: Dict[Arch, str] = {"aarch64": "linux/arm64", "x86_64": "linux/amd64"}


def wheel_arch(platform_tag: str) -> Optional[Arch]:
    """The architecture a wheel platform tag is for; None for ``any`` and tags naming none."""
    for part in reversed(platform_tag.lower().split(".")):
        for ending, arch in WHEEL_ARCH.items():
            if part == ending or part.endswith("_" + ending):
                return arch
    return None
