"""Vendor wheel files: what their names say, and what a declared file or URL must look like.

TaskD, MindIO TTP/ACP and mindx_elastic come as wheel files inside the MindCluster release zips
("TASKD_WHL为TaskD whl安装包的路径", PLR 构建镜像); public projects with the same names exist on
package indexes, so the image never installs them by name. A wheel file name carries its
distribution and version (PEP427): ``taskd-7.3.0-py3-none-linux_aarch64.whl``.
"""

from __future__ import annotations

import posixpath
import re
from typing import NamedTuple, Optional
from urllib.parse import urlsplit

from .versions import Version, VersionError

#: The distribution name each wheel of ``image.wheels`` must carry in its file name (PEP427 escapes
#: ``-`` in names as ``_``; compared case-insensitively).
DISTRIBUTIONS = {
    "taskd": "taskd",
    "mindio_ttp": "mindio_ttp",
    "mindio_acp": "mindio_acp",
    "mindx_elastic": "mindx_elastic",
}

#: The MindCluster release zip each wheel comes in (INST00; TFT 01 for MindIO, whose zip holds both
#: mindio_ttp and mindio_acp): ``Ascend-mindxdl-<package>_<version>_linux-<arch>.zip``.
RELEASE_ZIPS = {"taskd": "taskd", "mindio_ttp": "mindio", "mindio_acp": "mindio", "mindx_elastic": "elastic"}


def release_zip(name: str, version: Optional[str], arch: str) -> str:
    """The release zip that holds wheel ``name`` (``Ascend-mindxdl-taskd_7.3.0_linux-aarch64.zip``)."""
    return "Ascend-mindxdl-%s_%s_linux-%s.zip" % (RELEASE_ZIPS[name], version or "<version>", arch)


SHA256 = re.compile(r"[0-9a-fA-F]{64}")

# {distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl (PEP427)
_WHEEL = re.compile(
    r"^(?P<dist>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.!+]+)(?:-(?P<build>[0-9][A-Za-z0-9_.]*))?"
    r"-(?P<py>[A-Za-z0-9_.]+)-(?P<abi>[A-Za-z0-9_.]+)-(?P<plat>[A-Za-z0-9_.]+)\.whl$"
)


class ParsedWheel(NamedTuple):
    distribution: str  # normalised: lower case, '-' and '.' as '_'
    version: str


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def base_name(location: str) -> str:
    """The file name of a path or of a URL's path."""
    if "://" in location:
        location = urlsplit(location).path
    return posixpath.basename(location.rstrip("/"))


def parse(location: str) -> Optional[ParsedWheel]:
    """The distribution and version a wheel file name (or URL) carries; None if it is not one."""
    m = _WHEEL.match(base_name(location))
    if m is None:
        return None
    return ParsedWheel(normalise(m.group("dist")), m.group("version"))


def platform_tag(location: str) -> Optional[str]:
    """The platform tag of a wheel file name (``linux_aarch64``), None if it is not a wheel name."""
    m = _WHEEL.match(base_name(location))
    return m.group("plat") if m is not None else None


def version_of(location: str) -> Optional[Version]:
    """The version in a wheel file name, None when the name is not a wheel name or the version
    not a version."""
    parsed = parse(location)
    if parsed is None:
        return None
    try:
        return Version(parsed.version)
    except VersionError:
        return None


def is_https(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc)
