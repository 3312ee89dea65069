"""Every profile string is checked where it lands (issue 35): with the rule the API server of
Kubernetes 1.28 applies there, with the vendor's closed set where there is one, and never as shell
syntax or as text that displays in another order than it is read.

- kubenames: the rules transcribed from k8s.io/apimachinery v0.28.15 agree with apimachinery's own
  test vectors (validation_test.go, read from Go's module cache), and every ``KAPI`` citation of
  the checks names a line that holds what it says.
- the gate: values that land in a label, an env name, a volume, ... are refused with the field's
  path and the fix, also where no field format stands in the way (the objects the plan builds are
  checked, :mod:`resumable.manifests.accepted`).
- the three examples of the issue, each a test that fails on the code before it.

The generated check against a real API server is tests/manifests/test_strings_apiserver.py.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
import yaml
from conftest import EXAMPLES, ROOT

from resumable import cli
from resumable import kubenames as K
from resumable.api import PlanError, plan_profile
from resumable.errors import ProfileErrors
from resumable.manifests import accepted
from resumable.profile import parse_profile

sys.path.insert(0, str(ROOT / "tools"))
import go_tools

KUBERNETES = ROOT / "tools" / "go" / "kubernetes"
EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


def doc() -> Dict[str, Any]:
    data: Dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return data


def validate(tmp_path: Path, data: Dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str]:
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code = cli.main(["validate", str(path)])
    out, err = capsys.readouterr()
    return code, out + err


# --- the examples of the issue: each failed on the code before it -----------------------------------------


def test_a_schedule_policy_the_release_does_not_know_is_refused_with_the_release_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ünïcødé-名前`` lands in the annotation huawei.com/schedule_policy, which the Volcano plugin
    looks up in its table and otherwise ignores; the examples' chip8-node8 stays valid, and a
    policy only 26.1.0 knows is refused for 7.3.0."""
    data = doc()
    data["jobs"][0]["schedule_policy"] = "ünïcødé-名前"
    code, text = validate(tmp_path, data, capsys)
    assert code == 2, text
    assert "[schedule-policy] jobs[0].schedule_policy" in text and "MindCluster 7.3.0" in text, text
    assert "chip8-node8" in text and "factory.go:43-52" in text, text
    data["jobs"][0]["schedule_policy"] = "chip8-node8-ra64-sp"
    code, text = validate(tmp_path, data, capsys)
    assert code == 2 and "jobs[0].schedule_policy" in text, text
    data["cluster"]["mindcluster"] = "26.1.0"
    data["scheduler"]["volcano"] = "1.12.0"
    code, text = validate(tmp_path, data, capsys)
    assert "schedule-policy" not in text, text


