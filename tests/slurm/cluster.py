"""cluster.py: a real Slurm of two nodes on one host, started and stopped by the Slurm tests.

Debian 12's slurmctld, slurmd and munge (22.05), configured here: a munge key made for the run,
one slurmctld, and two slurmd daemons named n1 and n2 with their own ports and %n-templated
spool, pid and log files, proctrack/linuxproc and task/none (no cgroups, no systemd). Everything
lives in one temporary directory; the daemons run in the foreground as children of the test and
are ended by pid. Needs root (slurmd starts tasks as their user).

start() returns a Cluster or raises Unavailable with one line saying what failed; the test
prints it and skips.
"""

import os
import shutil
import signal
import socket
import subprocess
import time


class Unavailable(Exception):
    pass


def _free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _tail(path, lines=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Cluster:
    def __init__(self, root):
        self.root = root
        self.conf = os.path.join(root, "slurm.conf")
        self.procs = []  # (name, Popen)
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for k in list(self.env):  # a Slurm job around the test must not leak into ours
            if k.startswith("SLURM_") and k != "SLURM_CONF":
                del self.env[k]

    def run(self, argv, timeout=60, **kw):
        return subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=timeout, **kw)

    def stop(self):
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 15
        for name, p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def _spawn(self, name, argv, log):
        out = open(os.path.join(self.root, name + ".out"), "w")
        try:
            p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        except OSError as e:
            raise Unavailable("cannot start %s: %s" % (argv[0], e))
        finally:
            out.close()
        self.procs.append((name, p))
        return p

    def _wait(self, what, ok, timeout, log, proc=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc is not None and proc.poll() is not None:
                raise Unavailable("%s exited with %s: %s" % (what, proc.returncode, _tail(log)))
            if ok():
                return
            time.sleep(0.2)
        raise Unavailable("%s not ready after %d s: %s" % (what, timeout, _tail(log)))


def _conf(c, host, ports, cpus):
    r = c.root
    return "\n".join([
        "ClusterName=cgtest",
        "SlurmctldHost=%s(127.0.0.1)" % host,
        "SlurmctldPort=%d" % ports[0],
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "AuthInfo=socket=%s/munge.socket" % r,
        "StateSaveLocation=%s/ctld" % r,
        "SlurmdSpoolDir=%s/spool-%%n" % r,
        "SlurmctldPidFile=%s/slurmctld.pid" % r,
        "SlurmdPidFile=%s/slurmd-%%n.pid" % r,
        "SlurmctldLogFile=%s/slurmctld.log" % r,
        "SlurmdLogFile=%s/slurmd-%%n.log" % r,
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "KillWait=5",
        "MessageTimeout=20",
        "InactiveLimit=0",
        "NodeName=n[1-2] NodeHostname=%s NodeAddr=127.0.0.1 Port=[%d-%d] CPUs=%d State=UNKNOWN"
        % (host, ports[1], ports[1] + 1, cpus),
        "PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _consecutive_ports():
    """A free port p for slurmctld and two free consecutive ones q, q+1 for the slurmd pair."""
    for _ in range(50):
        p, q = _free_ports(2)
        try:
            s = socket.socket()
            s.bind(("127.0.0.1", q + 1))
            s.close()
        except OSError:
            continue
        if p not in (q, q + 1):
            return [p, q]
    raise Unavailable("no two consecutive free ports for the slurmd pair")


def start(cpus=4, timeout=40):
    """Starts munged, slurmctld, slurmd n1 and n2 in a fresh directory; Unavailable on failure."""
    if os.geteuid() != 0:
        raise Unavailable("slurmd must run as root (it starts tasks as their user); uid %d"
                          % os.geteuid())
    for prog in ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sinfo", "sbatch",
                 "scancel"):
        if shutil.which(prog) is None and not os.path.exists("/usr/sbin/" + prog):
            raise Unavailable("%s not installed (ci/deps --slurm installs Debian's slurmctld, "
                              "slurmd, slurm-client and munge)" % prog)
    root = subprocess.run(["mktemp", "-d", "/tmp/cg-slurm.XXXXXX"], capture_output=True,
                          text=True).stdout.strip()
    os.chmod(root, 0o755)
    c = Cluster(root)
    try:
        _bring_up(c, cpus, timeout)
    except BaseException:
        c.stop()
        raise
    return c


def _sbin(prog):
    return shutil.which(prog) or "/usr/sbin/" + prog


def _bring_up(c, cpus, timeout):
    r = c.root
    os.makedirs(r + "/ctld")
    host = socket.gethostname().split(".")[0]
    key = r + "/munge.key"
    k = subprocess.run([_sbin("mungekey"), "--create", "--keyfile", key], capture_output=True,
                       text=True)
    if k.returncode != 0:
        raise Unavailable("mungekey failed: " + (k.stderr.strip() or k.stdout.strip()))
    os.chmod(key, 0o400)
    sock = r + "/munge.socket"
    mlog = r + "/munged.log"
    m = c._spawn("munged", [_sbin("munged"), "-F", "--force", "--key-file", key,
                            "--socket", sock, "--log-file", mlog, "--pid-file",
                            r + "/munged.pid", "--seed-file", r + "/munged.seed"], mlog)
    c._wait("munged", lambda: os.path.exists(sock), 10, r + "/munged.out", m)
    ports = _consecutive_ports()
    with open(c.conf, "w") as f:
        f.write(_conf(c, host, ports, cpus))
    ctl = c._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-i", "-f", c.conf],
                   r + "/slurmctld.log")
    c._wait("slurmctld", lambda: c.run(["scontrol", "ping"], timeout=10).stdout.find("UP") >= 0,
            timeout, r + "/slurmctld.log", ctl)
    for n in ("n1", "n2"):
        os.makedirs("%s/spool-%s" % (r, n))
        d = c._spawn("slurmd-" + n, [_sbin("slurmd"), "-D", "-N", n, "-f", c.conf],
                     "%s/slurmd-%s.log" % (r, n))
    def idle():
        out = c.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10).stdout.split()
        return out.count("idle") == 2
    for name, p in c.procs:
        if p.poll() is not None:
            raise Unavailable("%s exited with %s: %s" % (name, p.returncode,
                                                           _tail("%s/%s.out" % (r, name))))
    c._wait("two idle slurmd nodes (n1, n2)", idle, timeout, r + "/slurmd-n2.log")
