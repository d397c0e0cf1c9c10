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


# ---- time ----------------------------------------------------------------------------------

# The state main sets up, with the checks' commands replaced: START and DEADLINE from the first
# argument (seconds of budget), OUTDIR and the evidence folder under TMP.
SETUP = r"""
setup() {
  START=$(date +%s) BUDGET="$1" PLAN=default DEVICE=cpu
  DEADLINE=$((START + BUDGET))
  OUTDIR="$2" WORK="$2/work" EV="$2/work/evidence"
  mkdir -p "$EV" "$OUTDIR"
  PY_ANY=python3 CUT_LIST="" CUR_TAIL=""
}
states() {
  local i
  for i in "${!NAMES[@]}"; do echo "${NAMES[$i]} ${STATES[$i]} ${FIGURES[$i]}"; done
}
"""


def outdir(name):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    return d


def test_gpu_check__a_tail_group_needs_a_margin_to_start():
    """A tail group expected to take 28 s does not start with 30 s left (its estimate is what it
    took, not what it may take); with 36 s it does."""
    rc, out = bash(SETUP + r"""
check_torch_exit() { record torch.os-exit PASS "ran"; }
setup 30 "$1"
run_group +torch-exit
setup 36 "$1"
run_group +torch-exit
states
""".replace('"$1"', '"%s"' % outdir("margin")))
    lines = [l for l in out.splitlines() if l.startswith(("torch-exit ", "torch.os-exit "))]
    expect("test_gpu_check__a_tail_group_needs_a_margin_to_start",
           rc == 0 and len(lines) == 2 and lines[0].startswith("torch-exit CUT") and
           lines[1].startswith("torch.os-exit PASS"), "rc %d\n%s" % (rc, out))


def test_gpu_check__an_overrun_tail_group_is_cut_not_failed():
    """A tail group whose command the deadline stops: its check is CUT, the plan passes; the
    same in a group the plan needs is SKIP (time), never a FAIL of what the check tests."""
    rc, out = bash(SETUP + r"""
# each group's first commands took longer than expected: 2 s of the budget left
spend() { DEADLINE=$(($(date +%s) + 2)); }
check_loss_curve() {
  spend
  limit 150 sleep 30
  local rc=$?
  record cuda.loss-curve FAIL "canary/gpu_check.sh $(describe_rc $rc)"
  out_of_time cuda.loss-curve-2
}
check_torch_exit() { spend; limit 150 sleep 30; record torch.os-exit FAIL "gated: $(describe_rc $?)"; }
setup 200 "$1"
run_group +loss-curve
echo "tail plan: $(summary >/dev/null && echo passes || echo fails)"
setup 200 "$1"
run_group torch-exit
states
""".replace('"$1"', '"%s"' % outdir("overrun")))
    got = dict((l.split()[0], l.split()[1]) for l in out.splitlines()
               if l.split() and l.split()[0].startswith(("cuda.", "torch.")) and
               len(l.split()) > 1 and l.split()[1] in ("PASS", "FAIL", "SKIP", "CUT"))
    expect("test_gpu_check__an_overrun_tail_group_is_cut_not_failed",
           rc == 0 and got.get("cuda.loss-curve") == "CUT" and
           got.get("cuda.loss-curve-2") == "CUT" and "tail plan: passes" in out and
           got.get("torch.os-exit") == "SKIP" and "timed out" in out,
           "rc %d; states %r\n%s" % (rc, got, out))


def test_gpu_check__a_check_that_outlasts_its_own_limit_still_fails():
    """A command stopped by its own limit, with the budget far from spent, is the product's
    failure (a hang): FAIL, in the tail as elsewhere."""
    rc, out = bash(SETUP + r"""
check_loss_curve() { limit 2 sleep 30; record cuda.loss-curve FAIL "hung: $(describe_rc $?)"; }
setup 200 "$1"
run_group +loss-curve
states
""".replace('"$1"', '"%s"' % outdir("hang")))
    expect("test_gpu_check__a_check_that_outlasts_its_own_limit_still_fails",
           rc == 0 and "cuda.loss-curve FAIL hung: timed out" in out, "rc %d\n%s" % (rc, out))


# ---- the prepared binary ------------------------------------------------------------------

def build_dir_sources(build):
    """The files under ROOT (outside BUILD) that the compiler read for canary-gate's objects
    (src/'s targets), from the build's dependency files (make: *.o.d; ninja: its deps log)."""
    names = set()
    src = os.path.join(build, "src")
    depfiles = [os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".o.d")]
    text = ""
    for f in depfiles:
        text += open(f).read() + "\n"
    if not depfiles and os.path.exists(os.path.join(build, "build.ninja")):
        p = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True)
        block = False
        for line in p.stdout.splitlines():
            if not line.startswith(" "):
                block = line.startswith("src/")
            elif block:
                text += line + "\n"
    for word in text.replace("\\\n", " ").split():
        if word.endswith(":"):
            continue
        path = os.path.realpath(os.path.join(build, word))
        if path.startswith(ROOT + os.sep) and not path.startswith(os.path.realpath(build) + os.sep):
            names.add(os.path.relpath(path, ROOT))
    return names


