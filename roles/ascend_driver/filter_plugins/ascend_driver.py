# -*- coding: utf-8 -*-
"""Filters of the ascend_driver role: Ascend version ordering, compatibility ranges, install plan."""

from __future__ import annotations

import re

DOCUMENTATION = r"""
name: ascend_driver_plan
short_description: decide driver/firmware actions from installed facts and wanted versions
description:
  - Also provides C(ascend_version_compare) and C(ascend_version_in_ranges).
"""


def _key(version):
    """25.0.rc1 < 25.0.rc1.1 < 25.0.0 < 25.0.0.1; RC tokens sort before plain numbers."""
    key = []
    for token in str(version).strip().lower().split("."):
        match = re.match(r"^rc(\d+)$", token)
        if match:
            key.append((0, int(match.group(1))))
        elif token.isdigit():
            key.append((1, int(token)))
        else:
            key.append((0, -1))
    return key


def ascend_version_compare(left, right):
    """-1, 0 or 1 like cmp(left, right) for Ascend HDK/CANN version strings."""
    a, b = _key(left), _key(right)
    return (a > b) - (a < b)


def ascend_version_in_ranges(version, ranges):
    """Is version inside "[lo,hi],[lo,hi.]" (version.info compatible_version_* syntax)?

    A trailing dot on hi means "hi itself or anything starting with 'hi.'" (node-prep.md §2.4).
    Returns None when either side is unknown, so callers can tell "unknown" from "no".
    """
    if not version or not ranges:
        return None
    for low, high in re.findall(r"\[([^,\]]+),([^\]]+)\]", str(ranges)):
        low, high = low.strip(), high.strip()
        if _key(version) < _key(low):
            continue
        if high.endswith("."):
            if _key(version) <= _key(high[:-1]) or str(version).lower().startswith(high.lower()):
                return True
        elif _key(version) <= _key(high):
            return True
    return False


def ascend_driver_plan(facts, driver_version, firmware_version, install_for_all=True,
                       in_progress=None, allow_downgrade=False):
    """What to do for driver and firmware, in which order, with which installer action.

    facts: the ascend_npu fact of npu_facts. *_version: wanted version ('' = not managed).
    in_progress: component names whose previous install was interrupted (role markers).
    """
    in_progress = set(in_progress or [])
    record = facts.get("install_info") or {}
    wanted_for_all = "yes" if install_for_all else "no"
    plan = {"driver": None, "firmware": None, "order": [], "downgrades": [], "changes": False}
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
            order = ascend_version_compare(wanted, have)
            params_differ = (name == "driver" and record.get("Driver_Install_For_All")
                             and record.get("Driver_Install_For_All") != wanted_for_all)
            if order == 0 and not params_differ:
                step.update(reason="%s already installed" % have)
            elif order == 0:
                step.update(action="full", reason="install parameters differ (Driver_Install_For_All=%s, wanted %s)"
                            % (record.get("Driver_Install_For_All"), wanted_for_all))
            elif order < 0 and not allow_downgrade:
                step.update(reason="downgrade %s -> %s refused" % (have, wanted))
                plan["downgrades"].append(name)
            elif order < 0:
                step.update(action="full", reason="downgrade %s -> %s allowed" % (have, wanted))
            else:
                step.update(action="full" if params_differ else "upgrade", reason="upgrade %s -> %s" % (have, wanted))
        plan[name] = step
    # Vendor order (node-prep.md §1.10, §2.10): on a node with a working driver, firmware goes
    # first; on a fresh node the driver goes first (the firmware installer needs its tools).
    sequence = ["firmware", "driver"] if complete["driver"] and "driver" not in in_progress else ["driver", "firmware"]
    plan["order"] = [n for n in sequence if plan[n] and plan[n]["action"]]
    plan["changes"] = bool(plan["order"])
    return plan


class FilterModule(object):
    def filters(self):
        return {
            "ascend_version_compare": ascend_version_compare,
            "ascend_version_in_ranges": ascend_version_in_ranges,
            "ascend_driver_plan": ascend_driver_plan,
        }
