"""The TOML reader/writer the ascend_docker_runtime role ships to the nodes, checked against the
standard library's tomllib (which the nodes of Python < 3.11 do not have)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st
from role_code import plugin

toml = plugin("module_utils", "ascend_toml")

CONTAINERD_17 = """\
# kubespray-style containerd 1.7 config
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = -999

[grpc]
  max_recv_message_size = 16777216
  max_send_message_size = 16777216

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    max_container_log_line_size = -1
    enable_unprivileged_ports = false
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      snapshotter = "overlayfs"
      discard_unpacked_layers = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
          runtime_engine = ""
          runtime_root = ""
          base_runtime_spec = "/etc/containerd/cri-base.json"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true
            BinaryName = "/usr/local/bin/runc"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "/etc/containerd/certs.d"
  [plugins."io.containerd.grpc.v1.cri".registry.headers]
    X-Meta-Source-Client = ["kubespray"]
"""

CONTAINERD_2 = """\
version = 3
imports = ['/etc/containerd/conf.d/*.toml']
root = '/var/lib/containerd'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'

  [plugins.'io.containerd.cri.v1.runtime']
    enable_cdi = true
    cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false

[timeouts]
  'io.containerd.timeout.shim.cleanup' = '5s'
"""

VALID = [
    CONTAINERD_17,
    CONTAINERD_2,
    "",
    "# only a comment\n",
    'a = "x"\r\nb = 1\r\n',
    "a.b.c = 1\na.b.d = 2\n[x]\ny.z = true\n",
    "[a.b.c]\nx = 1\n[a]\ny = 2\n",
    "[[p]]\nn = 1\n[p.sub]\nq = 2\n[[p]]\nn = 2\n",
    'k = """\nline1\\\n   line2\n"""\n',
    "k = '''\nraw \\n text''''\n",
    'k = """a"b""c"""""\n',
    "ints = [0x1F, 0o17, 0b101, 1_000, -3, +4]\n",
    "floats = [1.5, -2e3, 6.02E+23, 1_0.0_1, inf, -inf]\n",
    'nested = [[1, 2], ["a", "b"], [], [{x = 1}]]\n',
    'it = { a = 1, b.c = "d", e = {} }\n',
    '"quoted key" = 1\n\'literal key\' = 2\n"" = 3\n',
    'esc = "tab\\tnewline\\n\\u00e9\\U0001F600\\"\\\\"\n',
    "arr = [\n  1, # one\n  2,\n]\n",
    "a = 1 # trailing\n\n\n[t] # header comment\n",
]

INVALID = [
    "a = 1\na = 2\n",
    "[t]\n[t]\n",
    "[a]\nb.c = 1\n[a.b]\n",
    "a = {b = 1}\n[a]\n",
    "a = [1]\n[[a]]\n",
    "a = \n",
    'a = "unterminated\n',
    "a = 01\n",
    "a = 1__0\n",
    "a = 1 b = 2\n",
    "[a\n",
    'a = "\\q"\n',
    "a = tru\n",
    "a = [1 2]\n",
    "a = {b = 1,}\n",
    "= 1\n",
]


@pytest.mark.parametrize("text", VALID)
def test_reads_what_tomllib_reads(text: str) -> None:
    assert toml.loads(text) == tomllib.loads(text)


@pytest.mark.parametrize("text", INVALID)
def test_refuses_what_tomllib_refuses(text: str) -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    with pytest.raises(toml.TomlError, match=r"^line \d+: "):
        toml.loads(text)


@pytest.mark.parametrize("text", ["a = 1979-05-27\n", "a = 07:32:00\n", "a = 1979-05-27T07:32:00Z\n"])
def test_dates_are_refused_plainly(text: str) -> None:
    # valid TOML, but no container runtime setting is a date: refuse rather than guess
    tomllib.loads(text)
    with pytest.raises(toml.TomlError, match="dates and times are not supported"):
        toml.loads(text)


def test_error_names_the_line() -> None:
    with pytest.raises(toml.TomlError, match="line 3: key a is defined twice"):
        toml.loads("# x\na = 1\na = 2\n")


@pytest.mark.parametrize("text", [CONTAINERD_17, CONTAINERD_2, VALID[7], VALID[14]])
def test_written_files_read_back_the_same(text: str) -> None:
    data = toml.loads(text)
    out = toml.dumps(data)
    assert tomllib.loads(out) == data
    assert toml.loads(out) == data


keys = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8)
scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=5)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(documents)
def test_roundtrip_property(doc: Any) -> None:
    out = toml.dumps(doc)
    assert _same(tomllib.loads(out), doc), out
    assert _same(toml.loads(out), doc), out