def test_gpu_check__source_hash_covers_every_file_canary_gate_is_compiled_from():
    """Every source and header the build read for canary-gate (the shard format's headers in
    common/ among them) is in the prepared binary's source hash. The build: CG_BUILD_DIR (ctest
    sets it), else ROOT/build."""
    build = os.environ.get("CG_BUILD_DIR") or os.path.join(ROOT, "build")
    read = build_dir_sources(build)
    rc, out = bash('source_files')
    hashed = set(out.split())
    missing = sorted(read - hashed)
    expect("test_gpu_check__source_hash_covers_every_file_canary_gate_is_compiled_from",
           rc == 0 and len(read) > 50 and any(n.startswith("common/") for n in read) and
           not missing,
           "rc %d; %d files read in %s; not hashed: %s" % (rc, len(read), build, missing))


def test_gpu_check__source_hash_changes_with_the_shard_format():
    """A line added to common/shard_format.h makes a prepared binary stale."""
    tree = os.path.join(TMP, "hashtree")
    os.makedirs(tree)
    subprocess.run(["cp", "-r"] + [os.path.join(ROOT, n) for n in
                                   ("src", "common", "thresholds", "cmake", "CMakeLists.txt")] +
                   [tree + "/"], check=True)
    body = 'ROOT="%s"; source_hash' % tree
    _, before = bash(body)
    with open(os.path.join(tree, "common", "shard_format.h"), "a") as f:
        f.write("/* one more record */\n")
    _, after = bash(body)
    expect("test_gpu_check__source_hash_changes_with_the_shard_format",
           before.strip() and before != after, "before %r after %r" % (before, after))


# ---- the files groups share ---------------------------------------------------------------

# A stand-in canary-gate: "run" writes --out with the --runs it was given; a gate writes its JSON
# verdict naming the baseline it was given and the runs that file held then.
FAKE_GATE = r"""#!/bin/bash
mode=gate out="" runs="" base="" json=""
[ "$1" = run ] && mode=run
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --baseline) base="$2"; shift ;;
    --json) json="$2"; shift ;;
    --) break ;;
  esac
  shift
done
if [ "$mode" = run ]; then
  echo "{\"runs\": $runs}" >"$out"
else
  echo "{\"baseline\": \"$base\", \"baseline_runs_then\": $(cat "$base")}" >"$json"
  echo "{\"runs\": $runs}" >"$out"
fi
"""


def fake_gate():
    path = os.path.join(TMP, "fake-canary-gate")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(FAKE_GATE)
        os.chmod(path, 0o755)
    return path


def baselines(groups, name):
    """Runs GROUPS (run_group arguments) with the stand-in canary-gate; returns, for each
    counts verdict, the baseline it named, that file's runs then and now; and the lines."""
    d = outdir(name)
    rc, out = bash(SETUP + r"""
setup 900 "%s"
GATE="%s" TORCH_RUNS=1 TOKENS=256 PY=python3 SHIM=none CPU_FLAG=--cpu GPU_NEEDED=any
for g in %s; do run_group "$g"; done
for v in "$EV"/*/counts-*-verdict.json; do
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
print("verdict", sys.argv[1].split("/evidence/")[1], v["baseline"].split("/evidence/")[1],
      v["baseline_runs_then"]["runs"], json.load(open(v["baseline"]))["runs"])' "$v"
done
states
""" % (d, fake_gate(), groups))
    verdicts = [l.split()[1:] for l in out.splitlines() if l.startswith("verdict ")]
    return rc, out, verdicts


def test_gpu_check__torch_gate_keeps_the_counts_checks_baseline():
    """The default plan: torch-counts makes a 2-run baseline of its own and judges against it;
    torch-gate, later, makes its 3-run baseline elsewhere, so the evidence still holds the
    baseline each verdict was judged against."""
    rc, out, verdicts = baselines("torch-counts +torch-gate", "counts-then-gate")
    ok = rc == 0 and len(verdicts) == 3 and all(
        v[1] == "torch-counts/base.json" and v[2] == "2" and v[3] == "2" for v in verdicts)
    expect("test_gpu_check__torch_gate_keeps_the_counts_checks_baseline",
           ok and "torch.counts-baseline" in out and
           open(os.path.join(TMP, "counts-then-gate", "work", "evidence", "torch-gate",
                             "base.json")).read().strip() == '{"runs": 3}',
           "rc %d; verdicts (file, baseline, runs then, runs now): %r\n%s" % (rc, verdicts, out))


def test_gpu_check__torch_counts_uses_torch_gates_baseline_when_it_ran_first():
    """Plan full: torch-gate first; torch-counts judges against its 3-run baseline, unchanged,
    and makes none of its own."""
    rc, out, verdicts = baselines("torch-gate torch-counts", "gate-then-counts")
    ok = rc == 0 and len(verdicts) == 3 and all(
        v[1] == "torch-gate/base.json" and v[2] == "3" and v[3] == "3" for v in verdicts)
    expect("test_gpu_check__torch_counts_uses_torch_gates_baseline_when_it_ran_first",
           ok and "torch.counts-baseline" not in out,
           "rc %d; verdicts (file, baseline, runs then, runs now): %r\n%s" % (rc, verdicts, out))