def test_a_script_that_is_a_shell_command_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The script is a path torchrun opens, and the first word after torchrun's options: shell syntax,
    a space (arguments belong in script_args) or a leading '-' (a torchrun option) is a mistake."""
    marker = tmp_path / "x"
    for script in ("x; touch %s $(id)" % marker, "train.py --lr 1", "--nnodes=9", "a`id`.py"):
        data = doc()
        data["jobs"][0]["script"] = script
        code, text = validate(tmp_path, data, capsys)
        assert code == 2, (script, text)
        assert "jobs[0].script" in text and "script path" in text, text
    assert not marker.exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("script_args", ["--name=\u202eyp.exe"]),
        ("env", {"RUN_NAME": "run\u202e1"}),
        ("pod", {"annotations": {"example.com/owner": "team\u2066a\u2069"}}),
        ("checkpoint", {"path": "/job/ckpt\u202d"}),
    ],
)
def test_a_bidirectional_override_is_refused_and_never_printed_raw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    """A right-to-left override makes a name display in another order than it runs (Trojan Source);
    refused in every profile string, and the message shows it escaped."""
    data = doc()
    data["jobs"][0][field] = value
    code, text = validate(tmp_path, data, capsys)
    assert code == 2, text
    assert "jobs[0].%s" % field in text and "bidirectional" in text, text
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", text), "printed raw: %r" % text


# --- values the API server refuses where they land ----------------------------------------------------------


@pytest.mark.parametrize(
    "edit, path, fragment",
    [
        (lambda j: j.update(pod={"labels": {"team": "llm team"}}), "jobs[0].pod.labels.team", "label value"),
        (
            lambda j: j.update(volumes=[{"name": "code", "mount_path": "/job/code", "host_path": "/data/../etc"}]),
            "jobs[0].volumes[0].host_path",
            "'..'",
        ),
        (lambda j: j.update(env={"CONFIG": "a: 1\nb: 2"}), "jobs[0].env.CONFIG", "control character"),
    ],
)
def test_values_the_api_server_refuses_fail_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[Dict[str, Any]], None], path: str, fragment: str
) -> None:
    """Each was "OK" before issue 35 and refused later: by the API server (the label, the hostPath of
    the pods the operator creates) or by ``resumable launch`` in the pod (a multi-line env value it
    cannot export as one line of its script)."""
    data = doc()
    edit(data["jobs"][0])
    code, text = validate(tmp_path, data, capsys)
    assert code == 2, text
    assert path in text and fragment in text, text


def test_annotation_keys_follow_the_api_servers_case_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An annotation key is a qualified name once lower-cased (objectmeta.go:48): Example.com/Owner is
    fine there, though not as a label key."""
    data = doc()
    data["jobs"][0]["pod"] = {"annotations": {"Example.com/Owner": "me"}}
    code, text = validate(tmp_path, data, capsys)
    assert code == 0, text
    data["jobs"][0]["pod"] = {"labels": {"Example.com/Owner": "me"}}
    code, text = validate(tmp_path, data, capsys)
    assert code == 2 and "jobs[0].pod.labels" in text, text


def bound() -> Any:
    return parse_profile(yaml.safe_dump(doc()), "profile.yaml")


GATE_CASES: List[Tuple[Callable[[Any], None], str, str]] = [
    (lambda p: setattr(p.jobs[0].pod, "labels", {"team": "llm team"}), "jobs[0].pod.labels.team", "IsValidLabelValue"),
    (lambda p: setattr(p.jobs[0], "env", {"X Y": "1"}), "jobs[0].env (key 'X Y')", "IsEnvVarName"),
    (lambda p: setattr(p.jobs[0].pod, "labels", {"a/b/c": "x"}), "jobs[0].pod.labels (key 'a/b/c')", "IsQualified"),
    (lambda p: setattr(p.jobs[0].pod, "priority_class", "High"), "jobs[0].pod.priority_class", "IsDNS1123Subdomain"),
    (lambda p: setattr(p.jobs[0], "name", "Llama"), "jobs[0].name", "IsDNS1123"),
    (lambda p: setattr(p.jobs[0], "namespace", "a.b"), "jobs[0].namespace", "IsDNS1123Label"),
    (lambda p: setattr(p.jobs[0].pod, "node_selector", {"pool": "a b"}), "jobs[0].pod.node_selector.pool", "Label"),
]


@pytest.mark.parametrize("edit, path, rule", GATE_CASES)
def test_the_gate_checks_the_objects_not_a_list_of_fields(edit: Callable[[Any], None], path: str, rule: str) -> None:
    """With the field formats out of the way (the profile changed after binding), the gate still
    refuses each value where it lands in the objects render and Pulumi build, naming the field, the
    object, the API server's rule and its source line."""
    profile = bound()
    edit(profile)
    with pytest.raises(ProfileErrors) as info:
        plan_profile(profile, "profile.yaml")
    text = "\n".join(info.value.lines())
    assert "profile.yaml: %s:" % path in text and rule in text and "KAPI " in text, text


def test_the_gate_passes_every_example() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        plan_profile(parse_profile(path.read_text(encoding="utf-8"), str(path)), str(path))


def test_an_object_refused_with_no_profile_value_in_it_is_our_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal no profile value explains is not the user's to fix: an internal error (exit 3)."""
    from resumable import constants

    monkeypatch.setattr(constants, "CONTAINER_NAME", "Ascend_Container")
    with pytest.raises(accepted.ObjectsRefused, match="IsDNS1123Label"):
        plan_profile(bound(), "profile.yaml")


