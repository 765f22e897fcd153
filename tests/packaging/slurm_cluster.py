"""A real one-node Slurm for tests: munged, slurmctld and slurmd from Debian's packages, each
started here in the foreground (so this process owns and ends them), on 127.0.0.1 only, with
every file (config, state, spool, logs, munge socket and key) under one temporary folder.

`ensure_installed()` installs the packages with apt-get when they are missing, as root, with
services kept from starting (policy-rc.d); without root or apt-get the caller skips.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("munge", "slurmctld", "slurmd", "slurm-client")
BINARIES = ("munged", "slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "scancel")
POLICY = Path("/usr/sbin/policy-rc.d")


def missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()]


def can_install() -> str | None:
    """Why the packages cannot be installed here, or None."""
    if os.geteuid() != 0:
        return "not root: cannot apt-get install munge/slurm"
    if shutil.which("apt-get") is None:
        return "no apt-get: cannot install munge/slurm"
    return None


def ensure_installed() -> None:
    """apt-get install what is missing (services not started); raises on failure."""
    if not missing():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    made_policy = not POLICY.exists()
    if made_policy:  # keep the packages' own services from starting
        POLICY.write_text("#!/bin/sh\nexit 101\n")
        POLICY.chmod(0o755)
    try:
        subprocess.run(
            ["apt-get", "update", "-qq"], env=env, check=False, timeout=600, capture_output=True
        )
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
            env=env,
            check=True,
            timeout=900,
            capture_output=True,
        )
    finally:
        if made_policy:
            POLICY.unlink()


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    root: Path
    node: str = "sitscheck-node"
    host: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        for sub in ("state", "spool", "munge", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        munge = self.root / "munge"
        munge.chmod(0o700)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        ctld, slurmd = _free_port(), _free_port()
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=sitscheck-test",
                    f"SlurmctldHost={self.host}(127.0.0.1)",
                    f"SlurmctldPort={ctld}",
                    f"SlurmdPort={slurmd}",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={munge / 'socket'}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    f"StateSaveLocation={self.root / 'state'}",
                    f"SlurmdSpoolDir={self.root / 'spool'}",
                    f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
                    f"SlurmdPidFile={self.root / 'slurmd.pid'}",
                    f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
                    f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "SelectType=select/linear",
                    "MpiDefault=none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "ReturnToService=2",
                    "MessageTimeout=3",
                    f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN",
                    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def _start(self, name: str, argv: list[str]) -> None:
        log = (self.root / "log" / f"{name}.out").open("ab")
        self.processes[name] = subprocess.Popen(
            argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def start(self) -> None:
        self.write_config()
        munge = self.root / "munge"
        self._start(
            "munged",
            [
                _binary("munged"),
                "--foreground",
                "--force",
                f"--socket={munge / 'socket'}",
                f"--key-file={munge / 'munge.key'}",
                f"--pid-file={munge / 'pid'}",
                f"--log-file={munge / 'log'}",
                f"--seed-file={munge / 'seed'}",
            ],
        )
        self._wait(lambda: (munge / "socket").exists(), "munged did not make its socket")
        self.start_controller(clear=True)
        self._start("slurmd", [_binary("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(lambda: self.state()[0] == "idle", "the node did not become idle")

    def start_controller(self, clear: bool = False) -> None:
        argv = [_binary("slurmctld"), "-D", "-f", str(self.conf)]
        self._start("slurmctld", [*argv, "-i"] if clear else argv)
        self._wait(lambda: self.state()[0] != "", "slurmctld did not answer")

    def stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def close(self) -> None:
        for name in ("slurmd", "slurmctld", "munged"):
            self.stop(name)

    def _wait(self, ready: object, message: str, seconds: float = 40.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited {process.returncode}: {self.logs()}")
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.2)
        raise RuntimeError(f"{message}: {self.logs()}")

    def logs(self) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            out.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-1500:])
        return "\n".join(out)

    def scontrol(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.command("scontrol", *args)

    def command(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (scontrol, sbatch, scancel, ...) against this cluster."""
        return subprocess.run(
            [_binary(name), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def state(self) -> tuple[str, str]:
        """(state, reason) of the node as sinfo prints them, less the flag sinfo appends about
        slurmd's answers (`*` not responding, `~`, `#`, ...: not the drain, which the tests
        judge); ("", "") when slurmctld does not answer."""
        done = subprocess.run(
            [_binary("sinfo"), "--noheader", "--Node", f"--nodes={self.node}", "--format=%T|%E"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
        state, _, reason = line.partition("|")
        return state.rstrip("*~#!%$@^-"), reason

    def reason(self) -> str:
        """The node's full drain reason (sinfo's %E may be cut)."""
        text = self.scontrol("show", "node", self.node).stdout
        for field_text in text.split():
            if field_text.startswith("Reason="):
                return text[text.index("Reason=") + 7 :].split("\n")[0].rsplit(" [", 1)[0]
        return ""
