#!/usr/bin/env python3
"""test_step_choice.py: which steps a PyTorch canary's run measures, with a real PyTorch and the
real gate.

Run by ctest, one case per test (test_python__<case>), with a python3 that imports torch
(Debian's python3-torch, CPU-only). Cases:
  step_optimizer_is_the_baselines  --step-optimizer is recorded (settings.step_optimizer), the
                                   main command takes the baseline's when not given (a GAN's
                                   critic 8x wider FAILs), and sides that count another optimizer
                                   define a step differently (INCONCLUSIVE, not a PASS)
  own_steps_win_over_an_early_optimizer_step  one optimizer step before the loop (materialising
                                   the optimizer's state) does not decide: the script's own
                                   canary_gate.step ranges, with their tokens, mark the steps,
                                   and the run says so
  a_range_named_step_is_a_part     canary_gate.range("step") around opt.step() is a part of the
                                   step (an op), never the step: the steps come from the optimizer
  a_new_optimizer_each_epoch_counts  a script that makes a fresh optimizer every epoch (one
                                   alive at a time) has every epoch's optimizer steps marked,
                                   whatever their addresses
  a_kept_optimizer_keeps_its_number  a GAN whose critic's optimizer is made afresh each epoch
                                   while the generator's is kept: --step-optimizer 2 counts the
                                   generator throughout (its number does not move when the
                                   critic's optimizer dies)
  a_counted_steps_work_that_changed_is_no_pass  steps from the optimizer count each step's
                                   backward passes and optimizer steps (counts backward,
                                   optimizer_steps); a pull request that makes the counted
                                   critic step five times per iteration (shorter steps, a slower
                                   loop) or accumulates gradients over four backward passes is
                                   INCONCLUSIVE, the steps holding different work, never a PASS
  a_backward_on_another_thread_counts  two models trained at once on two threads: a backward
                                   pass begun on one thread while the other's runs counts (2
                                   a step, whatever the timing); a reentrant checkpoint's
                                   backward inside a pass does not
Usage: test_step_choice.py CANARY_GATE CASE. Exits 0 when the case passes, 1 otherwise.
"""

import json
import os
import subprocess
import sys
import tempfile

failures = []

GAN = r'''
import os, torch
torch.manual_seed(0); torch.set_num_threads(1)
K = int(os.environ.get("NCRITIC", "5")); DW = int(os.environ.get("DW", "64"))
G = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
D = torch.nn.Sequential(torch.nn.Linear(32, DW), torch.nn.ReLU(), torch.nn.Linear(DW, 1))
optD = torch.optim.RMSprop(D.parameters(), lr=5e-5)
optG = torch.optim.RMSprop(G.parameters(), lr=5e-5)
real = torch.randn(64, 32)
for it in range(400):
    for _ in range(K):
        optD.zero_grad()
        lossD = D(G(torch.randn(64, 16)).detach()).mean() - D(real).mean()
        lossD.backward(); optD.step()
    optG.zero_grad()
    lossG = -D(G(torch.randn(64, 16))).mean()
    lossG.backward(); optG.step()
'''

OWN = r'''
import os, torch, canary_gate
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 32); y = torch.randn(64, 1)
for p in model.parameters():  # materialise the optimizer's state before loading a checkpoint
    p.grad = torch.zeros_like(p)
opt.step(); opt.zero_grad(set_to_none=True)
for i in range(200):
    with canary_gate.step(tokens=64):
        opt.zero_grad(); torch.nn.functional.mse_loss(model(x), y).backward(); opt.step()
'''

PARTS = r'''
import time, torch, canary_gate
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 32); y = torch.randn(64, 1)
for i in range(200):
    opt.zero_grad()
    with canary_gate.range("forward"):
        loss = torch.nn.functional.mse_loss(model(x), y)
        t_end = time.perf_counter() + 0.002
        while time.perf_counter() < t_end:
            pass
    with canary_gate.range("backward"):
        loss.backward()
    with canary_gate.range("step"):  # the optimizer's update, timed as a part
        opt.step()
'''

GAN_EPOCHS = r'''
import gc, torch, canary_gate
torch.manual_seed(0); torch.set_num_threads(1)
G = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
D = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
optG = torch.optim.RMSprop(G.parameters(), lr=5e-5)  # the generator's, kept for the whole run
real = torch.randn(64, 32)
for epoch in range(8):
    optD = torch.optim.RMSprop(D.parameters(), lr=5e-5)  # the critic's, made afresh each epoch
    for it in range(8):
        for _ in range(5):
            optD.zero_grad()
            lossD = D(G(torch.randn(64, 16)).detach()).mean() - D(real).mean()
            lossD.backward(); optD.step()
        with canary_gate.range("generator"):
            optG.zero_grad()
            lossG = -D(G(torch.randn(64, 16))).mean()
            lossG.backward(); optG.step()
    del optD
    gc.collect()  # the critic's optimizer gone before the next epoch's steps
'''

