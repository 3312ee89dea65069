"""Bad input, as an attacker or a tired user would write it (issue 7, section 2).

Every case runs ``python -m resumable`` as a subprocess with a timeout, so a hang fails its test
instead of blocking the suite, and asserts what the guide promises for every user mistake: exit 2,
one paragraph on stderr that names the input, no traceback, no "internal error", well under 5
seconds, and (for render) nothing left behind: no output directory, no staging directory, no parent
directory created on the way.

The classes: files that are not regular files (FIFO, device, directory, dangling link), oversized
files, deep nesting, alias bombs, 5,000-digit numbers, overflowing floats, bad tags, duplicate keys,
control characters, values of the right type but the wrong form (names, versions, paths, sizes,
quantities, environment names, image references), CRD sources that are not CRDs, and ``--out``
targets that must not be written or replaced.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

import pytest
import yaml
from conftest import EXAMPLES, ROOT

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"
#: The acceptance limit for one bad input (interpreter start-up included).
LIMIT_SECONDS = 5.0

VALID = 'cluster: {mindcluster: "7.3.0"}\nstorage: {storage_class: rwx}\njobs:\n  - name: a\n'
MARKER = ".resumable-output"


class Result(NamedTuple):
    code: int
    out: str
    err: str
    seconds: float


def resumable(*argv: str, cwd: Optional[Path] = None, timeout: float = 20.0) -> Result:
    env = dict(os.environ)
    env.pop("RESUMABLE_DEBUG", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "resumable", *argv],
            cwd=str(cwd or ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("resumable %s hung (no exit within %.0f s)" % (" ".join(argv)[:200], timeout))
    return Result(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def assert_user_error(res: Result, names: Sequence[str], fragments: Sequence[str] = ()) -> None:
    """Exit 2, one paragraph (one line) on stderr naming the input, nothing on stdout, fast."""
    assert res.code == 2, "exit %d\nstdout: %s\nstderr: %s" % (res.code, res.out[:2000], res.err[:2000])
    body = res.err.strip()
    assert body, "nothing on stderr"
    assert "Traceback" not in res.err and "internal error" not in res.err and "This is a bug" not in res.err
    assert len(body.splitlines()) == 1, "more than one paragraph:\n" + body[:3000]
    assert len(body) < 1500, "the message echoes too much (%d characters): %s..." % (len(body), body[:300])
    for name in names:
        assert name in body, "the message does not name %r: %s" % (name, body)
    for fragment in fragments:
        assert fragment in body, "%r not in: %s" % (fragment, body)
    assert res.out == "", res.out
    assert res.seconds < LIMIT_SECONDS, "took %.1f s" % res.seconds


def listing(directory: Path) -> List[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


# --- profiles --------------------------------------------------------------------------------------


class Case(NamedTuple):
    id: str
    #: writes the input into the directory and returns the path to hand to resumable
    make: Callable[[Path], str]
    #: what the message must contain besides the path
    fragments: Sequence[str]


def text_file(content: str, name: str = "profile.yaml") -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_text(content, encoding="utf-8")
        return str(tmp / name)

    return make


def bytes_file(content: bytes, name: str = "profile.yaml") -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_bytes(content)
        return str(tmp / name)

    return make


def fifo(tmp: Path) -> str:
    path = tmp / "profile.yaml"
    os.mkfifo(str(path))
    return str(path)


def directory(tmp: Path) -> str:
    (tmp / "profile.yaml").mkdir()
    return str(tmp / "profile.yaml")


def dangling(tmp: Path) -> str:
    (tmp / "profile.yaml").symlink_to(tmp / "missing.yaml")
    return str(tmp / "profile.yaml")


def sparse(size: int, name: str = "profile.yaml") -> Callable[[Path], str]:
    """A file of ``size`` bytes that takes no time or disk to make (a 50 MB profile)."""

    def make(tmp: Path) -> str:
        with open(str(tmp / name), "wb") as handle:
            handle.write(VALID.encode())
            handle.truncate(size)
        return str(tmp / name)

    return make


def padded(size: int) -> Callable[[Path], str]:
    """A valid profile followed by a comment: ``size`` bytes of real text."""
    line = "# " + "x" * 97 + "\n"
    return text_file(VALID + line * (size // len(line)))


def job(extra: str) -> str:
    """VALID with ``extra`` (YAML lines indented for the job mapping) added to the job."""
    return VALID + "".join("    %s\n" % line for line in extra.splitlines())


def nested(depth: int, open_: str, close: str) -> str:
    return 'cluster: {mindcluster: "7.3.0"}\njobs: ' + open_ * depth + close * depth + "\n"


BOMB = (
    'cluster: {mindcluster: "7.3.0"}\nstorage: {storage_class: rwx}\n'
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join("%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*" + chr(97 + i)] * 10)) for i in range(8))
    + "jobs:\n  - name: a\n"
)

DEVICE = "/dev/zero"

PROFILE_CASES = [
    Case("fifo", fifo, ["FIFO", "regular file"]),
    Case("dev-zero", lambda tmp: DEVICE, ["character device", "regular file"]),
    Case("directory", directory, ["directory"]),
    Case("dangling-symlink", dangling, ["symbolic link"]),
    Case("empty-path", lambda tmp: "", ["''", "empty"]),
    Case("missing", lambda tmp: str(tmp / "missing.yaml"), ["no such file"]),
    Case("not-utf8", bytes_file(b"cluster:\n  name: caf\xe9\n"), ["UTF-8", "0xe9"]),
    Case("2MB", padded(2 * 1024 * 1024), ["at most 256 KiB"]),
    Case("50MB", sparse(50 * 1024 * 1024), ["at most 256 KiB"]),
    Case("nested-lists-1000", text_file(nested(1000, "[", "]")), ["line 2", "deeper than"]),
    Case("nested-maps-1000", text_file(nested(1000, "{a: ", "}")), ["line 2", "deeper than"]),
    Case("nested-block-200", text_file(VALID + "".join("  " * i + "k:\n" for i in range(200))), ["deeper than"]),
    Case("alias-bomb", text_file(BOMB), ["alias"]),
    Case("recursive-alias", text_file(VALID + "x: &x [*x]\n"), ["recursive"]),
    Case("int-5000-digits", text_file(job("nodes: " + "9" * 5000)), ["line 5", "integer of 5000 characters"]),
    Case("int-too-large", text_file(job("nodes: " + "9" * 30)), ["jobs[0].nodes", "too large"]),
    Case("version-5000-digits", text_file(job('image: {torch: "%s"}' % ("1" * 5000))), ["jobs[0].image.torch"]),
    Case("float-overflow", text_file(job("budget: {compile_seconds: 1.0e+400}")), ["compile_seconds", "finite"]),
    Case(
        "float-huge",
        text_file(job("budget: {compile_seconds: 1.0e+308, pod_start_seconds: 1.0e+308}")),
        ["value-range", "compile_seconds"],
    ),
    Case("tag-int", text_file(job("nodes: !!int abc")), ["line 5", "'abc' is not an integer"]),
    Case("tag-bool", text_file(job("ranktable: !!bool maybe")), ["line 5", "'maybe' is not a boolean"]),
    Case("tag-float", text_file(job("budget: {step_seconds: !!float fast}")), ["'fast' is not a number"]),
    Case("tag-timestamp", text_file(job("script: !!timestamp yesterday")), ["not a timestamp"]),
    Case("tag-python", text_file(job("script: !!python/object/apply:os.system [id]")), ["python/object"]),
    Case("tag-unknown", text_file(job("script: !secret x")), ["!secret"]),
    Case("duplicate-top-key", text_file(VALID + "jobs:\n  - name: b\n"), ["line 5", "duplicate key 'jobs'"]),
    Case("duplicate-job-key", text_file(job("nodes: 2\nnodes: 4")), ["duplicate key 'nodes'"]),
    Case("duplicate-env-key", text_file(job("env: {A: '1', A: '2'}")), ["duplicate key 'A'"]),
    Case("raw-control-character", bytes_file(VALID.encode() + b"    script: a\x07b\n"), ["unacceptable character"]),
    Case("escaped-control-character", text_file(job('script: "train\\x1b[2J.py"')), ["jobs[0].script", "control"]),
    Case("control-in-arg", text_file(job('script_args: ["--x=\\r"]')), ["script_args[0]", "control"]),
    Case("name-trailing-newline", text_file(job('namespace: "team\\n"')), ["jobs[0].namespace"]),
    Case(
        "cluster-name-newline",
        text_file('cluster: {mindcluster: "7.3.0", name: "a\\n"}\nstorage: {storage_class: rwx}\njobs: [{name: a}]\n'),
        ["cluster.name"],
    ),
    Case("version-leading-space", text_file(job('image: {torch_npu: " 2.1.0.post8"}')), ["torch_npu", "white space"]),
    Case(
        "version-trailing-space",
        text_file('cluster: {mindcluster: "7.3.0 "}\nstorage: {storage_class: rwx}\njobs: [{name: a}]\n'),
        ["cluster.mindcluster", "white space"],
    ),
    Case("env-key-equals", text_file(job("env: {'A=B': x}")), ["jobs[0].env", "'A=B'", "variable name"]),
    Case("env-key-empty", text_file(job("env: {'': x}")), ["jobs[0].env", "empty"]),
    Case("env-key-null", text_file(job("env: {null: x}")), ["jobs[0].env", "null"]),
    Case("env-key-number", text_file(job("env: {1: x}")), ["jobs[0].env", "string"]),
    Case("env-value-null", text_file(job("env: {A: null}")), ["jobs[0].env.A", "empty"]),
    Case("size-empty", text_file(VALID.replace("rwx}", "rwx, cache_size: ''}")), ["storage.cache_size", "empty"]),
    Case(
        "size-not-quantity",
        text_file(VALID.replace("rwx}", "rwx, checkpoint_size: 2 TB}")),
        ["storage.checkpoint_size", "quantity"],
    ),
    Case("size-zero", text_file(VALID.replace("rwx}", "rwx, checkpoint_size: '0'}")), ["checkpoint_size", "zero"]),
    Case(
        "cpu-not-quantity",
        text_file(VALID + "scheduler: {resources: {clusterd: {cpu: eight}}}\n"),
        ["scheduler.resources.clusterd.cpu", "quantity"],
    ),
    Case(
        "memory-negative",
        text_file(VALID + "scheduler: {resources: {noded: {memory: -1Gi}}}\n"),
        ["scheduler.resources.noded.memory", "negative"],
    ),
    Case(
        "unknown-component",
        text_file(VALID + "scheduler: {resources: {volcano-schedular: {cpu: '1'}}}\n"),
        ["scheduler.resources", "volcano-schedular", "volcano-scheduler"],
    ),
    Case(
        "unknown-resource",
        text_file(VALID + "scheduler: {resources: {clusterd: {cpus: '1'}}}\n"),
        ["scheduler.resources.clusterd", "cpus"],
    ),
    Case(
        "nfs-path-empty", text_file(VALID.replace("storage_class: rwx", "nfs: {server: nfs, path: ''}")), ["nfs.path"]
    ),
    Case(
        "nfs-server-space",
        text_file(VALID.replace("storage_class: rwx", "nfs: {server: 'nfs server', path: /x}")),
        ["nfs.server"],
    ),
    Case("cache-path-relative", text_file(job("compile: {cache_path: op_cache}")), ["cache_path", "absolute"]),
    Case("checkpoint-path-dotdot", text_file(job("checkpoint: {path: /job/../etc}")), ["checkpoint.path", "'..'"]),
    Case("checkpoint-path-root", text_file(job("checkpoint: {path: /}")), ["checkpoint.path", "root"]),
    Case("script-empty", text_file(job("script: ''")), ["jobs[0].script", "empty"]),
    Case("image-spaces", text_file(job("image: {name: 'registry/app:1 --privileged'}")), ["image.name", "image"]),
    Case(
        "watchdog-unquoted-on",
        text_file(job("recovery: {watchdog: on}")),
        ["jobs[0].recovery.watchdog", "boolean true", "quote it", '"on"'],
    ),
    Case("huge-unknown-key", text_file(VALID + "? " + ("k" * 200_000) + "\n: 1\n"), ["unknown key", "characters)"]),
    Case("huge-version", text_file(job("image: {cann: '%s'}" % ("8." * 100_000 + "0"))), ["image.cann"]),
    Case("huge-enum-value", text_file(job("launcher: '%s'" % ("x" * 200_000))), ["jobs[0].launcher", "..."]),
]


@pytest.mark.parametrize("case", PROFILE_CASES, ids=[c.id for c in PROFILE_CASES])
def test_bad_profile(case: Case, tmp_path: Path) -> None:
    path = case.make(tmp_path)
    res = resumable("plan", path, cwd=tmp_path)
    assert_user_error(res, [path] if path else [], case.fragments)


@pytest.mark.parametrize("case_id", ["fifo", "dev-zero", "50MB", "alias-bomb", "duplicate-top-key", "tag-bool"])
def test_validate_reports_them_the_same_way(case_id: str, tmp_path: Path) -> None:
    case = next(c for c in PROFILE_CASES if c.id == case_id)
    path = case.make(tmp_path)
    res = resumable("validate", path, cwd=tmp_path)
    assert_user_error(res, ["INVALID " + path], case.fragments)


# --- render: CRD sources, image overrides ----------------------------------------------------------


def crd_file(edit: Callable[[Dict[str, Any]], None]) -> Callable[[Path], str]:
    """The AscendJob CRD (well formed) changed by ``edit``, as a CRD source file."""

    def make(tmp: Path) -> str:
        from resumable.manifests.crds import ascendjob_crd

        crd = ascendjob_crd()
        edit(crd)
        return text_file(yaml.safe_dump(crd))(tmp)

    return make


def _kind_pod(crd: Dict[str, Any]) -> None:
    crd["spec"]["names"]["kind"] = "Pod"


def _unrelated(crd: Dict[str, Any]) -> None:
    crd["metadata"]["name"] = "widgets.example.com"
    crd["spec"]["group"] = "example.com"
    crd["spec"]["names"] = {"kind": "Widget", "plural": "widgets"}


CRD_CASES = [
    Case("fifo", fifo, ["FIFO", "regular file"]),
    Case("dev-zero", lambda tmp: DEVICE, ["character device"]),
    Case("directory", directory, ["directory"]),
    Case("not-utf8", bytes_file(b"kind: CustomResourceDefinition\nx: \xff\n"), ["UTF-8"]),
    Case("too-large", sparse(9 * 1024 * 1024), ["at most 8 MiB"]),
    Case("a-list", text_file("- kind: CustomResourceDefinition\n"), ["document 1 is a list"]),
    Case("a-scalar", text_file("just text\n"), ["document 1", "not a Kubernetes object"]),
    Case("no-crd", text_file("kind: ServiceAccount\nmetadata: {name: x}\n"), ["no CustomResourceDefinition"]),
    Case(
        "alias-bomb",
        text_file(
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*" + chr(97 + i)] * 10)) for i in range(9)
            )
        ),
        ["alias"],
    ),
    Case("deep", text_file("x: " + "[" * 5000 + "]" * 5000 + "\n"), ["deeper than"]),
    Case("duplicate-key", text_file("kind: CustomResourceDefinition\nkind: Service\n"), ["duplicate key 'kind'"]),
    Case(
        "garbage-crd",
        text_file(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            "metadata: {name: ascendjobs.mindxdl.gitee.com}\nspec: garbage\n"
        ),
        ["ascendjobs.mindxdl.gitee.com", "spec"],
    ),
    Case(
        "metadata-not-mapping",
        text_file("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: 5\n"),
        ["metadata.name"],
    ),
    Case("wrong-kind", crd_file(_kind_pod), ["ascendjobs.mindxdl.gitee.com", "kind 'Pod'", "AscendJob"]),
    Case("unrelated-crds", crd_file(_unrelated), ["widgets.example.com", "none of the CRDs in the CRD source"]),
]


@pytest.mark.parametrize("case", CRD_CASES, ids=[c.id for c in CRD_CASES])
def test_bad_crd_source(case: Case, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    source = case.make(work)
    before = listing(tmp_path)
    res = resumable("render", str(EXAMPLE), "--out", str(tmp_path / "out" / "stack"), "--crd-source", source)
    assert_user_error(res, [source], case.fragments)
    assert listing(tmp_path) == before, "render left something behind"


IMAGE_CASES = [
    ("space", "clusterd=registry/clusterd:v7.3.0 --privileged", ["clusterd", "not an image reference"]),
    ("newline", "clusterd=registry/clusterd:v7.3.0\nevil", ["clusterd", "\\n", "not an image reference"]),
    ("upper-case", "clusterd=Registry.example.com/ClusterD:1", ["not an image reference"]),
    ("empty-ref", "clusterd=", ["COMPONENT=IMAGE"]),
    ("no-equals", "clusterd", ["COMPONENT=IMAGE"]),
    ("unknown-component", "clusterdd=reg/x:1", ["unknown component 'clusterdd'"]),
    ("huge", "clusterd=" + "a" * 100_000, ["clusterd", "characters"]),
]


@pytest.mark.parametrize("item, fragments", [c[1:] for c in IMAGE_CASES], ids=[c[0] for c in IMAGE_CASES])
def test_bad_image_override(item: str, fragments: List[str], tmp_path: Path) -> None:
    res = resumable("render", str(EXAMPLE), "--out", str(tmp_path / "stack"), "--image", item)
    assert_user_error(res, [], fragments)
    assert listing(tmp_path) == []


# --- render and docs: output targets ---------------------------------------------------------------


def out_file(tmp: Path) -> str:
    (tmp / "notes.txt").write_text("mine")
    return str(tmp / "notes.txt")


def out_dangling(tmp: Path) -> str:
    (tmp / "stack").symlink_to(tmp / "elsewhere")
    return str(tmp / "stack")


def out_link_to_dir(tmp: Path) -> str:
    (tmp / "real").mkdir()
    (tmp / "stack").symlink_to(tmp / "real")
    return str(tmp / "stack")


def out_unrelated(tmp: Path) -> str:
    (tmp / "home").mkdir()
    (tmp / "home" / "thesis.tex").write_text("years of work")
    (tmp / "home" / "old.yaml").write_text("kind: Secret\n")
    return str(tmp / "home")


def out_under_file(tmp: Path) -> str:
    (tmp / "notes.txt").write_text("mine")
    return str(tmp / "notes.txt" / "stack")


OUT_CASES = [
    Case("existing-file", out_file, ["not a directory"]),
    Case("empty", lambda tmp: "", ["--out ''", "empty"]),
    Case("dangling-symlink", out_dangling, ["symbolic link"]),
    Case("symlink-to-directory", out_link_to_dir, ["symbolic link"]),
    Case("unrelated-directory", out_unrelated, ["did not write", MARKER]),
    Case("under-a-file", out_under_file, ["Not a directory"]),
    Case("unwritable-proc", lambda tmp: "/proc/resumable-test/stack", ["cannot be created"]),
    Case("current-directory", lambda tmp: ".", ["current directory"]),
    Case("root", lambda tmp: "/", ["current directory or one of its parents"]),
]


@pytest.mark.parametrize("case", OUT_CASES, ids=[c.id for c in OUT_CASES])
def test_bad_render_target(case: Case, tmp_path: Path) -> None:
    target = case.make(tmp_path)
    before = {p: (tmp_path / p).read_bytes() if (tmp_path / p).is_file() else None for p in listing(tmp_path)}
    res = resumable("render", str(EXAMPLE), "--out", target, cwd=tmp_path)
    assert_user_error(res, ["--out " + repr(target)], case.fragments)
    after = {p: (tmp_path / p).read_bytes() if (tmp_path / p).is_file() else None for p in listing(tmp_path)}
    assert after == before, "render changed or left something"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes regardless of mode")
def test_render_into_a_read_only_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        res = resumable("render", str(EXAMPLE), "--out", str(locked / "stack"))
        assert_user_error(res, [str(locked / "stack")], ["cannot be written"])
        assert listing(locked) == []
    finally:
        locked.chmod(0o700)


DOCS_CASES = [
    Case("existing-file", out_file, ["not a directory"]),
    Case("empty", lambda tmp: "", ["--out ''", "empty"]),
    Case("dangling-symlink", out_dangling, ["symbolic link"]),
    Case("under-a-file", out_under_file, ["Not a directory"]),
    Case("unwritable-proc", lambda tmp: "/proc/resumable-test/docs", ["cannot be created"]),
]


@pytest.mark.parametrize("case", DOCS_CASES, ids=[c.id for c in DOCS_CASES])
def test_bad_docs_target(case: Case, tmp_path: Path) -> None:
    target = case.make(tmp_path)
    before = listing(tmp_path)
    res = resumable("docs", "--out", target, cwd=tmp_path)
    assert_user_error(res, ["--out " + repr(target)], case.fragments)
    assert listing(tmp_path) == before


def _docs_page(kind: str) -> Callable[[Path], str]:
    """A docs directory whose rules.md is a FIFO, a link to /dev/zero, a directory or not UTF-8."""

    def make(tmp: Path) -> str:
        page = tmp / "docs" / "rules.md"
        page.parent.mkdir()
        if kind == "fifo":
            os.mkfifo(str(page))
        elif kind == "dev-zero":
            page.symlink_to(DEVICE)
        else:
            page.mkdir()
        return str(page)

    return make


@pytest.mark.parametrize(
    "kind, fragment", [("fifo", "FIFO"), ("dev-zero", "character device"), ("directory", "directory")]
)
@pytest.mark.parametrize("check", [True, False], ids=["check", "write"])
def test_docs_never_reads_or_replaces_a_page_that_is_no_file(
    tmp_path: Path, kind: str, fragment: str, check: bool
) -> None:
    """The generated pages are read through the bounded reader: a FIFO named rules.md hung
    ``docs --check``, a link to /dev/zero was read for ever. Neither is replaced by ``docs``."""
    page = _docs_page(kind)(tmp_path)
    before = listing(tmp_path)
    res = resumable("docs", "--out", str(tmp_path / "docs"), *(["--check"] if check else []), cwd=tmp_path)
    assert_user_error(res, [page], [fragment])
    assert listing(tmp_path) == before


def test_docs_check_calls_a_page_that_is_not_utf8_out_of_date(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_bytes(b"caf\xe9\n")
    res = resumable("docs", "--out", str(tmp_path / "docs"), "--check", cwd=tmp_path)
    assert res.code == 2 and "out of date" in res.err and "rules.md" in res.err, res
    assert resumable("docs", "--out", str(tmp_path / "docs"), cwd=tmp_path).code == 0
    assert resumable("docs", "--out", str(tmp_path / "docs"), "--check", cwd=tmp_path).code == 0


# --- render safety ------------------------------------------------------------------------------------


def test_dotdot_in_out_does_not_create_the_missing_directory(tmp_path: Path) -> None:
    res = resumable("render", str(EXAMPLE), "--out", "a/../b", cwd=tmp_path)
    assert res.code == 0, res.err
    assert sorted(os.listdir(tmp_path)) == ["b"]
    assert (tmp_path / "b" / MARKER).is_file()


def test_render_replaces_only_its_own_output(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    assert resumable("render", str(EXAMPLE), "--out", str(out)).code == 0
    first = set(os.listdir(out))
    (out / "000-stale.yaml").write_text("kind: Stale\n")
    assert resumable("render", str(EXAMPLE), "--out", str(out)).code == 0
    assert set(os.listdir(out)) == first
    assert sorted(os.listdir(tmp_path)) == ["stack"]
    (out / MARKER).unlink()  # no longer ours
    res = resumable("render", str(EXAMPLE), "--out", str(out))
    assert_user_error(res, [str(out)], ["did not write"])
    assert set(os.listdir(out)) == first - {MARKER}


def test_a_failed_render_leaves_nothing(tmp_path: Path) -> None:
    """A render that fails after the target was checked (here: an invalid CRD source) creates
    neither the output directory nor its missing parents."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: ServiceAccount\n")
    res = resumable("render", str(EXAMPLE), "--out", str(tmp_path / "deep" / "er" / "stack"), "--crd-source", str(bad))
    assert res.code == 2
    assert listing(tmp_path) == ["bad.yaml"]


