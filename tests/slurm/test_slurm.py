#!/usr/bin/env python3
"""test_slurm.py: canaries launched by a real Slurm across two nodes, under the real gate.

Starts Debian's Slurm itself (cluster.py: munge, slurmctld, two slurmd named n1 and n2 on this
host) and runs the NVTX test canary through `srun -N 2 --ntasks-per-node 2` and `sbatch --wait`
with --shard-dir: the merged step time is the slowest rank's per step; the artifact keeps every
rank with its node and the nodes' figures; a straggler made slow on purpose is named by the
diagnosis; a rank that never starts fails the run naming it and its node (also where a wrapper
sets RANK without WORLD_SIZE: the world is SLURM_NTASKS); a rank that crashes
under --kill-on-bad-exit is a canary failure (exit 3); a timeout leaves no task, no job and no
shard directory behind; through sbatch the same, and a timed-out batch job is cancelled; a
single-process canary gated inside a job of two tasks (sbatch -n 2, srun -n 2) is no rank; the
processes a task of srun -n 1 starts (a shell's two canaries, torch.multiprocessing.spawn's
workers) are that task's, not its rank twice, two sruns into one run are two launches, and a
task that runs its canary again after the first ended ('canary || canary') is a restart, while
two started together (one stepping late) and two ranks of their own are not.
Exits 0 when all pass, 1 on a failure, 77 (skipped, with one line saying why) when Slurm cannot
start here.
Usage: test_slurm.py CANARY_GATE NVTX_CANARY
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

failures = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)


def canary_alive(root):
    """Processes whose environment gives them a shard directory under root (this test's): the
    canary's tasks, wherever Slurm started them."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(e.startswith(b"CANARY_GATE_SHARD_DIR=" + root.encode()) for e in env):
            alive.append(pid + " " + cmd)
    return alive


def main():
    gate, canary = sys.argv[1], sys.argv[2]
    try:
        c = cluster.start()
    except cluster.Unavailable as e:
        print("SKIP: a real Slurm could not start here: %s" % e)
        return 77
    try:
        return run_cases(c, gate, canary)
    finally:
        c.stop()
        if not failures:
            c.remove()
        else:
            print("daemon logs kept in " + c.root)


def gate_run(c, gate, out, args, timeout=120):
    sd = os.path.join(c.root, "shared")
    os.makedirs(sd, exist_ok=True)
    argv = [gate, "run", "--out", os.path.join(c.root, out), "--shard-dir", sd] + args
    r = c.run(argv, timeout=timeout)
    return r, sd


def run_cases(c, gate, canary):
    srun = ["srun", "-N", "2", "--ntasks-per-node", "2"]
    # 1. a straggler: rank 3 (on n2) 4 ms slower in every step
    r, sd = gate_run(c, gate, "a.json", ["--runs", "2", "--steps", "12", "--warmup", "1", "--"]
                     + srun + [canary, "--steps", "13", "--step-ms", "10", "--slow-rank", "3",
                               "--slow-ms", "4"])
    check(r.returncode == 0, "srun -N 2: measured (exit %d: %s)" % (r.returncode,
                                                                  r.stderr.strip()[-300:]))
    check(os.listdir(sd) == [], "srun -N 2: the shard directory is left empty")
    if r.returncode == 0:
        a = json.load(open(os.path.join(c.root, "a.json")))
        run = a["runs"][0]
        ranks = run.get("ranks", [])
        check([x["rank"] for x in ranks] == [0, 1, 2, 3], "four ranks in the artifact")
        check([x["node"] for x in ranks] == ["n1", "n1", "n2", "n2"],
              "ranks 0-1 on n1, 2-3 on n2 (SLURMD_NODENAME)")
        steps = [s["wall_ns"] for s in run["steps"]]
        slowest = [max(x["step_ns"][k] for x in ranks) for k in range(len(steps))]
        check(len(steps) == 12 and steps == slowest,
              "each merged step is the slowest rank's duration")
        check(all(x["step_ns"][k] >= 14e6 for x in ranks if x["rank"] == 3
                  for k in range(len(steps))), "rank 3's steps are its own (>= 14 ms)")
        nodes = {n["node"]: n for n in run.get("nodes", [])}
        check(set(nodes) == {"n1", "n2"} and nodes["n1"]["ranks"] == 2,
              "per-node figures for n1 and n2")
        check(nodes["n2"]["step_median_ns"] > nodes["n1"]["step_median_ns"] + 3e6,
              "n2's median step shows the straggler (%s vs %s)"
              % (nodes["n2"]["step_median_ns"], nodes["n1"]["step_median_ns"]))
        s = c.run([gate, "show", os.path.join(c.root, "a.json")])
        check("rank 3 on n2 was the slowest in" in s.stdout and "over the median rank" in s.stdout,
              "the diagnosis names the straggler: "
              + next((l.strip() for l in s.stdout.splitlines() if "slowest in" in l), "(none)"))

    # 2. a rank that never starts
    r, sd = gate_run(c, gate, "b.json", ["--runs", "1", "--steps", "4", "--warmup", "0", "--"]
                     + srun + [canary, "--steps", "5", "--skip-rank", "2"])
    check(r.returncode == 3 and "rank 2 (node n2) of a world of 4 wrote nothing" in r.stderr
          and "installed at" in r.stderr and "CANARY_GATE_" in r.stderr,
          "a rank that never starts fails the run naming it and its node (exit %d)"
          % r.returncode)

    # 2b. the same through a wrapper that sets RANK=$SLURM_PROCID and no WORLD_SIZE: the world
    # is SLURM_NTASKS all the same
    wrap = os.path.join(c.root, "rankwrap.sh")
    with open(wrap, "w") as f:
        f.write("#!/bin/bash\nexport RANK=$SLURM_PROCID\nexec \"%s\" \"$@\"\n" % canary)
    os.chmod(wrap, 0o755)
    r, sd = gate_run(c, gate, "b2.json", ["--runs", "1", "--steps", "4", "--warmup", "0", "--"]
                     + srun + [wrap, "--steps", "5", "--skip-rank", "3"])
    check(r.returncode == 3 and "rank 3 (node n2) of a world of 4 wrote nothing" in r.stderr,
          "RANK without WORLD_SIZE: the world is SLURM_NTASKS, a rank that never starts fails "
          "the run (exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))

    # 3. a crashing rank with --kill-on-bad-exit
    r, sd = gate_run(c, gate, "c.json", ["--runs", "1", "--steps", "20", "--warmup", "0",
                                         "--timeout", "60", "--"]
                     + srun + ["--kill-on-bad-exit=1", canary, "--steps", "200", "--step-ms",
                               "20", "--only-rank", "1", "--crash-at", "3"])
    check(r.returncode == 3 and "canary" in r.stderr,
          "a crashing rank under --kill-on-bad-exit is a canary failure (exit %d)" % r.returncode)
    check(os.listdir(sd) == [], "after the crash the shard directory is empty")

    # 4. a timeout: a hung rank; nothing left behind
    r, sd = gate_run(c, gate, "d.json", ["--runs", "1", "--steps", "5", "--warmup", "0",
                                         "--timeout", "4", "--kill-grace", "3", "--"]
                     + srun + [canary, "--steps", "9", "--only-rank", "0", "--hang-at", "2"])
    check(r.returncode == 3 and "timed out" in r.stderr,
          "a hung rank times out (exit %d)" % r.returncode)
    left = canary_alive(c.root)
    check(left == [], "no canary task is left after the timeout: %s" % left)
    q = c.run(["squeue", "-h"])
    check(q.stdout.strip() == "", "no job is left in the queue: %r" % q.stdout.strip())
    check(os.listdir(sd) == [], "after the timeout the shard directory is empty")

    # 5. sbatch --wait: measured, ranks complete
    script = os.path.join(c.root, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\nsrun %s \"$@\"\n" % canary)
    os.chmod(script, 0o755)
    sbatch = ["sbatch", "--wait", "-N", "2", "--ntasks-per-node", "2", "-o",
              os.path.join(c.root, "job-%j.out"), script]
    r, sd = gate_run(c, gate, "e.json", ["--runs", "1", "--steps", "6", "--warmup", "1",
                                         "--let-finish", "--"]
                     + sbatch + ["--steps", "7", "--step-ms", "5"])
    check(r.returncode == 0, "sbatch --wait: measured (exit %d: %s)"
          % (r.returncode, r.stderr.strip()[-300:]))
    if r.returncode == 0:
        run = json.load(open(os.path.join(c.root, "e.json")))["runs"][0]
        check(len(run.get("ranks", [])) == 4 and len(run["steps"]) == 6,
              "sbatch --wait: four ranks, six merged steps")

    # 6. a single-process canary gated inside a job of two tasks: the gate in a batch script of
    # sbatch -n 2, and one gate per task of srun -n 2; the canary inherits the gate's
    # SLURM_PROCID and SLURM_NTASKS and is no rank of a world of 2
    injob = os.path.join(c.root, "injob.sh")
    with open(injob, "w") as f:
        f.write("#!/bin/bash\n\"%s\" run --out \"%s/injob-$SLURM_PROCID.json\" --runs 1 "
                "--steps 3 --warmup 1 -- \"%s\" --steps 4 --step-ms 2\n"
                "echo \"gate $SLURM_PROCID exit $?\"\n" % (gate, c.root, canary))
    os.chmod(injob, 0o755)
    out = os.path.join(c.root, "injob.out")
    r = c.run(["sbatch", "--wait", "-N", "1", "-n", "2", "-o", out, injob], timeout=120)
    text = open(out).read() if os.path.exists(out) else r.stderr
    check("gate 0 exit 0" in text, "a single process in a batch script of sbatch -n 2 is no "
          "rank: measured (%s)" % text.strip()[-300:])
    r = c.run(["srun", "-N", "1", "-n", "2", injob], timeout=120)
    check("gate 0 exit 0" in r.stdout and "gate 1 exit 0" in r.stdout,
          "a single process in each task of srun -n 2 is no rank: measured (%s)"
          % (r.stdout + r.stderr).strip()[-300:])

    run_task_cases(c, gate, canary)

    # 7. sbatch --wait timing out (last: it waits until no job and no task is left): the job is cancelled
    r, sd = gate_run(c, gate, "f.json", ["--runs", "1", "--steps", "5", "--warmup", "0",
                                         "--timeout", "5", "--kill-grace", "2", "--"]
                     + sbatch + ["--steps", "9", "--hang-at", "2"])
    check(r.returncode == 3 and "cancelled Slurm job" in r.stderr,
          "a timed-out batch job is cancelled with scancel (exit %d)" % r.returncode)
    for _ in range(30):
        if c.run(["squeue", "-h"]).stdout.strip() == "" and canary_alive(c.root) == []:
            break
        time.sleep(0.5)
    check(c.run(["squeue", "-h"]).stdout.strip() == "", "no batch job is left in the queue")
    left = canary_alive(c.root)
    check(left == [], "no canary task of the batch job is left: %s" % left)
    check(os.listdir(sd) == [], "after the batch timeout the shard directory is empty")

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


MP_SPAWN = """import os, socket, torch, torch.distributed as dist, torch.multiprocessing as mp
import canary_gate
def work(i, n, port):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=i,
                            world_size=n)
    torch.set_num_threads(1)
    m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 16))
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    x = torch.randn(8, 16)
    for _ in range(6):
        with canary_gate.step():
            opt.zero_grad(); m(x).sum().backward(); opt.step()
    dist.destroy_process_group()
if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(work, args=(2, port), nprocs=2)
"""


def run_task_cases(c, gate, canary):
    """A task of srun that starts its own ranks: every process it starts inherits the task's
    SLURM_PROCID, SLURM_NTASKS and step id, and is one of the task's processes, not its rank
    twice (the run failed "rank 0 reported twice ... two launches wrote into one run, or a rank
    was restarted"); two sruns into one run are still two launches."""
    srun1 = ["srun", "-N", "1", "-n", "1"]
    steps = " --steps 5 --step-ms 5"
    # started together, their steps overlap (a second started after the first had made all its
    # steps would be a restart): 100 ms of steps each, whatever the load
    together = " --steps 20 --step-ms 5"
    two = '"$0"%s & "$0"%s & wait' % (together, together)
    r, sd = gate_run(c, gate, "g.json", ["--runs", "1", "--steps", "3", "--warmup", "1", "--"]
                     + srun1 + ["bash", "-c", two, canary])
    check(r.returncode == 0, "srun -n 1 of a shell starting two canaries: measured (exit %d: %s)"
          % (r.returncode, r.stderr.strip()[-300:]))
    ranks = 'RANK=0 "$0"%s & RANK=1 "$0"%s & wait' % (together, together)
    r, sd = gate_run(c, gate, "g2.json", ["--runs", "1", "--steps", "3", "--warmup", "1", "--"]
                     + srun1 + ["bash", "-c", ranks, canary])
    check(r.returncode == 0, "srun -n 1 of two processes setting RANK without WORLD_SIZE: "
          "measured (exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    if r.returncode == 0:
        run = json.load(open(os.path.join(c.root, "g2.json")))["runs"][0]
        check([x["rank"] for x in run.get("ranks", [])] == [0, 1], "their ranks are RANK's")
    launches = " ".join(srun1) + ' "$0"%s & %s "$0"%s & wait' % (steps, " ".join(srun1), steps)
    r, sd = gate_run(c, gate, "g3.json", ["--runs", "1", "--steps", "3", "--warmup", "1", "--",
                                          "bash", "-c", launches, canary])
    check(r.returncode == 3 and "rank 0 reported twice" in r.stderr
          and "two launches wrote into one run" in r.stderr,
          "two sruns of one task each into one run: refused as two launches (exit %d: %s)"
          % (r.returncode, r.stderr.strip()[-300:]))
    # the task's canary run again once the first failed: not merged with it as the task's
    # processes (exit 0, or "fewer than the 1 warm-up + 3 measured" from the first's steps)
    again = '"$0"%s --crash-at 2 || "$0"%s' % (steps, steps)
    r, sd = gate_run(c, gate, "g5.json", ["--runs", "1", "--steps", "3", "--warmup", "1", "--"]
                     + srun1 + ["bash", "-c", again, canary])
    # bash execs its last command: the retry is the shell itself, the first attempt's parent
    check(r.returncode == 3 and re.search(
        r"srun task 0 of step \d+ of job \d+: pid \d+ on n[12](, the parent of pid \d+ \(a shell "
        r"that ran its last command as itself\), began its steps \S+ \S+ after pid \d+ had made "
        r"its last| started after pid \d+ had made its last step, and began its steps \S+ \S+ "
        r"after it)", r.stderr)
          and not os.path.exists(os.path.join(c.root, "g5.json")),
          "a task that runs its canary again after the first ended: refused as a restart "
          "(exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    # started together, the second's first step long after the first's last (a worker that
    # imports torch or loads data first; a shell that sleeps, then execs the canary, keeping the
    # shell's start): the task's processes, not a restart
    late = ' --steps 8 --step-ms 10'
    late_two = '"$0"%s & bash -c \'sleep 0.5; exec "$0"%s\' "$0" & wait' % (late, late)
    r, sd = gate_run(c, gate, "g6.json", ["--runs", "1", "--steps", "3", "--warmup", "1",
                                          "--let-finish", "--"]
                     + srun1 + ["bash", "-c", late_two, canary])
    check(r.returncode == 0, "srun -n 1 of two canaries started together, one stepping late: "
          "measured, no restart (exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    # two ranks of their own in the task, the second started after the first had made its
    # steps: two ranks, never the task's process run twice
    ranks_apart = ('RANK=0 WORLD_SIZE=2 "$0"%s & sleep 0.3; RANK=1 WORLD_SIZE=2 "$0"%s; wait'
                   % (steps, steps))
    r, sd = gate_run(c, gate, "g7.json", ["--runs", "1", "--steps", "3", "--warmup", "1",
                                          "--let-finish", "--"]
                     + srun1 + ["bash", "-c", ranks_apart, canary])
    check(r.returncode == 0, "srun -n 1 of RANK 0, then RANK 1 after its steps: measured, no "
          "restart (exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    python = next((p for p in [sys.executable, "/usr/bin/python3"]
                   if subprocess.run([p, "-c", "import torch.distributed"],
                                     capture_output=True).returncode == 0), None)
    if python is None:
        print("skip torch.multiprocessing.spawn under srun -n 1: no torch here")
        return
    script = os.path.join(c.root, "mpspawn.py")
    with open(script, "w") as f:
        f.write(MP_SPAWN)
    r, sd = gate_run(c, gate, "g4.json", ["--runs", "1", "--steps", "3", "--warmup", "2",
                                          "--timeout", "100", "--"]
                     + srun1 + [python, script], timeout=150)
    check(r.returncode == 0, "torch.multiprocessing.spawn of two gloo workers under srun -n 1: "
          "measured (exit %d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    if r.returncode == 0:
        run = json.load(open(os.path.join(c.root, "g4.json")))["runs"][0]
        check(len(run["steps"]) == 3, "three merged steps of the spawned workers")


if __name__ == "__main__":
    sys.exit(main())