REOPT = r'''
import torch
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
x = torch.randn(64, 32); y = torch.randn(64, 1)
for epoch in range(20):
    # a fresh optimizer each epoch, made while the last one is alive: at another address
    opt = torch.optim.SGD(model.parameters(), lr=1e-3 * 0.9**epoch)
    for i in range(5):
        opt.zero_grad(); torch.nn.functional.mse_loss(model(x), y).backward(); opt.step()
'''


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAILED", what))
    if not cond:
        failures.append(what)


class Gate:
    def __init__(self, gate, tmp):
        self.gate, self.tmp = gate, tmp

    def script(self, name, text):
        path = os.path.join(self.tmp, name + ".py")
        with open(path, "w") as f:
            f.write(text)
        return path

    def call(self, args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([self.gate] + args, capture_output=True, text=True, env=e)

    def load(self, name):
        path = os.path.join(self.tmp, name)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)


def step_optimizer_is_the_baselines(g):
    gan = g.script("gan", GAN)
    base = os.path.join(g.tmp, "base.json")
    p = g.call(["run", "--out", base, "--runs", "3", "--warmup", "3", "--steps", "20",
                "--step-optimizer", "2", "--", sys.executable, gan])
    art = g.load("base.json")
    check(p.returncode == 0 and art is not None, "the baseline, counting the generator's steps "
          "(exit %d)\n%s" % (p.returncode, p.stderr[-1500:]))
    if art is None:
        return
    check(art["settings"].get("step_optimizer") == 2,
          "the baseline records settings.step_optimizer 2: %s" % art["settings"])
    # the pull request (the critic 8x wider) gated without the option: the baseline's counted
    # optimizer is counted (it was the critic, each step 1/5 of an iteration: -31% PASS)
    p = g.call(["--baseline", base, "--runs", "3", "--no-confirm", "--out",
                os.path.join(g.tmp, "pr.json"), "--", sys.executable, gan], env={"DW": "512"})
    pr = g.load("pr.json")
    check(pr is not None and pr["settings"].get("step_optimizer") == 2,
          "the main command counts the baseline's optimizer: %s"
          % (pr and pr["settings"], ))
    check(p.returncode == 1, "the wider critic FAILs (exit %d)\n%s" % (p.returncode,
                                                                      p.stdout[-2000:]))
    # the other optimizer asked for: a step is another unit of work, not compared
    p = g.call(["--baseline", base, "--runs", "3", "--no-confirm", "--step-optimizer", "1",
                "--out", os.path.join(g.tmp, "pr1.json"), "--", sys.executable, gan],
               env={"DW": "512"})
    check(p.returncode == 0 and "INCONCLUSIVE" in p.stdout and
          "define a step differently" in p.stdout and "--step-optimizer" in p.stdout,
          "counting another optimizer than the baseline: INCONCLUSIVE, the steps differ "
          "(exit %d)\n%s" % (p.returncode, p.stdout[-2000:]))


def own_steps_win_over_an_early_optimizer_step(g):
    own = g.script("own", OWN)
    p = g.call(["run", "--out", os.path.join(g.tmp, "own.json"), "--runs", "1", "--warmup", "3",
                "--steps", "10", "--", sys.executable, own])
    art = g.load("own.json")
    check(p.returncode == 0 and art is not None, "measured (exit %d)\n%s"
          % (p.returncode, p.stderr[-1500:]))
    if art is None:
        return
    check(art["settings"]["steps_from"] == "nvtx",
          "steps from the script's own ranges, not its optimizer: %s" % art["settings"])
    steps = art["runs"][0]["steps"]
    check(len(steps) == 10 and all(s.get("tokens") == 64 for s in steps),
          "10 steps, each with its 64 tokens: %s" % steps[:3])
    check("own 'step' ranges" in p.stderr and "mark the steps" in p.stderr,
          "the run says the script's own ranges were chosen:\n" + p.stderr[-1500:])


