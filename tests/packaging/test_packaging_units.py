"""The systemd units, the default configuration, the NPD plugin and the Kubernetes manifest."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from sitscheck.engine.loader import load_rules, rule_files
from sitscheck.site_config import build_config, load_site_config

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "bundles" / "h200x2-idle-v0"
SITSCHECK = shutil.which("sitscheck", path=str(Path(sys.executable).parent)) or "sitscheck"
UNITS = REPO / "packaging" / "systemd"
SERVICES = ("sitscheck.service", "sitscheck-daemon.service")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
SYSUSERS = UNITS / "sitscheck.sysusers"
TMPFILES = UNITS / "sitscheck.tmpfiles"


def unit(name: str) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values]}} (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in (UNITS / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.mark.parametrize("name", SERVICES)
def test_services_are_hardened(name: str) -> None:
    service = unit(name)["Service"]
    expected = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "StateDirectory": "sitscheck",
        "CapabilityBoundingSet": "CAP_SYSLOG",
        "ProtectKernelModules": "yes",
        "ProtectKernelTunables": "yes",
        "RestrictSUIDSGID": "yes",
    }
    for key, value in expected.items():
        assert service.get(key) == [value], key
    assert "ProtectKernelLogs" not in service  # the kernel log is what it reads
    assert service["ReadWritePaths"] == ["-/var/lib/prometheus/node-exporter"]
    assert "/dev/kmsg r" in service["DeviceAllow"]


def test_timer_mode_is_a_oneshot_daemon_run() -> None:
    service = unit("sitscheck.service")["Service"]
    assert service["Type"] == ["oneshot"]
    assert "run --daemon" in service["ExecStart"][0]
    assert service["SuccessExitStatus"] == ["1 2"]  # warning/critical are results
    timer = unit("sitscheck.timer")
    assert timer["Timer"]["OnBootSec"] and timer["Timer"]["OnUnitActiveSec"]
    assert timer["Timer"]["RandomizedDelaySec"]
    assert timer["Install"]["WantedBy"] == ["timers.target"]


def test_daemon_mode_notifies_and_has_a_watchdog() -> None:
    service = unit("sitscheck-daemon.service")["Service"]
    assert service["Type"] == ["notify"] and service["NotifyAccess"] == ["main"]
    assert int(service["WatchdogSec"][0]) > 0
    assert "daemon --interval" in service["ExecStart"][0]
    assert "sitscheck.timer" in unit("sitscheck-daemon.service")["Unit"]["Conflicts"][0]


def config_lines(path: Path) -> list[list[str]]:
    """A sysusers.d or tmpfiles.d file as its lines' fields (quoted fields kept whole)."""
    lines = (line.strip() for line in path.read_text().splitlines())
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def textfile_folder() -> str:
    (path,) = unit("sitscheck.service")["Service"]["ReadWritePaths"]
    return path.removeprefix("-")


@pytest.mark.parametrize("name", SERVICES)
def test_the_service_user_is_made_by_sysusers_and_may_write_the_textfile(name: str) -> None:
    service = unit(name)["Service"]
    (user,) = service["User"]
    assert service["Group"] == [user]  # sysusers' `u` line makes a group of the same name
    made = [f for f in config_lines(SYSUSERS) if f[0] == "u"]
    assert [f[1] for f in made] == [user]
    assert made[0][4] == "/var/lib/" + service["StateDirectory"][0]  # home: the state folder
    folder = textfile_folder()
    entries = {(f[0], f[1]): f for f in config_lines(TMPFILES)}
    assert ("d", folder) in entries  # made when node_exporter is not installed (yet)
    acl = entries.get(("a+", folder))
    assert acl is not None and acl[6] == f"u:{user}:rwx"  # appended: others' entries kept


SYSUSERS_BIN = shutil.which("systemd-sysusers")
TMPFILES_BIN = shutil.which("systemd-tmpfiles")
SETPRIV = shutil.which("setpriv")


@pytest.fixture
def scratch_root(open_dir: Callable[[int], Path]) -> Path:
    return open_dir(0o755)


