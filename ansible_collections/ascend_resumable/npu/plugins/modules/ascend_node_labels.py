#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Set Kubernetes node labels with kubectl, reporting a change only when a label really changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_node_labels
short_description: Apply node labels with kubectl with real change detection
description:
  - Reads the node (C(kubectl get node NAME -o json)), compares its labels with I(labels) and runs
    C(kubectl label node NAME K=V... --overwrite) only for the keys whose value differs, then reads the node again
    and fails unless every label has the wanted value. Labels not named in I(labels) are left alone.
  - Runs where kubectl works (delegate it to the kubectl host). Supports check mode and diff.
options:
  node:
    description: Kubernetes node name.
    type: str
    required: true
  labels:
    description: Labels the node must carry.
    type: dict
    required: true
  kubectl:
    description: kubectl command.
    type: str
    default: kubectl
  kubeconfig:
    description: kubeconfig file (empty = kubectl's default).
    type: str
    default: ""
author: ascend-resumable
"""

EXAMPLES = r"""
- name: Label a compute node
  ascend_resumable.npu.ascend_node_labels:
    node: npu-01
    labels: {workerselector: dls-worker-node, nodeDEnable: "on"}
  delegate_to: mgmt-01
"""

RETURN = r"""
added:
  description: Labels the node did not have.
  returned: always
  type: dict
updated:
  description: "Labels whose value changed, as C({key: [old, new]})."
  returned: always
  type: dict
"""

import json

from ansible.module_utils.basic import AnsibleModule


def diff_labels(current, wanted):
    added = dict((k, v) for k, v in wanted.items() if k not in current)
    updated = dict((k, [current[k], v]) for k, v in wanted.items() if k in current and current[k] != v)
    return added, updated


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node=dict(type="str", required=True),
            labels=dict(type="dict", required=True),
            kubectl=dict(type="str", default="kubectl"),
            kubeconfig=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wanted = dict((str(k), str(v)) for k, v in p["labels"].items())
    base = [p["kubectl"]] + (["--kubeconfig=%s" % p["kubeconfig"]] if p["kubeconfig"] else [])

    def labels_now():
        rc, out, err = module.run_command([*base, "get", "node", p["node"], "-o", "json"])
        if rc != 0:
            module.fail_json(
                msg="kubectl get node %s failed (%s): is the node registered in Kubernetes "
                "(kubelet joined) and does kubectl reach the API server from this host?"
                % (p["node"], (err or out).strip())
            )
        try:
            return json.loads(out).get("metadata", {}).get("labels", {}) or {}
        except ValueError:
            module.fail_json(msg="kubectl get node %s -o json did not print JSON: %s" % (p["node"], out[:200]))

    before = labels_now()
    added, updated = diff_labels(before, wanted)
    result = dict(changed=bool(added or updated), added=added, updated=updated, node=p["node"])
    if result["changed"]:
        keys = sorted(set(added) | set(updated))
        result["diff"] = dict(
            before="".join("%s=%s\n" % (k, before[k]) for k in keys if k in before),
            after="".join("%s=%s\n" % (k, wanted[k]) for k in keys),
            before_header="node/%s labels" % p["node"],
            after_header="node/%s labels" % p["node"],
        )
    if module.check_mode or not result["changed"]:
        module.exit_json(**result)
    args = ["%s=%s" % (k, wanted[k]) for k in sorted(set(added) | set(updated))]
    rc, out, err = module.run_command([*base, "label", "node", p["node"], *args, "--overwrite"])
    if rc != 0:
        module.fail_json(msg="kubectl label node %s failed: %s" % (p["node"], (err or out).strip()), **result)
    after = labels_now()
    missing = dict((k, after.get(k)) for k, v in wanted.items() if after.get(k) != v)
    if missing:
        module.fail_json(
            msg="node %s does not carry the labels after kubectl label: %s" % (p["node"], missing), **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
