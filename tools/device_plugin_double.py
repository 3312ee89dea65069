#!/usr/bin/env python3
"""A double of the Ascend Device Plugin, for a cluster whose nodes have no NPU (KWOK nodes; the real
device plugin needs the driver's DCMI library and real devices). tools/podrunner.py runs it for the
pods of the rendered device plugin DaemonSet of a release it is written for (7.3.0), on their node,
as their ServiceAccount: what it writes, RBAC judges as the real plugin's calls.

What the real plugin writes, and this double writes the same way (MC = Ascend/mind-cluster, tag
v7.3.0, component/ascend-device-plugin; a device plugin of a 910B node, not A3):

- the ConfigMap ``kube-system/mindx-dl-deviceinfo-<node>`` labelled ``mx-consumer-cim=true``, key
  ``DeviceInfoCfg`` holding ``NodeDeviceInfoCache`` as JSON: ``DeviceInfo`` (``DeviceList``,
  ``UpdateTime``), ``SuperPodID``, ``ServerIndex`` and ``CheckCode``, the SHA-256 of ``DeviceInfo``
  as JSON, and ``ManuallySeparateNPU`` (pkg/kubeclient/client_server.go:180-227
  WriteDeviceInfoDataIntoCM; pkg/common/proto.go:36-41,79-82; the hash: pkg/common/common.go
  MakeDataHash, which ClusterD checks: MC:@v7.3.0 component/clusterd/pkg/domain/device/device_util.go:36
  and pkg/common/util/util.go:41-62); SuperPodID and ServerIndex -1 on a server outside a super pod
  (pkg/device/ascendcommon.go:68-69);
- in ``DeviceList`` for a 910 node: ``huawei.com/Ascend910`` (the healthy devices, comma
  separated), ``huawei.com/Ascend910-Recovering``, ``-Unhealthy``, ``-NetworkUnhealthy`` (empty on
  healthy devices) and ``-Fault`` (the devices' faults as JSON, ``[]`` when none)
  (pkg/device/ascend910.go:654-685 updateDeviceInfo; pkg/common/constants.go:229-244);
- on the node, the annotation ``baseDeviceInfos``: every device's name mapped to ``{"IP",
  "SuperDeviceID"}`` (pkg/server/manager.go:173-181 updateNode, 237-246 getNpuBaseInfo;
  pkg/common/proto.go:297-300).

The devices are the node's: as many as the node offers of its ``huawei.com/Ascend*`` resource
(what KWOK's node carries from the plan). It writes when it starts and every 5 minutes after, as the
real plugin does when nothing changed (pkg/device/ascendcommon.go UpdateNodeDeviceInfo,
defaultUpdateTimeInterval), until SIGTERM. A fault the device plugin would report (a device
unhealthy) is :func:`device_info` with ``unhealthy`` naming it. The product never sees this program.

    python3 tools/device_plugin_double.py --node NODE --kubeconfig POD_KUBECONFIG

Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Tuple

Obj = Dict[str, Any]
NAMESPACE = "kube-system"
PREFIX = "mindx-dl-deviceinfo-"
#: api.CIMCMLabelKey (MC:@v7.3.0 component/ascend-common/api/consts.go:106), value "true"
CONSUMER_LABEL = "mx-consumer-cim"
#: api.DeviceInfoCMDataKey (ascend-common/api/consts.go:97)
DATA_KEY = "DeviceInfoCfg"
#: api.BaseDevInfoAnno (ascend-common/api/consts.go:43)
BASE_INFO_ANNOTATION = "baseDeviceInfos"
NO_SUPER_POD = -1
NPU_PREFIX = "huawei.com/Ascend"
UPDATE_SECONDS = 300.0


def go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes it: no spaces, map keys sorted, struct fields in order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def device_names(chip: str, count: int) -> List[str]:
    """``Ascend910-0`` ... (the device plugin's names of physical devices)."""
    return [f"{chip}-{index}" for index in range(count)]


def device_list(resource: str, names: Sequence[str], unhealthy: Sequence[str] = ()) -> Dict[str, str]:
    """``DeviceList`` of a 910 node (ascend910.go:654-685), sorted as Go marshals a map."""
    healthy = [n for n in names if n not in unhealthy]
    entries = {
        resource: ",".join(healthy),
        f"{resource}-Recovering": "",
        f"{resource}-Unhealthy": ",".join(unhealthy),
        f"{resource}-NetworkUnhealthy": "",
        f"{resource}-Fault": "[]",
    }
    return dict(sorted(entries.items()))


def device_info(node: str, resource: str, count: int, unhealthy: Sequence[str] = ()) -> Obj:
    """The ConfigMap ``mindx-dl-deviceinfo-<node>`` (client_server.go:180-227)."""
    chip = resource.split("/", 1)[1]
    info = {"DeviceList": device_list(resource, device_names(chip, count), unhealthy), "UpdateTime": int(time.time())}
    cache = {
        "DeviceInfo": info,
        "SuperPodID": NO_SUPER_POD,
        "ServerIndex": NO_SUPER_POD,
        "CheckCode": hashlib.sha256(go_json(info).encode()).hexdigest(),
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PREFIX + node, "namespace": NAMESPACE, "labels": {CONSUMER_LABEL: "true"}},
        "data": {DATA_KEY: go_json(cache), "ManuallySeparateNPU": ""},
    }