@pytest.mark.skipif(
    SYSUSERS_BIN is None or TMPFILES_BIN is None or SETPRIV is None or os.geteuid() != 0,
    reason="needs root, systemd-sysusers, systemd-tmpfiles and setpriv",
)
def test_sysusers_and_tmpfiles_let_an_unprivileged_user_write_the_textfile(
    scratch_root: Path,
) -> None:
    """Both files applied to a scratch root: the user is made, and the ACL entry lets a user
    who is neither the folder's owner nor in its group create and rename a file there. The
    ACL is tried for `nobody`: tmpfiles resolves its names on this host, not in the root."""
    assert SYSUSERS_BIN and TMPFILES_BIN and SETPRIV
    root = scratch_root
    for kind, text in (
        ("sysusers.d", SYSUSERS.read_text()),
        ("tmpfiles.d", TMPFILES.read_text().replace("u:sitscheck:", "u:nobody:")),
    ):
        target = root / "usr" / "lib" / kind / "sitscheck.conf"
        target.parent.mkdir(parents=True)
        target.write_text(text)
    (root / "etc").mkdir()
    for argv in (
        [SYSUSERS_BIN, f"--root={root}", "sitscheck.conf"],
        [TMPFILES_BIN, f"--root={root}", "--create", "sitscheck.conf"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Failed" not in done.stderr, done.stderr
    passwd = (root / "etc" / "passwd").read_text()
    assert re.search(r"^sitscheck:x:\d+:\d+:[^:]*:/var/lib/sitscheck:\S*nologin$", passwd, re.M)
    folder = root / textfile_folder().lstrip("/")
    assert folder.stat().st_uid == 0 and folder.stat().st_mode & 0o002 == 0  # group bits: mask
    assert "system.posix_acl_access" in os.listxattr(folder)
    drop = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    drop += ["--bounding-set=-all", "--"]
    for argv in (["touch", f"{folder}/.t"], ["mv", f"{folder}/.t", f"{folder}/a.prom"]):
        done = subprocess.run([*drop, *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    assert (folder / "a.prom").stat().st_uid == 65534


@pytest.fixture
def units_with_stub(tmp_path: Path) -> Path:
    """The units with ExecStart pointing at a stub executable (verify checks it exists)."""
    stub = tmp_path / "bin" / "sitscheck"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    folder = tmp_path / "units"
    folder.mkdir()
    for path in UNITS.iterdir():
        text = path.read_text().replace("/usr/bin/sitscheck", str(stub))
        (folder / path.name).write_text(text)
    return folder


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_is_clean(units_with_stub: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    files = [str(units_with_stub / n) for n in (*SERVICES, "sitscheck.timer")]
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *files], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "" and done.stdout.strip() == ""  # warnings are failures


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("name", SERVICES)
def test_exposure_is_well_under_5(units_with_stub: Path, name: str) -> None:
    assert SYSTEMD_ANALYZE is not None
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", str(units_with_stub / name)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "--offline" in done.stderr or "unrecognized option" in done.stderr:
        pytest.skip("this systemd-analyze cannot analyze unit files offline (systemd < 252)")
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert found is not None, done.stdout + done.stderr
    assert float(found.group(1)) <= 3.0


def test_default_config_is_valid_and_harmless_as_a_rule_file(tmp_path: Path) -> None:
    path = REPO / "packaging" / "etc" / "sitscheck" / "config.yaml"
    site = load_site_config(path)
    build_config(site, {}, str(path))
    # /etc/sitscheck is also a rule directory: the default file must not break rule loading
    etc = tmp_path / "sitscheck"
    etc.mkdir()
    shutil.copy(path, etc / "config.yaml")
    load_rules(rule_files([etc]))


def test_default_arguments_write_the_textfile_where_the_unit_may() -> None:
    text = (REPO / "packaging" / "etc" / "default" / "sitscheck").read_text()
    args = re.search(r'^SITSCHECK_ARGS="([^"]*)"', text, re.MULTILINE)
    assert args is not None
    prom = re.search(r"--output prom=(\S+)", args.group(1))
    assert prom is not None
    writable = unit("sitscheck.service")["Service"]["ReadWritePaths"]
    assert f"-{prom.group(1)}" in writable


def test_npd_plugin_config() -> None:
    config = json.loads((REPO / "packaging" / "npd" / "sitscheck-plugin-monitor.json").read_text())
    assert config["plugin"] == "custom"
    assert config["pluginConfig"]["max_output_length"] == 80
    (rule,) = config["rules"]
    assert rule["args"] == ["run", "--output", "npd"]
    assert rule["condition"] == config["conditions"][0]["type"]


def test_k8s_daemonset() -> None:
    docs = list(yaml.safe_load_all((REPO / "packaging" / "k8s" / "daemonset.yaml").read_text()))
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert "hostPID" not in pod and "hostNetwork" not in pod  # nothing needs the host's
    (namespace,) = [d for d in docs if d["kind"] == "Namespace"]
    # hostPath volumes and an added capability are beyond "baseline": the level is said
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    (container,) = pod["containers"]
    probe = container["livenessProbe"]
    assert probe["exec"]["command"][:2] == ["sh", "-c"]
    assert probe["initialDelaySeconds"] >= 300  # the first run has time to write the state
    assert container["args"][0] == "daemon"
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["kmsg"]["hostPath"]["path"] == "/dev/kmsg"
    for name in ("kmsg", "sys", "varlog"):
        assert mounts[name]["readOnly"] is True
    assert mounts["state"].get("readOnly") is not True
    env = {e["name"]: e for e in container["env"]}
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"].startswith("http://$(HOST_IP)")
    assert env["HOST_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    security = container["securityContext"]
    assert security["privileged"] is False and security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}
    assert "resources" in container and "nvidia.com/gpu" not in str(container["resources"])


K8S_VERSIONS = ("1.28.0", "1.30.0", "1.33.0")
K8S_MANIFESTS = {
    "daemonset.yaml": {"Namespace", "ServiceAccount", "DaemonSet"},
    "accept-job.yaml": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"},
}


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("manifest", sorted(K8S_MANIFESTS))
def test_k8s_manifests_validate_against_the_api_schemas(manifest: str, version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    text = (REPO / "packaging" / "k8s" / manifest).read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert {d["kind"] for d in docs} == K8S_MANIFESTS[manifest]
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)  # raises on an unknown field
    broken = dict(docs[-1], spec={**docs[-1]["spec"], "replicas": 3})  # not in either spec
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_k8s_liveness_probe_follows_the_daemon_state(tmp_path: Path) -> None:
    """The probe's own command, run against a state folder a real daemon run wrote, then
    against one last written 20 minutes ago."""
    docs = list(yaml.safe_load_all((REPO / "packaging" / "k8s" / "daemonset.yaml").read_text()))
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    script = container["livenessProbe"]["exec"]["command"][2]
    state = tmp_path / "state"
    done = subprocess.run(
        [
            SITSCHECK,
            "run",
            "--daemon",
            "--state-dir",
            str(state),
            "--from",
            str(RECORDED),
            "--output",
            "npd",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (state / "state.json").is_file(), done.stderr
    local = script.replace("/var/lib/sitscheck", str(state))
    assert subprocess.run(["sh", "-c", local], check=False, timeout=10).returncode == 0
    old = time.time() - 20 * 60
    os.utime(state / "state.json", (old, old))
    assert subprocess.run(["sh", "-c", local], check=False, timeout=10).returncode != 0