def test_rule_errors_come_before_the_object_check() -> None:
    """Objects are built only from a plan without rule errors (a refused plan is never rendered)."""
    profile = bound()
    profile.jobs[0].pod.labels = {"team": "llm team"}
    profile.jobs[0].recovery.watchdog = "on"
    with pytest.raises(PlanError):
        plan_profile(profile, "profile.yaml")


# --- the rules themselves ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def apimachinery() -> Path:
    try:
        return go_tools.module_dir("k8s.io/apimachinery@v0.28.15", KUBERNETES)
    except go_tools.ToolError as exc:  # pragma: no cover - the module cache is filled by `make tools`
        pytest.fail("k8s.io/apimachinery v0.28.15 is not in Go's module cache (make tools fetches it): %s" % exc)


@functools.lru_cache(maxsize=None)
def kubernetes() -> Path:
    try:
        return go_tools.module_dir("k8s.io/kubernetes@v1.28.15", KUBERNETES)
    except go_tools.ToolError as exc:  # pragma: no cover
        pytest.fail("k8s.io/kubernetes v1.28.15 is not in Go's module cache (make tools fetches it): %s" % exc)


_TOKEN = re.compile(r'strings\.Repeat\("((?:[^"\\]|\\.)*)",\s*(\d+)\)|"((?:[^"\\]|\\.)*)"|(\+)|(,)')


def go_strings(body: str) -> List[str]:
    """The items of a Go ``[]string{...}`` literal: string literals, ``strings.Repeat`` and ``+``."""
    body = re.sub(r"//[^\n]*", "", body)
    items: List[str] = []
    current: List[str] = []
    for repeat, times, literal, plus, comma in _TOKEN.findall(body):
        if comma:
            if current:
                items.append("".join(current))
            current = []
        elif repeat or times:
            current.append(ast.literal_eval('"%s"' % repeat) * int(times))
        elif not plus:
            current.append(ast.literal_eval('"%s"' % literal))
    if current:
        items.append("".join(current))
    return items


def go_vectors(test: str, source: str) -> Tuple[List[str], List[str]]:
    """(good, bad) values of apimachinery's Test<name>: its first and second ``[]string`` literal."""
    start = source.index("func %s(" % test)
    end = source.find("\nfunc ", start + 1)
    blocks = re.findall(r"\w+ := \[\]string\{(.*?)\}\s*\n", source[start:end], re.S)
    assert len(blocks) >= 2, test
    return go_strings(blocks[0]), go_strings(blocks[1])


@pytest.mark.parametrize(
    "test, rule",
    [
        ("TestIsDNS1123Label", K.is_dns1123_label),
        ("TestIsDNS1123Subdomain", K.is_dns1123_subdomain),
        ("TestIsDNS1035Label", K.is_dns1035_label),
        ("TestIsValidPortName", K.is_valid_port_name),
        ("TestIsQualifiedName", K.is_qualified_name),
        ("TestIsValidLabelValue", K.is_valid_label_value),
        ("TestIsConfigMapKey", K.is_config_map_key),
    ],
)
def test_the_rules_agree_with_apimachinerys_own_tests(test: str, rule: Callable[[str], List[str]]) -> None:
    source = (apimachinery() / "pkg/util/validation/validation_test.go").read_text(encoding="utf-8")
    good, bad = go_vectors(test, source)
    assert len(good) >= 5 and len(bad) >= 5, (good, bad)
    assert [v for v in good if rule(v)] == [], "refused, apimachinery accepts"
    assert [v for v in bad if not rule(v)] == [], "accepted, apimachinery refuses"


