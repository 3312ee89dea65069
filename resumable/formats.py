"""Formats of the strings a profile (and ``render --image``) hands to Kubernetes, a shell or a path.

A profile string ends up in a Kubernetes object (a name, a label value, a quantity, an image
reference), in a container environment (a variable name) or in a mount (a path inside the pod).
Whatever the API server, the kubelet or the shell would refuse later, or worse accept with another
meaning, is refused here, when the profile is bound, with the field's path and a fix. The
binder (:mod:`resumable.binding`) applies a format named in a field's ``spec(format=...)``; the
JSON Schema and docs/profile.md show the same format's pattern and description.

Sources: Kubernetes object names, label keys and values and annotation keys are checked by the API
server's own rules at Kubernetes 1.28 (:mod:`resumable.kubenames`, transcribed from k8s.io/apimachinery
v0.28.15 pkg/util/validation/validation.go), resource quantities (k8s.io/apimachinery
pkg/api/resource/quantity.go, the ``<quantity>`` grammar), image references (the
distribution/reference grammar, github.com/distribution/reference regexp.go), environment variable
names (POSIX.1-2017 Base Definitions 8.1: letters, digits and underscore, not starting with a digit;
stricter than the API server's IsEnvVarName, because ``resumable launch`` exports every variable of
the container in a shell script), script paths (POSIX.1-2017 Base Definitions 3.282, the portable
filename character set, with letters and digits of any script: no white space and no character a
shell reads as syntax).
"""

from __future__ import annotations

import decimal
import ipaddress
import posixpath
import re
from typing import Callable, Dict, List, NamedTuple, Optional

from . import kubenames as K
from .errors import shown

# --- names -----------------------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
# a script path: letters and digits of any script, '_', '.', '-', '+', '@', '=', ',', ':' and '/'
_SCRIPT = re.compile(r"[\w.+@=,:/-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?")

# --- Kubernetes quantities (apimachinery resource.Quantity) -------------------------------------------

_QUANTITY = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?")

# --- image references (distribution/reference) ---------------------------------------------------------

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = r"(?:%s(?:\.%s)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?" % (_DOMAIN_COMPONENT, _DOMAIN_COMPONENT)
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REMOTE = r"%s(?:/%s)*" % (_PATH_COMPONENT, _PATH_COMPONENT)
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
# The first component is a registry when it has a dot, a port or is localhost (as docker decides).
_IMAGE = re.compile(
    r"(?:(?P<domain>%s)/)?(?P<remote>%s)(?::(?P<tag>%s))?(?:@(?P<digest>%s))?" % (_DOMAIN, _REMOTE, _TAG, _DIGEST)
)
_REGISTRY = re.compile(r"(?:%s)(?:/%s)*/?" % (_DOMAIN, _PATH_COMPONENT))
_IMAGE_MAX = 512  # docker: a name of at most 255 characters, plus tag and digest


class Format(NamedTuple):
    """A string format: ``check`` returns what is wrong with a value (None when it is fine)."""

    name: str
    #: what a valid value is, for messages and docs ("a Kubernetes quantity such as 200Gi")
    description: str
    check: Callable[[str], Optional[str]]
    #: an ECMA-262 pattern for the JSON Schema (None when a pattern cannot say it)
    pattern: Optional[str] = None
    max_length: Optional[int] = None


def _regex_check(regex: re.Pattern[str], max_length: int, what: str) -> Callable[[str], Optional[str]]:
    def check(value: str) -> Optional[str]:
        if not value:
            return "is empty"
        if len(value) > max_length:
            return "is %d characters long (at most %d)" % (len(value), max_length)
        if regex.fullmatch(value) is None:
            return "%s is not %s" % (shown(value), what)
        return None

    return check


def _kube_check(rule: Callable[[str], List[str]], what: str) -> Callable[[str], Optional[str]]:
    """A format that is one of the API server's rules (:mod:`resumable.kubenames`, named in the
    message by its apimachinery function); an empty value is refused."""
    name = "".join(part.capitalize() for part in rule.__name__.split("_")).replace("Dns", "DNS")

    def check(value: str) -> Optional[str]:
        if not value:
            return "is empty"
        found = rule(value)
        if not found:
            return None
        size = len(value.encode("utf-8", "surrogatepass"))
        if found[0].startswith("must be no more than") or found[0].startswith("name part must be no more"):
            return "is %d bytes long: %s (the API server's %s)" % (size, found[0], name)
        return "%s is not %s (the API server's %s)" % (shown(value), what, name)

    return check


