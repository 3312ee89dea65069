#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Merge ports into net.ipv4.ip_local_reserved_ports, live and persistent, keeping everyone else's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_reserved_ports
short_description: Reserve local ports (TaskD 9601/9602) in net.ipv4.ip_local_reserved_ports without dropping others
description:
  - The kernel keeps one list; a sysctl file or C(sysctl -w) that sets it replaces it. This module reads the live
    value and every sysctl configuration file that sets the key, and writes the union with I(ports) to its own
    file and to the live value, so ports reserved by anyone else stay reserved.
  - Warns when a file read later at boot also sets the key (its value would replace this file's).
  - MindCluster asks for 9601/9602 to be reserved when TaskD runs with the host network (RT07).
  - Supports check mode and diff.
options:
  ports:
    description: Ports (integers or "low-high" strings) to reserve.
    type: list
    elements: str
    required: true
  file:
    description: The sysctl.d file this module owns.
    type: path
    default: /etc/sysctl.d/90-ascend-resumable.conf
  proc_file:
    description: Live value.
    type: path
    default: /proc/sys/net/ipv4/ip_local_reserved_ports
  config_paths:
    description: sysctl configuration files and directories read at boot (SYSCTLD order).
    type: list
    elements: path
    default: [/etc/sysctl.d, /run/sysctl.d, /usr/local/lib/sysctl.d, /usr/lib/sysctl.d, /lib/sysctl.d, /etc/sysctl.conf]
  apply:
    description: Also set the live value (not only the file).
    type: bool
    default: true
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Reserve the TaskD ports
  ascend_resumable.npu.ascend_reserved_ports:
    ports: [9601, 9602]
"""

RETURN = r"""
value:
  description: The merged list as the kernel writes it (e.g. 9601-9602,30000-30005).
  returned: always
  type: str
live_before:
  description: The live value before the change (null when unreadable).
  returned: always
  type: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(type="list", elements="str", required=True),
            file=dict(type="path", default="/etc/sysctl.d/90-ascend-resumable.conf"),
            proc_file=dict(type="path", default="/proc/sys/net/ipv4/ip_local_reserved_ports"),
            config_paths=dict(
                type="list",
                elements="path",
                default=[
                    "/etc/sysctl.d",
                    "/run/sysctl.d",
                    "/usr/local/lib/sysctl.d",
                    "/usr/lib/sysctl.d",
                    "/lib/sysctl.d",
                    "/etc/sysctl.conf",
                ],
            ),
            apply=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        wanted = parse_ranges(",".join(p["ports"]))
    except ValueError as exc:
        module.fail_json(msg="ports: %s" % exc)
    live_text = read(p["proc_file"])
    try:
        live = parse_ranges(live_text) if live_text is not None else []
    except ValueError as exc:
        module.fail_json(msg="%s: %s" % (p["proc_file"], exc))
    others = []
    later = []
    own_real = os.path.realpath(p["file"])
    passed_own = False
    for path in boot_files(p["config_paths"], p["file"]):
        if os.path.realpath(path) == own_real:
            passed_own = True
            continue
        value = setting_in(read(path) or "")
        if value is None:
            continue
        try:
            others.extend(parse_ranges(value))
        except ValueError as exc:
            module.fail_json(msg="%s sets %s to something unreadable: %s" % (path, KEY, exc))
        if passed_own:
            later.append(path)
    merged = merge(wanted + live + others)
    value = fmt(merged)
    content = HEADER + "%s = %s\n" % (KEY, value)
    before_file = read(p["file"])
    file_changed = before_file != content
    live_changed = p["apply"] and (live_text is None or merge(live) != merged)
    result = dict(
        changed=file_changed or live_changed,
        value=value,
        live_before=live_text.strip() if live_text is not None else None,
        file=p["file"],
    )
    if result["changed"]:
        result["diff"] = [
            dict(before=before_file or "", after=content, before_header=p["file"], after_header=p["file"]),
            dict(
                before=(live_text or "").strip() + "\n",
                after=value + "\n",
                before_header=p["proc_file"],
                after_header=p["proc_file"],
            ),
        ]
    for path in later:
        module.warn(
            "%s is read after %s at boot and sets %s itself; its value replaces this one then. Add %s "
            "there or remove the setting." % (path, p["file"], KEY, fmt(wanted))
        )
    if module.check_mode or not result["changed"]:
        module.exit_json(**result)
    if file_changed:
        directory = os.path.dirname(p["file"])
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        tmp = p["file"] + ".ascend-tmp"
        with open(tmp, "w") as handle:
            handle.write(content)
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, p["file"])
    if live_changed:
        try:
            with open(p["proc_file"], "w") as handle:
                handle.write(value + "\n")
        except OSError as exc:
            module.fail_json(
                msg="cannot set %s live (%s): %s; %s was written and applies at the next boot"
                % (KEY, exc.strerror, p["proc_file"], p["file"]),
                **result,
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
