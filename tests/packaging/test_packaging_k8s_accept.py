"""packaging/k8s/accept-job.yaml: a Job that accepts one node (all its GPUs) and labels it on
success, with RBAC for that node only. Schema validation (kubernetes-validate) is with the
DaemonSet's in test_packaging_units.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "packaging" / "k8s" / "accept-job.yaml"
PACKAGING = REPO / "packaging"
SITSCHECK = shutil.which("sitscheck", path=str(Path(sys.executable).parent)) or "sitscheck"
EXAMPLE_NODE = "gpu-node-17"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
LABEL = "sitscheck.io/accepted"
# Kubernetes' label value syntax (at most 63 characters)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def manifests(node: str = EXAMPLE_NODE) -> dict[str, dict[str, Any]]:
    """The file's documents by kind, for `node` (the file's own sed substitution)."""
    text = JOB.read_text().replace(EXAMPLE_NODE, node)
    docs = [d for d in yaml.safe_load_all(text) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs)
    return by_kind


def pod(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = docs["Job"]["spec"]["template"]["spec"]
    return spec


def containers(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in spec["initContainers"] + spec["containers"]}


def test_it_accepts_the_one_node_named_with_all_its_gpus() -> None:
    docs = manifests("dgx-b7")  # the documented sed gives a consistent manifest
    assert "gpu-node-17" not in json.dumps(docs)
    spec = pod(docs)
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "dgx-b7"}
    assert "nodeName" not in spec  # through the scheduler: GPU accounting and cordon apply
    accept = containers(spec)["accept"]
    assert accept["command"] == ["sitscheck"] and accept["args"][0] == "accept"
    gpus = int(accept["resources"]["limits"]["nvidia.com/gpu"])
    assert f"--expect-gpus={gpus}" in accept["args"]  # a node with fewer GPUs is a finding
    assert int(accept["resources"]["requests"]["cpu"]) == gpus
    assert "cpu" not in accept["resources"]["limits"]  # throttling would read as jitter
    env = {e["name"] for e in accept["env"]}
    assert "NVIDIA_VISIBLE_DEVICES" not in env  # the device plugin's GPUs, no others
    for name, container in containers(spec).items():
        if name != "accept":
            assert "nvidia.com/gpu" not in str(container.get("resources"))
    job = docs["Job"]["spec"]
    assert job["backoffLimit"] == 0 and spec["restartPolicy"] == "Never"  # never retried
    assert "hostPID" not in spec and "hostNetwork" not in spec


def test_the_label_follows_a_successful_accept_only() -> None:
    spec = pod(manifests())
    assert [c["name"] for c in spec["initContainers"]] == ["unlabel", "accept", "stamp"]
    assert [c["name"] for c in spec["containers"]] == ["label"]
    unlabel, label = containers(spec)["unlabel"], containers(spec)["label"]
    remove = next(a for a in unlabel["args"] if a.startswith("--patch="))
    assert json.loads(remove.partition("=")[2]) == {"metadata": {"labels": {LABEL: None}}}
    assert unlabel["args"][:3] == label["args"][:3] == ["patch", "node", "$(NODE_NAME)"]
    node_env = {e["name"]: e for e in label["env"]}["NODE_NAME"]
    assert node_env["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert "--patch-file=/stamp/patch.json" in label["args"]


def test_the_stamp_is_a_valid_label_patch(tmp_path: Path) -> None:
    stamp = containers(pod(manifests()))["stamp"]
    assert stamp["command"][:2] == ["sh", "-c"]
    script = stamp["command"][2].replace("/stamp/", f"{tmp_path}/")
    subprocess.run(["sh", "-c", script], check=True, timeout=30)
    patch = json.loads((tmp_path / "patch.json").read_text())
    ((key, value),) = patch["metadata"]["labels"].items()
    assert key == LABEL
    assert len(value) <= 63 and LABEL_VALUE.match(value), value


def test_rbac_allows_patching_that_node_only() -> None:
    docs = manifests("dgx-b7")
    (rule,) = docs["ClusterRole"]["rules"]
    assert rule == {
        "apiGroups": [""],
        "resources": ["nodes"],
        "resourceNames": ["dgx-b7"],
        "verbs": ["get", "patch"],
    }
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == docs["ClusterRole"]["metadata"]["name"]
    account = docs["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert "dgx-b7" in account["name"]  # one account per node: no Job labels another node
    assert docs["Job"]["metadata"]["namespace"] == account["namespace"]
    assert pod(docs)["serviceAccountName"] == account["name"]


def test_only_the_kubectl_containers_hold_the_token() -> None:
    docs = manifests()
    spec = pod(docs)
    assert spec["automountServiceAccountToken"] is False
    assert docs["ServiceAccount"]["automountServiceAccountToken"] is False
    holders = {
        name
        for name, c in containers(spec).items()
        if any(m["mountPath"] == TOKEN_PATH for m in c.get("volumeMounts", []))
    }
    assert holders == {"unlabel", "label"}
    (token,) = [v for v in spec["volumes"] if v["name"] == "api-token"]
    (projected,) = [s for s in token["projected"]["sources"] if "serviceAccountToken" in s]
    assert projected["serviceAccountToken"]["expirationSeconds"] <= 3600


def test_containers_are_not_privileged() -> None:
    for name, container in containers(pod(manifests())).items():
        security = container["securityContext"]
        assert security.get("privileged") in (None, False), name
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False, name
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}, name
        if name == "accept":  # the kernel log, as the DaemonSet
            assert security["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}
        else:
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert security["runAsNonRoot"] is True, name


def test_the_accept_arguments_run(tmp_path: Path) -> None:
    """The container's own arguments, against this machine (no driver where 8 GPUs are
    expected: not accepted), write the report and the bundle where the Job keeps them."""
    if shutil.which("nvidia-smi") or Path("/proc/driver/nvidia").exists():
        pytest.skip("a GPU node: these arguments would start a five-minute acceptance")
    accept = containers(pod(manifests()))["accept"]
    (records,) = [m for m in accept["volumeMounts"] if m["name"] == "records"]
    args = [
        a.replace(records["mountPath"], str(tmp_path)).replace("$(POD_NAME)", "accept-x1")
        for a in accept["args"]
    ]
    done = subprocess.run(
        [SITSCHECK, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode in (2, 3), done.stdout + done.stderr  # the pod fails: no label
    report = json.loads((tmp_path / "accept-x1.json").read_text())
    assert report["status"] in ("critical", "unknown")
    assert (tmp_path / "accept-x1.tar.gz").is_file()


def test_no_schedule_runs_accept() -> None:
    """accept runs only when asked: not by the DaemonSet, the timer or the daemon's units,
    their default arguments, the NPD plugin or slurmd's HealthCheckProgram."""
    daemonset = [d for d in yaml.safe_load_all((PACKAGING / "k8s" / "daemonset.yaml").read_text())
                 if d and d["kind"] == "DaemonSet"]  # fmt: skip
    (container,) = daemonset[0]["spec"]["template"]["spec"]["containers"]
    commands = [" ".join(container["command"] + container["args"])]
    for unit in (PACKAGING / "systemd").glob("*.service"):
        commands += [line for line in unit.read_text().splitlines() if line.startswith("Exec")]
    default = (PACKAGING / "etc" / "default" / "sitscheck").read_text()
    commands += [line for line in default.splitlines() if line.startswith("SITSCHECK_ARGS")]
    npd = json.loads((PACKAGING / "npd" / "sitscheck-plugin-monitor.json").read_text())
    commands += [" ".join(rule["args"]) for rule in npd["rules"]]
    commands += [
        line
        for line in (PACKAGING / "slurm" / "sitscheck-healthcheck").read_text().splitlines()
        if '"$SITSCHECK"' in line
    ]
    assert len(commands) >= 5
    assert not [c for c in commands if re.search(r"\baccept\b", c)], commands