# A render whose writing stalls (os.chmod of the staging directory sleeps), so that a signal
# arrives while the staging directory exists.
SLOW_RENDER = """
import os, sys, time
real_chmod = os.chmod
def slow_chmod(*args, **kwargs):
    time.sleep(60)
    return real_chmod(*args, **kwargs)
os.chmod = slow_chmod
from resumable.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_render(tmp_path: Path, signum: int) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "stack"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RENDER, "render", str(EXAMPLE), "--out", str(out)],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a run started in the background of a shell without job control inherits SIGINT ignored,
        # and Python then installs no KeyboardInterrupt handler: give the child Ctrl-C's default
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 20
        while not [p for p in tmp_path.iterdir() if p.name.startswith(".stack.") and p.name.endswith(".tmp")]:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no staging directory appeared"
            time.sleep(0.02)
        proc.send_signal(signum)
        try:
            stdout, stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            pytest.fail(
                "no exit within 20 s of signal %d; left: %s; stderr: %s" % (signum, os.listdir(tmp_path), stderr)
            )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 130)])
def test_an_interrupted_render_cleans_up(tmp_path: Path, signum: int, code: int) -> None:
    assert resumable("render", str(EXAMPLE), "--out", str(tmp_path / "stack")).code == 0
    before = {str(p.relative_to(tmp_path)): p.read_bytes() for p in (tmp_path / "stack").rglob("*") if p.is_file()}
    res = _interrupted_render(tmp_path, signum)
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert sorted(os.listdir(tmp_path)) == ["stack"], "staging directory left behind"
    after = {str(p.relative_to(tmp_path)): p.read_bytes() for p in (tmp_path / "stack").rglob("*") if p.is_file()}
    assert after == before


def test_the_next_render_removes_what_a_killed_render_left(tmp_path: Path) -> None:
    res = _interrupted_render(tmp_path, signal.SIGKILL)
    assert res.returncode == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].endswith(".tmp"), left
    # someone else's directory that merely looks like ours stays
    (tmp_path / ".stack.abcdefgh.tmp").mkdir()
    (tmp_path / ".stack.abcdefgh.tmp" / "keep.txt").write_text("not ours")
    assert resumable("render", str(EXAMPLE), "--out", str(tmp_path / "stack")).code == 0
    assert sorted(os.listdir(tmp_path)) == [".stack.abcdefgh.tmp", "stack"]
