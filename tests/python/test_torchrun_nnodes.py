#!/usr/bin/env python3
"""test_torchrun_nnodes.py: a real `torchrun --nnodes 2` on this host under the gate.

Run by ctest (test_python__torchrun_nnodes) with a python3 that imports torch (Debian's
python3-torch 1.13, CPU-only). Two torchrun agents (--node_rank 0 and 1, a static rendezvous on
127.0.0.1) start two workers each; the workers train a small model with DistributedDataParallel
over gloo, and their steps come from the optimizer (--steps-from optimizer). The gate measures
through --shard-dir: four ranks reported (RANK 0-3, GROUP_RANK 0 and 1), the world complete,
each merged step the slowest rank's; without --shard-dir the command line is refused; an agent
that never starts leaves ranks 2-3 missing, and the run fails naming them.
Debian's torch 1.13 on Python 3.11 crashes with torchrun's default --redirects and --tee 0; 1 is passed to both.
Usage: test_torchrun_nnodes.py CANARY_GATE. Exits 0 when all pass, 1 otherwise.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

failures = []

TRAIN = r'''
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
torch.set_num_threads(1)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 32), torch.randn(64, 1)
for i in range(int(os.environ.get("ITERS", "12"))):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
dist.destroy_process_group()
'''

# Two agents of one job on this host; an agent is left out when SKIP_NODE names its node rank.
AGENTS = r'''
set -u
py=$1; port=$2; script=$3
run() {
  "$py" -m torch.distributed.run --nnodes 2 --node_rank "$1" --nproc_per_node 2 \
    --master_addr 127.0.0.1 --master_port "$port" --redirects 1 --tee 1 "$script"
}
pids=""
for n in 0 1; do
  [ "${SKIP_NODE:-x}" = "$n" ] && continue
  run "$n" & pids="$pids $!"
done
rc=0
for p in $pids; do wait "$p" || rc=$?; done
exit $rc
'''


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    gate = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="test_torchrun_nnodes.")
    try:
        train = os.path.join(tmp, "train.py")
        agents = os.path.join(tmp, "agents.sh")
        with open(train, "w") as f:
            f.write(TRAIN)
        with open(agents, "w") as f:
            f.write(AGENTS)
        shared = os.path.join(tmp, "shared")
        os.mkdir(shared)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_")):
                del env[k]

        def gate_run(extra, out, skip=None, timeout=300):
            e = dict(env)
            if skip is not None:
                e["SKIP_NODE"] = skip
            limit = [] if "--timeout" in extra else ["--timeout", "120"]  # given once
            argv = [gate, "run", "--out", os.path.join(tmp, out), "--runs", "1", "--steps", "6",
                    "--warmup", "2", "--steps-from", "optimizer", "--let-finish"] + limit + extra + [
                    "--", "bash", agents, sys.executable, str(free_port()), train]
            return subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout)

        r = gate_run(["--shard-dir", shared], "a.json")
        check(r.returncode == 0, "torchrun --nnodes 2 with two agents measured (exit %d: %s)"
              % (r.returncode, r.stderr.strip()[-400:]))
        check(os.listdir(shared) == [], "the shard directory is left empty")
        if r.returncode == 0:
            run = json.load(open(os.path.join(tmp, "a.json")))["runs"][0]
            ranks = run.get("ranks", [])
            check([x["rank"] for x in ranks] == [0, 1, 2, 3], "four ranks reported: %s"
                  % [x["rank"] for x in ranks])
            check(sorted(x["local_rank"] for x in ranks) == [0, 0, 1, 1],
                  "local ranks 0 and 1 on each agent")
            steps = [s["wall_ns"] for s in run["steps"]]
            check(len(steps) == 6 and steps == [max(x["step_ns"][k] for x in ranks)
                                                for k in range(6)],
                  "six merged optimizer steps, each the slowest rank's")

        # the same words without --shard-dir: torchrun --nnodes 2 is named on the command line
        # only through the script here, so give it as torch.distributed.run words
        r = subprocess.run([gate, "run", "--out", os.path.join(tmp, "b.json"), "--", sys.executable,
                            "-m", "torch.distributed.run", "--nnodes", "2", train],
                           env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "--shard-dir DIR" in r.stderr,
              "torch.distributed.run --nnodes 2 without --shard-dir is refused (exit %d)"
              % r.returncode)

        # node 1's agent never starts: node 0's agent waits for it at the rendezvous until
        # the gate's timeout ends it, and ranks 2-3 never write
        r = gate_run(["--shard-dir", shared, "--timeout", "20", "--kill-grace", "2"], "c.json",
                     skip="1")
        check(r.returncode == 3, "an agent that never starts fails the run (exit %d: %s)"
              % (r.returncode, r.stderr.strip()[-300:]))
        check(os.listdir(shared) == [], "the shard directory is left empty after it")
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept " + tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
