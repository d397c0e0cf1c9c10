#!/usr/bin/env python3
"""test_train_gpt.py: the PyTorch canary (train_gpt.py) on the CPU under canary-gate.

Run by ctest (test_examples__pytorch_gpt_cpu) with a python3 that imports torch (Debian's
python3-torch is CPU-only: NVTX goes through libcanary-nvtx-shim.so). Checks, with a real
PyTorch and the real gate:
  * a normal run: every measured step is seen, carries a finite loss and its tokens, and the
    nested ranges (copy, forward, backward, optimizer, data) become range ops;
  * the loss falls over a longer run (the synthetic tokens are learnable);
  * an os._exit ending: the shard stays a .part file and the gate still reads its steps;
  * the variants and the profiler option run, and the canary prints its libcupti_files line;
  * --slow-ms: a range "slow" of at least that many ms per call in every measured step;
  * bad sizes, a bad --slow-ms and --variant graphs on the CPU (CUDA graphs have no CPU form)
    are refused with exit 2 and one line naming the option.
Usage: test_train_gpt.py CANARY_GATE SHIM_LIBRARY. Exits 0 when all pass, 1 otherwise.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "train_gpt.py")
SIZES = ["--layers", "1", "--width", "32", "--heads", "2", "--seq", "16", "--batch", "4",
         "--vocab", "64", "--log-every", "1"]
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAILED", what))
    if not cond:
        failures.append(what)


def canary(shim, *extra):
    return [sys.executable, SCRIPT, "--device", "cpu", "--nvtx-shim", shim] + SIZES + list(extra)


def gate_run(gate, tmp, name, steps, warmup, cmd):
    out = os.path.join(tmp, name + ".json")
    p = subprocess.run([gate, "run", "--out", out, "--runs", "1", "--steps", str(steps),
                        "--warmup", str(warmup), "--tokens-per-step", "64", "--timeout", "120",
                        "--"] + cmd, capture_output=True, text=True)
    art = None
    if p.returncode == 0:
        with open(out) as f:
            art = json.load(f)
    else:
        print(p.stdout + p.stderr)
    with open(os.path.join(tmp, name + ".log"), errors="replace") as f:
        log = f.read()
    return p.returncode, art, log


def main(gate, shim):
    tmp = tempfile.mkdtemp(prefix="test_train_gpt.")

    rc, art, log = gate_run(gate, tmp, "plain", 4, 2, canary(shim, "--max-steps", "8"))
    check(rc == 0, "a plain run is measured (gate exit %d)" % rc)
    if art:
        steps = art["runs"][0]["steps"]
        check(len(steps) == 4, "4 measured steps seen (%d)" % len(steps))
        check(all("loss" in s for s in steps), "every step carries its loss")
        check(all(s.get("tokens") == 64 for s in steps), "every step carries 64 tokens")
        ranges = {op["name"] for op in art["runs"][0]["ops"] if op["kind"] == "range"}
        want = {"copy", "forward", "backward", "optimizer", "data"}
        check(want <= ranges, "nested ranges are range ops (%s)" % ", ".join(sorted(ranges)))
    check("libcupti_files=0 -" in log, "the canary reports its libcupti files (none on the CPU)")
    check("markers=shim" in log, "markers go through the shim on a CPU-only PyTorch")

    p = subprocess.run(canary(shim, "--max-steps", "40", "--lr", "3e-3", "--log-every", "40"),
                       capture_output=True, text=True)
    done = [ln for ln in p.stdout.splitlines() if ln.startswith("done ")]
    check(p.returncode == 0 and len(done) == 1, "a run without the gate ends with a done line")
    if done:
        f = dict(kv.split("=", 1) for kv in done[0].split()[1:])
        first, last = float(f["first_loss"]), float(f["last_loss"])
        check(last < first - 0.3, "the loss falls over 40 steps (%.3f -> %.3f)" % (first, last))
        check(float(f["median_step_ms"]) > 0, "a median step time is printed")

    shards = os.path.join(tmp, "shards")
    os.mkdir(shards)
    env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.join(os.path.dirname(gate),
                                                              "libcanary-inject.so"),
               CANARY_GATE_SHARD_DIR=shards)
    p = subprocess.run(canary(shim, "--max-steps", "5", "--exit", "os-exit"), env=env,
                       capture_output=True, text=True)
    names = os.listdir(shards)
    check(p.returncode == 0, "os._exit ends with status 0")
    check(len(names) == 1 and names[0].endswith(".part"),
          "after os._exit the shard stays a .part file (%s)" % names)
    rc, art, _ = gate_run(gate, tmp, "os-exit", 3, 2,
                          canary(shim, "--max-steps", "5", "--exit", "os-exit"))
    check(rc == 0 and art and len(art["runs"][0]["steps"]) == 3,
          "the gate reads the steps of a canary that ended with os._exit")

    for extra in (["--variant", "sync"], ["--variant", "mem"], ["--profiler"]):
        rc, art, _ = gate_run(gate, tmp, "v" + extra[-1], 2, 1,
                              canary(shim, "--max-steps", "4", *extra))
        check(rc == 0 and art is not None, "%s runs under the gate" % " ".join(extra))

    rc, art, log = gate_run(gate, tmp, "slow", 3, 1, canary(shim, "--max-steps", "5",
                                                            "--slow-ms", "20"))
    slow = [op for op in art["runs"][0]["ops"] if op["kind"] == "range" and op["name"] == "slow"] \
        if art else []
    check(rc == 0 and len(slow) == 1 and slow[0]["calls"] == 3 and
          slow[0]["total_ns"] >= 3 * 20e6,
          "--slow-ms 20: a range 'slow' of at least 20 ms in each of 3 measured steps (%s)" %
          (slow[0] if slow else "none"))
    check("slow_ms=20" in log, "the header line names the slowdown")

    p = subprocess.run(canary(shim, "--variant", "graphs", "--max-steps", "2"),
                       capture_output=True, text=True)
    check(p.returncode == 2 and "--variant graphs needs --device cuda" in p.stderr,
          "--variant graphs on the CPU is refused with exit 2, saying why")
    p = subprocess.run(canary(shim, "--slow-ms", "-1", "--max-steps", "2"), capture_output=True,
                       text=True)
    check(p.returncode == 2 and "--slow-ms must be" in p.stderr,
          "a negative --slow-ms is refused with exit 2")

    p = subprocess.run(canary(shim, "--width", "33", "--max-steps", "2"), capture_output=True,
                       text=True)
    check(p.returncode == 2 and "--width must be a multiple of --heads" in p.stderr,
          "a width that heads do not divide is refused with exit 2")
    p = subprocess.run(canary(shim, "--max-steps", "0"), capture_output=True, text=True)
    check(p.returncode == 2 and "--max-steps must be at least 1" in p.stderr,
          "--max-steps 0 is refused with exit 2")

    if failures:
        print("%d check(s) failed; files in %s" % (len(failures), tmp))
        return 1
    subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: test_train_gpt.py CANARY_GATE SHIM_LIBRARY", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
