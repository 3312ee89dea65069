"""Filters of the ascend_cann role: decide toolkit and kernels/ops actions (ascend_cann_plan,
ascend_cann_decide; documented in ascend_cann_plan.yml, ascend_cann_decide.yml beside this file).
Versions are ordered by the collection's module_utils ascend_version."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_hardware import package_problems
from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import (
    VersionError,
    compare,
    is_version,
)

# CANN 8.5.0 moved the toolkit to <root>/cann -> cann-<version> and replaced the per-chip
# kernels packages by ops packages (ADEPLOY downloader/software; HA-CANN-LAYOUT).
UNIFIED_FROM = "8.5.0"


def ascend_cann_plan(cann, wanted, has_ops=False, in_progress=None, allow_downgrade=False):
    """{'toolkit': install|upgrade|none, 'ops': install|none, 'unified', 'refusals', 'changes', 'reason'}.

    cann: ascend_npu.cann of npu_facts. in_progress: 'toolkit' / 'ops' when an earlier run of
    the role was interrupted in that installer.
    """
    in_progress = set(in_progress or [])
    try:
        unified = compare(wanted, UNIFIED_FROM) >= 0
        order = compare(wanted, cann["version"]) if cann.get("installed") and cann.get("version") else None
        ops_order = compare(wanted, cann["ops_version"]) if cann.get("ops_version") else None
    except VersionError as exc:
        raise AnsibleFilterError("ascend_cann_plan: %s" % exc) from exc
    plan = {"toolkit": "none", "ops": "none", "unified": unified, "refusals": [], "changes": False, "reason": ""}
    if not cann.get("installed"):
        plan.update(toolkit="install", reason="CANN is not installed")
    elif order is not None and order < 0 and not allow_downgrade:
        plan["refusals"].append(
            "refusing to downgrade CANN from %s to %s (set ascend_cann_allow_downgrade=true if intended)"
            % (cann["version"], wanted)
        )
        plan["reason"] = "downgrade refused"
    elif order != 0 or "toolkit" in in_progress:
        plan.update(
            toolkit="upgrade",
            reason="CANN %s -> %s" % (cann["version"], wanted)
            if order != 0
            else "previous toolkit install was interrupted",
        )
    else:
        plan["reason"] = "CANN %s already installed" % cann["version"]
    if has_ops and not plan["refusals"] and ops_order is not None and ops_order < 0 and not allow_downgrade:
        # the kernels/ops installer replaces what is there whatever its version (ADEPLOY
        # library/install_cann.py installs kernels/ops with --install every time)
        plan["refusals"].append(
            "refusing to downgrade the CANN kernels/ops package from %s to %s (set ascend_cann_allow_downgrade=true "
            "if intended)" % (cann["ops_version"], wanted)
        )
        plan["reason"] = "kernels/ops downgrade refused"
    if has_ops and not plan["refusals"] and (plan["toolkit"] != "none" or ops_order != 0 or "ops" in in_progress):
        plan["ops"] = "install"
    plan["changes"] = plan["toolkit"] != "none" or plan["ops"] != "none"
    return plan


def ascend_cann_decide(facts, p):
    """Everything ascend_cann decides before it acts, from the node's ascend_npu fact.

    p: version, toolkit_package, ops_package, allow_downgrade, state_dir (see tasks/decide.yml).
    """
    if not p["version"]:
        plan = {
            "toolkit": "none",
            "ops": "none",
            "unified": None,
            "refusals": [],
            "changes": False,
            "reason": "not managed",
        }
        return {"plan": plan, "problems": [], "needs_change": False}
    if not is_version(p["version"]) or not p["toolkit_package"]:
        problems = [
            "ascend_cann_version %r must be a CANN version (8.3.RC1, 8.5.0) and needs "
            "ascend_cann_toolkit_package" % p["version"]
        ]
        return {"plan": None, "problems": problems, "needs_change": False}
    files = facts.get("files") or {}
    state_dir = p["state_dir"].rstrip("/")
    in_progress = [n for n in ("toolkit", "ops") if files.get("%s/cann-%s.inprogress" % (state_dir, n)) is not None]
    plan = ascend_cann_plan(facts["cann"], p["version"], bool(p["ops_package"]), in_progress, p["allow_downgrade"])
    problems = list(plan["refusals"])
    packages = {}
    if plan["toolkit"] != "none":
        packages["toolkit"] = p["toolkit_package"]
    if plan["ops"] != "none":
        packages["ops"] = p["ops_package"]
    kinds = {"toolkit": "toolkit", "ops": "ops" if plan["unified"] else "kernels"}
    problems.extend(package_problems(facts, packages, kinds, {"toolkit": p["version"], "ops": p["version"]}))
    return {"plan": plan, "problems": problems, "needs_change": plan["changes"]}


class FilterModule:
    def filters(self):
        return {"ascend_cann_plan": ascend_cann_plan, "ascend_cann_decide": ascend_cann_decide}
