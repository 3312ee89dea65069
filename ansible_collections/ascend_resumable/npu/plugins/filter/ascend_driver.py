"""Filters of the ascend_driver role: decide driver/firmware actions, their order, and everything
the role must know before a maintenance window, from one read of the node (ascend_driver_plan,
ascend_driver_decide; documented in ascend_driver_plan.yml, ascend_driver_decide.yml beside this
file). Versions are ordered by the collection's module_utils ascend_version, the one Ascend version
implementation of the Ansible side."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_hardware import (
    package_problems,
    profile_mismatches,
)
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
    an installed driver (ERR 0x0095, HDK-DRV install.sh, args_parse.sh), so a different recorded one is refused.
    """
    in_progress = set(in_progress or [])
    record = facts.get("install_info") or {}
    wanted_for_all = "yes" if install_for_all else "no"
    plan = {
        "driver": None,
        "firmware": None,
        "order": [],
        "downgrades": [],
        "refusals": [],
        "notes": [],
        "changes": False,
    }
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
            if order == 0:
                step.update(reason="%s already installed" % have)
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
                step.update(action="upgrade", reason="upgrade %s -> %s" % (have, wanted))
        plan[name] = step
    note = _install_for_all_note(record, installed["driver"], wanted_for_all)
    if note and plan["driver"]:
        plan["driver"]["reason"] += "; " + note
        plan["notes"].append(note)
    recorded = (record.get("UserName"), record.get("UserGroup"))
    if installed["driver"] and run_user and recorded[0] and recorded != (run_user, run_group or run_user):
        plan["refusals"].append(
            "the driver is installed for run user %s:%s, the profile/inventory wants %s:%s; the installer "
            "cannot change the run user of an installed driver (ERR 0x0095): uninstall it "
            "(/usr/local/Ascend/driver/script/uninstall.sh) first or keep the run user"
            % (recorded[0], recorded[1], run_user, run_group or run_user)
        )
    # Vendor order (ADEPLOY library/process_npu.py; HDK-DRV install.sh exit codes): on a node with a
    # working driver, firmware goes first; on a fresh node the driver goes first (the firmware
    # installer needs its tools).
    sequence = ["firmware", "driver"] if complete["driver"] and "driver" not in in_progress else ["driver", "firmware"]
    plan["order"] = [n for n in sequence if plan[n] and plan[n]["action"]]
    plan["changes"] = bool(plan["order"]) and not plan["refusals"]
    return plan


def _install_for_all_note(record, installed_driver, wanted_for_all):
    """How the installed driver was installed, when it is not what the role would pass: accepted.

    The record is Driver_Install_For_All in /etc/ascend_install.info. --upgrade keeps it (HDK-DRV
    install.sh:447-451 reuses the recorded value, :564-589 writes it back) and refuses
    --install-for-all (args_parse.sh:239-241), so an upgrade never changes it; only an uninstall +
    --full would, which needs a maintenance window (drain) for a node that runs the wanted driver.
    The difference only matters to a MindCluster component running as a binary under another user
    (NPU Exporter as hwMindX); the DaemonSets run in containers. So the installed value is kept,
    and said so, instead of draining and reinstalling a node that runs the wanted driver.
    """
    have = record.get("Driver_Install_For_All")
    if not installed_driver or not have or have == wanted_for_all:
        return ""
    return (
        "installed with Driver_Install_For_All=%s (/etc/ascend_install.info), ascend_driver_install_for_all "
        "wants %s: kept (--upgrade keeps it; changing it needs an uninstall and --full by hand, in a window)"
        % (have, wanted_for_all)
    )


