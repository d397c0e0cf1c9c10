#!/usr/bin/env python3
"""test_canary_gate_module.py: the canary_gate Python module (python/canary_gate.py), with a real
PyTorch and the real gate.

Run by ctest (test_python__canary_gate_module) with a python3 that imports torch (Debian's
python3-torch, CPU-only: torch.cuda.nvtx raises there, so the module's own NVTX library is what
marks anything). Cases:
  * outside the gate every call is a no-op and loads no library; bad arguments are refused;
  * 'pip install --no-build-isolation --no-index --target DIR' of a copy of python/ installs
    canary_gate.py alone (never the sitecustomize beside it), at canary-gate's version;
  * under the gate, found without installing: a script marking K steps with
    canary_gate.step(tokens=1000 + i) has exactly K steps (with --let-finish, K fit and K + 1
    fail with "fewer than"), each step's tokens and loss as the script gave them, and its
    canary_gate.range("forward") as an op called once per measured step;
  * --step-range NAME: step() marks ranges of that name;
  * --steps-from nvtx (the module not on the gate's path): installed with pip, it finds the
    library beside the injection library;
  * --steps-from optimizer: the optimizer marks the steps, step() marks none (no step twice).
Usage: test_canary_gate_module.py CANARY_GATE. Exits 0 when all pass, 1 otherwise.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))

failures = []

SCRIPT = r'''
import sys, torch, canary_gate
iters = int(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 32)
y = torch.randn(64, 1)
for i in range(iters):
    with canary_gate.step(tokens=1000 + i):
        with canary_gate.range("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        canary_gate.loss(0.5 + i)
print("active", canary_gate.active())
'''

OUTSIDE = r'''
import os, sys, canary_gate
assert not canary_gate.active(), "active outside the gate"
with canary_gate.step(tokens=5):
    with canary_gate.range("forward"):
        pass
@canary_gate.range("decorated")
def f(v):
    return v + 1
assert f(1) == 2
canary_gate.loss(1.5)
for bad, kind in ((lambda: canary_gate.step(tokens=-1), ValueError),
                  (lambda: canary_gate.step(tokens=2.5), TypeError),
                  (lambda: canary_gate.range(b"forward"), TypeError)):
    try:
        bad()
        raise SystemExit("not refused: expected %s" % kind.__name__)
    except kind:
        pass
libs = [l for l in open("/proc/self/maps") if "canary-nvtx-shim" in l]
assert not libs, "a library was loaded outside the gate: %s" % libs
print("outside ok")
'''


def check(cond, what, detail=""):
    """detail (the gate's stderr, say) is printed only when the check fails."""
    print("%s: %s" % ("ok" if cond else "FAILED", what))
    if not cond:
        if detail:
            print(detail[-3000:])
        failures.append(what)


def gate_run(gate, tmp, name, warmup, steps, cmd, *opts, env=None):
    out = os.path.join(tmp, name + ".json")
    p = subprocess.run([gate, "run", "--out", out, "--runs", "1", "--warmup", str(warmup),
                        "--steps", str(steps), "--timeout", "120"] + list(opts) + ["--"] + cmd,
                       capture_output=True, text=True, env=env)
    art = None
    if p.returncode == 0:
        with open(out) as f:
            art = json.load(f)
    return p.returncode, art, p.stderr


def outside_the_gate(tmp):
    script = os.path.join(tmp, "outside.py")
    with open(script, "w") as f:
        f.write(OUTSIDE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVTX_", "CANARY_GATE_"))}
    env["PYTHONPATH"] = PYTHON_DIR
    p = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and "outside ok" in p.stdout,
          "outside the gate: no-ops, no library loaded, bad arguments refused (exit %d)"
          % p.returncode, p.stdout + p.stderr)
    # another NVTX tool (a profiler's injection library), no canary-gate library beside it
    other = os.path.join(tmp, "profiler")
    os.makedirs(other)
    env["NVTX_INJECTION64_PATH"] = os.path.join(other, "libprofiler-injection.so")
    p = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and "outside ok" in p.stdout,
          "under another NVTX tool: still no-ops (exit %d)" % p.returncode, p.stdout + p.stderr)


