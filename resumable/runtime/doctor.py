"""``resumable doctor``: what the plan needs against what this container or node has.

Each check says what the plan wants, what was found and, when they differ, how to fix it. Run it in
the training image (``podman run --entrypoint resumable IMAGE doctor``), in a running pod, or on a
node; ``--format json`` is for the node roles. Exit 1 when a check fails.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import pwd
import sys
import tempfile
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from .. import constants as C
from .. import releases
from ..errors import ResumableError, escape_controls
from ..fileio import read_head
from ..plan.model import EnvVar, JobPlan, WheelPlan
from ..versions import Version, VersionError
from . import installed
from .launch import kube_expand, plan_env
from .torchrun_patch import count_line, read_run_py

OK, WARN, FAIL = "ok", "warn", "fail"
#: Python versions the runtime supports (it ships inside training images)
PYTHON_RANGE = ((3, 8), (3, 12))
#: what to import to know a vendor package works: the APIs the launcher and the training code call
#: (TASKDAPI 04 taskd.api; TFT 05 mindio_ttp.framework_ttp; ACP 02 mindio_acp; elastic_agent.md)
VENDOR_IMPORTS = {
    "taskd": "taskd.api",
    "mindio_ttp": "mindio_ttp.framework_ttp",
    "mindio_acp": "mindio_acp",
    "mindx_elastic": "mindx_elastic",
}
#: file systems that are shared storage (ASCEND_CACHE_PATH must be one: RTO 表10)
SHARED_FS = ("nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "dpc", "virtiofs")
#: where CANN installs when ASCEND_TOOLKIT_HOME is not set: ascend-toolkit/latest up to 8.3
#: (HA-CANN-INST), cann from 8.5 (HA-CANN-LAYOUT)
CANN_HOMES = ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest")


@dataclasses.dataclass
class Check:
    name: str
    status: str
    wanted: str
    found: str
    fix: str = ""


def _pip_style(version: str) -> bool:
    try:
        return not releases.is_adapter_style(Version(version))
    except VersionError:
        return False


def _version_check(name: str, wanted: Optional[str], found: Optional[str], required: bool, fix: str) -> Check:
    if found is None:
        status = FAIL if (required or wanted) else WARN
        return Check(name, status, wanted or "any", "not installed", fix)
    if wanted is None:
        return Check(name, OK, "any", found)
    if installed.same_version(wanted, found):
        return Check(name, OK, wanted, found)
    return Check(name, FAIL, wanted, found, "Install %s %s, or set the profile to what the image has." % (name, wanted))


#: a key=value record (CANN's install info, the driver's version.info) is a few hundred bytes
RECORD_MAX_BYTES = 64 << 10
#: /proc/self/mountinfo of a node with thousands of mounts is a few MB; only its start is read
MOUNTINFO_MAX_BYTES = 4 << 20


def key_values(path: str) -> Dict[str, str]:
    """The ``key=value`` lines of a small record (the bounded reader: a regular file of at most
    :data:`RECORD_MAX_BYTES`; bytes that are not UTF-8 are replaced). :class:`ResumableError` when it
    cannot be read, naming why."""
    text = read_text_lenient(path, "install record", RECORD_MAX_BYTES)
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def read_text_lenient(path: str, what: str, most: int) -> str:
    """The start of a regular file as text, undecodable bytes replaced (doctor reports, it does not
    refuse); :class:`ResumableError` for a FIFO, a device or a missing file."""
    return read_head(path, what=what, most=most, error=ResumableError, fix="").decode("utf-8", "replace")


def cann_version(environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(version, install.info path, why the first record found could not be read) of the CANN
    toolkit: $ASCEND_TOOLKIT_HOME, then the default homes."""
    homes = [environ[k] for k in ("ASCEND_TOOLKIT_HOME",) if environ.get(k)] + list(CANN_HOMES)
    unreadable: Optional[str] = None
    for home in homes:
        for info in sorted(glob.glob(os.path.join(glob.escape(home), "*-linux", "ascend_toolkit_install.info"))):
            try:
                version = key_values(info).get("version")
            except ResumableError as exc:
                unreadable = unreadable or str(exc)
                continue
            if version:
                return version, info, None
    return None, None, unreadable