def base_device_infos(resource: str, count: int) -> str:
    """The node annotation ``baseDeviceInfos`` (manager.go:173-181, 237-246): each device's IP (the
    device plugin reads it from the driver; here a documentation address, 192.0.2.0/24)."""
    chip = resource.split("/", 1)[1]
    infos = {
        name: {"IP": f"192.0.2.{index + 1}", "SuperDeviceID": 0} for index, name in enumerate(device_names(chip, count))
    }
    return go_json(dict(sorted(infos.items())))


def node_npus(node: Obj) -> Optional[Tuple[str, int]]:
    """The node's NPU resource and how many it offers, or None."""
    offered = (node.get("status") or {}).get("capacity") or {}
    for resource, count in sorted(offered.items()):
        if resource.startswith(NPU_PREFIX) and int(count) > 0:
            return resource, int(count)
    return None


class Api:
    """The API server as the pod's kubeconfig (a ServiceAccount token) reaches it."""

    def __init__(self, kubeconfig: str) -> None:
        with open(kubeconfig, encoding="utf-8") as handle:
            doc = json.load(handle)
        self.server: str = doc["clusters"][0]["cluster"]["server"]
        self.context = ssl.create_default_context(cafile=doc["clusters"][0]["cluster"]["certificate-authority"])
        self.token: str = doc["users"][0]["user"]["token"]

    def call(self, method: str, path: str, body: Optional[Obj] = None, kind: str = "application/json") -> Obj:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Content-Type", kind)
        request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=20, context=self.context) as response:
            result: Obj = json.loads(response.read() or b"{}")
            return result


def write_config_map(api: Api, config_map: Obj) -> None:
    """Update the ConfigMap, or create it when it is not there (createOrUpdateDeviceCM)."""
    name = config_map["metadata"]["name"]
    try:
        api.call("PUT", f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}", config_map)
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", config_map)


def report(api: Api, node_name: str) -> bool:
    """Write the node's device information and annotation; False when the node offers no NPU."""
    node = api.call("GET", f"/api/v1/nodes/{node_name}")
    npus = node_npus(node)
    if npus is None:
        return False
    resource, count = npus
    write_config_map(api, device_info(node_name, resource, count))
    patch = {"metadata": {"annotations": {BASE_INFO_ANNOTATION: base_device_infos(resource, count)}}}
    api.call("PATCH", f"/api/v1/nodes/{node_name}", patch, "application/strategic-merge-patch+json")
    return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--node", required=True, help="the node this device plugin runs on")
    parser.add_argument("--kubeconfig", required=True, help="the pod's kubeconfig (its ServiceAccount token)")
    args = parser.parse_args(argv)
    stopping = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    api = Api(args.kubeconfig)
    next_report = 0.0
    while not stopping:
        if time.monotonic() >= next_report:
            try:
                written = report(api, args.node)
                print(f"device info of {args.node} written" if written else f"{args.node} offers no NPU", flush=True)
                next_report = time.monotonic() + UPDATE_SECONDS
            except (urllib.error.URLError, OSError, ValueError) as exc:
                print(f"write device info failed: {exc}", flush=True)  # the real plugin retries too
                next_report = time.monotonic() + 5
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
