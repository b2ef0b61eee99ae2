"""A single-node Slurm cluster on this machine, for the real-Slurm profile test (opt-in only).

Debian's slurmctld/slurmd/munge, started without systemd (munged as the munge user, the Slurm
daemons as root), no accounting database, and two fake GPUs (/dev/fakegpu0-1 from mknod) declared
as GRES, so that `sbatch --gpus=1` is scheduled and recorded like on a real GPU cluster.

It changes the machine (apt-get install, /etc/slurm, a munge key, device nodes, daemons), so
tests/test_slurm.py runs it only with INITMEM_TEST_SLURM=1 (.ci/run sets it). Even then it leaves a
real Slurm alone: it refuses to overwrite a Slurm configuration it did not write (every file it
writes starts with :data:`MARK`) or to start while Slurm daemons run, and :meth:`Cluster.stop`
stops only the daemons it started (by their pid) and removes only the files it created.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
MARK = "# written by initmem tests/slurm_cluster.py for its test cluster; it overwrites and removes this file"
CONF_DIR = Path("/etc/slurm")
MUNGE_KEY = Path("/etc/munge/munge.key")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot be started here (no root, no apt, or a Slurm that is not ours)."""


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


def _running(name: str) -> list[int]:
    proc = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True)
    return [int(p) for p in proc.stdout.split()]


def _ours(path: Path) -> bool:
    try:
        return path.read_text(errors="replace").splitlines()[:1] == [MARK]
    except OSError:
        return False


def foreign_config(conf_dir: Path = CONF_DIR) -> list[Path]:
    """Slurm configuration files that exist and were not written by this module."""
    return [conf_dir / name for name in ("slurm.conf", "gres.conf") if (conf_dir / name).exists() and not _ours(conf_dir / name)]


def write_owned(path: Path, text: str) -> None:
    """Write ``text`` under :data:`MARK`; refuse to overwrite a file this module did not write."""
    if path.exists() and not _ours(path):
        raise SlurmUnavailable(f"{path} exists and was not written by this test; refusing to overwrite it "
                               "(run the real-Slurm test on a machine without its own Slurm)")
    path.write_text(f"{MARK}\n{text}")


@dataclass
class Cluster:
    """What :func:`start` started and created, so that :meth:`stop` undoes exactly that."""

    host: str
    cpus: int
    state_dir: Path
    pids: dict[str, int] = field(default_factory=dict)
    created: list[Path] = field(default_factory=list)

    def stop(self) -> None:
        """Stop the daemons this cluster started and remove the files it created. A daemon's pid
        is known, but any process of a name it started is ours too (none ran before :func:`start`)."""
        for name in ("slurmd", "slurmctld", "munged"):
            if name not in self.pids:
                continue
            self.pids.pop(name)
            pids = _running(name)
            for pid in pids:
                _signal(pid, signal.SIGTERM)
            deadline = time.time() + 10
            while any(_alive(pid) for pid in pids) and time.time() < deadline:
                time.sleep(0.25)
            for pid in pids:
                if _alive(pid):
                    _signal(pid, signal.SIGKILL)
            time.sleep(0.5)
            if any(_alive(pid) for pid in pids):
                raise RuntimeError(f"{name} (pids {pids}) still runs after SIGKILL")
        for path in reversed(self.created):
            if path.is_file() or path.is_char_device():
                path.unlink()
        self.created.clear()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    """Running (a zombie that nobody reaps, as under a container's init, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _started_pid(name: str, pid_file: Path | None = None, timeout: float = 15) -> int:
    """The pid of daemon ``name`` just started: from its pid file, else the oldest process of that
    name (none ran before :func:`start`, so it is ours; slurmctld forks a helper of the same name)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pid_file is not None and pid_file.is_file() and pid_file.read_text().strip():
            return int(pid_file.read_text().split()[0])
        if pid_file is None:
            proc = subprocess.run(["pgrep", "-o", "-x", name], capture_output=True, text=True)
            if proc.stdout.strip():
                return int(proc.stdout.split()[0])
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not start (no {pid_file or 'process'} after {timeout:.0f} s)")


def start(state_dir: Path) -> Cluster:
    """Write the config, start munged, slurmctld and slurmd, and wait for the node to be idle."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("starting Slurm daemons needs root")
    foreign = foreign_config()
    if foreign:
        raise SlurmUnavailable(f"{', '.join(map(str, foreign))} exist and were not written by this test; refusing "
                               "to overwrite a Slurm configuration (run the real-Slurm test on a machine without Slurm)")
    running = [name for name in ("slurmctld", "slurmd") if _running(name)]
    if running:
        raise SlurmUnavailable(f"{', '.join(running)} already running on this machine; the test starts its own "
                               "cluster only where no Slurm runs")
    munge_before = bool(_running("munged"))  # the site's munged, if any: used, never stopped
    install()
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 2
    cluster = Cluster(host, cpus, state_dir)
    try:
        _start(cluster, munge_before)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start(cluster: Cluster, munge_before: bool) -> None:
    state_dir, host = cluster.state_dir, cluster.host
    state_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("ctld", "d"):
        (state_dir / sub).mkdir(exist_ok=True)
    for i in range(2):
        dev = Path(f"/dev/fakegpu{i}")
        if not dev.exists():
            _run(["mknod", str(dev), "c", "1", "3"])
            cluster.created.append(dev)
    CONF_DIR.mkdir(exist_ok=True)
    for name, text in (("slurm.conf", f"""ClusterName=initmem-test
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
NodeName={host} CPUs={cluster.cpus} RealMemory={max(1024, _memory_mb() - 2048)} Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""), ("gres.conf", f"NodeName={host} Name=gpu File=/dev/fakegpu[0-1]\n")):
        write_owned(CONF_DIR / name, text)
        cluster.created.append(CONF_DIR / name)
    if _running("munged") and not munge_before:  # started by the package install just now: ours to stop
        cluster.pids["munged"] = _started_pid("munged")
    elif not _running("munged"):
        if not MUNGE_KEY.exists():
            MUNGE_KEY.parent.mkdir(parents=True, exist_ok=True)
            MUNGE_KEY.write_bytes(os.urandom(1024))
            cluster.created.append(MUNGE_KEY)
        for path in (MUNGE_KEY.parent, Path("/var/lib/munge"), Path("/var/log/munge"), Path("/run/munge")):
            path.mkdir(parents=True, exist_ok=True)
            shutil.chown(path, "munge", "munge")
        shutil.chown(MUNGE_KEY, "munge", "munge")
        MUNGE_KEY.chmod(0o400)
        _run(["runuser", "-u", "munge", "--", "munged", "--force"])
        cluster.pids["munged"] = _started_pid("munged")
    _run(["slurmctld"])
    cluster.pids["slurmctld"] = _started_pid("slurmctld", state_dir / "slurmctld.pid")
    _run(["slurmd"])
    cluster.pids["slurmd"] = _started_pid("slurmd", state_dir / "slurmd.pid")
    deadline = time.time() + 60
    state = ""
    while time.time() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        state = proc.stdout.strip()
        if state == "idle":
            return
        time.sleep(1)
    log = (state_dir / "slurmctld.log").read_text()[-2000:] if (state_dir / "slurmctld.log").exists() else ""
    raise RuntimeError(f"Slurm node did not become idle (sinfo: {state!r}); slurmctld.log:\n{log}")


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
