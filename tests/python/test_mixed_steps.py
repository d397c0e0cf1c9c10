#!/usr/bin/env python3
"""test_mixed_steps.py: a DDP script that marks its steps on rank 0 only, under a real torchrun.

Run by ctest (test_python__rank0_steps_and_optimizer_steps_are_refused) with a python3 that
imports torch (Debian's python3-torch 1.13, CPU-only). The script marks `canary_gate.step()` on
rank 0 only (annotating rank 0 is a common habit); with --steps-from auto rank 1's steps then
come from its optimizer. Such a run was merged silently and its settings.steps_from was whichever
rank's shard the directory listed first, so identical runs refused to merge. Now the run fails
with one line naming both ranks and how to mend it (exit 3, nothing written), and the same
script with --steps-from optimizer is measured with both ranks.
Debian's torch 1.13 on Python 3.11 crashes with torchrun's default --redirects and --tee 0; 1 is
passed to both.
Usage: test_mixed_steps.py CANARY_GATE. Exits 0 when all pass, 1 otherwise.
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
import canary_gate
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)
model = DDP(torch.nn.Linear(32, 32))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(16, 32)
for i in range(12):
    step = canary_gate.step() if rank == 0 else None
    if step is not None:
        step.__enter__()
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    if step is not None:
        step.__exit__(None, None, None)
dist.destroy_process_group()
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
    tmp = tempfile.mkdtemp(prefix="test_mixed_steps.")
    try:
        train = os.path.join(tmp, "train.py")
        with open(train, "w") as f:
            f.write(TRAIN)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_")):
                del env[k]

        def gate_run(extra, out):
            argv = [gate, "run", "--out", os.path.join(tmp, out), "--runs", "1", "--steps", "4",
                    "--warmup", "2", "--let-finish", "--timeout", "120"] + extra + [
                    "--", sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
                    "--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:%d" % free_port(),
                    "--nproc_per_node", "2", "--redirects", "1", "--tee", "1", train]
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)

        r = gate_run([], "auto.json")
        check(r.returncode == 3 and "rank 0 marks its steps with its own NVTX step ranges, rank 1 "
              "takes them from its optimizer" in r.stderr and "--steps-from optimizer" in r.stderr,
              "rank 0's NVTX steps beside rank 1's optimizer steps fail the run (exit %d: %s)"
              % (r.returncode, r.stderr.strip()[-500:]))
        check(not os.path.exists(os.path.join(tmp, "auto.json")), "nothing written")

        r = gate_run(["--steps-from", "optimizer"], "opt.json")
        check(r.returncode == 0, "with --steps-from optimizer the run is measured (exit %d: %s)"
              % (r.returncode, r.stderr.strip()[-500:]))
        if r.returncode == 0:
            a = json.load(open(os.path.join(tmp, "opt.json")))
            check(a["settings"]["steps_from"] == "optimizer", "its steps from the optimizer")
            check([x["rank"] for x in a["runs"][0]["ranks"]] == [0, 1],
                  "both ranks: %s" % [x["rank"] for x in a["runs"][0]["ranks"]])
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept " + tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