_dns_subdomain = _kube_check(K.is_dns1123_subdomain, "a DNS subdomain name")
_label_key = _kube_check(K.is_qualified_name, "a Kubernetes label key")


_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}


def quantity_value(value: str) -> float:
    """The number a valid Kubernetes quantity stands for (``500m`` -> 0.5, ``1Gi`` -> 2**30), to compare two."""
    m = _QUANTITY.fullmatch(value)
    if m is None:
        raise ValueError("not a quantity: %r" % value)
    sign, number, suffix = m.groups()
    suffix = suffix or ""
    scale = 10.0 ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _SUFFIX[suffix]
    return (-1.0 if sign == "-" else 1.0) * float(number) * scale


def quantity_problem(value: str, positive: bool = False) -> Optional[str]:
    """What is wrong with ``value`` as a Kubernetes quantity (``500m``, ``8``, ``200Gi``, ``1e3``)."""
    if not value:
        return "is empty"
    if len(value) > 64:
        return "is %d characters long (at most 64)" % len(value)
    m = _QUANTITY.fullmatch(value)
    if m is None:
        return "%s is not a Kubernetes quantity" % shown(value)
    sign, number, _suffix = m.groups()
    if sign == "-" and float(number) != 0:
        return "%s is negative" % shown(value)
    if positive and float(number) == 0:
        return "%s is zero" % shown(value)
    return None


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENT = {"": 0, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def size_problem(value: str) -> Optional[str]:
    """What is wrong with ``value`` as a size in bytes: a quantity above zero and a whole number of
    bytes (the API server warns "fractional byte value is invalid, must be an integer" and rounds a
    claim of 500m up to one byte: KAPI pkg/api/persistentvolumeclaim/util.go:207)."""
    problem = quantity_problem(value, positive=True)
    if problem is not None:
        return problem
    m = _QUANTITY.fullmatch(value)
    assert m is not None
    _sign, number, suffix = m.groups()
    suffix = suffix or ""
    amount = decimal.Decimal(number)
    if suffix in _BINARY:
        amount *= 2 ** _BINARY[suffix]
    else:
        exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") else _DECIMAL_EXPONENT[suffix]
        amount = amount.scaleb(exponent) if abs(exponent) < 1000 else amount
    if amount != amount.to_integral_value():
        return "%s is not a whole number of bytes" % shown(value)
    return None


def _host(value: str) -> Optional[str]:
    if not value:
        return "is empty"
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if len(value) > 253 or not all(_HOST_LABEL.fullmatch(p) and len(p) <= 63 for p in value.split(".")):
        return "%s is neither an IP address nor a host name" % shown(value)
    return None


def _absolute_path(value: str, allow_root: bool) -> Optional[str]:
    if not value:
        return "is empty"
    if len(value) > 4096:
        return "is %d characters long (at most 4096)" % len(value)
    if not value.startswith("/"):
        return "%s is not an absolute path" % shown(value)
    if allow_root and len(value) > 1 and value.endswith("/"):
        value = value[:-1]  # an export written as /exports/ascend/ is the same export
    if ".." in value.split("/"):
        return "%s contains '..'" % shown(value)
    if posixpath.normpath(value) != value or value.startswith("//"):
        return "%s is not normalised (write it as %s)" % (shown(value), shown(posixpath.normpath(value)))
    if value == "/" and not allow_root:
        return "is the root directory '/'"
    return None


def _file_path(value: str) -> Optional[str]:
    if not value:
        return "is empty"
    if len(value) > 4096:
        return "is %d characters long (at most 4096)" % len(value)
    if value != value.strip():
        return "%s has spaces around it" % shown(value)
    if value.endswith("/"):
        return "%s names a directory, not a file" % shown(value)
    return None


def _image(value: str) -> Optional[str]:
    if not value:
        return "is empty"
    if len(value) > _IMAGE_MAX:
        return "is %d characters long (at most %d)" % (len(value), _IMAGE_MAX)
    m = _IMAGE.fullmatch(value)
    if m is None:
        return "%s is not an image reference" % shown(value)
    name = (m.group("domain") + "/" if m.group("domain") else "") + m.group("remote")
    if len(name) > 255:
        return "its repository name is %d characters long (at most 255)" % len(name)
    return None


def _registry(value: str) -> Optional[str]:
    if not value:
        return None  # the release's local image names
    if len(value) > 255 or _REGISTRY.fullmatch(value) is None:
        return "%s is not a registry prefix" % shown(value)
    return None


def _script(value: str) -> Optional[str]:
    """A training script as the launcher's command line takes it: a path, not a shell command nor a
    launcher option (torchrun reads a first word starting with '-' as its own option)."""
    if not value:
        return "is empty"
    if len(value) > 4096:
        return "is %d characters long (at most 4096)" % len(value)
    if value.startswith("-"):
        return "%s starts with '-', which the launcher reads as one of its options" % shown(value)
    bad = sorted({c for c in value if not _SCRIPT.fullmatch(c)})
    if bad:
        return "%s contains %s, which a shell reads as syntax or a word break" % (
            shown(value),
            ", ".join(shown(c) for c in bad[:5]),
        )
    if value.endswith("/"):
        return "%s names a directory, not a file" % shown(value)
    return None


def _token(value: str) -> Optional[str]:
    if not value:
        return "is empty"
    if len(value) > 253:
        return "is %d characters long (at most 253)" % len(value)
    if any(c.isspace() for c in value):
        return "%s contains white space" % shown(value)
    return None


DNS_LABEL = "dns-label"
DNS_SUBDOMAIN = "dns-subdomain"
LABEL_VALUE = "label-value"
ENV_NAME = "env-name"
QUANTITY = "quantity"
SIZE = "size"
HOST = "host"
CONTAINER_PATH = "container-path"
SERVER_PATH = "server-path"
FILE_PATH = "file-path"
IMAGE = "image"
REGISTRY = "registry"
TOKEN = "token"
MODE = "mode"
LABEL_KEY = "label-key"
ANNOTATION_KEY = "annotation-key"
SCRIPT = "script"

_MODE = re.compile(r"[0-7]{3,4}")
_QUANTITY_PATTERN = r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?$"

FORMATS: Dict[str, Format] = {
    f.name: f
    for f in [
        Format(
            DNS_LABEL,
            "a Kubernetes name: lower-case letters, digits and '-', starting and ending with a letter "
            "or digit, at most 63 characters",
            _kube_check(K.is_dns1123_label, "a valid Kubernetes name"),
            "^" + _DNS_LABEL.pattern + "$",
            63,
        ),
        Format(
            DNS_SUBDOMAIN,
            "a Kubernetes object name (DNS subdomain): lower-case letters, digits, '-' and '.', at most 253 characters",
            _dns_subdomain,
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            253,
        ),
        Format(
            LABEL_VALUE,
            "a Kubernetes label value: letters, digits, '-', '_' and '.', starting and ending with a "
            "letter or digit, at most 63 characters",
            _kube_check(K.is_valid_label_value, "a valid Kubernetes label value"),
            "^" + _LABEL_VALUE.pattern + "$",
            63,
        ),
        Format(
            ENV_NAME,
            "an environment variable name: letters, digits and '_', not starting with a digit",
            _regex_check(_ENV_NAME, 1024, "an environment variable name"),
            "^" + _ENV_NAME.pattern + "$",
        ),
        Format(
            QUANTITY,
            "a Kubernetes quantity such as 500m, 8, 8Gi or 1e3, not negative",
            quantity_problem,
            _QUANTITY_PATTERN,
            64,
        ),
        Format(
            SIZE,
            "a Kubernetes quantity of whole bytes above zero such as 200Gi or 2Ti",
            size_problem,
            _QUANTITY_PATTERN,
            64,
        ),
        Format(HOST, "an IP address or a host name", _host, r"^[0-9A-Za-z.:-]+$", 253),
        Format(
            CONTAINER_PATH,
            "an absolute, normalised path inside the container (no '..', not '/')",
            lambda value: _absolute_path(value, allow_root=False),
            r"^(/[^/]+)+$",
            4096,
        ),
        Format(
            SERVER_PATH,
            "an absolute, normalised path on the server (no '..'; a trailing '/' is allowed)",
            lambda value: _absolute_path(value, allow_root=True),
            r"^/([^/]+(/[^/]+)*/?)?$",
            4096,
        ),
        Format(FILE_PATH, "a file path", _file_path, r"^\S(.*\S)?$", 4096),
        Format(
            IMAGE,
            "an image reference such as registry.example.com/ai/train:1.0 (no spaces; lower-case repository)",
            _image,
            None,
            _IMAGE_MAX,
        ),
        Format(REGISTRY, "a registry prefix such as registry.example.com/mindx, or empty", _registry, None, 255),
        Format(TOKEN, "a word without white space", _token, r"^\S+$", 253),
        Format(
            LABEL_KEY,
            "a Kubernetes label key such as example.com/team or team",
            _label_key,
            None,
            317,
        ),
        Format(
            ANNOTATION_KEY,
            "a Kubernetes annotation key such as example.com/owner or owner (a label key, upper case allowed)",
            _kube_check(K.is_annotation_key, "a Kubernetes annotation key"),
            None,
            317,
        ),
        Format(
            SCRIPT,
            "a script path of letters, digits, '_', '.', '-', '+', '@', '=', ',', ':' and '/', not starting "
            "with '-' (no spaces, quotes or shell characters such as ; $ ` | & < > ( ))",
            _script,
            r"^[^-\s;&|$`<>()'\"\\*?!#~{}\[\]][^\s;&|$`<>()'\"\\*?!#~{}\[\]]*$",
            4096,
        ),
        Format(
            MODE,
            "an octal file mode of 3 or 4 digits such as 0775 or 2775",
            _regex_check(_MODE, 4, "an octal file mode"),
            "^" + _MODE.pattern + "$",
            4,
        ),
    ]
}


def problem(format_name: str, value: str) -> Optional[str]:
    """What is wrong with ``value`` in format ``format_name`` (None when it is fine)."""
    return FORMATS[format_name].check(value)


# --- image naming ------------------------------------------------------------------------------------
# Every image reference the project composes or takes apart goes through these functions.

#: The repository prefix of a job's built image when neither the profile (``image.name``) nor the
#: Pulumi stack (``imageRegistry``) names where it goes: a local name the build spec tags.
LOCAL_IMAGE_PREFIX = "ascend-resumable"


def with_tag(repository: str, tag: str) -> str:
    """``<repository>:<tag>``."""
    return "%s:%s" % (repository, tag)


def image_repository(reference: str) -> str:
    """The repository of an image reference, its tag and digest dropped (distribution/reference
    grammar: a digest follows ``@``; a tag follows a ``:`` in the last path component only, so a
    registry port as in ``localhost:5000/ai/train:1.0`` stays)."""
    name = reference.split("@", 1)[0]
    head, _, last = name.rpartition("/")
    return (head + "/" if head else "") + last.split(":", 1)[0]


def built_image_reference(job: str, release: str, registry: Optional[str] = None) -> str:
    """The reference of the image built for a job whose profile leaves ``image.name`` out:
    ``<registry>/<job>:<release>`` when the Pulumi stack pushes to ``imageRegistry``, else the local
    ``ascend-resumable/<job>:<release>`` (``resumable render`` and the build spec). The registry
    format allows a trailing ``/`` (``swr.example.com/ai/``); it is not doubled."""
    return with_tag("%s/%s" % ((registry or LOCAL_IMAGE_PREFIX).rstrip("/"), job), release)


def release_image_tag(release: str) -> str:
    """The tag of a MindCluster component image of ``release``: ``v<release>`` (the release build
    rewrites the sources' placeholder tags to it; INST01, docs/scheduler.md D4)."""
    return "v%s" % release


def volcano_image_tag(volcano: str, release: Optional[str] = None, os_flavour: Optional[str] = None) -> str:
    """The tag of a Volcano image: ``v<volcano>``, or ``v<volcano>-v<release>`` where the tag embeds
    the MindCluster release (SWR and the 26.1 manifests; INST05, HELM values 26.1), with ``-<os>``
    where the registry tags the OS flavour (from 26.1.0: ``v1.12.0-v26.1.0-alpinelatest``)."""
    tag = "v%s" % volcano
    tag = "%s-%s" % (tag, release_image_tag(release)) if release else tag
    return "%s-%s" % (tag, os_flavour) if os_flavour else tag


def with_os_flavour(tag: str, os_flavour: Optional[str]) -> str:
    """``<tag>-<os>`` as Huawei's registry tags images from 26.1.0 (``v26.1.0-openeuler24.03``)."""
    return "%s-%s" % (tag, os_flavour) if os_flavour else tag


def component_image_reference(local_name: str, tag: str, registry: str = "") -> str:
    """The reference of a scheduling-stack component image: the local name the release manifests
    use (``volcanosh/vc-scheduler``) with ``tag``, or with a registry prefix that prefix and the
    name's last component (``registry.example.com/mindx/vc-scheduler``), the way SWR ``ascendhub``
    names them (docs/scheduler.md D4)."""
    registry = registry.rstrip("/")
    name = "%s/%s" % (registry, local_name.rsplit("/", 1)[-1]) if registry else local_name
    return with_tag(name, tag)


def registry_host(reference: str) -> str:
    """The registry host of an image reference, as docker decides it (distribution/reference
    normalize.go splitDockerDomain): the first path component when it has a dot or a port or is
    ``localhost``, else ``docker.io``."""
    first = reference.split("/", 1)[0]
    if ("." in first or ":" in first or first == "localhost") and "/" in reference:
        return first
    return "docker.io"