def _account_problems(facts, p):
    """The run user and group with the plan's ids: create what is missing, refuse conflicts."""
    users = (facts.get("accounts") or {}).get("users") or {}
    groups = (facts.get("accounts") or {}).get("groups") or {}
    user, group, uid, gid = p["user"], p["group"], int(p["uid"]), int(p["gid"])
    by_name, by_uid = users.get(user), users.get(str(uid))
    gr_name, gr_gid = groups.get(group), groups.get(str(gid))
    ok = (
        (by_name is None or by_name["uid"] == uid)
        and (gr_name is None or gr_name["gid"] == gid)
        and (by_uid is None or by_uid["name"] == user)
        and (gr_gid is None or gr_gid["name"] == group)
    )
    problems = []
    if not ok:
        problems.append(
            "the driver run user must be %s %d / group %s %d (same ids on every node and in containers). Found user "
            "id %s, group id %s; uid %d belongs to %s, gid %d to %s. The role does not renumber accounts: fix the "
            "ids by hand (usermod/groupmod + chown) or change the profile"
            % (
                user,
                uid,
                group,
                gid,
                by_name["uid"] if by_name else "none",
                gr_name["gid"] if gr_name else "none",
                uid,
                by_uid["name"] if by_uid else "nobody",
                gid,
                gr_gid["name"] if gr_gid else "nobody",
            )
        )
    wanted = [gid, p["home"], p["shell"]]
    account = {
        "create_group": gr_name is None,
        "create_user": by_name is None or [by_name["gid"], by_name["home"], by_name["shell"]] != wanted,
    }
    return problems, account


# The installer reads these files itself, not NSS (HDK-DRV install.sh:388-404).
_LOCAL_ACCOUNT_FILES = {"user": "/etc/passwd", "group": "/etc/group"}
# npu_facts reads at most this many characters of a file: a longer one may be cut.
_READ_CAP = 65536


def _local_account_problems(facts, p, account):
    """A run user or group that NSS knows (LDAP, SSSD) but /etc/passwd or /etc/group does not.

    The driver installer checks the run user with ``cat /etc/passwd | cut -f1 -d':' | grep -w``
    and the group in /etc/group (HDK-DRV verylucky01/driver v8.5.0 install.sh:388-404, called on
    install and upgrade at :1353), while the role's lookups (getent) go through NSS: such a user
    passed the role's check and the installer refused it after the node was drained. Accounts the
    role creates itself are local. A file that was not read, or read up to the cap, is not judged.
    """
    files = facts.get("files") or {}
    problems = []
    for kind, name, created in (
        ("user", p["user"], account["create_user"] and not _known(facts, "users", p["user"])),
        ("group", p["group"], account["create_group"]),
    ):
        path = _LOCAL_ACCOUNT_FILES[kind]
        text = files.get(path)
        if created or text is None or len(text) >= _READ_CAP - 1:
            continue
        if name not in set(line.split(":", 1)[0] for line in text.splitlines()):
            problems.append(
                "the driver run %s %s is known to NSS (LDAP/SSSD) but is not in %s, where the driver installer looks "
                "it up (it would refuse with ERR_NO:0x0091 after the node was drained): add a local entry with the "
                "same ids (%s; useradd/groupadd refuse a name NSS already knows: use vipw/vigr, luseradd/lgroupadd, "
                "or ansible.builtin.%s with local: true), then re-run"
                % (
                    kind,
                    name,
                    path,
                    "uid %s, gid %s" % (p["uid"], p["gid"]) if kind == "user" else "gid %s" % p["gid"],
                    kind,
                )
            )
    return problems


def _known(facts, kind, name):
    return ((facts.get("accounts") or {}).get(kind) or {}).get(name) is not None


def _not_running(facts, versions):
    """Managed components installed but not running (npu-smi reports another version, or none).

    The pending reboot read from the node itself: it survives a run that stopped before its reboot
    handler, a window record removed by hand and a reboot deferred by policy, so a re-run takes the
    node into a window and reboots it (policy permitting).
    """
    if not facts.get("present") or "running" not in facts:  # no NPUs, or npu-smi was not read
        return []
    out = []
    running = facts.get("running") or {}
    for name, installed in (("driver", facts["driver"]), ("firmware", facts["firmware"])):
        if not versions.get(name) or not installed.get("installed") or not installed.get("version"):
            continue
        now = running.get(name)
        try:
            same = bool(now) and compare(now, installed["version"]) == 0
        except VersionError:
            same = False
        if not same:
            out.append(
                "%s %s is installed but npu-smi reports %s" % (name, installed["version"], now or "none running")
            )
    return out