# ---- what comes back ----------------------------------------------------------------------

def test_gpu_check__summary_and_evidence_survive_a_kill():
    """Killed from outside (SIGKILL to the whole process group, as a call's time limit may) in
    the middle of a group: summary.tsv holds every line recorded so far and evidence.tar.gz the
    groups that ended."""
    import signal
    import tarfile
    import time
    d = outdir("killed")
    body = r"""
check_preflight() { record preflight.gpu PASS stub; }
check_build() { record build PASS stub; record gate-tool PASS stub; }
check_exports() { record inject.exports PASS stub; }
check_cuda_raw() {
  mkdir -p "$EV/cuda-raw"
  echo shard >"$EV/cuda-raw/x.shard"
  record cuda.raw-shard PASS "stub"
  record cuda.shard-contract FAIL "stub"
}
check_cuda_comm() { mkdir -p "$EV/cuda-comm"; record cuda.comm-first PASS x; sleep 60; }
OUTDIR="%s" PLAN=default GPU_CHECK_ONLY=cuda-raw,cuda-comm GPU_CHECK_DEVICE=cpu main
""" % d
    p = subprocess.Popen(["bash", "-c", 'source "$1"\n' + body, "test_gpu_check", SCRIPT],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    tsv = os.path.join(d, "summary.tsv")
    for _ in range(100):
        if os.path.exists(tsv) and "cuda.comm-first" in open(tsv).read():
            break
        time.sleep(0.2)
    time.sleep(0.5)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    rows = [l.split("\t")[:2] for l in open(tsv).read().splitlines()] if os.path.exists(tsv) \
        else []
    members = []
    tarball = os.path.join(d, "evidence.tar.gz")
    if os.path.exists(tarball):
        with tarfile.open(tarball) as t:
            members = t.getnames()
    expect("test_gpu_check__summary_and_evidence_survive_a_kill",
           rows[:1] == [["check", "state"]] and
           ["cuda.shard-contract", "FAIL"] in rows and ["cuda.comm-first", "PASS"] in rows and
           "evidence/cuda-raw/x.shard" in members,
           "summary rows %r; evidence %r" % (rows, members))


def test_gpu_check__every_check_of_a_group_gets_a_line():
    """Where a group stops early (no library, no canary-gate, no time), each of its checks still
    has a line: a check that drops out of the table reads as one that never existed."""
    d = outdir("lines")
    scenarios = [
        ("LIB='' check_torch_raw",
         "torch.raw-shard torch.libcupti-copies torch.anatomy-trace torch.places "
         "torch.device-memory torch.device-memory-expandable torch.places-expandable"),
        ("LIB='' check_cuda_raw", "cuda.raw-shard cuda.shard-contract cuda.anatomy-trace"),
        ("TORCH_RUNS=1; DEADLINE=$(($(date +%s) + 5)); mkdir -p $EV/x; check_torch_memory $EV/x",
         "torch.device-memory torch.device-memory-expandable torch.places-expandable"),
        ("GATE='' check_cuda_gate",
         "cuda.baseline cuda.artifact cuda.artifact-contract cuda.gate-aa cuda.gate-aa-diagnosis "
         "cuda.gate-slow-attention cuda.gate-slow-attention-diagnosis cuda.gate-mem-bloat "
         "cuda.gate-mem-bloat-diagnosis"),
        ("GATE='' TORCH_RUNS=1 check_torch_counts",
         "torch.counts-aa torch.counts-aa-diagnosis torch.counts-sync torch.counts-place "
         "torch.counts-sync-diagnosis torch.counts-churn torch.counts-churn-diagnosis"),
        ("LIB='' check_overhead_toggle", "overhead.cuda-toggle overhead.torch-toggle"),
        ("LIB=x TRAIN=false; DEADLINE=$(($(date +%s) + 5)); check_overhead_toggle",
         "overhead.cuda-toggle overhead.torch-toggle"),
    ]
    for call, want in scenarios:
        rc, out = bash(SETUP + r"""
setup 300 "%s"
DEVICE=cuda LIB=x TRAIN=x GATE=x TORCH_RUNS=1 TOKENS=256 PY=python3 SHIM=none CPU_FLAG="" GPU_NEEDED=required
%s
echo "names: ${NAMES[*]}"
""" % (d, call))
        got = next((l[len("names: "):].split() for l in out.splitlines()
                    if l.startswith("names: ")), [])
        expect("test_gpu_check__every_check_of_a_group_gets_a_line (%s)" % call,
               rc == 0 and sorted(got) == sorted(want.split()),
               "rc %d; missing %s; extra %s\n%s" % (
                   rc, sorted(set(want.split()) - set(got)), sorted(set(got) - set(want.split())),
                   out[-2000:]))


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
