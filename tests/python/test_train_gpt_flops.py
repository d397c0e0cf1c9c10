#!/usr/bin/env python3
"""test_train_gpt_flops.py: the FLOPs per token examples/pytorch/train_gpt.py prints for
canary-gate's MFU, against hand computations.

The function is read from the script's source (ast) and run without torch, so this part runs
everywhere; where torch imports (Debian's python3-torch, CPU), the script itself is run for one
step and the line it prints is checked too.

Hand computation for the script's defaults (layers L 6, width C 384, seq T 256, vocab V 4096):
matmul weights N = 12 L C^2 + C V = 12 x 6 x 147,456 + 384 x 4,096 = 10,616,832 + 1,572,864 =
12,189,696; 6N = 73,138,176; attention (q.k and att.v over all T positions, 2 x 2 T C a token
and layer forward, 3x with backward) 12 L C T = 12 x 6 x 384 x 256 = 7,077,888; in all
80,216,064. For L 2, C 64, T 32, V 128: N = 12 x 2 x 4,096 + 8,192 = 106,496; 6N = 638,976;
attention 12 x 2 x 64 x 32 = 49,152; in all 688,128.
Usage: test_train_gpt_flops.py. Exits 0 when all pass, 1 otherwise.
"""

import ast
import os
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "pytorch", "train_gpt.py")

failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


def load_function():
    tree = ast.parse(open(SCRIPT).read(), SCRIPT)
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "flops_per_token"]
    if not fn:
        sys.exit("train_gpt.py has no flops_per_token function")
    ns = {}
    exec(compile(ast.Module(body=fn, type_ignores=[]), SCRIPT, "exec"), ns)
    return ns["flops_per_token"]


def main():
    f = load_function()
    a = types.SimpleNamespace(layers=6, width=384, seq=256, vocab=4096)
    check("defaults", f(a), 80216064)
    a = types.SimpleNamespace(layers=2, width=64, seq=32, vocab=128)
    check("L2 C64 T32 V128", f(a), 688128)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch not importable: the script's printed line not checked")
    else:
        out = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--max-steps", "1",
                              "--layers", "2", "--width", "64", "--heads", "4", "--seq", "32",
                              "--batch", "2", "--vocab", "128"],
                             capture_output=True, text=True, timeout=300)
        lines = [l for l in out.stdout.splitlines()
                 if l.startswith("canary-gate flops_per_token: ")]
        check("printed line", lines, ["canary-gate flops_per_token: 688128"])
    for f_ in failures:
        print("FAIL:", f_)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
