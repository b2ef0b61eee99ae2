"""A single-node Slurm cluster on this machine, for the SLURM profile test.

Debian's slurmctld/slurmd/munge, started without systemd (munged as the munge user, the Slurm
daemons as root), no accounting database, and two fake GPUs (/dev/fakegpu0-1 from mknod) declared
as GRES, so that `sbatch --gpus=1` is scheduled and recorded like on a real GPU cluster.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
DAEMONS = ["slurmctld", "slurmd", "munged"]


class SlurmUnavailable(RuntimeError):
    """Slurm cannot be started here (no root, no apt); the test skips with this reason."""


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def install() -> None:
    """apt-get install the Slurm and munge packages if their binaries are missing."""
    if all(shutil.which(b) for b in ("slurmctld", "slurmd", "sbatch", "munged")):
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable("installing Slurm needs root")
    if not shutil.which("apt-get"):
        raise SlurmUnavailable("no apt-get to install Slurm with")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        _run(["apt-get", "update", "-q"], env=env)
        _run(["apt-get", "install", "-y", "-q", *PACKAGES], env=env)
    except subprocess.CalledProcessError as exc:
        raise SlurmUnavailable(f"apt-get install {' '.join(PACKAGES)} failed: {exc.stderr[-500:]}") from exc


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 4096


def start(state_dir: Path) -> dict:
    """Write the config, start munged, slurmctld and slurmd, and wait for the node to be idle."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("starting Slurm daemons needs root")
    install()
    stop()
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 2
    state_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("ctld", "d"):
        (state_dir / sub).mkdir(exist_ok=True)
    for i in range(2):
        dev = Path(f"/dev/fakegpu{i}")
        if not dev.exists():
            _run(["mknod", str(dev), "c", "1", "3"])
    conf_dir = Path("/etc/slurm")
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "slurm.conf").write_text(f"""ClusterName=initmem-test
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={state_dir}/ctld
SlurmdSpoolDir={state_dir}/d
SlurmctldPidFile={state_dir}/slurmctld.pid
SlurmdPidFile={state_dir}/slurmd.pid
SlurmctldLogFile={state_dir}/slurmctld.log
SlurmdLogFile={state_dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=300
ReturnToService=2
GresTypes=gpu
NodeName={host} CPUs={cpus} RealMemory={max(1024, _memory_mb() - 2048)} Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    (conf_dir / "gres.conf").write_text(f"NodeName={host} Name=gpu File=/dev/fakegpu[0-1]\n")
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(os.urandom(1024))
    for path in (key.parent, Path("/var/lib/munge"), Path("/var/log/munge"), Path("/run/munge")):
        path.mkdir(parents=True, exist_ok=True)
        shutil.chown(path, "munge", "munge")
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    _run(["runuser", "-u", "munge", "--", "munged", "--force"])
    _run(["slurmctld"])
    _run(["slurmd"])
    deadline = time.time() + 60
    state = ""
    while time.time() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        state = proc.stdout.strip()
        if state == "idle":
            return {"host": host, "cpus": cpus, "state_dir": state_dir}
        time.sleep(1)
    log = (state_dir / "slurmctld.log").read_text()[-2000:] if (state_dir / "slurmctld.log").exists() else ""
    stop()
    raise RuntimeError(f"Slurm node did not become idle (sinfo: {state!r}); slurmctld.log:\n{log}")


def stop() -> None:
    """Stop the daemons this module starts (no-op when none runs)."""
    for name in DAEMONS:
        subprocess.run(["pkill", "-x", name], capture_output=True)
    for _ in range(20):
        if subprocess.run(["pgrep", "-x", "slurmctld|slurmd|munged"], capture_output=True).returncode != 0:
            return
        time.sleep(0.5)


def job_records() -> list[dict]:
    """Every job slurmctld still remembers (MinJobAge=300 keeps finished ones), as key=value dicts."""
    out = _run(["scontrol", "show", "job", "-o"]).stdout
    records = []
    for line in out.splitlines():
        fields = {}
        for token in line.split():
            key, _, value = token.partition("=")
            fields[key] = value
        if fields:
            records.append(fields)
    return records