def filesystem_of(path: str, mountinfo: str = "/proc/self/mountinfo") -> Optional[Tuple[str, str]]:
    """(mount point, file system type) holding ``path``, from mountinfo."""
    try:
        lines = read_text_lenient(mountinfo, "mount table", MOUNTINFO_MAX_BYTES).splitlines()
    except ResumableError:
        return None
    target = os.path.realpath(path)
    best: Optional[Tuple[str, str]] = None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, right.split()[0])
    return best


def _cache_check(path: str, mountinfo: str) -> Check:
    name = "compile cache"
    wanted = "%s writable, on shared storage" % path
    if not os.path.isdir(path):
        return Check(
            name, FAIL, wanted, "missing", "Mount the shared compile-cache volume at %s (the job template does)." % path
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".resumable-doctor-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return Check(name, FAIL, wanted, "not writable (%s)" % exc.strerror, "Give the training user write access.")
    fs = filesystem_of(path, mountinfo)
    if fs is None:
        return Check(name, WARN, wanted, "writable; file system unknown", "")
    point, kind = fs
    if kind in SHARED_FS or kind.startswith("fuse."):
        return Check(name, OK, wanted, "writable, %s at %s" % (kind, point))
    return Check(
        name,
        FAIL,
        wanted,
        "writable, but %s at %s is local" % (kind, point),
        "Put ASCEND_CACHE_PATH on shared storage (every node then reuses one cache; RTO 表10).",
    )


def python_check() -> Check:
    low, high = PYTHON_RANGE
    py = sys.version_info[:2]
    return Check(
        "python",
        OK if low <= py <= high else FAIL,
        "%d.%d-%d.%d" % (low + high),
        "%d.%d (%s)" % (py[0], py[1], sys.executable),
        "" if low <= py <= high else "Use a base image with Python %d.%d to %d.%d." % (low + high),
    )


def _run_py_check(run_py: str, wanted_line: Optional[str]) -> Check:
    """torch's run.py carries the plan's import line once and no other release's line."""
    try:
        text = read_run_py(run_py)
    except ResumableError as exc:
        return Check("run.py patch", FAIL, wanted_line or "none", "unreadable: %s" % exc, "Reinstall torch.")
    counts = {line: count_line(text, line) for line in C.RUNPY_IMPORTS_KNOWN}
    foreign = ["`%s` x%d" % (line, n) for line, n in counts.items() if n and line != wanted_line]
    if wanted_line:
        n = count_line(text, wanted_line)
        good = n == 1 and not foreign
        found = "`%s` x%d%s" % (wanted_line, n, (", also " + ", ".join(foreign)) if foreign else "")
        return Check(
            "run.py patch",
            OK if good else FAIL,
            "`%s` once" % wanted_line,
            found,
            "" if good else "Run `resumable image patch-torchrun` (the image recipe does).",
        )
    if foreign:
        return Check(
            "run.py patch",
            WARN,
            "none",
            ", ".join(foreign),
            "The plan uses no in-container agent; `resumable image patch-torchrun --undo` removes the line.",
        )
    return Check("run.py patch", OK, "none", "none")


class Container(NamedTuple):
    """What the checks look at: the job's plan, this container's environment, its mount table."""

    job: JobPlan
    environ: Mapping[str, str]
    mountinfo: str


def _python(c: Container) -> List[Check]:
    return [python_check()]


def _framework(c: Container) -> List[Check]:
    img = c.job.image
    if c.job.framework != "pytorch":
        return [
            _version_check(
                "mindspore",
                img.mindspore,
                installed.dist_version("mindspore"),
                True,
                "The base image must carry MindSpore.",
            )
        ]
    # a FrameworkPTAdapter release (6.0.RC3) names no pip version to compare with
    npu = img.torch_npu if img.torch_npu and _pip_style(img.torch_npu) else None
    return [
        _version_check("torch", img.torch, installed.dist_version("torch"), True, "The base image must carry torch."),
        _version_check(
            "torch_npu",
            npu,
            installed.dist_version("torch_npu"),
            img.torch_npu is not None,
            "The base image must carry torch_npu for Ascend NPUs.",
        ),
    ]


def _cann(c: Container) -> List[Check]:
    img = c.job.image
    cann, info, unreadable = cann_version(c.environ)
    check = _version_check("CANN", img.cann, cann, img.cann is not None, "Install the CANN toolkit in the base image.")
    if info:
        check.found += " (%s)" % info
    elif unreadable:
        check.status, check.found = FAIL, "unreadable: %s" % unreadable
    return [check]


def _launcher(c: Container) -> List[Check]:
    name = c.job.launcher.launcher
    exe = installed.find_command(name)
    fix = "" if exe else "The framework provides %s; install it in the image." % name
    return [Check("launcher", OK if exe else FAIL, name, exe or "not found", fix)]


def _wheel(wheel: WheelPlan) -> Check:
    module = VENDOR_IMPORTS.get(wheel.name, wheel.name)
    version = installed.dist_version(wheel.name)
    wanted = "%s %s, `import %s`" % (wheel.name, wheel.version or "", module)
    if version is None and installed.package_dir(wheel.name) is None:
        return Check(
            wheel.name,
            FAIL,
            wanted,
            "not installed",
            "Build the image with `resumable image context` (installs image.wheels).",
        )
    ok, output = installed.check_import(module)
    if not ok:
        return Check(wheel.name, FAIL, wanted, "import fails: %s" % output, "Reinstall the %s wheel." % wheel.name)
    if wheel.version and version and not installed.same_version(wheel.version, version):
        return Check(
            wheel.name,
            FAIL,
            wanted,
            "%s %s" % (wheel.name, version),
            "Install the wheel of the version the profile names.",
        )
    return Check(wheel.name, OK, wanted, "%s %s" % (wheel.name, version or "(no metadata)"))


def _wheels(c: Container) -> List[Check]:
    return [_wheel(wheel) for wheel in c.job.image.wheels]


def _run_py(c: Container) -> List[Check]:
    img = c.job.image
    run_py = installed.torch_run_py() if c.job.framework == "pytorch" else None
    if run_py is not None and os.path.lexists(run_py):
        return [_run_py_check(run_py, img.runpy_patch)]
    if c.job.framework == "pytorch" and img.runpy_patch:
        return [Check("run.py patch", FAIL, "`%s` once" % img.runpy_patch, "torch not installed")]
    return []


def _libtaskd(c: Container) -> List[Check]:
    if not c.job.launcher.ld_preload:
        return []
    lib = installed.libtaskd_path()
    if lib is None or not os.path.exists(lib):
        return [
            Check("libtaskd.so", FAIL, C.LIBTASKD_RELATIVE, lib or "taskd not installed", "Install the TaskD wheel.")
        ]
    if os.path.islink(lib) or not os.path.isfile(lib):
        fix = "TaskD loads the file itself; install the wheel as shipped."
        return [Check("libtaskd.so", WARN, "a regular file", "%s is a link" % lib, fix)]
    return [Check("libtaskd.so", OK, C.LIBTASKD_RELATIVE, lib)]


def _env_var(var: EnvVar, environ: Mapping[str, str]) -> Check:
    name = "env %s" % var.name
    have = environ.get(var.name)
    if var.value is None:
        fix = "" if have else "Inside a pod the job template sets it (%s)." % var.reason
        return Check(name, OK if have else WARN, "from %s" % var.field_path, have or "unset", fix)
    value = kube_expand(var.value, environ)[0]
    if have is None:
        return Check(name, OK, value, "unset (resumable launch exports it)")
    if have == value:
        return Check(name, OK, value, have)
    fix = "Something else sets %s; remove it (the plan's value: %s)." % (var.name, var.reason)
    return Check(name, FAIL, value, have, fix)


def _environment(c: Container) -> List[Check]:
    return [_env_var(var, c.environ) for var in plan_env(c.job)]


def _compile_cache(c: Container) -> List[Check]:
    if c.job.launcher.compile_mode != "cache":
        return []
    path = next((v.value for v in plan_env(c.job) if v.name == C.ENV_ASCEND_CACHE_PATH and v.value), None)
    return [_cache_check(path, c.mountinfo)] if path else []


def _run_user(c: Container) -> List[Check]:
    img = c.job.image
    name, wanted = "user %s" % img.user, "uid=gid=%d" % img.uid
    try:
        entry = pwd.getpwnam(img.user)
    except KeyError:
        return [Check(name, FAIL, wanted, "missing", "Create it with uid/gid %d (the image recipe does)." % img.uid)]
    good = entry.pw_uid == img.uid and entry.pw_gid == img.uid
    fix = "" if good else "Hosts and images must share one id (FAQ 337): fix the account."
    return [Check(name, OK if good else FAIL, wanted, "uid=%d gid=%d" % (entry.pw_uid, entry.pw_gid), fix)]


class Checker(NamedTuple):
    """One family of checks, as kubeadm's preflight ``Checker{Name(), Check()}``: its name and what it finds."""

    name: str
    check: Callable[[Container], List[Check]]


#: every family, in the order the table shows them
CHECKERS: Tuple[Checker, ...] = (
    Checker("python", _python),
    Checker("framework", _framework),
    Checker("CANN", _cann),
    Checker("launcher", _launcher),
    Checker("vendor packages", _wheels),
    Checker("run.py patch", _run_py),
    Checker("libtaskd.so", _libtaskd),
    Checker("environment", _environment),
    Checker("compile cache", _compile_cache),
    Checker("run user", _run_user),
)


def run_checks(job: JobPlan, environ: Mapping[str, str], mountinfo: str = "/proc/self/mountinfo") -> List[Check]:
    """Every check of :data:`CHECKERS` on this container, in order."""
    container = Container(job, environ, mountinfo)
    return [check for checker in CHECKERS for check in checker.check(container)]


def failed(checks: List[Check]) -> bool:
    return any(c.status == FAIL for c in checks)


def render_table(job: str, profile: str, checks: List[Check]) -> str:
    """The checks as a table, values with control characters and undecodable bytes escaped."""
    rows = [("CHECK", "STATUS", "WANTED", "FOUND")] + [
        (escape_controls(c.name), c.status.upper(), escape_controls(c.wanted), escape_controls(c.found)) for c in checks
    ]
    widths = [min(max(len(r[i]) for r in rows), 48) for i in range(3)]
    out = ["resumable doctor: job %s (profile %s)" % (escape_controls(job), escape_controls(profile))]
    for r in rows:
        out.append("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
    fixes = [c for c in checks if c.fix and c.status != OK]
    for c in fixes:
        out.append(escape_controls("%s %s: %s" % (c.status.upper(), c.name, c.fix)))
    n_fail = sum(1 for c in checks if c.status == FAIL)
    n_warn = sum(1 for c in checks if c.status == WARN)
    out.append("%d checks: %d failed, %d warnings" % (len(checks), n_fail, n_warn))
    return "\n".join(out) + "\n"


def to_json(job: str, profile: str, checks: List[Check]) -> Dict[str, object]:
    return {
        "job": job,
        "profile": profile,
        "ok": not failed(checks),
        "checks": [dataclasses.asdict(c) for c in checks],
    }
