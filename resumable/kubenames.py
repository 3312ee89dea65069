"""The string rules of the Kubernetes API server, as Kubernetes 1.28 applies them.

Each function is a transcription of one apimachinery function at the version this project deploys
and tests against (k8s.io/apimachinery v0.28.15, the module of Kubernetes 1.28.15): the same
regular expression, the same length limit (counted in bytes, as Go's ``len`` counts a string), the
same messages. :mod:`resumable.formats` uses them for the profile fields whose values land in a
name, a label or an annotation key, and :mod:`resumable.manifests.accepted` for every object the
deployment builds, so neither keeps a second copy of a rule.

``KAPI`` (docs/sources.md) is k8s.io/apimachinery v0.28.15 and k8s.io/kubernetes v1.28.15; the
line numbers below are of those files.
"""

from __future__ import annotations

import re
from typing import List

#: Where the rules come from (``KAPI`` is a row of docs/sources.md).
VALIDATION = "KAPI apimachinery pkg/util/validation/validation.go"

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # validation.go:31-37
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")  # validation.go:156-162
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # validation.go:178-184
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")  # :205-211
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # validation.go:226-232
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")  # validation.go:409-412
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")  # validation.go:425-428
_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")  # validation.go:324

QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
PORT_NAME_MAX = 15
#: Total bytes of an object's annotations, keys and values (apimachinery pkg/api/validation/objectmeta.go:36).
ANNOTATIONS_MAX_BYTES = 256 * 1024

_QUALIFIED_NAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)


def _size(value: str) -> int:
    """Go's ``len``: the bytes of the UTF-8 encoding."""
    return len(value.encode("utf-8", "surrogatepass"))


def _too_long(limit: int) -> str:
    return "must be no more than %d characters" % limit  # validation.go:445 MaxLenError


def is_dns1123_label(value: str) -> List[str]:
    """IsDNS1123Label (validation.go:188): a lower-case RFC 1123 label, at most 63 bytes."""
    errs = [_too_long(DNS1123_LABEL_MAX)] if _size(value) > DNS1123_LABEL_MAX else []
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                "start and end with an alphanumeric character"
            )
    return errs


def is_dns1123_subdomain(value: str) -> List[str]:
    """IsDNS1123Subdomain (validation.go:215): labels joined by dots, at most 253 bytes."""
    errs = [_too_long(DNS1123_SUBDOMAIN_MAX)] if _size(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
            "must start and end with an alphanumeric character"
        )
    return errs


def is_dns1035_label(value: str) -> List[str]:
    """IsDNS1035Label (validation.go:236): a DNS-1035 label (starts with a letter), at most 63 bytes."""
    errs = [_too_long(DNS1035_LABEL_MAX)] if _size(value) > DNS1035_LABEL_MAX else []
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
            "character, and end with an alphanumeric character"
        )
    return errs


def is_qualified_name(value: str) -> List[str]:
    """IsQualifiedName (validation.go:43): ``[prefix/]name``, the prefix a DNS subdomain, the name
    at most 63 bytes of letters, digits, '-', '_' and '.' starting and ending alphanumeric. Label
    keys, annotation keys (lower-cased first) and toleration keys are qualified names."""
    errs: List[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name %s with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            % _QUALIFIED_NAME_MESSAGE
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + _too_long(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_MESSAGE)
    return errs


def is_annotation_key(value: str) -> List[str]:
    """An annotation key: a qualified name once lower-cased (apimachinery pkg/api/validation/objectmeta.go:48)."""
    return is_qualified_name(value.lower())


def is_valid_label_value(value: str) -> List[str]:
    """IsValidLabelValue (validation.go:167): empty, or at most 63 bytes of letters, digits, '-',
    '_' and '.' starting and ending alphanumeric."""
    errs = [_too_long(LABEL_VALUE_MAX)] if _size(value) > LABEL_VALUE_MAX else []
    if not _LABEL_VALUE.fullmatch(value):
        errs.append("a valid label must be an empty string or " + _QUALIFIED_NAME_MESSAGE)
    return errs


def is_env_var_name(value: str) -> List[str]:
    """IsEnvVarName (validation.go:415): letters, digits, '_', '-' and '.', not starting with a
    digit, and not '.', '..' or starting with '..' (hasChDirPrefix, validation.go:484)."""
    errs = []
    if not _ENV_VAR_NAME.fullmatch(value):
        errs.append(
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
            "and must not start with a digit"
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_config_map_key(value: str) -> List[str]:
    """IsConfigMapKey (validation.go:431): a ConfigMap or Secret data key."""
    errs = [_too_long(DNS1123_SUBDOMAIN_MAX)] if _size(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _CONFIG_MAP_KEY.fullmatch(value):
        errs.append("a valid config key must consist of alphanumeric characters, '-', '_' or '.'")
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_name(value: str) -> List[str]:
    """IsValidPortName (validation.go:334): an IANA service name, at most 15 characters of
    ``[-a-z0-9]`` with a letter, no ``--``, not starting or ending with '-'."""
    errs = [_too_long(PORT_NAME_MAX)] if _size(value) > PORT_NAME_MAX else []
    if not _PORT_NAME_CHARSET.fullmatch(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def has_backsteps(path: str) -> bool:
    """validatePathNoBacksteps (k8s.io/kubernetes v1.28.15 pkg/apis/core/validation/validation.go:1214):
    a hostPath may not contain a '..' component."""
    return ".." in path.split("/")
