#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Set Kubernetes node labels with kubectl, reporting a change only when a label really changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ascend_node_labels
short_description: Apply node labels with kubectl with real change detection, for many nodes at once
description:
  - Reads every node of the cluster once (C(kubectl get nodes -o json)), compares the labels of each node of
    I(nodes) with what it must carry and runs C(kubectl label node NAME K=V... --overwrite) only for the nodes and
    keys whose value differs, then reads the nodes once more and fails unless every label has the wanted value.
    Labels not named are left alone. One call serves a whole run (delegate it to the kubectl host, run_once).
  - I(node) with I(labels) is the same for one node.
  - Supports check mode and diff.
options:
  nodes:
    description: Node name -> the labels it must carry.
    type: dict
    default: {}
  node:
    description: One Kubernetes node name (with I(labels)), instead of I(nodes).
    type: str
  labels:
    description: Labels I(node) must carry.
    type: dict
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
- name: Label the compute nodes of the run
  ascend_resumable.npu.ascend_node_labels:
    nodes:
      npu-01: {workerselector: dls-worker-node, nodeDEnable: "on"}
      npu-02: {workerselector: dls-worker-node, nodeDEnable: "on"}
  delegate_to: mgmt-01
  run_once: true
"""

RETURN = r"""
added:
  description: "Labels the nodes did not have, as C({node: {key: value}})."
  returned: always
  type: dict
updated:
  description: "Labels whose value changed, as C({node: {key: [old, new]}})."
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
            nodes=dict(type="dict", default={}),
            node=dict(type="str"),
            labels=dict(type="dict"),
            kubectl=dict(type="str", default="kubectl"),
            kubeconfig=dict(type="str", default=""),
        ),
        required_together=[("node", "labels")],
        mutually_exclusive=[("nodes", "node")],
        supports_check_mode=True,
    )
    p = module.params
    wanted_by_node = dict(p["nodes"] or {})
    if p["node"]:
        wanted_by_node = {p["node"]: p["labels"]}
    wanted_by_node = dict(
        (str(n), dict((str(k), str(v)) for k, v in (labels or {}).items())) for n, labels in wanted_by_node.items()
    )
    base = [p["kubectl"]] + (["--kubeconfig=%s" % p["kubeconfig"]] if p["kubeconfig"] else [])
    result = dict(changed=False, added={}, updated={}, diff=[])
    if not wanted_by_node:
        module.exit_json(**result)

    def labels_now():
        rc, out, err = module.run_command([*base, "get", "nodes", "-o", "json"])
        if rc != 0:
            module.fail_json(msg="kubectl get nodes failed (%s): does kubectl reach the API server from this host?"
                             % (err or out).strip())  # fmt: skip
        try:
            items = json.loads(out).get("items") or []
        except ValueError:
            module.fail_json(msg="kubectl get nodes -o json did not print JSON: %s" % out[:200])
        found = dict((i.get("metadata", {}).get("name"), i.get("metadata", {}).get("labels") or {}) for i in items)
        missing = sorted(set(wanted_by_node) - set(found))
        if missing:
            module.fail_json(
                msg="node(s) %s not found by kubectl get nodes: is each registered in Kubernetes (kubelet joined) "
                "under its inventory name (mindcluster_node_node_name)?" % ", ".join(missing)
            )
        return found

    before = labels_now()
    changes = {}
    for node, wanted in sorted(wanted_by_node.items()):
        added, updated = diff_labels(before[node], wanted)
        if added:
            result["added"][node] = added
        if updated:
            result["updated"][node] = updated
        keys = sorted(set(added) | set(updated))
        if keys:
            changes[node] = keys
            result["diff"].append(
                dict(
                    before="".join("%s=%s\n" % (k, before[node][k]) for k in keys if k in before[node]),
                    after="".join("%s=%s\n" % (k, wanted[k]) for k in keys),
                    before_header="node/%s labels" % node,
                    after_header="node/%s labels" % node,
                )
            )
    result["changed"] = bool(changes)
    if module.check_mode or not changes:
        module.exit_json(**result)
    for node, keys in sorted(changes.items()):
        args = ["%s=%s" % (k, wanted_by_node[node][k]) for k in keys]
        rc, out, err = module.run_command([*base, "label", "node", node, *args, "--overwrite"])
        if rc != 0:
            module.fail_json(msg="kubectl label node %s failed: %s" % (node, (err or out).strip()), **result)
    after = labels_now()
    missing = dict(
        (node, dict((k, after[node].get(k)) for k, v in wanted.items() if after[node].get(k) != v))
        for node, wanted in wanted_by_node.items()
    )
    missing = dict((n, m) for n, m in missing.items() if m)
    if missing:
        module.fail_json(msg="nodes do not carry the labels after kubectl label: %s" % missing, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