def a_range_named_step_is_a_part(g):
    parts = g.script("parts", PARTS)
    p = g.call(["run", "--out", os.path.join(g.tmp, "parts.json"), "--runs", "1", "--warmup",
                "3", "--steps", "10", "--", sys.executable, parts])
    art = g.load("parts.json")
    check(p.returncode == 0 and art is not None, "measured (exit %d)\n%s"
          % (p.returncode, p.stderr[-1500:]))
    if art is None:
        return
    check(art["settings"]["steps_from"] == "optimizer",
          "the steps come from the optimizer: %s" % art["settings"])
    run = art["runs"][0]
    ops = {o["name"]: o for o in run["ops"] if o["kind"] == "range"}
    check(ops.get("forward", {}).get("calls") == 10 and ops.get("backward", {}).get("calls") == 10,
          "forward and backward are parts of every measured step: %s" % sorted(ops))
    check(any("step" in n and n != "step" and ops[n]["calls"] == 10 for n in ops),
          "the range named 'step' is a part, timed in every step under another name: %s"
          % sorted(ops))
    walls = sorted(s["wall_ns"] for s in run["steps"])
    check(walls[len(walls) // 2] > 2000000, "a step is the whole iteration (median %d ns, the "
          "forward alone spins 2 ms)" % walls[len(walls) // 2])
    log = open(os.path.join(g.tmp, "parts.log")).read() \
        if os.path.exists(os.path.join(g.tmp, "parts.log")) else ""
    check("canary_gate.range('step')" in log, "the script is told:\n" + log[-800:])


def a_new_optimizer_each_epoch_counts(g):
    reopt = g.script("reopt", REOPT)
    # 20 epochs of 5 optimizer steps: 99 complete steps, every epoch's optimizer counted
    p = g.call(["run", "--out", os.path.join(g.tmp, "reopt.json"), "--runs", "1", "--warmup",
                "2", "--steps", "97", "--let-finish", "--", sys.executable, reopt])
    art = g.load("reopt.json")
    ok = p.returncode == 0 and art is not None
    check(ok, "the optimizer steps of all 20 optimizers marked: 2 + 97 steps measured (exit %d)"
          "\n%s" % (p.returncode, p.stderr[-1500:]))
    if ok:
        check(len(art["runs"][0]["steps"]) == 97, "97 measured steps")


def a_kept_optimizer_keeps_its_number(g):
    gan = g.script("gan_epochs", GAN_EPOCHS)
    # the generator (the 2nd to step) counted throughout, while the critic's optimizer of each
    # epoch dies: a step is always 5 critic steps and a generator step, never a critic step alone
    p = g.call(["run", "--out", os.path.join(g.tmp, "gan_epochs.json"), "--runs", "1",
                "--warmup", "2", "--steps", "40", "--step-optimizer", "2", "--", sys.executable,
                gan])
    art = g.load("gan_epochs.json")
    ok = p.returncode == 0 and art is not None
    check(ok, "the generator's steps measured (exit %d)\n%s" % (p.returncode, p.stderr[-1500:]))
    if ok:
        run = art["runs"][0]
        calls = sum(o["calls"] for o in run["ops"] if o["name"] == "generator")
        check(calls == len(run["steps"]), "one generator range in every measured step: %d in %d"
              % (calls, len(run["steps"])))


ACCUMULATE = r'''
import os, torch
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0); torch.set_num_threads(1)
ACC = int(os.environ.get("ACC", "1"))
model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 32, requires_grad=True); y = torch.randn(64, 1)
for i in range(400):
    opt.zero_grad()
    for _ in range(ACC):
        # a reentrant activation checkpoint: its backward runs one inside the pass
        out = checkpoint(model, x) if os.environ.get("CKPT") else model(x)
        (torch.nn.functional.mse_loss(out, y) / ACC).backward()
    opt.step()
'''

# Two models trained at once on two threads (as one thread per GPU does), each thread's backward
# pass begun while the other's runs: the main thread's waits inside its backward until the other
# thread has made a whole pass of its own. The main thread's model is checkpointed (reentrant: a
# backward inside its pass, part of it). Each step holds 2 backward passes, whatever the timing.
TWO_THREADS = r'''
import threading, torch
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0); torch.set_num_threads(1)
go, done = threading.Event(), threading.Event()


class WaitForTheOther(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        go.set(); done.wait(); done.clear()
        return g * 2


def other():
    m = torch.nn.Linear(32, 1)
    while True:
        go.wait(); go.clear()
        m(torch.ones(4, 32)).sum().backward()  # its gradients: not stepped by any optimizer
        done.set()


threading.Thread(target=other, daemon=True).start()
model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 32, requires_grad=True); y = torch.randn(64, 1)
for i in range(200):
    opt.zero_grad()
    out = WaitForTheOther.apply(checkpoint(model, x))
    torch.nn.functional.mse_loss(out, y).backward()
    opt.step()
'''


def a_counted_steps_work_that_changed_is_no_pass(g):
    gan = g.script("gan_k", GAN)
    base = os.path.join(g.tmp, "gan1.json")
    # the critic (the first optimizer to step) counted: one critic and one generator step a loop
    p = g.call(["run", "--out", base, "--runs", "3", "--warmup", "3", "--steps", "20", "--",
                sys.executable, gan], env={"NCRITIC": "1"})
    art = g.load("gan1.json")
    check(p.returncode == 0 and art is not None, "the baseline (exit %d)\n%s"
          % (p.returncode, p.stderr[-1500:]))
    if art is None:
        return
    counts = [s.get("counts", {}) for r in art["runs"] for s in r["steps"]]
    check(all(c.get("backward") == 2 and c.get("optimizer_steps") == 2 for c in counts),
          "every step counts its 2 backward passes and 2 optimizer steps: %s" % counts[:3])
    # five critic steps a loop: each counted (critic) step is shorter, the loop slower
    p = g.call(["--baseline", base, "--runs", "3", "--no-confirm", "--out",
                os.path.join(g.tmp, "gan5.json"), "--", sys.executable, gan],
               env={"NCRITIC": "5"})
    check(p.returncode == 0 and "INCONCLUSIVE" in p.stdout and "PASS" not in
          p.stdout.split("\n")[0] and "different work" in p.stdout,
          "five critic steps a loop: INCONCLUSIVE, the steps hold different work (exit %d)\n%s"
          % (p.returncode, p.stdout[-2500:]))
    acc = g.script("acc", ACCUMULATE)
    base = os.path.join(g.tmp, "acc1.json")
    p = g.call(["run", "--out", base, "--runs", "3", "--warmup", "3", "--steps", "20", "--",
                sys.executable, acc], env={"ACC": "1"})
    check(p.returncode == 0 and g.load("acc1.json") is not None, "the accumulation baseline "
          "(exit %d)\n%s" % (p.returncode, p.stderr[-1500:]))
    # activation checkpointing: slower steps with the same work, one backward pass each
    p = g.call(["--baseline", base, "--runs", "3", "--no-confirm", "--out",
                os.path.join(g.tmp, "ckpt.json"), "--", sys.executable, acc],
               env={"ACC": "1", "CKPT": "1"})
    art = g.load("ckpt.json")
    counts = [s.get("counts", {}) for r in (art or {}).get("runs", []) for s in r["steps"]]
    check(counts and all(c.get("backward") == 1 for c in counts) and
          "different work" not in p.stdout,
          "a checkpointed model's inner backward is part of its one pass (exit %d): %s\n%s"
          % (p.returncode, counts[:3], p.stdout[-1500:]))
    p = g.call(["--baseline", base, "--runs", "3", "--no-confirm", "--out",
                os.path.join(g.tmp, "acc4.json"), "--", sys.executable, acc], env={"ACC": "4"})
    check(p.returncode == 0 and "INCONCLUSIVE" in p.stdout and "different work" in p.stdout and
          "backward" in p.stdout,
          "four backward passes per optimizer step: INCONCLUSIVE naming them (exit %d)\n%s"
          % (p.returncode, p.stdout[-2500:]))


def a_backward_on_another_thread_counts(g):
    two = g.script("two_threads", TWO_THREADS)
    p = g.call(["run", "--out", os.path.join(g.tmp, "two.json"), "--runs", "2", "--warmup", "3",
                "--steps", "20", "--", sys.executable, two])
    art = g.load("two.json")
    check(p.returncode == 0 and art is not None, "the run (exit %d)\n%s"
          % (p.returncode, p.stderr[-1500:]))
    counts = [s.get("counts", {}) for r in (art or {}).get("runs", []) for s in r["steps"]]
    check(counts and all(c.get("backward") == 2 and c.get("optimizer_steps") == 1
                         for c in counts),
          "a backward pass begun on another thread while one runs is counted, a reentrant "
          "checkpoint's inside a pass is not: 2 a step, %s" % counts[:5])


CASES = {f.__name__: f for f in (step_optimizer_is_the_baselines,
                                 own_steps_win_over_an_early_optimizer_step,
                                 a_range_named_step_is_a_part,
                                 a_new_optimizer_each_epoch_counts,
                                 a_kept_optimizer_keeps_its_number,
                                 a_counted_steps_work_that_changed_is_no_pass,
                                 a_backward_on_another_thread_counts)}


def main(gate, case):
    if case not in CASES:
        print("unknown case '%s': %s" % (case, ", ".join(CASES)))
        return 2
    tmp = tempfile.mkdtemp(prefix="test_step_choice.")
    CASES[case](Gate(gate, tmp))
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
