"""End to end through the command line, in a subprocess, as an operator or a script runs it."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sitscheck import __version__

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "schema" / "report.schema.json"
EXIT = {"ok": 0, "skipped": 0, "warning": 1, "critical": 2, "unknown": 3}


def sitscheck(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("sitscheck")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "sitscheck"]
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
        env={**os.environ, **(env or {})},
    )


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout.lstrip().startswith("{"), done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["checks"] if c["name"] == name)
    return found


def seven_gpu_bundle(folder: Path) -> Path:
    folder.mkdir()
    listing = "".join(
        f"GPU {i}: NVIDIA H200 (UUID: GPU-{i:08x}-41d0-bcb0-fd5b-7849b655a02f)\n" for i in range(7)
    )
    (folder / "nvidia-smi-L.txt").write_text(listing)
    return folder


# ---- the basics --------------------------------------------------------------------------


def test_version(tmp_path: Path) -> None:
    done = sitscheck("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"sitscheck {__version__}"


def test_checks_lists_driver(tmp_path: Path) -> None:
    done = sitscheck("checks", cwd=tmp_path)
    assert done.returncode == 0
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert "driver" in lines
    assert "BROKEN" not in lines["driver"]
    assert "driver" in lines["driver"].split()[1]  # its layer


def test_schema_file_matches_the_model(tmp_path: Path) -> None:
    done = sitscheck("schema", cwd=tmp_path)
    assert done.returncode == 0
    assert SCHEMA_FILE.read_text(encoding="utf-8") == done.stdout, (
        "schema/report.schema.json is stale: regenerate it with `sitscheck schema`"
    )


def test_schema_rejects_a_bad_report(validator: jsonschema.protocols.Validator) -> None:
    """The schema is not trivially permissive, so validating against it means something."""
    assert not validator.is_valid({"status": "ok"})  # required fields missing
    good_enough = {
        "sitscheck_version": "0",
        "host": "h",
        "started_at": "t",
        "duration_s": 0.0,
        "status": "ok",
        "headline": "OK",
        "mode": "replay",
        "checks": [{"name": "driver", "status": "fine"}],
    }
    assert not validator.is_valid(good_enough)  # "fine" is no status
    good_enough["checks"] = [{"name": "driver", "status": "ok"}]
    assert validator.is_valid(good_enough)


# ---- replaying bundles -------------------------------------------------------------------


@pytest.fixture(scope="module")
def driver_replay(
    bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> subprocess.CompletedProcess[str]:
    """`run --from BUNDLE --check driver -o json`, run once for the tests that read it."""
    cwd = tmp_path_factory.mktemp("driver-replay")
    return sitscheck("run", "--from", str(bundle_dir), "--check", "driver", "-o", "json", cwd=cwd)


def test_recorded_bundle_replays_ok_as_valid_json(
    driver_replay: subprocess.CompletedProcess[str], validator: jsonschema.protocols.Validator
) -> None:
    done = driver_replay
    assert done.returncode == 0, done.stdout + done.stderr
    report = report_of(done)
    validator.validate(report)
    assert report["status"] == "ok"
    assert report["mode"] == "replay"
    assert report["host"] == "vm"  # from the bundle's meta.json, not this machine
    driver = check(report, "driver")
    assert driver["status"] == "ok"
    assert driver["facts"]["source"] == "nvml"
    assert driver["facts"]["gpu_count"] == 2
    assert {g["uuid"] for g in driver["facts"]["gpus"]} == {
        "GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f",
        "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba",
    }


def test_full_replay_of_the_healthy_node_is_ok(
    tmp_path: Path, bundle_dir: Path, validator: jsonschema.protocols.Validator
) -> None:
    """Every check, every built-in rule: the recorded idle 2×H200 node is healthy (exit 0)."""
    done = sitscheck("run", "--from", str(bundle_dir), "--output", "json", cwd=tmp_path)
    report = report_of(done)
    validator.validate(report)
    assert done.returncode == EXIT[report["status"]]
    problems = [
        (c["name"], c["status"], c.get("error"))
        for c in report["checks"]
        if c["status"] not in ("ok", "skipped")
    ]
    fired = [(v["rule"], v["status"]) for v in report["verdicts"] if v["status"] != "ok"]
    assert done.returncode == 0, (report["headline"], problems, fired)
    assert report["status"] == "ok"
    assert len(report["checks"]) > 1
    assert check(report, "driver")["status"] == "ok"


def test_too_few_gpus_is_critical(tmp_path: Path) -> None:
    bundle = seven_gpu_bundle(tmp_path / "seven")
    done = sitscheck(
        "run", "--from", str(bundle), "--check", "driver", "--expect-gpus", "8", "-o", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    driver = check(report_of(done), "driver")
    assert driver["status"] == "critical"
    (finding,) = [f for f in driver["findings"] if f["code"] == "driver.gpu_count"]
    assert finding["severity"] == "critical"
    assert finding["message"] == "7 GPUs answer, 8 expected"
    assert driver["facts"]["source"] == "nvidia-smi -L"


def test_too_few_gpus_from_a_site_config_file(tmp_path: Path) -> None:
    bundle = seven_gpu_bundle(tmp_path / "seven")
    config = tmp_path / "config.yaml"
    config.write_text("expect_gpus: 8\n")
    done = sitscheck(
        "run", "--from", str(bundle), "--check", "driver", "--config", str(config), "-o", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    codes = [f["code"] for f in check(report_of(done), "driver")["findings"]]
    assert codes == ["driver.gpu_count"]


def test_the_expected_count_is_ok(tmp_path: Path) -> None:
    bundle = seven_gpu_bundle(tmp_path / "seven")
    done = sitscheck(
        "run", "--from", str(bundle), "--check", "driver", "--expect-gpus", "7", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_bad_config_file_is_refused_naming_it(tmp_path: Path, bundle_dir: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("expect_gpu: 8\n")
    done = sitscheck("run", "--from", str(bundle_dir), "--config", str(config), cwd=tmp_path)
    assert done.returncode == 3
    assert str(config) in done.stderr and "expect_gpu" in done.stderr


def test_empty_bundle_skips_with_reasons(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = sitscheck("run", "--from", str(empty), "--check", "driver", "-o", "text", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[skip] driver" in done.stdout
    assert "skipped: the bundle holds no NVIDIA driver evidence" in done.stdout


def test_json_to_a_file_is_written_0640(tmp_path: Path, bundle_dir: Path) -> None:
    target = tmp_path / "out" / "report.json"
    done = sitscheck(
        "run", "--from", str(bundle_dir), "--check", "driver", "-o", f"json={target}", "-o", "text",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert json.loads(target.read_text())["status"] == "ok"
    assert not done.stdout.lstrip().startswith("{")  # the text report went to stdout
    assert "driver" in done.stdout
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]  # no temp file left


def comparable(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "duration_s"} for c in report["checks"]]


@pytest.mark.parametrize("layout", ["folder", "flat"])
def test_tarball_replays_like_the_directory(
    tmp_path: Path,
    bundle_dir: Path,
    layout: str,
    driver_replay: subprocess.CompletedProcess[str],
) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        if layout == "folder":
            tar.add(bundle_dir, arcname=bundle_dir.name)
        else:
            for child in sorted(bundle_dir.iterdir()):
                tar.add(child, arcname=child.name)
    from_dir = driver_replay
    from_tar = sitscheck(
        "run", "--from", str(archive), "--check", "driver", "-o", "json", cwd=tmp_path
    )
    assert from_tar.returncode == from_dir.returncode == 0, from_tar.stderr
    tar_report, dir_report = report_of(from_tar), report_of(from_dir)
    assert comparable(tar_report) == comparable(dir_report)
    assert tar_report["host"] == "vm"
    assert tar_report["bundle"] == str(archive)


def unsafe_tarball(path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        ok = tarfile.TarInfo("bundle/nvidia-smi-L.txt")
        listing = b"GPU 0: NVIDIA H200 (UUID: GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f)\n"
        ok.size = len(listing)
        tar.addfile(ok, io.BytesIO(listing))
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data) if data else None)
    return path


def symlink_member(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_unsafe_tarball_is_refused_naming_the_member(tmp_path: Path, kind: str) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    absolute = tmp_path / "abs-evil.txt"
    member, data = {
        "dotdot": (tarfile.TarInfo("bundle/../../evil.txt"), b"pwned\n"),
        "absolute": (tarfile.TarInfo(str(absolute)), b"pwned\n"),
        "symlink": (symlink_member("bundle/nvml.json", "/etc/passwd"), b""),
    }[kind]
    shown = member.name
    archive = unsafe_tarball(work / "bundle.tar.gz", member, data)
    unpack_into = tmp_path / "tmp"  # the bundle is unpacked under $TMPDIR/sitscheck-bundle-*
    unpack_into.mkdir()
    done = sitscheck(
        "run",
        "--from",
        str(archive),
        "--check",
        "driver",
        cwd=work,
        env={"TMPDIR": str(unpack_into)},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert repr(shown) in done.stderr and "refused" in done.stderr
    assert str(archive) in done.stderr
    assert not (unpack_into / "evil.txt").exists()  # where `bundle/../../evil.txt` would land
    assert not absolute.exists()
    assert list(unpack_into.iterdir()) == []  # the partial unpack was cleaned up


def test_unknown_check_is_refused_naming_the_known(tmp_path: Path, bundle_dir: Path) -> None:
    done = sitscheck("run", "--from", str(bundle_dir), "--check", "nosuch", cwd=tmp_path)
    assert done.returncode == 3
    assert "no such check: nosuch" in done.stderr
    assert "known:" in done.stderr and "driver" in done.stderr.split("known:")[1]


def test_missing_bundle_is_refused(tmp_path: Path) -> None:
    done = sitscheck("run", "--from", str(tmp_path / "nope"), cwd=tmp_path)
    assert done.returncode == 3
    assert "no such bundle" in done.stderr


def test_site_rules_join_the_run(tmp_path: Path, bundle_dir: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site.yaml").write_text(
        "params:\n  want_gpus: 8\n"
        "rules:\n"
        "  - id: site.gpu_count\n"
        "    requires: [driver]\n"
        "    when: checks.driver.facts.gpu_count < params.want_gpus\n"
        "    severity: warning\n"
        "    message: '{checks.driver.facts.gpu_count} of {params.want_gpus} GPUs'\n"
    )
    done = sitscheck(
        "run", "--from", str(bundle_dir), "--check", "driver", "--rules", str(rules), "-o", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    report = report_of(done)
    (verdict,) = [v for v in report["verdicts"] if v["rule"] == "site.gpu_count"]
    assert verdict["status"] == "warning"
    assert verdict["message"] == "2 of 8 GPUs"
    assert "site.gpu_count" in report["headline"]


def test_broken_site_rule_file_stops_the_run(tmp_path: Path, bundle_dir: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bad.yaml").write_text("rules:\n  - id: x\n    when: 'true'\n    severity: loud\n")
    done = sitscheck("run", "--from", str(bundle_dir), "--rules", str(rules), cwd=tmp_path)
    assert done.returncode == 3
    assert f"{rules / 'bad.yaml'}:" in done.stderr


def _driver_present() -> bool:
    markers = ("/proc/driver/nvidia/version", "/dev/nvidiactl")
    return any(os.path.exists(m) for m in markers) or shutil.which("nvidia-smi") is not None


@pytest.mark.skipif(_driver_present(), reason="this machine has an NVIDIA driver")
def test_live_run_without_a_driver_skips_the_gpu_checks(
    tmp_path: Path, validator: jsonschema.protocols.Validator
) -> None:
    empty = tmp_path / "sys"
    empty.mkdir()
    done = sitscheck(
        "run", "--check", "driver", "--sys-root", str(empty), "-o", "json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = report_of(done)
    validator.validate(report)
    assert report["mode"] == "live"
    driver = check(report, "driver")
    assert driver["status"] == "skipped"
    assert "no NVIDIA driver" in driver["skip_reason"]


def test_a_corrupt_bundle_never_crashes_with_exit_1(tmp_path: Path) -> None:
    bundle = seven_gpu_bundle(tmp_path / "bundle")
    (bundle / "meta.json").write_text('{"host": ["node-1"], "nvidia_driver": "yes"}')
    done = sitscheck("run", "--from", str(bundle), "--check", "driver", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 3), done.stderr
