#!/usr/bin/env python3
"""test_ddp_gate.py: a DDP canary made slower FAILs the gate, with a real torchrun.

Run by ctest (test_python__ddp_gate) with a python3 that imports torch (Debian's python3-torch
1.13, CPU-only). The canary is what a user trial ran, torchrun with --nproc_per_node 2: two ranks
training a small model with DistributedDataParallel over gloo, on this machine's two cores (busy:
the suite runs beside it), steps from the optimizer. Each step also waits 12 ms (a data loader's
time, the same in every rank); the slowed head waits 18 ms more (as the trial's 38% and 56%
slower heads did, which once ended INCONCLUSIVE with exit 0: "too few baseline runs in the
runner's fast state (1 of 5)").

torchrun starts on a port the OS gave just before (a static rendezvous), not with --standalone:
that always takes port 29400, and a second job on the host (another test, another checkout's
suite) joined the first one's store and failed when that one ended, or hung on whatever else
held the port.

A baseline of 5 runs, then the main command with 5 runs of the slowed head: it must FAIL (exit
1) on a timing metric, and the JSON verdict must say which. Every run has both ranks in it.
Usage: test_ddp_gate.py CANARY_GATE. Exits 0 when all pass, 1 otherwise.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

failures = []

TRAIN = r'''
import os, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
torch.set_num_threads(1)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 32), torch.randn(64, 1)
wait = (12 + float(os.environ.get("SLOW_MS", "0"))) / 1000.0
for i in range(int(os.environ.get("ITERS", "40"))):
    time.sleep(wait)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
dist.destroy_process_group()
'''

# torchrun (its own entry point, in this process) with a static rendezvous on a port the OS gave
# just now: the agent binds it within milliseconds, and its workers use the agent's store.
LAUNCH = r'''
import socket, sys
from torch.distributed import run
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
run.main(["--nnodes", "1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
          "--master_port", str(port), "--redirects", "1", "--tee", "1"] + sys.argv[1:])
'''


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def main():
    gate = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="test_ddp_gate.")
    try:
        train = os.path.join(tmp, "train.py")
        launch = os.path.join(tmp, "launch.py")
        with open(train, "w") as f:
            f.write(TRAIN)
        with open(launch, "w") as f:
            f.write(LAUNCH)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_")):
                del env[k]
        canary = [sys.executable, launch, train]
        common = ["--steps", "20", "--warmup", "3", "--steps-from", "optimizer", "--timeout",
                  "120", "--tokens-per-step", "128"]
        base = os.path.join(tmp, "base.json")
        t0 = time.time()
        r = subprocess.run([gate, "run", "--out", base, "--runs", "5"] + common + ["--"] +
                           canary, env=env, capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "baseline: 5 runs of the DDP canary (exit %d, %.0f s)%s"
              % (r.returncode, time.time() - t0,
                 "" if r.returncode == 0 else ": " + r.stderr.strip()[-400:]))
        if r.returncode != 0:
            return 1
        runs = json.load(open(base))["runs"]
        check(all(len(x.get("ranks", [])) == 2 for x in runs),
              "every baseline run has both ranks: %s" % [len(x.get("ranks", [])) for x in runs])

        slow = dict(env, SLOW_MS="18")
        verdict = os.path.join(tmp, "verdict.json")
        t0 = time.time()
        r = subprocess.run([gate, "--baseline", base, "--out", os.path.join(tmp, "slow.json"),
                            "--json", verdict, "--runs", "5", "--max-runs", "5"] + common +
                           ["--"] + canary, env=slow, capture_output=True, text=True, timeout=600)
        took = time.time() - t0
        v = json.load(open(verdict)) if os.path.exists(verdict) else {}
        failed = [m.get("name") for m in v.get("metrics", []) if m.get("outcome") == "fail"]
        timing = [m for m in failed if m and (m.startswith("step_time") or m == "tokens_per_sec")]
        check(r.returncode == 1 and v.get("verdict") == "fail" and timing,
              "a DDP canary 18 ms a step slower (about +50%%) FAILs on timing (exit %d, verdict "
              "%s, failed %s, %.0f s)%s" % (r.returncode, v.get("verdict"), failed, took,
                                             "" if r.returncode == 1 else ": " +
                                             r.stderr.strip()[-600:]))
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept " + tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
