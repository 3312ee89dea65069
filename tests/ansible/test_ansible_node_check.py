"""A converged re-run reads a node once (module ascend_node_check) and changes nothing, and resumable_install runs
the node-side plan (and doctor) only when the package, the profile or the node changed.

The check's pieces are run in this process against files in tmp_path; resumable_install is run by
ansible-playbook on this machine (local connection) with its node paths under tmp_path, four times: fresh (plans
on the node), again (reads once, plans nothing, changes nothing), with the profile changed, and with another
package (both plan again)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from cluster.fixtures import Plane, StartPlane, controlplane
from conftest import FIXTURES, ROOT
from role_code import PLAYBOOK, ROLES, playbook_env, plugin

check = plugin("modules", "ascend_node_check")
ports = plugin("module_utils", "ascend_ports")
storage = plugin("filter", "shared_storage")

BUNDLE = ROLES / "resumable_install" / "files" / "bundle.py"


def test_paths_and_checksums_report_every_difference(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o750)
    os.chmod(tmp_path / "d", 0o750)
    (tmp_path / "f").write_text("x\n")
    me = check._name(__import__("pwd").getpwuid, os.getuid())
    wanted = [
        {"path": str(tmp_path / "d"), "state": "directory", "owner": me, "mode": "0750"},
        {"path": str(tmp_path / "f"), "state": "file"},
        {"path": str(tmp_path / "gone"), "state": "absent"},
    ]
    assert check.path_differences(wanted) == []
    wanted[0]["mode"] = "0755"
    wanted.append({"path": str(tmp_path / "missing"), "state": "directory"})
    wanted.append({"path": str(tmp_path / "f"), "state": "absent"})
    assert check.path_differences(wanted) == [
        "%s has mode 0750, not 0755" % (tmp_path / "d"),
        "%s is missing, not a directory" % (tmp_path / "missing"),
        "%s exists" % (tmp_path / "f"),
    ]
    digest = hashlib.sha256(b"x\n").hexdigest()
    assert check.checksum_differences([{"path": str(tmp_path / "f"), "sha256": digest}]) == []
    assert check.checksum_differences([{"path": str(tmp_path / "nothing"), "sha256": None}]) == []
    assert check.checksum_differences([{"path": str(tmp_path / "f"), "sha256": "0" * 64}]) == [
        "%s is different (sha256 %s)" % (tmp_path / "f", digest)
    ]


def test_accounts_that_differ_in_any_id_or_membership_are_a_difference() -> None:
    root = {"name": "root", "uid": 0, "gid": 0}
    assert check.account_differences([root], [{"name": "root", "gid": 0}]) == []
    assert check.account_differences([dict(root, uid=5)], []) == ["user root is not 5:0"]
    assert check.account_differences([], [{"name": "root", "gid": 7}]) == ["group root has gid 0, not 7"]
    assert check.account_differences([], [{"name": "no-such-group-x", "gid": 7}]) == [
        "group no-such-group-x is missing"
    ]
    assert check.account_differences([dict(root, groups=["no-such-group-x"])], []) == [
        "user root is not a member of no-such-group-x"
    ]


def test_fstab_and_mounts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/etc/fstab": "# comment\nnfs:/export/ranktable /user/mindx-dl/ranktable nfs rw,hard,_netdev 0 0\n",
        "/proc/self/mountinfo": "36 35 98:0 / /mnt\\040space rw,noatime master:1 - nfs srv:/x rw\n",
    }
    monkeypatch.setattr(check, "read_text", lambda path: files.get(path))
    line = "nfs:/export/ranktable /user/mindx-dl/ranktable nfs rw,hard,_netdev 0 0"
    assert check.mount_differences([{"path": "/user/mindx-dl/ranktable", "line": line}], []) == []
    assert check.mount_differences([{"path": "/user/mindx-dl/ranktable", "line": line + "x"}], []) != []
    assert check.mounted() == {"/mnt space": "srv:/x"}
    mounted = {"path": "/mnt space", "source": "srv:/x"}
    assert check.mount_differences([], [mounted]) == []
    # not mounted is accepted where the role does not mount (shared_storage_mount: false), something else never
    assert check.mount_differences([], [{"path": "/r", "source": "srv:/y", "required": False}]) == []
    assert check.mount_differences([], [{"path": "/r", "source": "srv:/y", "required": True}]) == [
        "/r has nothing mounted, wanted srv:/y"
    ]
    assert check.mount_differences([], [dict(mounted, source="srv:/y", required=False)]) == [
        "/mnt space has srv:/x mounted, wanted srv:/y"
    ]


def test_reserved_ports_are_judged_as_the_module_that_writes_them(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    own = tmp_path / "sysctl.d" / "90-ascend-resumable.conf"
    own.parent.mkdir()
    proc.write_text("30000-30005\n")
    want = ports.desired(["9601", "9602"], str(own), str(proc), [str(own.parent)])
    assert want["value"] == "9601-9602,30000-30005" and want["file_changed"] and want["live_changed"]
    own.write_text(want["content"])
    proc.write_text(want["value"] + "\n")
    again = ports.desired(["9601", "9602"], str(own), str(proc), [str(own.parent)])
    assert not again["file_changed"] and not again["live_changed"]


def test_job_directories_are_compared_by_uid_and_gid(tmp_path: Path) -> None:
    """The plan gives the job directories numeric ids (storage.nfs owner/group 65534, which Debian names nobody):
    a number is compared with the id, so a converged management node shows no difference (and shared_storage's
    apply.yml does not run), a name still with the name."""
    job = tmp_path / "training" / "gpt" / "checkpoints"
    job.mkdir(parents=True)
    os.chmod(job, 0o775)
    uid, gid = os.getuid(), os.getgid()
    plan_dir = {"path": str(job), "owner": uid, "group": gid, "mode": "0775", "volume": "gpt-ckpt", "namespace": "t"}
    wanted = storage.expected([], False, [], {}, [plan_dir])
    assert wanted["paths"] == [{"path": str(job), "state": "directory", "owner": uid, "group": gid, "mode": "0775"}]
    assert check.path_differences(wanted["paths"]) == []
    names = check._name(__import__("pwd").getpwuid, uid), check._name(__import__("grp").getgrgid, gid)
    assert check.path_differences([dict(wanted["paths"][0], owner=names[0], group=names[1])]) == []
    assert check.path_differences([dict(wanted["paths"][0], owner=str(uid))]) == []
    assert check.path_differences([dict(wanted["paths"][0], owner=uid + 4321, group=gid + 4321, mode="0770")]) == [
        "%s is owned by %s, not %d" % (job, names[0], uid + 4321),
        "%s has group %s, not %d" % (job, names[1], gid + 4321),
        "%s has mode 0775, not 0770" % job,
    ]


class _Node:
    """What write_differences asks of AnsibleModule, run on this machine."""

    def __init__(self, check_mode: bool = False) -> None:
        self.check_mode = check_mode
        self.commands: List[List[str]] = []

    def get_bin_path(self, name: str) -> Any:
        return shutil.which(name)

    def run_command(self, argv: List[str]) -> Tuple[int, str, str]:
        self.commands.append(argv)
        run = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        return run.returncode, run.stdout, run.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the write test changes uid (run as root, as CI does)")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
def test_the_write_test_of_a_job_directory_runs_as_its_uid_and_gid() -> None:
    with tempfile.TemporaryDirectory(prefix="node-check-", dir="/tmp") as top:
        os.chmod(top, 0o755)  # pytest's tmp_path is under a 0700 directory the squashed uid cannot enter
        writable, refused = Path(top) / "ckpt", Path(top) / "op-cache"
        writable.mkdir(mode=0o775)
        refused.mkdir(mode=0o755)
        os.chown(writable, 65534, 65534)
        ids = [{"path": str(d), "owner": 65534, "group": 65534} for d in (writable, refused)]
        node = _Node()
        found = check.write_differences(node, {"users": [], "dirs": [], "ids": ids})
        assert len(found) == 1 and found[0].startswith("uid 65534 cannot write to %s: " % refused), found
        assert [c[1:4] for c in node.commands] == [["--reuid=65534", "--regid=65534", "--clear-groups"]] * 2
        assert os.listdir(writable) == [] and os.listdir(refused) == []  # the probe was removed
        assert check.write_differences(_Node(check_mode=True), {"ids": ids}) == []


def _nodes(profile: Path) -> Dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "resumable", "plan", str(profile), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return dict(json.loads(out.stdout)["nodes"])


def _install(tmp_path: Path, profile: Path, package: Dict[str, str]) -> Dict[str, Any]:
    """resumable_install on this machine (local connection, node paths under tmp_path/node); returns whether the
    node-side plan ran, whether anything changed, and the node's check."""
    node = tmp_path / "node"
    (node / "bin").mkdir(parents=True, exist_ok=True)  # /usr/local/bin is there on every node
    out = tmp_path / "out.json"
    play = [
        {
            "name": "resumable_install on this machine",
            "hosts": "n1",
            "gather_facts": False,
            "vars": {
                "ascend_plan_nodes": _nodes(profile),
                "ascend_plan_profile": str(profile),
                "resumable_install_package": package,
                "resumable_install_dir": str(node / "lib"),
                "resumable_install_bin": str(node / "bin" / "resumable"),
                "resumable_install_python": sys.executable,
                # a package every Debian has, so no apt run is needed here
                "resumable_install_yaml_packages": {"Debian": ["dpkg"], "RedHat": ["rpm"], "Suse": ["rpm"]},
                "resumable_install_doctor": False,
                "resumable_install_roles": ["compute"],
            },
            "tasks": [
                {
                    "name": "The role",
                    "ansible.builtin.include_role": {"name": "ascend_resumable.npu.resumable_install"},
                },
                {
                    "name": "Record",
                    "changed_when": False,
                    "ansible.builtin.copy": {
                        "dest": str(out),
                        "mode": "0644",
                        "content": "{{ {'planned': resumable_install_node_plan is defined,"
                        " 'differences': resumable_install_state.differences} | to_json }}",
                    },
                },
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "hosts.yml").write_text(
        yaml.safe_dump(
            {"all": {"hosts": {"n1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
        )
    )
    out.unlink(missing_ok=True)
    env = playbook_env(tmp_path, "%s:%s" % (ROOT / "collections", ROOT), HOME=str(tmp_path / "home"))
    argv = [str(PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")]
    # the node-side profile path is a role var: only extra vars override it
    argv += ["-e", "resumable_install_node_profile=%s" % (node / "etc" / "profile.yaml")]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0 and out.exists(), run.stdout + run.stderr
    recap = [line for line in run.stdout.splitlines() if line.startswith("n1 ")]
    result = dict(json.loads(out.read_text()))
    result["changed"] = int(recap[-1].split("changed=")[1].split()[0])
    return result


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")
@pytest.mark.skipif(os.geteuid() != 0, reason="the role installs root-owned files (run as root, as CI does)")
def test_the_node_side_plan_runs_only_when_the_package_or_the_profile_changed(tmp_path: Path) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text((FIXTURES / "profiles" / "site.yaml").read_text())
    # the default package: bundled from this checkout (the collection is used in place)
    fresh = _install(tmp_path, profile, {})
    assert fresh["planned"] and fresh["changed"] > 0, fresh
    again = _install(tmp_path, profile, {})
    assert not again["planned"] and again["changed"] == 0 and again["differences"] == [], again
    assert (tmp_path / "node" / "lib" / "verified").is_file()
    # the profile changed (a comment is enough: its bytes are what the node keeps)
    profile.write_text(profile.read_text() + "# edited\n")
    edited = _install(tmp_path, profile, {})
    assert edited["planned"] and edited["changed"] > 0, edited
    assert not _install(tmp_path, profile, {})["planned"]
    # another package (the inventory names one, with its checksum): the same code in another zip
    other = tmp_path / "resumable-other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        for path in sorted((ROOT / "resumable").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, str(path.relative_to(ROOT)))
    package = {"src": str(other), "checksum": "sha256:" + hashlib.sha256(other.read_bytes()).hexdigest()}
    swapped = _install(tmp_path, profile, package)
    assert swapped["planned"] and swapped["changed"] > 0, swapped
    assert hashlib.sha256((tmp_path / "node" / "lib" / "resumable.pyz").read_bytes()).hexdigest() in package["checksum"]
    done = _install(tmp_path, profile, package)
    assert not done["planned"] and done["changed"] == 0, done


def test_the_shipped_wheel_is_taken_only_with_its_checksum(tmp_path: Path) -> None:
    shipped = tmp_path / "wheel"
    shipped.mkdir()
    wheel = shipped / "ascend_resumable-0.0.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    profile = tmp_path / "p.yaml"
    profile.write_text("x: 1\n")

    def bundle() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(BUNDLE), "--profile", str(profile), "--shipped", str(shipped)]
        argv += ["--source", str(ROOT), "--cache", str(tmp_path / "cache")]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    assert "has no checksum file" in bundle().stderr
    (shipped / (wheel.name + ".sha256")).write_text("0" * 64 + "  " + wheel.name + "\n")
    assert "the wheel is damaged" in bundle().stderr
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (shipped / (wheel.name + ".sha256")).write_text(digest + "  " + wheel.name + "\n")
    found = json.loads(bundle().stdout)
    assert found["src"] == str(wheel) and found["sha256"] == digest and found["origin"] == "shipped with the collection"
    assert found["profile_sha256"] == hashlib.sha256(b"x: 1\n").hexdigest()
    # no shipped wheel: the checkout, bundled the same way every time (deterministic bytes)
    wheel.unlink()
    first, second = json.loads(bundle().stdout), json.loads(bundle().stdout)
    assert first["sha256"] == second["sha256"] and first["origin"].startswith("bundled from the checkout")


def _kubectl_wrapper(plane: Plane, tmp_path: Path) -> Tuple[Path, Path]:
    """A wrapper of the control plane's real kubectl that records each call (the arguments after the kubeconfig
    the module passes) in a log; returns (wrapper, log)."""
    log = tmp_path / "kubectl.log"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(
        "#!/bin/bash\n"
        'args=("$@"); [ "${args[0]#--kubeconfig=}" != "${args[0]}" ] && args=("${args[@]:1}")\n'
        'echo "${args[*]}" >>%s\n'
        'exec %s "$@"\n' % (log, plane.bins["kubectl"])
    )
    wrapper.chmod(0o755)
    return wrapper, log


def _labels(
    tmp_path: Path, plane: Plane, kubectl: Path, nodes: Dict[str, Dict[str, str]], check: bool = False
) -> Dict[str, Any]:
    """ascend_node_labels for ``nodes`` run by `ansible localhost -m` with ``kubectl`` and the plane's kubeconfig."""
    args = json.dumps({"nodes": nodes, "kubectl": str(kubectl), "kubeconfig": str(plane.kubeconfig)})
    argv = [str(Path(str(PLAYBOOK)).parent / "ansible"), "localhost", "-m", "ascend_resumable.npu.ascend_node_labels"]
    argv += ["-a", args, "-o"] + (["--check"] if check else [])
    env = playbook_env(tmp_path, "%s:%s" % (ROOT / "collections", ROOT), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    env.pop("KUBECONFIG", None)  # the module's kubeconfig argument is the only way to the cluster
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    text = run.stdout.split("=>", 1)[1] if "=>" in run.stdout else "{}"
    return dict(json.loads(text), rc=run.returncode)


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")
def test_the_labels_of_every_node_from_one_kubectl_get_nodes(start_plane: StartPlane, tmp_path: Path) -> None:
    """Against the real kubectl and API server (tests/cluster's control plane, KWOK nodes)."""
    nodes = {"w1": {"workerselector": "dls-worker-node"}, "w2": {"workerselector": "old"}, "w3": {"a": "b"}}
    plane = start_plane([controlplane.FakeNode(name, labels) for name, labels in nodes.items()])
    kubectl, log = _kubectl_wrapper(plane, tmp_path)

    def labels(node: str) -> Dict[str, str]:
        return dict(plane.get_json("node", node)["metadata"]["labels"])

    before = {node: labels(node) for node in nodes}
    wanted = {"w1": {"workerselector": "dls-worker-node"}, "w2": {"workerselector": "dls-worker-node"}}
    checked = _labels(tmp_path, plane, kubectl, wanted, check=True)
    assert checked["changed"] and checked["updated"] == {"w2": {"workerselector": ["old", "dls-worker-node"]}}
    assert log.read_text().splitlines() == ["get nodes -o json"]  # check mode: read only
    assert {node: labels(node) for node in nodes} == before
    done = _labels(tmp_path, plane, kubectl, wanted)
    assert done["changed"] and done["rc"] == 0, done
    # one read, a label call only for the node that differs, one read back; w3 (not asked for) untouched
    assert log.read_text().splitlines()[1:] == [
        "get nodes -o json",
        "label node w2 workerselector=dls-worker-node --overwrite",
        "get nodes -o json",
    ]
    assert labels("w2") == dict(before["w2"], workerselector="dls-worker-node")
    assert labels("w1") == before["w1"] and labels("w3") == before["w3"]
    again = _labels(tmp_path, plane, kubectl, wanted)
    assert not again["changed"] and log.read_text().splitlines()[4:] == ["get nodes -o json"]
    missing = _labels(tmp_path, plane, kubectl, dict(wanted, w9={"a": "b"}))
    assert missing["rc"] != 0 and "node(s) w9 not found by kubectl get nodes" in missing["msg"], missing


def test_parts_are_compared_and_returned_one_by_one(tmp_path: Path) -> None:
    """nodes.yml reads a node once for three roles: each role gets the differences of its own part."""
    here = tmp_path / "here"
    here.mkdir()
    parts = {
        "converged": {"paths": [{"path": str(here), "state": "directory"}]},
        "missing": {"paths": [{"path": str(tmp_path / "gone"), "state": "directory"}]},
        "nothing": {},
    }
    out = {name: check.differences_of(_Node(check_mode=False), part, "Debian") for name, part in parts.items()}
    assert out["converged"] == [] and out["nothing"] == []
    assert len(out["missing"]) == 1 and str(tmp_path / "gone") in out["missing"][0]
    assert set(check.CHECKS) >= {"users", "paths", "checksums", "packages", "reserved_ports", "write_tests"}
