"""The building blocks behind "bad input is exit 2": string formats, the bounded YAML loader and
the file reader, tested in-process (tests/plan/test_adversarial.py drives the same through the CLI)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import List

import pytest
from conftest import EXAMPLE_FILES

from resumable import formats as F
from resumable import safeyaml
from resumable.errors import ProfileError, for_people, shown
from resumable.fileio import read_text
from resumable.profile import parse_profile

VALID = {
    F.DNS_LABEL: ["a", "llama-pretrain", "a" * 63, "0x"],
    F.DNS_SUBDOMAIN: ["regcred", "my-secret.v1", "a.b.c"],
    F.LABEL_VALUE: ["module-910b-8", "X_1.2", "a"],
    F.ENV_NAME: ["A", "_X1", "lower_case", "HCCL_CONNECT_TIMEOUT"],
    F.QUANTITY: ["500m", "8", "8Gi", "1e3", "0.5", ".5", "5.", "0", "+1Ki", "2E", "1E-3"],
    F.SIZE: ["200Gi", "2Ti", "1", "0.5Ti", "1e12"],
    F.HOST: ["10.0.0.10", "fd00::1", "nfs.example.com", "NFS-1"],
    F.CONTAINER_PATH: ["/job/ckpt", "/a", "/data/x y"],
    F.SERVER_PATH: ["/", "/exports/ascend", "/exports/ascend/"],
    F.FILE_PATH: ["train.py", "../wheels/taskd.whl", "/job/code/train.py"],
    F.IMAGE: [
        "busybox",
        "library/busybox:1.36",
        "registry.example.com/ai/mindspeed-llm:2.3.0",
        "localhost:5000/a/b:v1",
        "[fd00::1]:5000/x:1",
        "x/y@sha256:" + "ab" * 32,
        "volcanosh/vc-scheduler:v1.9.0-v26.1.0",
    ],
    F.REGISTRY: ["", "registry.example.com/mindx", "localhost:5000", "swr.cn-south-1.myhuaweicloud.com/"],
    F.TOKEN: ["chip8-node8", "rank0-escalation"],
    F.MODE: ["0775", "2770", "755"],
    F.LABEL_KEY: ["team", "example.com/team", "kueue.x-k8s.io/queue-name", "A_b.c"],
    F.ANNOTATION_KEY: ["owner", "example.com/owner", "Example.com/Owner", "A_b.c"],
    F.SCRIPT: ["train.py", "pretrain_gpt.py", "/job/code/train.py", "../x.py", "训练/预训练.py", "a+b@c=d,e:f"],
}

INVALID = {
    F.DNS_LABEL: ["", "Upper", "under_score", "-lead", "trail-", "a" * 64, "dot.ted", "name\n"],
    F.DNS_SUBDOMAIN: ["", "Upper", "a..b", ".a", "a" * 254, "x\n"],
    F.LABEL_VALUE: ["", "-x", "x-", "a b", "a" * 64, "x\n"],
    F.ENV_NAME: ["", "A=B", "1X", "A-B", "A B", "A\n"],
    F.QUANTITY: ["", "eight", "8 Gi", "8GB", "-1Gi", "1e", "Gi", "1.2.3", "8gi", "1\n"],
    F.SIZE: ["", "0", "0Gi", "-1", "2 TB", "lots", "500m", "0.1Ki", "1.5", "1e-3"],
    F.HOST: ["", "nfs server", "-x", "a..b", "x_y", "http://x"],
    F.CONTAINER_PATH: ["", "/", "op_cache", "./x", "/job/../etc", "/job//ckpt", "/job/", "/job/.", "//x"],
    F.SERVER_PATH: ["", "exports", "/a/../b", "/a//", "/a//b", "/a/./b"],
    F.FILE_PATH: ["", " train.py", "train.py ", "dir/"],
    F.IMAGE: [
        "",
        "Busybox",
        "a b",
        "x:",
        ":tag",
        "x@sha256:zz",
        "x/",
        "-x",
        "registry/app:1 --privileged",
        "x:1\nevil",
        "a" * 600,
    ],
    F.REGISTRY: ["reg istry", "https://registry", "reg/UPPER"],
    F.TOKEN: ["", "a b", "dump ", "x" * 254],
    F.MODE: ["", "0778", "77", "07755", "rwx"],
    F.LABEL_KEY: ["", "a b", "Example.com/team", "/team", "x/" + "y" * 64, "-a", "a/b/c", "ünï"],
    F.ANNOTATION_KEY: ["", "a b", "/owner", "x/" + "y" * 64, "-a", "a/b/c", "ünï"],
    F.SCRIPT: [
        "",
        "x; touch /tmp/x $(id)",
        "train.py --lr 1",
        "-m",
        "--nnodes=9",
        "a`id`",
        "a|b",
        "a&b",
        "a>b",
        "a'b",
        'a"b',
        "a\\b",
        "*.py",
        "dir/",
        "a\tb",
    ],
}


@pytest.mark.parametrize("name", sorted(F.FORMATS))
def test_format_accepts_valid_and_names_what_is_wrong(name: str) -> None:
    fmt = F.FORMATS[name]
    for value in VALID[name]:
        assert fmt.check(value) is None, (name, value, fmt.check(value))
    for value in INVALID[name]:
        problem = fmt.check(value)
        assert problem, (name, value)
        assert "\n" not in problem and len(problem) < 200, problem


@pytest.mark.parametrize("name", sorted(F.FORMATS))
def test_json_schema_pattern_accepts_every_valid_value(name: str) -> None:
    """The schema's pattern may be looser than the binder (editors get a hint, the binder decides),
    but it must never reject what the binder accepts."""
    fmt = F.FORMATS[name]
    if fmt.pattern is None:
        pytest.skip("%s has no pattern" % name)
    for value in VALID[name]:
        if value or name != F.REGISTRY:
            assert re.search(fmt.pattern, value), (name, value, fmt.pattern)
        if fmt.max_length:
            assert len(value) <= fmt.max_length


def test_image_check_is_fast_on_hostile_input() -> None:
    start = time.monotonic()
    for value in ["a-" * 250 + "!", "a." * 250 + "/", "a" * 511 + "@", "a/" * 250]:
        assert F.problem(F.IMAGE, value)
    assert time.monotonic() - start < 1.0


# --- messages --------------------------------------------------------------------------------------------


def test_shown_cuts_long_values_and_escapes_controls() -> None:
    assert shown("abc") == "'abc'"
    assert shown("a\x1b[2Jb") == "'a\\x1b[2Jb'"
    long = shown("x" * 5000)
    assert len(long) < 120 and "5000 characters" in long
    assert shown(10**5000) == "an integer of 5001 digits"
    assert for_people("line\nbreak " + "y" * 1000) == "line\\nbreak " + "y" * 100 + "... (1000 characters)"


# --- the bounded YAML loader ------------------------------------------------------------------------------


def load(text: str) -> object:
    return safeyaml.load(text, "t.yaml", safeyaml.PROFILE, ProfileError, "Fix it")


def test_merge_keys_and_anchors_stay_usable() -> None:
    doc = load("base: &b {nodes: 2, npus: 8}\njob:\n  <<: *b\n  nodes: 4\nagain: *b\n")
    assert doc == {"base": {"nodes": 2, "npus": 8}, "job": {"nodes": 4, "npus": 8}, "again": {"nodes": 2, "npus": 8}}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("a: 1\na: 2\n", "duplicate key 'a' (first at line 1)"),
        ("a: {x: 1, x: 1}\n", "duplicate key 'x'"),
        ("1: a\n1.0: b\n", "duplicate key 1.0"),
        ("yes: a\ntrue: b\n", "duplicate key True"),
        ("a: !!int 0x\n", "'0x' is not an integer"),
        ("a: !!bool maybe\n", "'maybe' is not a boolean"),
        ("a: !!float x\n", "'x' is not a number"),
        ("a: !!timestamp x\n", "'x' is not a timestamp"),
        ("a: &a [*a]\n", "recursive"),
        ("a: " + "9" * 101 + "\n", "integer of 101 characters"),
        ("a: " + "[" * 40 + "]" * 40 + "\n", "deeper than 32"),
        ("a: \x07\n", "unacceptable character #x0007"),
    ],
)
def test_refused_as_yaml_errors_with_a_line(text: str, fragment: str) -> None:
    with pytest.raises(ProfileError) as info:
        load(text)
    message = str(info.value)
    assert fragment in message and "t.yaml line" in message, message


def test_aliases_that_nest_deeper_than_the_limit_are_refused() -> None:
    """Each anchor is shallow, but following the aliases nests 10 x 10 levels."""
    lines = ["l0: &l0 [[[[[[[[[[x]]]]]]]]]]"]
    for i in range(1, 10):
        lines.append("l%d: &l%d [[[[[[[[[[*l%d]]]]]]]]]]" % (i, i, i - 1))
    with pytest.raises(ProfileError, match="with its aliases followed"):
        load("\n".join(lines) + "\n")


def test_an_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)))
    start = time.monotonic()
    with pytest.raises(ProfileError, match="alias bomb"):
        load("\n".join(lines) + "\n")
    assert time.monotonic() - start < 1.0


def test_profile_limits_leave_real_profiles_alone() -> None:
    for example in EXAMPLE_FILES:
        parse_profile(example.read_text(encoding="utf-8"), str(example))


# --- image naming ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reference, repository",
    [
        ("busybox", "busybox"),
        ("library/busybox:1.36", "library/busybox"),
        ("localhost:5000/ai/train:1.0", "localhost:5000/ai/train"),
        ("localhost:5000/x", "localhost:5000/x"),
        ("[fd00::1]:5000/x:1", "[fd00::1]:5000/x"),
        ("registry.example.com/ai/train:1.0@sha256:" + "ab" * 32, "registry.example.com/ai/train"),
        ("train:2@sha256:" + "0" * 64, "train"),
    ],
)
def test_image_repository_drops_tag_and_digest_and_keeps_a_port(reference: str, repository: str) -> None:
    assert F.image_repository(reference) == repository


def test_image_repository_agrees_with_the_reference_grammar() -> None:
    for reference in VALID[F.IMAGE]:
        m = F._IMAGE.fullmatch(reference)
        assert m is not None, reference
        name = (m.group("domain") + "/" if m.group("domain") else "") + m.group("remote")
        assert F.image_repository(reference) == name, reference
        assert F.problem(F.IMAGE, F.with_tag(name, "buildcache")) is None


def test_component_images_are_named_as_the_release_and_swr_name_them() -> None:
    assert F.release_image_tag("7.3.0") == "v7.3.0"
    assert F.volcano_image_tag("1.9.0") == "v1.9.0"
    assert F.volcano_image_tag("1.12.0", "26.1.0") == "v1.12.0-v26.1.0"
    assert F.component_image_reference("volcanosh/vc-scheduler", "v1.9.0") == "volcanosh/vc-scheduler:v1.9.0"
    assert F.component_image_reference("clusterd", "v7.3.0") == "clusterd:v7.3.0"
    for registry in ("registry.example.com/mindx", "registry.example.com/mindx/"):
        reference = F.component_image_reference("volcanosh/vc-scheduler", "v1.9.0-v7.3.0", registry)
        assert reference == "registry.example.com/mindx/vc-scheduler:v1.9.0-v7.3.0"
    for registry in VALID[F.REGISTRY]:
        reference = F.component_image_reference("volcanosh/vc-controller-manager", "v1.9.0", registry)
        assert F.problem(F.IMAGE, reference) is None, reference


# --- reading files ----------------------------------------------------------------------------------------


def read(path: str, limit: int = 1024) -> str:
    return read_text(path, what="profile", limit=limit, error=ProfileError, fix="Fix it")


def test_read_text_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    problems: List[str] = []
    start = time.monotonic()
    for path in (str(fifo), "/dev/zero", str(tmp_path), ""):
        with pytest.raises(ProfileError) as info:
            read(path)
        problems.append(str(info.value))
    assert time.monotonic() - start < 1.0
    assert "FIFO" in problems[0] and "character device" in problems[1] and "directory" in problems[2]
    assert "empty path" in problems[3]


def test_read_text_caps_the_size_and_decodes_strictly(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * 1025)
    with pytest.raises(ProfileError, match="at most 1 KiB"):
        read(str(big))
    ok = tmp_path / "ok.yaml"
    ok.write_bytes(b"x" * 1024)
    assert read(str(ok)) == "x" * 1024
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(ProfileError, match=r"not UTF-8 text \(byte 0xe9 at offset 3\)"):
        read(str(latin))