def test_env_names_follow_the_api_server_and_the_profile_is_stricter() -> None:
    """IsEnvVarName allows '-' and '.', the profile's env-name format does not (the launch exports
    every name in a shell script), so whatever the profile takes the API server takes."""
    assert K.is_env_var_name("MY.ENV-name") == [] and K.is_env_var_name("_x1") == []
    assert K.is_env_var_name("1X") and K.is_env_var_name("..x") and K.is_env_var_name("A B")
    from resumable import formats as F

    for name in ("A", "_X1", "lower_case", "HCCL_CONNECT_TIMEOUT"):
        assert F.problem(F.ENV_NAME, name) is None and K.is_env_var_name(name) == []


def cited(source: str) -> Tuple[Path, int]:
    """The file and line of a ``KAPI <path>:<line>`` citation."""
    m = re.fullmatch(r"KAPI (apimachinery )?(\S+):(\d+)", source)
    assert m, source
    root = apimachinery() if m.group(1) else kubernetes()
    return root / m.group(2), int(m.group(3))


def test_every_kapi_citation_points_at_what_it_names() -> None:
    """Each rule's source line (±3) holds the function or check it names: the citations stay true."""
    rules = [r for r in vars(accepted).values() if isinstance(r, accepted.Rule)]
    lines = {int(n) for n in re.findall(r"_at\(\w+, (\d+)\)", Path(accepted.__file__).read_text(encoding="utf-8"))}
    assert len(lines) >= 15, lines
    expect = {
        "IsDNS1123Label": "IsDNS1123Label",
        "IsDNS1123Subdomain": "IsDNS1123Subdomain",
        "IsDNS1035Label": "IsDNS1035Label",
        "IsQualifiedName": "IsQualifiedName",
        "IsQualifiedName (lower-cased)": "IsQualifiedName(strings.ToLower",
        "IsValidLabelValue": "IsValidLabelValue",
        "IsEnvVarName": "IsEnvVarName",
        "IsValidPortName": "IsValidPortName",
        "IsConfigMapKey": "IsConfigMapKey",
        "validatePathNoBacksteps": "validatePathNoBacksteps",
        "validateNFSVolumeSource": "must be an absolute path",
    }
    for rule in rules:
        if rule.source.endswith(".go"):
            continue  # a rule cited only where it is applied (_at)
        path, line = cited(rule.source)
        text = "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[line - 4 : line + 3])
        assert expect[rule.name] in text, (rule.name, rule.source, text)
    core = (kubernetes() / "pkg/apis/core/validation/validation.go").read_text(encoding="utf-8").splitlines()
    for line in sorted(lines):
        text = "\n".join(core[line - 4 : line + 3])
        assert re.search(r"Required|Validate|Is[A-Z]\w+|Has\(|must", text), (line, text)
    for name, line in (("IsValidPortName", 2380), ("IsEnvVarName", 2420), ("ValidateLabelName", 3728)):
        assert name in core[line - 1], (name, line, core[line - 1])


def test_refusals_name_object_place_and_rule() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b c"}, "annotations": {"x/y/z": "1"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "env": [{"name": "1X", "value": "v"}],
                    "ports": [{"name": "Port_1", "containerPort": 1}],
                    "volumeMounts": [{"name": "nope", "mountPath": "/x"}],
                }
            ],
            "volumes": [{"name": "v", "hostPath": {"path": "/a/../b"}}, {"name": "v", "emptyDir": {}}],
        },
    }
    template = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}
    template["spec"] = {"template": {"metadata": obj["metadata"], "spec": obj["spec"]}}
    for found in (accepted.refusals(obj), accepted.refusals(copy.deepcopy(template))):
        rules = sorted({r.rule.name for r in found})
        assert rules == sorted(
            {
                "IsValidLabelValue",
                "IsQualifiedName (lower-cased)",
                "IsEnvVarName",
                "IsValidPortName",
                "IsMatchedVolume",
                "validatePathNoBacksteps",
                "unique volume name",
            }
        ), rules
    assert accepted.refusals({"kind": "Namespace", "metadata": {"name": "a.b"}})[0].rule.name == "IsDNS1123Label"
    assert accepted.culprits("resumable-profile-Llama", [("jobs[0].name", "Llama"), ("x", "a")]) == ["jobs[0].name"]
