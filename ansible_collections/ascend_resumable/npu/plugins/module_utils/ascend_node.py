# -*- coding: utf-8 -*-
"""Reading a node the way every module of this collection does: small text files (capped), key=value
records, the OS family, installed OS packages and keyed account lookups (NSS, like getent)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd

_MAX_READ = 65536


def read_text(path):
    try:
        if not os.path.isfile(path):
            return None
        with open(path) as handle:
            return handle.read(_MAX_READ).strip()
    except (OSError, UnicodeDecodeError):
        return None


def key_values(path):
    text = read_text(path)
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip('"')
    return out


def os_family():
    """Debian / RedHat / Suse from /etc/os-release (ID and ID_LIKE), None when unknown."""
    release = key_values("/etc/os-release") or {}
    ids = (release.get("ID", "") + " " + release.get("ID_LIKE", "")).lower().split()
    for family, members in (
        ("Debian", ("debian", "ubuntu")),
        ("RedHat", ("rhel", "centos", "fedora", "openeuler", "kylin")),
        ("Suse", ("suse", "sles", "opensuse")),
    ):
        if any(i in members for i in ids):
            return family
    return None


def installed_packages(module, wanted, family):
    """name -> installed version (None = not installed) for the wanted names."""
    names = wanted.get(family) or [] if isinstance(wanted, dict) else list(wanted or [])
    names = [str(n).replace("{kernel}", os.uname()[2]) for n in names]
    result = dict((n, None) for n in names)
    if not names:
        return result
    dpkg, rpm = module.get_bin_path("dpkg-query"), module.get_bin_path("rpm")
    if dpkg:
        _, out, _ = module.run_command([dpkg, "-W", "-f", "${Package}\t${db:Status-Status}\t${Version}\n", *names])
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0] in result and parts[1] == "installed":
                result[parts[0]] = parts[2]
    elif rpm:
        for name in names:
            rc, out, _ = module.run_command([rpm, "-q", "--qf", "%{VERSION}-%{RELEASE}", name])
            if rc == 0:
                result[name] = out.strip()
    return result


def lookup_accounts(accounts):
    """getent-style keyed lookups: a name, or a number for an id; missing = None."""
    result = {"users": {}, "groups": {}}
    for key in accounts.get("users") or []:
        key = str(key)
        try:
            entry = pwd.getpwuid(int(key)) if key.isdigit() else pwd.getpwnam(key)
        except (KeyError, ValueError, OverflowError):
            result["users"][key] = None
            continue
        result["users"][key] = {
            "name": entry.pw_name,
            "uid": entry.pw_uid,
            "gid": entry.pw_gid,
            "home": entry.pw_dir,
            "shell": entry.pw_shell,
        }
    for key in accounts.get("groups") or []:
        key = str(key)
        try:
            entry = grp.getgrgid(int(key)) if key.isdigit() else grp.getgrnam(key)
        except (KeyError, ValueError, OverflowError):
            result["groups"][key] = None
            continue
        result["groups"][key] = {"name": entry.gr_name, "gid": entry.gr_gid, "members": list(entry.gr_mem)}
    return result
