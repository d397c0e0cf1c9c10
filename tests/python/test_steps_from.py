#!/usr/bin/env python3
"""test_steps_from.py: steps from a PyTorch optimizer, with a real PyTorch and the real gate.

Run by ctest (test_python__steps_from_optimizer) with a python3 that imports torch (Debian's
python3-torch, CPU-only). Training scripts that mark no step are measured unchanged:
canary-gate's sitecustomize (python/) turns each optimizer.step() into a step boundary.

Step counts are checked exactly: a script that makes K optimizer steps leaves K - 1 complete
steps (a step runs from one optimizer step's end to the next's), so with --let-finish a run asking
for warm-up + measured = K - 1 steps is measured and one asking for K fails with "fewer than".
Cases: a plain loop; gradient accumulation (one step per optimizer step, not per micro-batch);
two optimizers per iteration (the first to step counts; --step-optimizer 2 the second); a script
that marks its own steps (kept, no double marking; --steps-from optimizer overrides); a user
sitecustomize that still runs; --steps-from nvtx (nothing marked); python -E and -I (the hint
names the option); a script that never steps an
optimizer (the "marked no step" message naming both ways); and a slowed script that the main
command FAILs against a baseline of the plain one.
Usage: test_steps_from.py CANARY_GATE SHIM_LIBRARY. Exits 0 when all pass, 1 otherwise.
"""

import json
import os
import subprocess
import sys
import tempfile

failures = []

SCRIPT = r'''
import os, sys, torch
iters = int(sys.argv[1]); accum = int(sys.argv[2]); width = int(sys.argv[3])
own_steps = sys.argv[4] == "own"; two = sys.argv[4] == "two"; none = sys.argv[4] == "none"
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
other = torch.optim.SGD(model.parameters(), lr=1e-4) if two else None
if own_steps:
    import ctypes
    shim = ctypes.CDLL(os.environ["SHIM"])
    shim.canary_shim_push.argtypes = [ctypes.c_char_p]
x = torch.randn(64, 32)
y = torch.randn(64, 1)
for i in range(iters):
    if own_steps:
        shim.canary_shim_push(b"step")
    opt.zero_grad()
    for a in range(accum):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
    if not none:
        opt.step()
    if other is not None:
        other.step()
    if own_steps:
        shim.canary_shim_pop()
print("optimizer steps:", 0 if none else iters)
'''


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAILED", what))
    if not cond:
        failures.append(what)


