"""The pod's environment as ``resumable launch`` uses it: every variable parsed once into a typed
value within its bounds, or a problem naming the variable and the fix.

The Ascend Operator writes these values itself (ascend-operator pkg/controllers/v1/env.go
setCommonEnv, setPytorchEnv, setMindSporeEnv: ``strconv.Itoa`` for ranks, sizes and ports, the pod
and service IPs, the job UID). A value of another form was written by hand or by a job YAML that
drifted, and a launch on it would not do what the dry run showed: torchrun reads ``RANK=00`` as node
0 while a launcher comparing with ``0`` starts no TaskD Manager there; a ``MINDX_TASK_ID`` of ``..``
moves the job log directory out of the log root; a newline in an address ends a line of the printed
shell script. So each kind of value has one form:

- node ranks (``RANK``, ``MS_NODE_RANK``): a plain decimal number (ASCII digits, no sign, no leading
  zero) from 0 to the plan's nodes - 1;
- sizes (``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MS_WORKER_NUM``, ``MS_LOCAL_WORKER``): a plain
  decimal number from 1 to 2**31 - 1; ports: from 1 to 65535;
- addresses (``MASTER_ADDR``, ``POD_IP``, ``MS_SCHED_HOST``, ...): an IPv4 or IPv6 address or a DNS
  name;
- ids that become a directory name (``MINDX_TASK_ID``, ``RESUMABLE_JOB``): letters, digits, ``.``,
  ``_`` and ``-``, starting with a letter or digit, at most 253 characters: one path component, never
  ``.`` or ``..``;
- any other value the launcher passes on (``LD_PRELOAD``, ``PYTHONPATH``, what the plan's ``$(VAR)``
  names): text without control characters, and UTF-8 (an undecodable byte cannot be printed).

An empty value is refused like any other malformed one (the launcher option would be empty).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple, Union

from .. import constants as C
from ..errors import shown, text_problem

#: a parsed value: a number (rank, size, port) or a string (address, id, text)
Value = Union[int, str]

_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,9})")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
INT_MAX = 2**31 - 1
PORT_MAX = 65535
#: what the operator injects and how; the fix of a malformed size, port or address
OPERATOR = "the Ascend Operator injects it in that form (env.go); a pod started another way must set it so"
RENDER = "the job YAML and the profile disagree: render the job again from this profile (`resumable render`)"

RANKS = (C.ENV_RANK, C.ENV_MS_NODE_RANK)
SIZES = (C.ENV_WORLD_SIZE, C.ENV_LOCAL_WORLD_SIZE, C.ENV_MS_WORKER_NUM, C.ENV_MS_LOCAL_WORKER)
PORTS = (C.ENV_MASTER_PORT, C.ENV_MS_SCHED_PORT, C.ENV_MS_TFT_PORT)
ADDRESSES = (C.ENV_MASTER_ADDR, C.ENV_MS_SCHED_HOST, C.ENV_POD_IP, C.ENV_XDL_IP, C.ENV_TTP_ADDR, C.ENV_MS_TFT_IP)
IDS = {
    C.ENV_MINDX_TASK_ID: "the Ascend Operator injects the job's UID",
    C.ENV_RESUMABLE_JOB: "the job templates set the job's name",
}


def _decimal(value: str, low: int, high: int) -> Optional[int]:
    if not _DECIMAL.fullmatch(value):
        return None
    number = int(value)
    return number if low <= number <= high else None


def is_address(value: str) -> bool:
    """An IPv4 or IPv6 address, or a DNS name (labels of letters, digits, ``-`` and ``_``)."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    return 0 < len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def same_address(a: str, b: str) -> bool:
    """Whether two addresses are one: equal IP addresses however written, or equal DNS names."""
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a.rstrip(".").lower() == b.rstrip(".").lower()


def is_id(value: str) -> bool:
    """Safe as one path component: letters, digits, ``.``, ``_``, ``-``, not starting with ``.``."""
    return bool(_ID.fullmatch(value))


@dataclasses.dataclass(frozen=True)
class PodEnv:
    """The variables the launcher reads from the pod, parsed: ``values`` holds the valid ones that
    are set, ``refused`` the names of the malformed ones, ``problems`` why."""

    values: Dict[str, Value]
    refused: FrozenSet[str]
    problems: Tuple[str, ...]

    def number(self, name: str) -> Optional[int]:
        value = self.values.get(name)
        return value if isinstance(value, int) else None

    def text(self, name: str) -> Optional[str]:
        value = self.values.get(name)
        return None if value is None else str(value)


Parser = Callable[[str, str, int], Tuple[Optional[Value], str]]


def _rank(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    if _DECIMAL.fullmatch(value):
        number = int(value)
        if number < nodes:
            return number, ""
        return None, "%s=%d is outside 0..%d for a job of %d nodes: %s" % (name, number, nodes - 1, nodes, RENDER)
    return None, "%s=%s is not a node rank: a plain decimal number from 0 to %d (no sign, no leading zero); %s" % (
        name,
        shown(value),
        nodes - 1,
        OPERATOR,
    )


def _size(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    number = _decimal(value, 1, INT_MAX)
    why = "%s=%s is not a process count: a plain decimal number from 1 to %d; %s" % (
        name,
        shown(value),
        INT_MAX,
        OPERATOR,
    )
    return number, "" if number is not None else why


def _port(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    number = _decimal(value, 1, PORT_MAX)
    why = "%s=%s is not a port: a plain decimal number from 1 to %d; %s" % (name, shown(value), PORT_MAX, OPERATOR)
    return number, "" if number is not None else why


def _address(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    if is_address(value):
        return value, ""
    return None, "%s=%s is not an address: an IPv4 or IPv6 address or a DNS name; %s" % (name, shown(value), OPERATOR)


def _id(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    if is_id(value):
        return value, ""
    return None, (
        "%s=%s cannot name one directory of the job log path: letters, digits, '.', '_' and '-', starting with a "
        "letter or digit, at most 253 characters (%s)" % (name, shown(value), IDS[name])
    )


def _text(name: str, value: str, nodes: int) -> Tuple[Optional[Value], str]:
    why = text_problem(value)
    if why is None:
        return value, ""
    return None, "%s=%s %s, which the launcher cannot pass on or print: remove it from %s" % (
        name,
        shown(value),
        why,
        name,
    )


PARSERS: Dict[str, Parser] = {
    **{name: _rank for name in RANKS},
    **{name: _size for name in SIZES},
    **{name: _port for name in PORTS},
    **{name: _address for name in ADDRESSES},
    **{name: _id for name in IDS},
}


def read_pod_env(environ: Mapping[str, str], names: Iterable[str], nodes: int) -> PodEnv:
    """``names`` of ``environ`` parsed (each by its kind, text when it has none); unset ones are left
    out (the launcher names what it misses itself)."""
    values: Dict[str, Value] = {}
    refused: List[str] = []
    problems: List[str] = []
    for name in dict.fromkeys(names):
        raw = environ.get(name)
        if raw is None:
            continue
        value, why = _text(name, raw, nodes)
        if value is not None:
            value, why = PARSERS.get(name, _text)(name, raw, nodes)
        if value is None:
            refused.append(name)
            problems.append(why)
        else:
            values[name] = value
    return PodEnv(values, frozenset(refused), tuple(problems))
