# -*- coding: utf-8 -*-
"""net.ipv4.ip_local_reserved_ports: the kernel keeps one list and a later setting replaces it, so the
wanted ports are merged with the live value and every sysctl file that sets the key (SYSCTLD order).
Used by the module ascend_reserved_ports (which writes the result) and ascend_node_check (which only
says whether it would)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

DEFAULT_CONFIG_PATHS = [
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
    "/etc/sysctl.conf",
]
DEFAULT_PROC_FILE = "/proc/sys/net/ipv4/ip_local_reserved_ports"
DEFAULT_FILE = "/etc/sysctl.d/90-ascend-resumable.conf"

KEY = "net.ipv4.ip_local_reserved_ports"
HEADER = (
    "# Written by ascend-resumable (role mindcluster_node): TaskD ports for host-network jobs merged with every\n"
    "# value found live and in other sysctl files, because a later setting replaces the whole list.\n"
)


def parse_ranges(text):
    """ "9601-9602,30000" -> [(9601, 9602), (30000, 30000)]; raises ValueError on garbage."""
    out = []
    for part in re.split(r"[,\s]+", (text or "").strip()):
        if not part:
            continue
        match = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not match:
            raise ValueError("not a port or port range: %r" % part)
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if not 0 < low <= high <= 65535:
            raise ValueError("port range out of 1-65535: %r" % part)
        out.append((low, high))
    return out


def merge(ranges):
    """Sorted, with overlapping and adjacent ranges joined (what the kernel prints)."""
    out = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def fmt(ranges):
    return ",".join(str(lo) if lo == hi else "%d-%d" % (lo, hi) for lo, hi in merge(ranges))


def setting_in(text):
    """Values of the key in a sysctl file (last one wins inside a file)."""
    value = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, val = line.lstrip("-").partition("=")
        if sep and key.strip().replace("/", ".") == KEY:
            value = val.strip()
    return value


def boot_files(paths, own):
    """SYSCTLD (sysctl.d(5)) order: .conf files of all directories sorted by file name, the first directory
    holding a name wins (our file lives in /etc/sysctl.d, which comes first); plain files such as
    /etc/sysctl.conf after them (Debian also links it as 99-sysctl.conf)."""
    by_name = {}
    extra = []
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if name.endswith(".conf") and name not in by_name and os.path.isfile(full):
                    by_name[name] = full
        elif os.path.isfile(path):
            extra.append(path)
    by_name[os.path.basename(own)] = own
    out = []
    seen = set()
    for path in [by_name[n] for n in sorted(by_name)] + extra:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def desired(ports, own_file, proc_file=DEFAULT_PROC_FILE, config_paths=None, apply=True):
    """What the own file and the live value must hold: a dict with value, content, live_text, before_file,
    file_changed, live_changed, later (files read after the own file at boot that set the key themselves),
    wanted. Raises ValueError naming the unreadable input."""
    try:
        wanted = parse_ranges(",".join(str(p) for p in ports))
    except ValueError as exc:
        raise ValueError("ports: %s" % exc) from exc
    live_text = read(proc_file)
    try:
        live = parse_ranges(live_text) if live_text is not None else []
    except ValueError as exc:
        raise ValueError("%s: %s" % (proc_file, exc)) from exc
    others = []
    later = []
    own_real = os.path.realpath(own_file)
    passed_own = False
    for path in boot_files(DEFAULT_CONFIG_PATHS if config_paths is None else config_paths, own_file):
        if os.path.realpath(path) == own_real:
            passed_own = True
            continue
        value = setting_in(read(path) or "")
        if value is None:
            continue
        try:
            others.extend(parse_ranges(value))
        except ValueError as exc:
            raise ValueError("%s sets %s to something unreadable: %s" % (path, KEY, exc)) from exc
        if passed_own:
            later.append(path)
    merged = merge(wanted + live + others)
    value = fmt(merged)
    content = HEADER + "%s = %s\n" % (KEY, value)
    before_file = read(own_file)
    return {
        "wanted": wanted,
        "value": value,
        "content": content,
        "live_text": live_text,
        "before_file": before_file,
        "file_changed": before_file != content,
        "live_changed": bool(apply) and (live_text is None or merge(live) != merged),
        "later": later,
    }