class Gate:
    def __init__(self, gate, shim, tmp):
        self.gate, self.shim, self.tmp = gate, shim, tmp
        self.script = os.path.join(tmp, "train.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)

    def cmd(self, iters, accum=1, width=64, mode="plain"):
        return [sys.executable, self.script, str(iters), str(accum), str(width), mode]

    def run(self, name, warmup, steps, cmd, *opts, env=None):
        out = os.path.join(self.tmp, name + ".json")
        e = dict(os.environ, SHIM=self.shim)
        e.update(env or {})
        p = subprocess.run([self.gate, "run", "--out", out, "--runs", "1", "--warmup",
                            str(warmup), "--steps", str(steps), "--timeout", "120"] +
                           list(opts) + ["--"] + cmd, capture_output=True, text=True, env=e)
        art = None
        if p.returncode == 0:
            with open(out) as f:
                art = json.load(f)
        return p.returncode, art, p.stderr

    def exact(self, what, n, cmd, *opts, want_from="optimizer"):
        """n complete steps: 2 warm-up + n - 2 measured fit, one more fails."""
        name = what.replace(" ", "-").replace(",", "")
        rc, art, err = self.run(name + "-fit", 2, n - 2, cmd, "--let-finish", *opts)
        ok = rc == 0 and art is not None
        check(ok, "%s: 2 + %d steps measured (exit %d)%s" % (what, n - 2, rc,
                                                             "" if ok else "\n" + err))
        if ok:
            check(art["settings"]["steps_from"] == want_from,
                  "%s: settings.steps_from is %s" % (what, art["settings"]["steps_from"]))
            check(len(art["runs"][0]["steps"]) == n - 2, "%s: %d steps in the run" % (what, n - 2))
        rc, art, err = self.run(name + "-over", 2, n - 1, cmd, "--let-finish", *opts)
        check(rc == 3 and "fewer than" in err,
              "%s: asking for %d steps fails, the script marked %d (exit %d)" % (what, n + 1, n, rc))


def main(gate, shim):
    tmp = tempfile.mkdtemp(prefix="test_steps_from.")
    g = Gate(gate, shim, tmp)

    # 12 optimizer steps leave 11 complete steps; a script's own 12 ranges are 12
    g.exact("plain loop", 11, g.cmd(12))
    g.exact("gradient accumulation (4 micro-batches)", 11, g.cmd(12, accum=4))
    g.exact("two optimizers per iteration", 11, g.cmd(12, mode="two"))
    g.exact("two optimizers, --step-optimizer 2", 11, g.cmd(12, mode="two"),
            "--step-optimizer", "2")
    g.exact("a script with its own step ranges", 12, g.cmd(12, mode="own"), want_from="nvtx")
    g.exact("its own ranges, --steps-from optimizer", 11, g.cmd(12, mode="own"),
            "--steps-from", "optimizer")

    # --steps-from nvtx: the sitecustomize is not put on the path, nothing marks steps
    rc, art, err = g.run("nvtx-only", 1, 3, g.cmd(12), "--steps-from", "nvtx")
    check(rc == 3 and "was not loaded" in err and "drop --steps-from nvtx" in err and
          "docker" not in err,
          "--steps-from nvtx, no NVTX call: the library never loads, the hint says why "
          "(exit %d)\n%s" % (rc, err))

    # --step-optimizer beyond the optimizers the script steps: said by the gate and the script
    rc, art, err = g.run("optimizer-3-of-2", 1, 3, g.cmd(12, mode="two"), "--step-optimizer", "3")
    log = open(os.path.join(tmp, "optimizer-3-of-2.log")).read() \
        if os.path.exists(os.path.join(tmp, "optimizer-3-of-2.log")) else ""
    check(rc == 3 and "--step-optimizer 3 counts the optimizer that is number 3" in err and
          "the script stepped 2 optimizers" in log,
          "--step-optimizer 3 of 2 optimizers: exit 3, the hint and the log say so (exit %d)\n%s\n%s"
          % (rc, err, log[-300:]))

    # python -E (or -I, -S) keeps Python from loading the sitecustomize: the hint names the
    # option given, not containers and sudo
    for flag in ("-E", "-uI"):
        rc, art, err = g.run("python" + flag, 1, 3, [sys.executable, flag, g.script, "12", "1",
                                                     "64", "plain"])
        named = flag[-2:] if flag[-1] != "I" else "-I"
        check(rc == 3 and ("python's %s keeps it from loading" % named) in err and
              "docker" not in err,
              "python %s: exit 3 and the hint names %s (exit %d)\n%s" % (flag, named, rc, err))

    # a user's own sitecustomize still runs, and their PYTHONPATH is kept
    user = os.path.join(tmp, "user-site")
    os.makedirs(user)
    marker = os.path.join(tmp, "user-site-ran")
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import os\nopen(os.environ['USER_SITE_MARKER'], 'a').write('ran\\n')\n")
    with open(os.path.join(user, "user_module.py"), "w") as f:
        f.write("VALUE = 7\n")
    script = os.path.join(tmp, "uses_user_module.py")
    with open(script, "w") as f:
        f.write("import user_module\nassert user_module.VALUE == 7\n"
                "exec(open(%r).read())\n" % g.script)
    cmd = [sys.executable, script, "12", "1", "64", "plain"]
    rc, art, err = g.run("user-site", 2, 5, cmd, env={"PYTHONPATH": user,
                                                       "USER_SITE_MARKER": marker})
    check(rc == 0, "with a user sitecustomize and PYTHONPATH: measured (exit %d)%s"
          % (rc, "" if rc == 0 else "\n" + err))
    check(os.path.exists(marker), "the user's sitecustomize ran")
    check(art is not None and art["settings"]["steps_from"] == "optimizer",
          "and the steps came from the optimizer")

    # no optimizer step at all: the message names both ways to mark steps
    rc, art, err = g.run("no-optimizer", 1, 3, g.cmd(12, mode="none"))
    check(rc == 3 and "marked no step" in err, "a script that never steps: exit 3 (%d)" % rc)
    check("two ways to mark steps" in err and "optimizer.step()" in err and
          "range_push" in err, "the hint names both ways:\n" + err)

    # the main command FAILs a slowed script against a baseline of the plain one: 5 runs a side,
    # since timing never FAILs from fewer than 3 processes a side
    base = os.path.join(tmp, "base.json")
    p = subprocess.run([gate, "run", "--thresholds", "smoke", "--runs", "5", "--out", base, "--"] +
                       g.cmd(400, width=64), capture_output=True, text=True)
    check(p.returncode == 0, "baseline of the unchanged script (exit %d)%s"
          % (p.returncode, "" if p.returncode == 0 else "\n" + p.stderr))
    p = subprocess.run([gate, "--baseline", base, "--thresholds", "smoke", "--runs", "5",
                        "--no-confirm", "--json", os.path.join(tmp, "slow-verdict.json"), "--"] +
                       g.cmd(400, width=512), capture_output=True, text=True)
    check(p.returncode == 1, "a slowed script (8x the hidden width) FAILs (exit %d)\n%s"
          % (p.returncode, p.stdout[-2000:]))

    # a pull request that marks its own steps, against a baseline of optimizer steps: measured
    # as the baseline was (its steps from the optimizer), not from the new ranges (a step of
    # another size was read as -94%, improved, PASS); its new 'step' range is a count per step
    # that changed (+1: FAIL, exit 1, or PASS where no count is gated)
    own = os.path.join(tmp, "own.json")
    p = subprocess.run([gate, "--baseline", base, "--thresholds", "smoke", "--runs", "3",
                        "--no-confirm", "--out", own, "--"] + g.cmd(400, width=64, mode="own"),
                       capture_output=True, text=True, env=dict(os.environ, SHIM=shim))
    art = json.load(open(own)) if os.path.exists(own) else None
    check(p.returncode in (0, 1) and art is not None and
          art["settings"]["steps_from"] == "optimizer",
          "its own step ranges against an optimizer-step baseline: measured from the optimizer "
          "as the baseline was (exit %d, steps_from %s)\n%s"
          % (p.returncode, art and art["settings"]["steps_from"], p.stderr[-1500:]))

    # a script that imports canary_gate (no install: the gate puts python/ on its path) and marks
    # its own steps: its baseline's steps are "nvtx", and the main command against it must still
    # give the script the module (inheriting "nvtx" took python/ off the path: exit 3)
    marked = os.path.join(tmp, "marked.py")
    with open(marked, "w") as f:
        f.write("import time, canary_gate\nfor i in range(400):\n"
                "    with canary_gate.step(tokens=10):\n        time.sleep(0.002)\n")
    mbase = os.path.join(tmp, "marked-base.json")
    p = subprocess.run([gate, "run", "--runs", "3", "--steps", "10", "--warmup", "2", "--out",
                        mbase, "--", sys.executable, marked], capture_output=True, text=True)
    check(p.returncode == 0, "baseline of a script importing canary_gate (exit %d)%s"
          % (p.returncode, "" if p.returncode == 0 else "\n" + p.stderr[-800:]))
    p = subprocess.run([gate, "--baseline", mbase, "--runs", "3", "--no-confirm", "--out",
                        os.path.join(tmp, "marked-cur.json"), "--", sys.executable, marked],
                       capture_output=True, text=True)
    check(p.returncode in (0, 1), "the main command against it still imports canary_gate "
          "(exit %d)\n%s" % (p.returncode, p.stderr[-800:]))

    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
