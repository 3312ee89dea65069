#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Make the Ascend runtime the default of containerd or Docker by editing their config in place."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_runtime_config
short_description: Register Ascend Docker Runtime as default runtime of containerd or Docker, keeping the rest
description:
  - Reads C(/etc/containerd/config.toml) or C(/etc/docker/daemon.json), adds the C(ascend) runtime and makes it
    the default, and writes the file only when its content (not its layout) changes. Every other key and runtime
    (an nvidia runtime, registry settings, the cgroup driver) is kept.
  - containerd - the CRI plugin path follows the config version (1 C(cri), 2 C(io.containerd.grpc.v1.cri),
    3 C(io.containerd.cri.v1.runtime)); the C(ascend) entry copies the C(runc) entry and sets C(BinaryName).
    With containerd 2.x, a version 3 file and C(imports) covering I(dropin_path), a drop-in file is written
    instead and the main file is left alone (containerd 1.x replaces whole plugin sections from imports).
  - A missing containerd config starts from C(containerd config default), as the vendor installer does.
  - Refuses symlinked files and files it cannot parse (nothing is written then). Supports check mode and diff.
options:
  engine:
    description: Container engine whose configuration is edited.
    type: str
    required: true
    choices: [containerd, docker]
  runtime_name:
    description: Runtime name to register and make the default.
    type: str
    default: ascend
  runtime_path:
    description: Path of the ascend-docker-runtime binary.
    type: path
    required: true
  config_path:
    description: Main configuration file (default /etc/containerd/config.toml or /etc/docker/daemon.json).
    type: path
  containerd:
    description: containerd binary (its version decides whether a drop-in is possible).
    type: str
    default: containerd
  dropin:
    description: C(auto) uses a drop-in where containerd supports merging it, C(never) always edits the main file.
    type: str
    default: auto
    choices: [auto, never]
  dropin_path:
    description: Drop-in file for containerd >= 2.
    type: path
    default: /etc/containerd/conf.d/99-ascend-docker-runtime.toml
  backup:
    description: Keep a timestamped copy of a file before it is changed.
    type: bool
    default: true
  info_file:
    description:
      - The runtime installer's record (C(ascend_docker_runtime_install.info), C(version=v...)); when given, the
        installed runtime is returned as C(installed) in the same call, so deciding needs no other read.
    type: path
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Ascend runtime as containerd's default runtime
  ascend_resumable.npu.ascend_runtime_config:
    engine: containerd
    runtime_path: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
"""

RETURN = r"""
target:
  description: File that holds the ascend runtime (the main file or the drop-in).
  returned: always
  type: str
mode:
  description: C(in-place), C(drop-in) (containerd) or C(daemon.json) (docker).
  returned: always
  type: str
plugin:
  description: CRI plugin section used (containerd).
  returned: when engine is containerd
  type: str
installed:
  description: "With I(info_file): C({binary: bool, version: str or null}) of the installed runtime."
  returned: when info_file is given
  type: dict
previous_default:
  description: Default runtime before the change (null when none was set).
  returned: always
  type: str
config_changes:
  description:
    - Whether the engine configuration differs from what the role wants (the same as C(changed), also when a
      caller overrides C(changed) of a dry run in check mode, as the role's decide step does).
  returned: always
  type: bool
backup_file:
  description: Copy of the file before it was changed.
  returned: when a file was changed and backup is true
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_engine import configure


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=["containerd", "docker"]),
            runtime_name=dict(type="str", default="ascend"),
            runtime_path=dict(type="path", required=True),
            config_path=dict(type="path"),
            containerd=dict(type="str", default="containerd"),
            dropin=dict(type="str", default="auto", choices=["auto", "never"]),
            dropin_path=dict(type="path", default="/etc/containerd/conf.d/99-ascend-docker-runtime.toml"),
            backup=dict(type="bool", default=True),
            info_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = configure(module, p)
    previous = result.get("previous_default")
    if result["changed"] and previous not in (None, "", "runc", p["runtime_name"]):
        module.warn(
            "%s: the default runtime was %r and becomes %r (MindCluster needs Ascend Docker Runtime as the "
            "default); the %r runtime itself is kept." % (result["target"], previous, p["runtime_name"], previous)
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
