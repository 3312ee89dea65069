# -*- coding: utf-8 -*-
"""Node labels for MindCluster from the plan, checked against what npu_facts detected.

The plan (resumable.plan.nodes) says which labels compute and management nodes carry
(MindCluster INST01 Table 1; K8S Table 4). This filter only checks the detected hardware
against it and picks the label sets that apply to a host; it decides no label value itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def node_labels(plan, npu, roles, held=None):
    """Labels for a host with ``roles`` (compute and/or management).

    ``npu`` is the ascend_npu fact; npu_facts has already checked it against the plan (chip,
    accelerator type, architecture: ascend_resumable.npu.profile_mismatches), so this only picks
    the label sets that apply. ``held`` are label keys not to apply now (the NPU DaemonSets'
    node selector while the driver role keeps the node in its maintenance window).
    Returns {"labels": {...}, "held": [...], "problems": [...]}; no label is applied while there
    is a problem.
    """
    labels = {}
    problems = []
    roles = list(roles or [])
    unknown = sorted(set(roles) - {"compute", "management"})
    if unknown or not roles:
        problems.append("node roles must be compute and/or management, got %s" % (roles or "none"))
    if "management" in roles:
        labels.update(plan.get("master_labels") or {})
    if "compute" in roles:
        npu = npu or {}
        if not npu.get("count"):
            problems.append(
                "it is a compute node but npu_facts finds no Ascend NPU (the plan expects %s, %s)"
                % (plan.get("chip"), plan.get("accelerator_type"))
            )
        labels.update(plan.get("labels") or {})
        if npu.get("product") in (plan.get("inference_products") or []):
            labels.update(plan.get("server_usage_labels") or {})
    held = sorted(k for k in held or [] if k in labels)
    return {"labels": {k: v for k, v in labels.items() if k not in held}, "held": held, "problems": problems}


def applies(entries, roles):
    """Plan entries (log dirs, users, host files) whose "where" is all or one of the host's roles."""
    roles = set(roles or [])
    return [e for e in entries or [] if e.get("where", "all") == "all" or e.get("where") in roles]


def _entries(text):
    return [line.split(":") for line in (text or "").splitlines() if line.count(":") >= 3]


def accounts(users, passwd_text, group_text):
    """Compare the plan's users with keyed getent output.

    Returns {"problems": [...], "missing_groups": [{name, gid}], "missing_users": [user],
    "missing_memberships": [user]}. Ids are never changed: an account or group with another id,
    or an id held by another name, is a problem (the role fails with it)."""
    pw = _entries(passwd_text)
    gr = _entries(group_text)
    out = {"problems": [], "missing_groups": [], "missing_users": [], "missing_memberships": []}
    for u in users or []:
        name, uid, gid = u["name"], str(u["uid"]), str(u["gid"])
        by_name = [e for e in pw if e[0] == name]
        uid_owner = [e[0] for e in pw if e[2] == uid and e[0] != name]
        grp = [e for e in gr if e[0] == name]
        gid_owner = [e[0] for e in gr if e[2] == gid and e[0] != name]
        if by_name and by_name[0][2] != uid:
            out["problems"].append("user %s has uid %s, the plan needs %s" % (name, by_name[0][2], uid))
        if uid_owner:
            out["problems"].append("uid %s (for %s) belongs to %s" % (uid, name, ",".join(uid_owner)))
        if grp and grp[0][2] != gid:
            out["problems"].append("group %s has gid %s, the plan needs %s" % (name, grp[0][2], gid))
        if gid_owner:
            out["problems"].append("gid %s (for group %s) belongs to %s" % (gid, name, ",".join(gid_owner)))
        if by_name and by_name[0][3] != gid:
            out["problems"].append("user %s has primary gid %s, the plan needs %s" % (name, by_name[0][3], gid))
        if not grp:
            out["missing_groups"].append({"name": name, "gid": u["gid"]})
        if not by_name:
            out["missing_users"].append(u)
        for group in u.get("groups", []):
            members = [e[3].split(",") for e in gr if e[0] == group]
            if by_name and (not members or name not in members[0]):
                out["missing_memberships"].append(u)
                break
    return out


class FilterModule(object):
    def filters(self):
        return {
            "mindcluster_node_labels": node_labels,
            "mindcluster_node_applies": applies,
            "mindcluster_node_accounts": accounts,
        }
