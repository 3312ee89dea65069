"""Filter of the ascend_driver role: decide driver/firmware actions and their order."""

from __future__ import annotations

DOCUMENTATION = r"""
name: ascend_driver_plan
short_description: decide driver/firmware actions from installed facts and wanted versions
description:
  - Versions are ordered by the collection's module_utils (ascend_resumable.npu ascend_version),
    the one Ascend version implementation of the Ansible side.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import VersionError, compare


def ascend_driver_plan(
    facts,
    driver_version,
    firmware_version,
    install_for_all=True,
    in_progress=None,
    allow_downgrade=False,
    run_user=None,
    run_group=None,
):
    """What to do for driver and firmware, in which order, with which installer action.

    facts: the ascend_npu fact of npu_facts. *_version: wanted version ('' = not managed).
    in_progress: component names whose previous install was interrupted (role markers).
    run_user/run_group: the wanted driver run user; the installers cannot change the run user of
    an installed driver (ERR 0x0095, node-prep.md 2.2), so a different recorded one is refused.
    """
    in_progress = set(in_progress or [])
    record = facts.get("install_info") or {}
    wanted_for_all = "yes" if install_for_all else "no"
    plan = {"driver": None, "firmware": None, "order": [], "downgrades": [], "refusals": [], "changes": False}
    installed = {
        "driver": (facts["driver"]["version"] if facts["driver"]["installed"] else None),
        "firmware": (facts["firmware"]["version"] if facts["firmware"]["installed"] else None),
    }
    complete = {"driver": bool(facts["driver"]["complete"]), "firmware": bool(facts["firmware"]["installed"])}
    for name, wanted in (("driver", driver_version), ("firmware", firmware_version)):
        if not wanted:
            continue
        have = installed[name]
        step = {"name": name, "from": have, "to": str(wanted), "action": None, "reason": None}
        if have is None:
            step.update(action="full", reason="not installed")
        elif name in in_progress or not complete[name]:
            step.update(action="full", reason="previous install of %s was interrupted; reinstalling" % have)
        else:
            try:
                order = compare(wanted, have)
            except VersionError as exc:
                raise AnsibleFilterError("ascend_driver_plan: %s %s" % (name, exc)) from exc
            params_differ = (
                name == "driver"
                and record.get("Driver_Install_For_All")
                and record.get("Driver_Install_For_All") != wanted_for_all
            )
            if order == 0 and not params_differ:
                step.update(reason="%s already installed" % have)
            elif order == 0:
                step.update(
                    action="full",
                    reason="install parameters differ (Driver_Install_For_All=%s, wanted %s)"
                    % (record.get("Driver_Install_For_All"), wanted_for_all),
                )
            elif order < 0 and not allow_downgrade:
                step.update(reason="downgrade %s -> %s refused" % (have, wanted))
                plan["downgrades"].append(name)
                plan["refusals"].append(
                    "refusing to downgrade the %s from %s to %s (set ascend_driver_allow_downgrade=true if intended)"
                    % (name, have, wanted)
                )
            elif order < 0:
                step.update(action="full", reason="downgrade %s -> %s allowed" % (have, wanted))
            else:
                step.update(action="full" if params_differ else "upgrade", reason="upgrade %s -> %s" % (have, wanted))
        plan[name] = step
    recorded = (record.get("UserName"), record.get("UserGroup"))
    if installed["driver"] and run_user and recorded[0] and recorded != (run_user, run_group or run_user):
        plan["refusals"].append(
            "the driver is installed for run user %s:%s, the profile/inventory wants %s:%s; the installer "
            "cannot change the run user of an installed driver (ERR 0x0095): uninstall it "
            "(/usr/local/Ascend/driver/script/uninstall.sh) first or keep the run user"
            % (recorded[0], recorded[1], run_user, run_group or run_user)
        )
    # Vendor order (node-prep.md 1.10, 2.10): on a node with a working driver, firmware goes
    # first; on a fresh node the driver goes first (the firmware installer needs its tools).
    sequence = ["firmware", "driver"] if complete["driver"] and "driver" not in in_progress else ["driver", "firmware"]
    plan["order"] = [n for n in sequence if plan[n] and plan[n]["action"]]
    plan["changes"] = bool(plan["order"]) and not plan["refusals"]
    return plan


class FilterModule:
    def filters(self):
        return {"ascend_driver_plan": ascend_driver_plan}