def pip_install(gate, tmp):
    """The module installed into a --target folder from a copy of python/; None when no pip."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        print("SKIPPED: pip install (no pip for %s; ci/deps --torch installs python3-pip)"
              % sys.executable)
        return None
    src = os.path.join(tmp, "python-src")
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    target = os.path.join(tmp, "site")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                        "--no-index", "--no-deps", "--disable-pip-version-check", "--target",
                        target, src], capture_output=True, text=True)
    check(p.returncode == 0, "pip install --no-index --target of python/ (exit %d)" % p.returncode,
          p.stdout + p.stderr)
    if p.returncode != 0:
        return None
    names = sorted(n for n in os.listdir(target) if n != "__pycache__")
    version = subprocess.run([gate, "--version"], capture_output=True, text=True).stdout.split()[1]
    check(names == ["canary_gate-%s.dist-info" % version, "canary_gate.py"],
          "installed canary_gate.py alone, at canary-gate's version %s: %s" % (version, names))
    return target


def steps_of(art):
    return art["runs"][0]["steps"] if art is not None else []


def ops_of(art):
    return {o["name"]: o for o in art["runs"][0]["ops"]} if art is not None else {}


def under_the_gate(gate, tmp, target):
    script = os.path.join(tmp, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    # found without installing; 12 marked steps: 2 warm-up + 10 fit, 11 do not
    rc, art, err = gate_run(gate, tmp, "fit", 2, 10, [sys.executable, script, "12"],
                            "--let-finish", env=env)
    check(rc == 0, "under the gate, not installed: 2 + 10 steps measured (exit %d)" % rc, err)
    steps = steps_of(art)
    check(len(steps) == 10, "10 measured steps (%d)" % len(steps))
    check(art is not None and art["settings"]["steps_from"] == "nvtx",
          "the script's own steps: settings.steps_from nvtx")
    check([s.get("tokens") for s in steps] == [1000 + i for i in range(2, 12)],
          "each step's tokens as the script gave them: %s" % [s.get("tokens") for s in steps])
    check([s.get("loss") for s in steps] == [0.5 + i for i in range(2, 12)],
          "each step's loss: %s" % [s.get("loss") for s in steps])
    fwd = ops_of(art).get("forward")
    check(fwd is not None and fwd["kind"] == "range" and fwd["calls"] == 10,
          "canary_gate.range('forward') is a range op, once per measured step: %s" % fwd)
    rc, art, err = gate_run(gate, tmp, "over", 2, 11, [sys.executable, script, "12"],
                            "--let-finish", env=env)
    check(rc == 3 and "fewer than" in err,
          "asking for 13 steps of a script marking 12 fails (exit %d)" % rc)

    # --step-range: step() marks ranges of the gate's step name
    rc, art, err = gate_run(gate, tmp, "range", 1, 5, [sys.executable, script, "8"],
                            "--step-range", "train_step", env=env)
    check(rc == 0 and len(steps_of(art)) == 5 and steps_of(art)[0].get("tokens") == 1001,
          "--step-range train_step: the steps are step()'s (exit %d)" % rc, err)

    # --steps-from optimizer: 12 optimizer steps leave 11 steps; step() marks none
    rc, art, err = gate_run(gate, tmp, "optimizer", 1, 10, [sys.executable, script, "12"],
                            "--let-finish", "--steps-from", "optimizer", env=env)
    steps = steps_of(art)
    check(rc == 0 and len(steps) == 10 and art["settings"]["steps_from"] == "optimizer",
          "--steps-from optimizer: 1 + 10 of the 11 optimizer steps (exit %d)" % rc, err)
    check(all("tokens" not in s for s in steps), "and no step carries step()'s tokens")
    check("forward" in ops_of(art), "the ranges still count as ops")

    # --steps-from nvtx: the gate puts nothing on PYTHONPATH; the installed module works
    if target is not None:
        e = dict(env, PYTHONPATH=target)
        rc, art, err = gate_run(gate, tmp, "nvtx", 2, 10, [sys.executable, script, "12"],
                                "--let-finish", "--steps-from", "nvtx", env=e)
        check(rc == 0 and [s.get("tokens") for s in steps_of(art)] ==
              [1000 + i for i in range(2, 12)],
              "--steps-from nvtx, installed with pip: steps and tokens measured (exit %d)" % rc, err)


def main(gate):
    tmp = tempfile.mkdtemp(prefix="test_canary_gate_module.")
    outside_the_gate(tmp)
    target = pip_install(gate, tmp)
    under_the_gate(gate, tmp, target)
    print("%d failed" % len(failures))
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
