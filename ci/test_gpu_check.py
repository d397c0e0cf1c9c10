#!/usr/bin/env python3
"""test_gpu_check.py: ci/gpu-check's plans, time rules and evidence, without a GPU.

A GPU call is short and rare (docs/gpu.md): a plan that cannot run what it lists, a check that
the budget stops recorded as a failure, or evidence lost to a kill from outside wastes it. These
cases run the script's own functions (the script, sourced, defines them and stops) with the
checks' commands replaced by small stand-ins where a real canary would take minutes, and check
what the script decides and writes. Run by ctest (test_gpu_check__runner). Usage:
test_gpu_check.py [CASE-GLOB]. Exits 0 when every case passes.
"""

import fnmatch
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "gpu-check")
ROOT = os.path.dirname(HERE)
TMP = tempfile.mkdtemp(prefix="test_gpu_check.")
failures = []


def bash(body, env=None, timeout=120):
    """Runs BODY in bash after sourcing the script; returns (rc, stdout + stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(["bash", "-c", 'source "$1"\n' + body, "test_gpu_check", SCRIPT],
                       capture_output=True,
                       text=True, env=e, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def script(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, env=e,
                       timeout=60)
    return p.returncode, p.stdout + p.stderr


def expect(name, ok, detail):
    print("%s: %s" % ("ok" if ok else "FAILED", name))
    if not ok:
        print("  " + detail.replace("\n", "\n  "))
        failures.append(name)


# ---- plans ----------------------------------------------------------------------------------

def test_gpu_check__every_plan_fits_its_budget():
    """Each plan, every group taking its expected seconds (the default plan with every
    regression group in its tail): no tail group is cut and no other group outlasts the budget,
    so a plan never lists a group it cannot run."""
    rc, out = script("--estimate")
    plans = [line.split()[1].rstrip(":") for line in out.splitlines()
             if line.startswith("plan ") and "budget" in line]
    expect("test_gpu_check__every_plan_fits_its_budget",
           rc == 0 and "CUT" not in out and "unfinished" not in out and "default" in plans and
           "overhead" in plans, "rc %d\n%s" % (rc, out))


def test_gpu_check__estimate_names_a_group_the_budget_cuts():
    """The estimate is no rubber stamp: with a budget too short it names what would not run."""
    rc, out = script("--estimate", "overhead", env={"GPU_CHECK_BUDGET_S": "200"})
    expect("test_gpu_check__estimate_names_a_group_the_budget_cuts",
           rc == 1 and "+overhead-toggle" in out and "CUT by construction" in out,
           "rc %d\n%s" % (rc, out))
    rc, out = script("--estimate", "full", env={"GPU_CHECK_BUDGET_S": "200"})
    expect("test_gpu_check__estimate_names_a_group_the_budget_does_not_finish",
           rc == 1 and "unfinished" in out, "rc %d\n%s" % (rc, out))


def test_gpu_check__plans_list_every_group_somewhere():
    """Moving groups between plans leaves none behind: every group run_group knows is in a plan."""
    rc, out = bash('for p in $PLANS; do plan_groups "$p" all; done | tr " " "\\n" | '
                   'sed "s/^+//" | grep . | sort -u | tr "\\n" " "')
    known = set()
    text = open(SCRIPT).read()
    body = text[text.index("run_group() {"):]
    body = body[body.index('case "$g" in'):body.index("esac")]
    for line in body.splitlines():
        line = line.strip()
        if line.endswith(";;") and ")" in line and not line.startswith("*"):
            known.add(line.split(")")[0])
    missing = sorted(known - set(out.split()))
    expect("test_gpu_check__plans_list_every_group_somewhere", rc == 0 and not missing and known,
           "rc %d; groups in no plan: %s (plans hold: %s)" % (rc, missing, out))


def main():
    pattern = sys.argv[1] if len(sys.argv) > 1 else "*"
    for name, fn in sorted(globals().items()):
        if name.startswith("test_gpu_check__") and callable(fn) and fnmatch.fnmatch(name, pattern):
            fn()
    if failures:
        print("%d case(s) failed; files in %s" % (len(failures), TMP))
        return 1
    subprocess.run(["rm", "-rf", TMP])
    return 0


if __name__ == "__main__":
    sys.exit(main())