def ascend_driver_decide(facts, p):
    """Everything ascend_driver decides before a maintenance window, from one read of the node.

    facts: ascend_npu of npu_facts (read with the role's state dirs, accounts and prerequisite
    packages). p: the role parameters (see tasks/decide.yml). Returns the install plan, the open
    maintenance window (or None), the problems that stop the role before anything is touched, what
    the run user needs, the missing prerequisites, and whether the node needs a window or any change.
    """
    problems = []
    nodes = p.get("plan_nodes") or {}
    if not nodes:
        problems.append(
            "ascend_driver needs the resumable plan (ascend_plan_nodes) for the run user, the HDK version and the "
            "hardware the profile describes: run playbooks/preflight.yml first (site.yml and playbooks/compute.yml "
            "do) with ascend_preflight_profile set in the inventory group_vars"
        )
    if p["reboot_policy"] not in ("never", "if_needed", "always"):
        problems.append("ascend_driver_reboot_policy must be never, if_needed or always, not %r" % p["reboot_policy"])
    for name in ("driver", "firmware"):
        if p["packages"].get(name) and not p["versions"].get(name):
            problems.append(
                "the %s package needs its version (the driver's comes from the profile's cluster.hdk)" % name
            )
    if not p["user"] or int(p["uid"]) < 0 or int(p["gid"]) < 0:
        problems.append("the run user needs a name and ids (got %r %s:%s)" % (p["user"], p["uid"], p["gid"]))
    elif p["user"] == "root" and not p["install_for_all"]:
        problems.append(
            "the installers accept the run user root only with --install-for-all (HDK-DRV install.sh, args_parse.sh)"
        )
    hdk, wanted_driver = nodes.get("hdk"), p["versions"].get("driver")
    try:
        hdk_differs = bool(hdk and wanted_driver) and compare(wanted_driver, hdk) != 0
    except VersionError as exc:
        raise AnsibleFilterError("ascend_driver_decide: %s" % exc) from exc
    if hdk_differs:
        problems.append(
            "the profile %s says cluster.hdk %s, but ascend_driver_driver_version is %s: change one of them (normally "
            "the profile, and drop ascend_driver_driver_version from the inventory)"
            % (p.get("profile") or "", hdk, wanted_driver)
        )
    if problems:
        return {"plan": None, "window": None, "problems": problems, "needs_window": False, "needs_change": False}
    problems.extend(profile_mismatches(facts, nodes))
    files = facts.get("files") or {}
    state_dir = p["state_dir"].rstrip("/")
    in_progress = [n for n in ("driver", "firmware") if files.get("%s/%s.inprogress" % (state_dir, n)) is not None]
    plan = ascend_driver_plan(
        facts,
        wanted_driver,
        p["versions"].get("firmware"),
        p["install_for_all"],
        in_progress,
        p["allow_downgrade"],
        p["user"],
        p["group"],
    )
    problems.extend(plan["refusals"])
    problems.extend(
        package_problems(
            facts,
            dict((n, p["packages"][n]) for n in plan["order"]),
            {"driver": "driver", "firmware": "firmware"},
            p["versions"],
        )
    )
    account_problems, account = _account_problems(facts, p)
    problems.extend(account_problems)
    if plan["changes"]:
        problems.extend(_local_account_problems(facts, p, account))
    window_text = files.get(p["window_file"])
    window = json.loads(window_text) if window_text else None
    missing = [n for n, v in sorted((facts.get("packages") or {}).items()) if v is None] if p["prerequisites"] else []
    not_running = _not_running(facts, p["versions"])
    needs_window = bool(plan["changes"] or window or not_running)
    return {
        "plan": plan,
        "window": window,
        "problems": problems,
        "account": account,
        "missing_prerequisites": missing,
        "not_running": not_running,
        "needs_window": needs_window,
        "needs_change": needs_window or account["create_group"] or account["create_user"] or bool(missing),
    }


class FilterModule:
    def filters(self):
        return {"ascend_driver_plan": ascend_driver_plan, "ascend_driver_decide": ascend_driver_decide}
