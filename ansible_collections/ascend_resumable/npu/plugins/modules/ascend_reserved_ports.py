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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_ports import (  # noqa: F401 (the tests use them)
    DEFAULT_CONFIG_PATHS,
    DEFAULT_FILE,
    DEFAULT_PROC_FILE,
    KEY,
    boot_files,
    desired,
    fmt,
    parse_ranges,
    setting_in,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(type="list", elements="str", required=True),
            file=dict(type="path", default=DEFAULT_FILE),
            proc_file=dict(type="path", default=DEFAULT_PROC_FILE),
            config_paths=dict(type="list", elements="path", default=DEFAULT_CONFIG_PATHS),
            apply=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        want = desired(p["ports"], p["file"], p["proc_file"], p["config_paths"], p["apply"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    live_text, before_file, content, value = want["live_text"], want["before_file"], want["content"], want["value"]
    file_changed, live_changed = want["file_changed"], want["live_changed"]
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
    for path in want["later"]:
        module.warn(
            "%s is read after %s at boot and sets %s itself; its value replaces this one then. Add %s "
            "there or remove the setting." % (path, p["file"], KEY, fmt(want["wanted"]))
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
