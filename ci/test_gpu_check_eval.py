#!/usr/bin/env python3
"""test_gpu_check_eval.py: the judgements of ci/gpu_check_eval.py on hand-made evidence.

ci/gpu-check runs once on a GPU machine; a wrong judgement there wastes the call. These cases
feed the evaluator shards, artifacts, verdicts and outputs shaped as the shard format and the
artifact (docs/collector.md, docs/artifact.md, the contract's new lines and fields) say, good and
bad, and check every answer: PASS or FAIL, and the words of the figure that explain it. Run by
ctest (test_gpu_check__evaluator). Exits 0 when every case passes.
"""

import json
import os
import subprocess
import sys
import tempfile

EVAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_check_eval.py")
failures = []
TMP = tempfile.mkdtemp(prefix="test_gpu_check_eval.")


def run(*args):
    p = subprocess.run([sys.executable, EVAL] + [str(a) for a in args], capture_output=True,
                       text=True)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) != 1 or "\t" not in lines[0]:
        return "CRASH", "rc %d stdout %r stderr %r" % (p.returncode, p.stdout, p.stderr)
    state, figure = lines[0].split("\t", 1)
    return state, figure


def case(name, args, state, *words):
    got, figure = run(*args)
    ok = got == state and all(w in figure for w in words)
    print("%s: %s -> %s %s" % ("ok" if ok else "FAILED", name, got, figure[:160]))
    if not ok:
        failures.append(name)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def shard(name, steps=16, end=True, gpu="ok", kernels=True, counters="c 1000 0 0 3 997 0 12345",
          done="done 12", cupti="cupti loaded /opt/torch/nvidia/cu13/lib/libcupti.so.13",
          memory=True, extra=""):
    d = os.path.join(TMP, name)
    lines = ["canary-gate-shard 1", "pid 4242", "rank x", "local_rank x", "warmup 2",
             "step_range step"]
    if gpu:
        lines.append("gpu " + gpu)
    if cupti:
        lines.append(cupti)
    for i in range(steps):
        lines.append("s %d %d %d -1" % (i, 1000 * i, 1000 * i + 900))
    if kernels:
        lines += ["o kernel 40 800000 _Z12matmul_tiledPfS_S_i",
                  "o kernel 20 100000 _Z7softmaxPfi"]
    lines.append("o memcpy 16 4000 memcpy HtoD pageable")
    if memory:
        lines += ["m 0 104857600", "m 0 209715200"]
    if counters:
        lines.append(counters)
    if done:
        lines.append(done)
    if extra:
        lines.append(extra)
    if end:
        lines.append("end")
    write(os.path.join(d, "shard-rx-lx-p4242.%s" % ("shard" if end else "part")),
          "\n".join(lines) + "\n")
    return d


def artifact(name, gpu=True, contract=True, steps=20, runs=2, peak=209715200, kernels=True,
             reason="another profiler holds CUPTI", steps_from=None, work=None):
    run_objs = []
    for _ in range(runs):
        ops = [{"name": "memcpy HtoD pageable", "family": "memcpy HtoD pageable",
                "kind": "memcpy", "calls": 20, "total_ns": 5000},
               {"name": "forward", "family": "forward", "kind": "range", "calls": 20,
                "total_ns": 900000}]
        if kernels:
            ops.append({"name": "matmul_tiled(float*, float*, float*, int)",
                        "family": "matmul_tiled", "kind": "kernel", "calls": 800,
                        "total_ns": 16000000})
        r = {"steps": [{"wall_ns": 1000000, "tokens": 4096, "gpu_busy_ns": 800000,
                        "loss": 3.5} for _ in range(steps)],
             "summary": {"peak_device_bytes": peak}, "ops": ops, "dropped_records": 0}
        if contract:
            r.update(outside_step_records=0, inside_step_records=1600, late_memory_records=0,
                     cupti_overhead_ns=120000)
        for i, st in enumerate(r["steps"]):
            if work is not None and work(i) is not None:
                st["counts"] = dict(zip(("backward", "optimizer_steps"), work(i)))
        run_objs.append(r)
    env = {"gpu_model": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04",
           "cuda_version": "13.0"}
    if contract:
        env["cupti_library"] = "loaded /opt/torch/nvidia/cu13/lib/libcupti.so.13"
    a = {"schema": "canary-gate/run", "schema_version": 1, "environment": env,
         "gpu": {"available": gpu, "reason": None if gpu else reason},
         "settings": {"steps_from": steps_from}, "runs": run_objs}
    return write(os.path.join(TMP, name + ".json"), json.dumps(a))


def verdict(name, verdict_word, outcomes):
    metrics = [{"name": n, "delta_pct": d, "p_value": p, "outcome": o}
               for n, (d, p, o) in outcomes.items()]
    return write(os.path.join(TMP, name + "-verdict.json"),
                 json.dumps({"verdict": verdict_word, "headline": "h", "metrics": metrics}))


SCRIPT = os.path.join(os.path.dirname(EVAL), "gpu-check")


def script_commands():
    """ci/gpu-check's commands, continuation lines joined."""
    with open(SCRIPT) as f:
        return [" ".join(c.split()) for c in f.read().replace("\\\n", " ").split("\n")]


def script_case(name, ok, detail):
    print("%s: %s%s" % ("ok" if ok else "FAILED", name, "" if ok else " (" + detail + ")"))
    if not ok:
        failures.append(name)


def script_checks():
    """What ci/gpu-check asks of the evaluator where the evidence alone cannot say it: the
    arguments that make a check able to fail on what it tests."""
    cmds = script_commands()

    def call(check):
        got = [c for c in cmds if "record_eval %s " % check in c]
        return got[0] if got else ""
    # expandable segments' allocations (cuMemCreate, cuMemMap) placed: a churn run, whose steps
    # allocate and release, with its allocations asked for in forward and all placed
    run = [c for c in cmds if "expandable_segments:True" in c and "torch_cmd" in c]
    line = call("torch.places-expandable")
    script_case("script: torch.places-expandable judges a churn run's allocations",
                bool(run) and all("--variant churn" in c for c in run) and
                "--want allocs:in:forward:1" in line and "allocs" in
                line.split("--all-placed", 1)[-1].split()[0],
                "run: %s; call: %s" % (run, line))


    # every gated run judged by "measured" needs GPU metrics on a GPU (GPU_NEEDED: required
    # there, any in the CPU rehearsal): torch.os-exit's gated half exists to catch the GPU
    # records lost by a process ending with os._exit
    measured = [c for c in cmds if '"$EVAL" measured ' in c or " measured " in c and
                "record_eval" in c]
    script_case("script: every gated run judged by 'measured' asks --gpu \"$GPU_NEEDED\"",
                len(measured) >= 4 and all('--gpu "$GPU_NEEDED"' in c for c in measured),
                "; ".join(c for c in measured if '--gpu "$GPU_NEEDED"' not in c))

    # the slowed attention's new kernel family named on a GPU (kernel_choice, as on the H100 of
    # 2026-11-27); an information line counted apart, neither a PASS nor a failure of the plan
    gate = " ".join(c for c in cmds if "warn=" in c or "-diagnosis\" diagnosis" in c)
    script_case("script: the slowed attention's diagnosis names kernel_choice on a GPU",
                "warn=kernel_choice" in gate and '"$DEVICE" = cuda' in gate, gate)
    text = "\n".join(cmds)
    script_case("script: information lines recorded and counted apart",
                "INFO$'\\t'*) record \"$name\" INFO" in text and
                "INFO) info=$((info + 1))" in text, "record_eval or summary")
    # the gates' verdicts likewise: a memory variant's FAIL judged by the device's peak on a GPU
    # gpu-state's MFU against the canaries' own precision (both train in fp32): the runs are
    # given --precision fp32, and the evaluator checks the artifacts say so
    runs = [c for c in cmds if '"$GATE" run --out "$d/' in c and ("$m-$k.json" in c or
                                                                 "torch.json" in c)]
    call_gs = call("gpu-state")
    script_case("script: gpu-state's runs and judgement name the canaries' precision",
                len(runs) == 2 and all("--precision fp32" in c for c in runs) and
                "--precision fp32" in call_gs, "runs: %s; call: %s" % (runs, call_gs))
    gates = [c for c in cmds if 'record_eval "$p.$name" verdict ' in c]
    script_case("script: the gates' verdicts ask --gpu \"$GPU_NEEDED\"",
                bool(gates) and all('--gpu "$GPU_NEEDED"' in c for c in gates),
                "; ".join(gates))


def main():
    # raw shard
    good = shard("good")
    case("raw: a finished shard with everything", ["raw-shard", good, "--rc", 0, "--steps", 16],
         "PASS", "exit 0", "16 steps", "1000 CUPTI records", "2 kernel names, 60 calls",
         "peak device 200.00 MiB")
    case("raw: a crash at exit is caught", ["raw-shard", good, "--rc", 139], "FAIL",
         "killed by signal 11")
    case("raw: steps counted", ["raw-shard", good, "--rc", 0, "--steps", 20], "FAIL",
         "16 steps marked, expected 20")
    case("raw: a .part without end", ["raw-shard", shard("part", end=False), "--rc", 0], "FAIL",
         "left as .part", "no 'end' line")
    case("raw: GPU unavailable named", ["raw-shard", shard("nogpu", gpu="unavailable no driver"),
                                        "--rc", 0], "FAIL", "gpu unavailable no driver")
    case("raw: no kernels", ["raw-shard", shard("nok", kernels=False), "--rc", 0], "FAIL",
         "no kernel op lines")
    case("raw: no memory lines", ["raw-shard", shard("nom", memory=False), "--rc", 0], "FAIL",
         "no memory (m) lines")
    case("raw: no records", ["raw-shard", shard("noc", counters="c 0 0 0"), "--rc", 0], "FAIL",
         "no CUPTI records")
    case("raw: os._exit leaves a .part", ["raw-shard", shard("osexit", end=False), "--rc", 0,
                                          "--expect-part"], "PASS", "no end")
    case("raw: --expect-part refuses a finished shard", ["raw-shard", good, "--rc", 0,
                                                         "--expect-part"], "FAIL", "expected an unfinished .part")
    case("raw: CPU rehearsal needs no GPU lines",
         ["raw-shard", shard("cpu", gpu="", kernels=False, counters="", memory=False), "--rc", 0,
          "--cpu"], "PASS", "16 steps")
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty)
    err = write(os.path.join(TMP, "err.txt"), "x\ncanary-train: no usable CUDA device\n")
    case("raw: no shard, with the canary's error", ["raw-shard", empty, "--rc", 4, "--stderr",
                                                     err], "FAIL", "no shard file",
         "exit 4", "no usable CUDA device")
    case("raw: a missing folder", ["raw-shard", os.path.join(TMP, "nowhere"), "--rc", 0], "FAIL",
         "no shard directory")

    # shard contract
    case("contract: done, cupti, 7-field c", ["shard-contract", good, "--done", 12], "PASS",
         "done 12", "cupti loaded", "outside 3 inside 997")
    case("contract: wrong done", ["shard-contract", good, "--done", 13], "FAIL",
         "'done 12', expected 'done 13'")
    case("contract: old shard lines", ["shard-contract", shard("old", counters="c 1000 0 0",
                                                               done="", cupti=""), "--done", 12],
         "FAIL", "no 'done' line", "no 'cupti HOW PATH' line", "'c' line has 3 fields")
    case("contract: bad HOW", ["shard-contract", shard("how", cupti="cupti guessed /x"),
                               "--done", 12], "FAIL", "none of loaded/env/configured/soname")
    case("contract: nothing inside a step", ["shard-contract",
                                             shard("inside", counters="c 10 0 0 10 0 0 0"),
                                             "--done", 12], "FAIL", "INSIDE 0, OUTSIDE 10")
    case("contract: warnings listed", ["shard-contract",
                                       shard("warn", extra="w CUPTI activity kind MEMCPY2 unavailable"),
                                       "--done", 12], "PASS", "MEMCPY2 unavailable")

    # artifacts
    trace = write(os.path.join(TMP, "trace.json"), json.dumps({"traceEvents": [
        {"name": "step 0", "ph": "X", "cat": "step"},
        {"name": "matmul", "ph": "X", "cat": "kernel"}]}))
    case("artifact: GPU metrics and a trace", ["artifact", artifact("a"), "--pageable", "--trace",
                                               trace], "PASS", "H100", "kernel 1")
    case("artifact: unavailable", ["artifact", artifact("b", gpu=False)], "FAIL",
         "another profiler holds CUPTI")
    case("artifact: no peak", ["artifact", artifact("c", peak=None)], "FAIL",
         "no peak device memory")
    notrace = write(os.path.join(TMP, "notrace.json"), json.dumps({"traceEvents": [
        {"name": "step 0", "ph": "X", "cat": "step"}]}))
    case("artifact: a trace without GPU events", ["artifact", artifact("a2"), "--trace", notrace],
         "FAIL", "trace has no kernel or copy events")
    case("artifact: not JSON", ["artifact", write(os.path.join(TMP, "bad.json"), "{")], "FAIL",
         "is not JSON")
    case("artifact: runs not a list", ["artifact", write(os.path.join(TMP, "bad2.json"),
                                                         '{"runs": "x"}')], "FAIL", "no runs")
    out = write(os.path.join(TMP, "gate.out"), "canary-gate: run 1 of 2: stopped after 25 steps\n")
    case("artifact contract: all there", ["artifact-contract", artifact("d"), "--gate-output", out],
         "PASS", "inside_step_records 1600/1600", "stopped after 25 steps")
    unknown = json.load(open(artifact("d2")))
    unknown["runs"][1]["cupti_overhead_ns"] = -1
    case("artifact contract: -1 is unknown",
         ["artifact-contract", write(os.path.join(TMP, "d2.json"), json.dumps(unknown)),
          "--gate-output", out], "FAIL", "runs[].cupti_overhead_ns unknown (120000/-1)")
    case("artifact contract: none there", ["artifact-contract", artifact("e", contract=False),
                                           "--gate-output", err], "FAIL",
         "runs[].outside_step_records missing", "environment.cupti_library missing",
         "never says 'stopped after N steps'")

    # verdicts
    aa = verdict("aa", "inconclusive", {"step_time_floor": (1.2, 0.3, "pass"),
                                        "peak_device_memory": (0.0, None, "pass")})
    case("verdict: A/A inconclusive passes", ["verdict", aa, "--rc", 0, "--expect", "pass"], "PASS",
         "step_time_floor +1.2%")
    case("verdict: A/A exit 1 fails", ["verdict", aa, "--rc", 1, "--expect", "pass"], "FAIL",
         "A/A expected no FAIL")
    slow = verdict("slow", "fail", {"step_time_floor": (30.0, 0.004, "fail"),
                                    "step_time_mean": (31.0, 0.004, "fail")})
    case("verdict: timing regression found", ["verdict", slow, "--rc", 1, "--expect", "timing"],
         "PASS", "+30.0%")
    memf = verdict("memf", "fail", {"step_time_floor": (0.5, 0.4, "pass"),
                                    "peak_device_memory": (48.0, None, "fail")})
    case("verdict: memory regression is not a timing one",
         ["verdict", memf, "--rc", 1, "--expect", "timing"], "FAIL", "not detected")
    case("verdict: memory regression found", ["verdict", memf, "--rc", 1, "--expect", "memory"],
         "PASS", "peak_device_memory +48.0%")
    case("verdict: a missed regression", ["verdict", aa, "--rc", 0, "--expect", "memory"], "FAIL",
         "memory regression not detected")
    # the memory variants on a GPU: peak device memory must FAIL; host RSS stands in for it
    # only in the CPU rehearsal (a +3% host RSS FAIL with the device's peak unavailable)
    rss = verdict("rss", "fail", {"peak_device_memory": (None, None, "unavailable"),
                                  "peak_host_rss": (3.0, None, "fail"),
                                  "step_time_mean": (0.1, 0.5, "pass")})
    case("verdict: host RSS does not stand in for the device's peak on a GPU",
         ["verdict", rss, "--rc", 1, "--expect", "memory", "--gpu", "required"], "FAIL",
         "memory regression not detected (peak_device_memory unavailable)")
    case("verdict: host RSS stands in for it in the CPU rehearsal",
         ["verdict", rss, "--rc", 1, "--expect", "memory", "--gpu", "any"], "PASS",
         "peak_host_rss +3.0% fail")
    case("verdict: the device's peak on a GPU",
         ["verdict", memf, "--rc", 1, "--expect", "memory", "--gpu", "required"], "PASS",
         "peak_device_memory +48.0%")
    def with_counts(name, verdict_word, rows):
        v = json.load(open(verdict(name, verdict_word, {"step_time_floor": (0.5, 0.4, "pass")})))
        v["counts"] = {"compared": len(rows), "changed": sum(r["baseline"] != r["current"]
                                                            for r in rows),
                       "rows": rows}
        return write(os.path.join(TMP, name + "-counts.json"), json.dumps(v))
    sync_rows = [{"count": "synchronizations", "baseline": 1, "current": 2, "outcome": "fail"},
                 {"count": "kernels", "baseline": 300, "current": 300, "outcome": "pass"}]
    same_rows = [{"count": "synchronizations", "baseline": 1, "current": 1, "outcome": "pass"},
                 {"range": "data", "baseline": 1, "current": 1, "outcome": "pass"}]
    case("verdict: the extra sync caught by its count",
         ["verdict", with_counts("c1", "fail", sync_rows), "--rc", 1, "--expect", "counts"],
         "PASS", "failed: synchronizations 1->2")
    placed_rows = [dict(sync_rows[0], where=[
        {"place": "after", "range": "optimizer", "baseline": 0, "current": 1},
        {"place": "after", "range": "data", "baseline": 1, "current": 1}])] + sync_rows[1:]
    case("verdict: the extra sync placed after the optimizer",
         ["verdict", with_counts("c6", "fail", placed_rows), "--rc", 1, "--expect", "place"],
         "PASS", "places: synchronizations after optimizer 0->1")
    case("verdict: the extra sync not placed",
         ["verdict", with_counts("c7", "fail", sync_rows), "--rc", 1, "--expect", "place"],
         "FAIL", "not placed after the optimizer range | places: none")
    churn_rows = [{"count": "allocs", "baseline": 0, "current": 7, "outcome": "fail", "where": [
                       {"place": "in", "range": "forward", "baseline": 0, "current": 5},
                       {"place": "in", "range": "backward", "baseline": 0, "current": 2}]},
                  {"count": "frees", "baseline": 0, "current": 7, "outcome": "fail", "where": [
                       {"place": "in", "range": "release", "baseline": 0, "current": 7}]}]
    case("verdict: allocator churn caught and its releases placed",
         ["verdict", with_counts("c8", "fail", churn_rows), "--rc", 1, "--expect", "churn"],
         "PASS", "frees in release 0->7")
    case("verdict: allocator churn caught but not placed",
         ["verdict", with_counts("c9", "fail", [dict(r, where=[]) for r in churn_rows]), "--rc", 1,
          "--expect", "churn"], "FAIL", "releases not placed in the release range")
    case("verdict: allocator churn not caught",
         ["verdict", with_counts("c10", "fail", sync_rows), "--rc", 1, "--expect", "churn"],
         "FAIL", "allocator churn was not caught by its counts")
    case("verdict: a FAIL that is not a count's",
         ["verdict", slow, "--rc", 1, "--expect", "counts"], "FAIL", "not caught by its counts")
    case("verdict: reordered work, same counts",
         ["verdict", with_counts("c2", "pass", same_rows), "--rc", 0, "--expect", "counts-same"],
         "PASS", "failed: none")
    case("verdict: reordered work that changed a count",
         ["verdict", with_counts("c3", "fail", sync_rows), "--rc", 1, "--expect", "counts-same"],
         "FAIL", "changed the counts")
    case("verdict: no counts measured",
         ["verdict", aa, "--rc", 0, "--expect", "counts-same"], "FAIL", "measured none")
    case("verdict: detected by its counts alone",
         ["verdict", with_counts("c4", "fail", sync_rows), "--rc", 1, "--expect", "detected"],
         "PASS", "caught by counts: synchronizations 1->2")
    case("verdict: detected by timing alone", ["verdict", slow, "--rc", 1, "--expect", "detected"],
         "PASS", "caught by timing: step_time_mean, step_time_floor")
    case("verdict: memory alone is not detected",
         ["verdict", memf, "--rc", 1, "--expect", "detected"], "FAIL",
         "not detected by timing or counts")
    case("verdict: counts that failed but exit 0",
         ["verdict", with_counts("c5", "fail", sync_rows), "--rc", 0, "--expect", "detected"],
         "FAIL", "not detected")
    err_v = write(os.path.join(TMP, "err-verdict.json"),
                  json.dumps({"verdict": "error", "headline": "canary crashed in run 2"}))
    case("verdict: canary failure", ["verdict", err_v, "--rc", 3, "--expect", "pass"], "FAIL",
         "canary crashed in run 2")
    case("verdict: none written", ["verdict", os.path.join(TMP, "none.json"), "--rc", 3,
                                   "--expect", "pass"], "FAIL", "not written")

    # measured runs
    case("measured: GPU metrics", ["measured", artifact("f", steps=10, runs=1), "--rc", 0,
                                   "--steps", 10, "--gpu", "required"], "PASS", "1 kernel ops")
    case("measured: step count", ["measured", artifact("g", steps=9, runs=1), "--rc", 0,
                                  "--steps", 10], "FAIL", "expected 10")
    case("measured: a reason is enough", ["measured", artifact("h", gpu=False, runs=1, steps=10),
                                          "--rc", 0, "--steps", 10], "PASS",
         "another profiler holds CUPTI")
    case("measured: a reason is not GPU metrics",
         ["measured", artifact("i", gpu=False, runs=1, steps=10), "--rc", 0, "--steps", 10,
          "--gpu", "required"], "FAIL", "GPU metrics unavailable")
    # an os._exit canary gated: its CUPTI buffers never delivered (on a GPU: the failure
    # torch.os-exit exists for)
    osx = json.load(open(artifact("osx", gpu=False, runs=1, steps=10, kernels=False,
                                  reason="CUPTI buffers never delivered (os._exit)")))
    osx = write(os.path.join(TMP, "osx.json"), json.dumps(osx))
    case("measured: an os._exit run without its GPU records, on a GPU",
         ["measured", osx, "--rc", 0, "--steps", 10, "--gpu", "required"], "FAIL",
         "GPU metrics unavailable | exit 0; 1 run(s) of 10 steps")
    case("measured: an os._exit run without its GPU records, in the CPU rehearsal",
         ["measured", osx, "--rc", 0, "--steps", 10, "--gpu", "any"], "PASS",
         "CUPTI buffers never delivered (os._exit)")
    case("measured: available without kernels",
         ["measured", artifact("j", kernels=False, runs=1, steps=10), "--rc", 0, "--steps", 10],
         "FAIL", "no kernel op was recorded")

    case("measured: steps from the optimizer",
         ["measured", artifact("k", steps=10, runs=1, steps_from="optimizer"), "--rc", 0,
          "--steps", 10, "--steps-from", "optimizer"], "PASS", "steps from optimizer")
    case("measured: steps from the script's own ranges, optimizer expected",
         ["measured", artifact("l", steps=10, runs=1, steps_from="nvtx"), "--rc", 0,
          "--steps", 10, "--steps-from", "optimizer"], "FAIL",
         "steps came from nvtx, expected optimizer")

    # the backward passes and optimizer steps counted from the sitecustomize's marks (torch
    # 2.x's optimizer step post-hook is run on the GPU machine only)
    case("measured: one backward pass and one optimizer step a step",
         ["measured", artifact("w1", steps=10, runs=1, work=lambda i: (1, 1)), "--rc", 0,
          "--steps", 10, "--work", "1:1"], "PASS", "backward passes a step 1, optimizer steps 1")
    case("measured: the marks not counted",
         ["measured", artifact("w2", steps=10, runs=1), "--rc", 0, "--steps", 10, "--work",
          "1:1"], "FAIL", "20 step counts of backward passes or optimizer steps missing")
    case("measured: a step of two backward passes",
         ["measured", artifact("w3", steps=10, runs=1, work=lambda i: (2 if i == 4 else 1, 1)),
          "--rc", 0, "--steps", 10, "--work", "1:1"], "FAIL",
         "expected 1 backward pass(es) and 1 optimizer step(s)")
    case("measured: any work counted",
         ["measured", artifact("w4", steps=10, runs=1, work=lambda i: (2, 1)), "--rc", 0,
          "--steps", 10, "--work", "any"], "PASS", "backward passes a step 2")
    case("measured: a step without an optimizer step",
         ["measured", artifact("w5", steps=10, runs=1, work=lambda i: (1, 0 if i else 1)),
          "--rc", 0, "--steps", 10, "--work", "any"], "FAIL",
         "a step without a backward pass or an optimizer step")

    # torch.profiler: which side got CUPTI, said; any other ending fails
    case("profiler: canary-gate got CUPTI",
         ["profiler", artifact("p1", steps=10, runs=1), "--rc", 0, "--steps", 10], "PASS",
         "path: canary-gate holds CUPTI", "profiler's GPU events are lost")
    case("profiler: the profiler got CUPTI",
         ["profiler", artifact("p2", gpu=False, runs=1, steps=10,
                               reason="another profiler holds the CUPTI subscriber slot: kineto"),
          "--rc", 0, "--steps", 10], "PASS", "path: torch.profiler holds CUPTI", "kineto")
    case("profiler: another reason",
         ["profiler", artifact("p3", gpu=False, runs=1, steps=10, reason="cannot load libcupti"),
          "--rc", 0, "--steps", 10], "FAIL", "neither", "cannot load libcupti")
    case("profiler: the canary did not finish",
         ["profiler", artifact("p4", runs=1, steps=4), "--rc", 0, "--steps", 10], "FAIL",
         "expected 10")
    case("profiler: canary-gate failed",
         ["profiler", artifact("p5", runs=1, steps=10), "--rc", 3, "--steps", 10], "FAIL",
         "gate")
    case("profiler: CUPTI without kernels",
         ["profiler", artifact("p6", runs=1, steps=10, kernels=False), "--rc", 0, "--steps", 10],
         "FAIL", "no kernel op")

    # the GPU's own state: NVML readings with sampling on, the reason with it off, the cost
    def gs_art(name, step_ms, state, precision="fp32"):
        art = {"runs": [{"steps": [{"wall_ns": int(step_ms * 1e6 * (1 + 0.001 * i)),
                                    "tokens": 4096} for i in range(20)],
                         "gpu_state": state}],
               "settings": {"precision": precision} if precision else {}}
        return write(os.path.join(TMP, name), json.dumps(art))
    dev = {"index": 0, "sm_clock_min_mhz": 1755, "sm_clock_median_mhz": 1980,
           "sm_clock_max_mhz": 1980, "temperature_min_c": 40, "temperature_max_c": 55,
           "power_min_w": 300, "power_max_w": 420, "reason_samples": {"sw_power_cap": 3}}
    good_on = {"available": True, "devices": [dev], "energy_j": 40.96, "mfu": 0.41}
    off_state = {"available": False, "reason": "NVML sampling off (CANARY_GATE_NVML=0)"}
    ons = [gs_art("gs-on-%d.json" % k, 10.0, good_on) for k in (1, 2, 3)]
    offs = [gs_art("gs-off-%d.json" % k, 9.9, off_state) for k in (1, 2, 3)]
    case("gpu state: readings and the sampling's cost",
         ["gpu-state", "--on"] + ons + ["--off"] + offs, "PASS",
         "SM 1755/1980/1980 MHz", "energy 0.0005 J/token", "MFU 0.410",
         "reasons {'sw_power_cap': 3}", "median step with sampling 10.0", "x1.010")
    case("gpu state: the PyTorch canary's readings beside",
         ["gpu-state", "--on"] + ons + ["--off"] + offs + ["--torch",
                                                          gs_art("gs-torch.json", 20.0, good_on)],
         "PASS", "gs-torch.json: SM 1755/1980/1980 MHz")
    no_mfu = dict(good_on, mfu=None, mfu_reason="not available: give --flops-per-token")
    case("gpu state: no MFU",
         ["gpu-state", "--on", gs_art("gs-nomfu.json", 10.0, no_mfu), "--off"] + offs, "FAIL",
         "no MFU: not available: give --flops-per-token")
    # both canaries train in fp32: an MFU against the bf16 peak (the tool's default when no
    # precision is given) is low by the bf16:fp32 ratio and must not pass as the reading
    bf = [gs_art("gs-bf16-%d.json" % k, 10.0, dict(good_on, mfu=0.02), precision=None)
          for k in (1, 2, 3)]
    case("gpu state: MFU against the bf16 peak for an fp32 canary",
         ["gpu-state", "--on"] + bf + ["--off"] + offs + ["--precision", "fp32"], "FAIL",
         "gs-bf16-1.json: MFU against the bf16 peak, the canary trains in fp32")
    case("gpu state: MFU against the canary's own precision",
         ["gpu-state", "--on"] + ons + ["--off"] + offs + ["--precision", "fp32"], "PASS",
         "MFU 0.410 (fp32 peak)")
    case("gpu state: an MFU above 1 is no fraction of a peak",
         ["gpu-state", "--on", gs_art("gs-mfu2.json", 10.0, dict(good_on, mfu=1.7)), "--off"] +
         offs + ["--precision", "fp32"], "FAIL", "gs-mfu2.json: MFU 1.700 outside (0, 1]")
    case("gpu state: sampling not turned off",
         ["gpu-state", "--on"] + ons + ["--off", gs_art("gs-off-bad.json", 10.0, good_on)],
         "FAIL", "sampling off, but gpu_state available")
    none = {"available": False, "reason": "NVML unavailable: cannot open libnvidia-ml.so.1"}
    case("gpu state: no NVML on a GPU run",
         ["gpu-state", "--on", gs_art("gs-none.json", 10.0, none), "--off"] + offs, "FAIL",
         "no GPU state: NVML unavailable")
    case("gpu state: no NVML on the CPU is said",
         ["gpu-state", "--on", gs_art("gs-none2.json", 10.0, none), "--off"] + offs + ["--cpu"],
         "PASS", "NVML unavailable: cannot open")

    # the library's toggled work inside one process: blocks of 2 steps, on off off on; steps of
    # 10 ms on and 9.9 ms off (+0.1 ms, 1.0%), 16 measured steps = 2 groups = 4 pairs a shard
    # 3 NVTX ranges a step (n I ranges), timed as range ops in the on blocks only: the toggle
    # seen in the shard (honour=False: a library timing the off blocks too; ranges=0: nothing
    # that could be toggled)
    def toggled(name, on_ms, off_ms, k=2, toggle=True, measured=16, ranges=3, honour=True,
                extra=()):
        lines = ["canary-gate-shard 1", "rank x", "warmup 1"] + (["toggle %d" % k] if toggle else [])
        t = timed = 0
        for i in range(1 + measured):
            m = i - 1
            off = m >= 0 and (m // k) % 4 in (1, 2)
            ms = (off_ms if off else on_ms) + 0.01 * (i % 3)
            lines.append("s %d %d %d -1" % (i, t, t + int(ms * 1e6)))
            if ranges:
                lines.append("n %d ranges %d" % (i, ranges))
            if m >= 0 and (honour and not off or not honour):
                timed += ranges
            t += int(ms * 1e6) + 1000
        if timed:
            lines.append("o range %d %d forward" % (timed, timed * 1000))
        lines += list(extra) + ["done %d" % (1 + measured), "end"]
        d = os.path.join(TMP, name)
        write(os.path.join(d, "shard-rx-lx-p1.shard"), "\n".join(lines) + "\n")
        return d
    case("overhead toggle: the cost and its bound",
         ["overhead-toggle", toggled("tg1", 10.0, 9.9), toggled("tg2", 10.0, 9.9)], "PASS",
         "costs +0.1000 ms a step (+1.01%)", "over 8 block pairs", "4 pairs of 2-step blocks")
    case("overhead toggle: over the limit",
         ["overhead-toggle", toggled("tg3", 10.0, 9.0), "--max-pct", 5], "FAIL",
         "the bound exceeds 5%")
    case("overhead toggle: not toggled", ["overhead-toggle", toggled("tg4", 10, 10, toggle=False)],
         "FAIL", "no toggle line")
    # the shards must show the toggle: a toggle line over 85 equal steps with no range at all
    # (nothing toggled) "cost +0.00%"; so did a library that timed its off blocks too
    case("overhead toggle: nothing that could be toggled",
         ["overhead-toggle", toggled("tg6", 10, 10, ranges=0)], "FAIL",
         "no NVTX range counted in the measured steps: nothing was toggled")
    case("overhead toggle: the off blocks' ranges timed",
         ["overhead-toggle", toggled("tg7", 10, 10, honour=False)], "FAIL",
         "range ops' calls 48 exceed the on blocks' 24 ranges (48 in all): the off blocks were "
         "timed")
    syncs = ["n %d sync_stream 1" % i for i in range(17)]
    case("overhead toggle: the on blocks' calls placed",
         ["overhead-toggle", toggled("tg8", 10.0, 9.9, extra=syncs + [
             "np sync_stream after 8 data"])], "PASS", "range ops 24 of 48 ranges",
         "places 8 of 16 calls")
    case("overhead toggle: the off blocks' calls placed",
         ["overhead-toggle", toggled("tg9", 10.0, 9.9, extra=syncs + [
             "np sync_stream after 16 data"])], "FAIL",
         "sync_stream placed 16 times, more than its 8 calls in the on blocks")

    # the toggle's bound simulated (the evaluator's own pairing and bound): 3 processes of 80
    # steps in blocks of 5, each process at a speed of its own (x1.0 or x1.28, as the H100's
    # states), +-3% noise a step, the toggled work costing c of the step in on blocks. The
    # bound must cover c in about 95% of 400 simulations, and with c = 0 stay under 1% mostly.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import random
    import gpu_check_eval as ev
    rnd = random.Random(7)
    def sim(c):
        diffs, offs = [], []
        for _ in range(3):
            speed = rnd.choice((1.0, 1.28)) * 10e6
            d = {}
            for m in range(80):
                on = (m // 5) % 4 in (0, 3)
                d[m] = speed * (1 + (c if on else 0)) * (1 + rnd.uniform(-0.03, 0.03))
            for x, y in ev.toggle_pairs(d, 5):
                diffs.append(x - y)
                offs.append(y)
        _, bound, _ = ev.upper_bound([(1.0, diffs)])
        return bound / statistics.mean(offs)
    import statistics
    covered = sum(sim(0.005) >= 0.005 for _ in range(400)) / 400.0
    small = sum(sim(0.0) < 0.01 for _ in range(400)) / 400.0
    ok = 0.92 <= covered <= 0.99 and small >= 0.9
    print("%s: overhead toggle simulated: the bound covers a 0.5%% cost in %.1f%% of 400, stays "
          "under 1%% with no cost in %.1f%%" % ("ok" if ok else "FAILED", 100 * covered,
                                                100 * small))
    if not ok:
        failures.append("overhead toggle simulated")
    case("overhead toggle: too few steps",
         ["overhead-toggle", toggled("tg5", 10, 9.9, measured=3)], "FAIL", "too few for a bound")

    # libcupti copies
    one = write(os.path.join(TMP, "one.txt"), "header\nlibcupti_files=1 /a/libcupti.so.13\n")
    two = write(os.path.join(TMP, "two.txt"),
                "libcupti_files=2 /a/libcupti.so.13 /usr/local/cuda/lib64/libcupti.so.13\n")
    case("cupti: one copy", ["cupti-copies", one, "--shard-dir", good], "PASS", "1 mapped",
         "shard: loaded")
    case("cupti: two copies", ["cupti-copies", two], "FAIL", "expected exactly 1")
    case("cupti: not printed", ["cupti-copies", err], "FAIL", "no libcupti_files line")

    # device memory: the shard's peaks (m lines: 100 and 200 MiB) against PyTorch's own
    mem = "torch_memory reserved_peak=%d allocated_peak=150000000 alloc_conf=%s\n"
    seen = write(os.path.join(TMP, "mem1.txt"), mem % (209715200, "-"))
    case("memory: the library sees what PyTorch reserved", ["device-memory", seen, "--shard-dir",
         good], "PASS", "library peak 200.00 MiB = 1.00 of what PyTorch reserved 200.00 MiB")
    left = write(os.path.join(TMP, "mem2.txt"), mem % (1 << 30, "expandable_segments:True"))
    case("memory: expandable segments left out", ["device-memory", left, "--shard-dir", good],
         "FAIL", "leaves out memory PyTorch reserved", "= 0.20 of", "expandable_segments:True")
    spaced = write(os.path.join(TMP, "mem3.txt"), mem % (209715200, "expandable_segments:True, "
                                                                     "max_split_size_mb:128"))
    case("memory: a configuration with a space", ["device-memory", spaced, "--shard-dir", good],
         "PASS", "max_split_size_mb:128")
    # with the step-start levels (train_gpt.py --print-reserved, the trace's tm lines): the
    # library's excess over PyTorch's allocator the same when traced step 5 began and at the
    # peak, or not; a constant excess is still bounded by the 5% (the H100's 1.10x of
    # 2026-11-27, about 130 MiB, fails however constant)
    MIB = 1 << 20
    def levels(name, reserved_k, used_k, level_k, reserved_peak=180 * MIB):
        txt = write(os.path.join(TMP, name + ".txt"),
                    "torch_reserved step=4 reserved=1 allocated=1 device_used=2\n"
                    "torch_reserved step=5 reserved=%d allocated=1 device_used=%d\n"
                    % (reserved_k, used_k) + mem % (reserved_peak, "-"))
        sh = shard(name, extra="tw 5 7\ntm 0 5000 %d\ntm 0 5400 %d" % (level_k, level_k + MIB))
        return ["device-memory", txt, "--shard-dir", sh]
    case("memory: a constant excess within 5% of PyTorch's reserved",
         levels("lv1", 150 * MIB, 700 * MIB, 155 * MIB, reserved_peak=195 * MIB), "PASS",
         "library peak 200.00 MiB = 1.03 of what PyTorch reserved 195.00 MiB",
         "step 5 began at library 155.00 MiB, PyTorch 150.00 MiB, device in use 700.00 MiB: "
         "outside PyTorch's allocator +5.00 MiB then, +5.00 MiB at the peak")
    case("memory: a constant excess of 11% fails",
         levels("lv1b", 150 * MIB, 700 * MIB, 170 * MIB), "FAIL",
         "more than 5% above what PyTorch reserved",
         "library peak 200.00 MiB = 1.11 of what PyTorch reserved 180.00 MiB",
         "outside PyTorch's allocator +20.00 MiB then, +20.00 MiB at the peak")
    # the H100's figures (reserved 1.20 GiB at each step start, 1.24 GiB at the peak, the device
    # 700 MiB more in use) with 560 MiB counted that the process never allocated, at the step's
    # start and at the peak alike: 1.44x
    steady = ["torch_reserved step=%d reserved=1288490188 allocated=1236061388 "
              "device_used=2022493388\n" % k for k in range(13)]
    dm_txt = write(os.path.join(TMP, "dm.txt"), "".join(steady) +
                   mem % (1331439861, "-"))
    dm_lines = ["gpu ok", "warmup 3", "tw 5 7"] + [
        "s %d %d %d -1" % (i, 1000 + i * 20001000, 20001000 + i * 20001000) for i in range(13)]
    dm_lines += ["tm 0 100006000 %d" % (1288490188 + 560 * MIB),
                 "m 0 %d" % (1331439861 + 560 * MIB), "done 13", "end"]
    dm_dir = os.path.join(TMP, "dm")
    write(os.path.join(dm_dir, "x.shard"), "\n".join(dm_lines) + "\n")
    case("memory: 560 MiB never allocated, counted the same all along",
         ["device-memory", dm_txt, "--shard-dir", dm_dir], "FAIL",
         "more than 5% above what PyTorch reserved", "= 1.44 of",
         "+560.00 MiB then, +560.00 MiB at the peak")
    case("memory: the excess grew to the peak", levels("lv2", 150 * MIB, 700 * MIB, 150 * MIB),
         "FAIL", "changed from +0 B (step 5) to +20.00 MiB (the peak), more than 4.00 MiB")
    case("memory: a level the device did not have in use",
         levels("lv3", 150 * MIB, 160 * MIB, 170 * MIB), "FAIL",
         "above what the device had in use")
    case("memory: a level below PyTorch's", levels("lv4", 150 * MIB, 700 * MIB, 140 * MIB,
                                                   reserved_peak=200 * MIB), "FAIL",
         "when step 5 began is below PyTorch's reserved")
    case("memory: no level at the step's start", ["device-memory", levels("lv5", 150 * MIB,
         700 * MIB, 170 * MIB)[1], "--shard-dir", shard("lv5b", extra="tw 5 7\ntm 0 5100 1")],
         "FAIL", "more than 5% above what PyTorch reserved")
    case("memory: no m line", ["device-memory", seen, "--shard-dir",
                               shard("nomem", memory=False)], "FAIL", "no m line")
    case("memory: not printed", ["device-memory", err, "--shard-dir", good], "FAIL",
         "no torch_memory line")

    # overhead
    tsv = write(os.path.join(TMP, "o.tsv"), "none 10\nnvtx 10.1\nfull 10.4\n" * 3)
    case("overhead: medians and ratios", ["overhead", tsv, "--reps", 3], "PASS",
         "none 10.000 ms (n=3, 10.000-10.000)", "full 10.400 ms (n=3, 10.400-10.400) x1.040")
    high = write(os.path.join(TMP, "h.tsv"), "none 10\nnvtx 10\nfull 12\n" * 3)
    case("overhead: bounded", ["overhead", high, "--reps", 3], "FAIL", "costs +20.0%")
    nf = write(os.path.join(TMP, "nf.tsv"), "none 10\nfull 10.5\nnone 11\nfull 10.7\n")
    case("overhead: none and full only", ["overhead", nf, "--reps", 2], "PASS",
         "none 10.500 ms (n=2, 10.000-11.000); full 10.600 ms (n=2, 10.500-10.700) x1.010")
    parts = write(os.path.join(TMP, "p.tsv"),
                  "none 10\nfull 13\noff-step_flush 10.4\nbad x\n" * 2 + "none 10\nfull 13\n")
    case("overhead parts: each configuration against none and full",
         ["overhead-parts", parts, "--reps", 2], "PASS", "none 10.000 ms (n=3)",
         "full 13.000 ms (n=3) x1.300", "off-step_flush 10.400 ms (n=2) x1.040 (-20.0% of full)")
    case("overhead parts: too few", ["overhead-parts", parts, "--reps", 3], "FAIL",
         "too few measurements (off-step_flush")
    # with the runs' shards (shards-CFG-I): every run with the library wrote one, the full runs'
    # with CUPTI started (gpu ok), the off-places runs' warning that places were left off and
    # holding no np line; runs that wrote nothing (the library not loaded, or crashing before it
    # writes) must not read as "costs nothing"
    def parts_dir(name, full=True, off=(1, 2, 3)):
        d = os.path.join(TMP, name)
        write(os.path.join(d, "values.tsv"),
              "none 12.3\nfull 12.6\noff-places 12.6\nnone 12.4\nfull 12.7\n"
              "off-places 12.5\nnone 12.3\nfull 12.6\noff-places 12.6\n")
        for i in (1, 2, 3):
            for cfg in ("none", "full", "off-places"):
                os.makedirs(os.path.join(d, "shards-%s-%d" % (cfg, i)), exist_ok=True)
            if full:
                write(os.path.join(d, "shards-full-%d" % i, "x.shard"),
                      "gpu ok\nnc kernels sync_stream places\nwarmup 2\ns 2 1 2\n"
                      "np sync_stream in 1 data\ndone 3\nend\n")
            if i in off:
                write(os.path.join(d, "shards-off-places-%d" % i, "x.shard"),
                      "gpu ok\nw CUPTI part left off: places\nwarmup 2\ns 2 1 2\ndone 3\nend\n")
        return d
    pd = parts_dir("parts-ok")
    case("overhead parts: every run's shard as its configuration says",
         ["overhead-parts", os.path.join(pd, "values.tsv"), "--reps", 3, "--shards", pd], "PASS",
         "off-places 12.600 ms (n=3) x1.024 (+0.0% of full)")
    pd = parts_dir("parts-noshard", full=False, off=(1,))
    case("overhead parts: runs that wrote no shard",
         ["overhead-parts", os.path.join(pd, "values.tsv"), "--reps", 3, "--shards", pd], "FAIL",
         "shards-full-1: no shard", "shards-off-places-2: no shard")
    pd = parts_dir("parts-nogpu")
    write(os.path.join(pd, "shards-full-2", "x.shard"),
          "gpu unavailable no driver\nwarmup 2\ns 2 1 2\ndone 3\nend\n")
    case("overhead parts: a full run without CUPTI",
         ["overhead-parts", os.path.join(pd, "values.tsv"), "--reps", 3, "--shards", pd], "FAIL",
         "shards-full-2: no 'gpu ok' (gpu unavailable no driver)")
    nofull = write(os.path.join(TMP, "p2.tsv"), "none 1\n")
    case("overhead parts: no full", ["overhead-parts", nofull, "--reps", 1], "FAIL",
         "none and full among them")
    case("overhead: too few", ["overhead", tsv, "--reps", 4], "FAIL", "too few measurements")
    only = write(os.path.join(TMP, "only.tsv"), "nvtx 10\n")
    case("overhead: nothing to compare", ["overhead", only, "--reps", 0], "FAIL",
         "no run without the library")

    # the anatomy against the trace: two traced steps, hand-computed unions (docs/gpu.md).
    # Step 2 [1000, 2000): kernels [1100,1300] [1200,1400] (adamw) [1900,2100] (clipped at 2000),
    # a copy [1350,1500]: busy 400, compute 300 with adamw named (400 without), copy 150, hidden
    # 50, 3 kernels. Step 3 [3000, 4000): a kernel [3100,3200], a set [3150,3300]: busy 100,
    # copy 150, hidden 50, 1 kernel. The op table: 4 calls = the measured steps' 3 + 1.
    def traced(name, compute2=400, copy2=150, kernels2=3, calls=(3, 1), tw="tw 2 3",
               nc="nc kernels compute_ns copy_ns copy_hidden_ns", drop=()):
        lines = ["canary-gate-shard 1", "rank x", "warmup 2", "gpu ok", nc, tw,
                 "s 0 0 500 -1", "s 1 500 900 -1", "s 2 1000 2000 -1", "s 3 3000 4000 -1",
                 "n 0 kernels 5", "n 1 kernels 5",
                 "tg kernel 0 7 1100 1300 -1 _Z1ak", "tg kernel 0 8 1200 1400 -1 _Z5adamwv",
                 "tg memcpy 0 7 1350 1500 64 memcpy HtoD pageable",
                 "tg kernel 0 7 1900 2100 -1 _Z1ak", "tg kernel 0 7 3100 3200 -1 _Z1bk",
                 "tg memset 0 7 3150 3300 64 memset",
                 "b 2 400", "b 3 100", "n 2 compute_ns %d" % compute2, "n 3 compute_ns 100",
                 "n 2 copy_ns %d" % copy2, "n 3 copy_ns 150", "n 2 copy_hidden_ns 50",
                 "n 3 copy_hidden_ns 50", "n 2 kernels %d" % kernels2, "n 3 kernels 1",
                 "o kernel %d 500 _Z1ak" % calls[0], "o kernel %d 100 _Z1bk" % calls[1],
                 "done 4", "end"]
        lines = [x for x in lines if x not in drop]
        d = os.path.join(TMP, name)
        write(os.path.join(d, "shard-rx-lx-p1.shard"), "\n".join(lines) + "\n")
        return d
    case("anatomy: the shard's unions are the trace's",
         ["anatomy-trace", traced("tr1"), "--tolerance-ns", 0], "PASS",
         "largest difference busy 0 ns, compute 0, copy 0, hidden 0, kernels 0",
         "step 2 busy 0.000 compute 0.000", "op table 4 kernel calls, steps 2..3 counted 4")
    # the shard writes a count's changes only: a step with nothing hidden has no line for it
    # (the H100 run of 2026-11-27 failed "no hidden figure" on exact unions)
    nohide = traced("tr1b", copy2=200, drop=("n 3 copy_hidden_ns 50", "tg memset 0 7 3150 3300 64 memset",
                                           "n 3 copy_ns 150", "n 2 copy_hidden_ns 50"))
    case("anatomy: a count's zero has no line", ["anatomy-trace", nohide, "--tolerance-ns", 0],
         "FAIL", "step 2 hidden: shard 0, trace 50", "step 2 copy: shard 200, trace 150")
    nohide3 = traced("tr1c", drop=("n 3 copy_hidden_ns 50", "tg memset 0 7 3150 3300 64 memset",
                                   "n 3 copy_ns 150"))
    case("anatomy: a step with no copy writes no copy lines",
         ["anatomy-trace", nohide3, "--tolerance-ns", 0], "PASS",
         "largest difference busy 0 ns, compute 0, copy 0, hidden 0, kernels 0")
    case("anatomy: a count the shard does not measure",
         ["anatomy-trace", traced("tr1d", nc="nc kernels compute_ns copy_ns",
                                  drop=("n 3 copy_hidden_ns 50",)), "--tolerance-ns", 0],
         "FAIL", "step 3: no hidden figure in the shard, and its 'nc' line does not name")
    case("anatomy: a copy union 2 us off",
         ["anatomy-trace", traced("tr2", copy2=2150)], "FAIL", "step 2 copy: shard 2150, trace 150")
    case("anatomy: within the tolerance",
         ["anatomy-trace", traced("tr2b", copy2=1150)], "PASS", "copy 1000")
    case("anatomy: a kernel count off by one",
         ["anatomy-trace", traced("tr3", kernels2=4)], "FAIL", "step 2 kernels: shard 4, trace 3")
    case("anatomy: the op table against the counts",
         ["anatomy-trace", traced("tr4", calls=(4, 1))], "FAIL",
         "op table's kernel calls 5 != the measured steps' kernel counts 4")
    case("anatomy: no trace window", ["anatomy-trace", traced("tr5", tw="")], "FAIL",
         "no trace window")
    case("anatomy: a communication kernel out of compute",
         ["anatomy-trace", traced("tr6", compute2=300), "--comm", "adamw"], "PASS",
         "named communication (adamw): 1 traced", "exposed communication 0.000 ms")
    case("anatomy: communication named but counted as compute",
         ["anatomy-trace", traced("tr7"), "--comm", "adamw", "--tolerance-ns", 0], "FAIL",
         "step 2 compute: shard 400, trace 300")
    case("anatomy: communication named that no kernel holds",
         ["anatomy-trace", traced("tr8"), "--comm", "ncclKernel"], "FAIL",
         "no traced kernel holds ncclKernel")

    # places: 2 measured steps (2, 3); synchronisations 3 a step, 2 of them placed; allocations
    # 5 a step, all placed (3 in forward, 2 in backward); releases 3 a step, in release
    def placed(name, nc="nc kernels sync_stream allocs frees places"):
        lines = ["canary-gate-shard 1", "rank x", "warmup 2", "gpu ok", nc]
        for i in range(4):
            lines += ["s %d %d %d -1" % (i, 1000 * i, 1000 * i + 900),
                      "n %d sync_stream 3" % i, "n %d allocs 5" % i, "n %d frees 3" % i]
        lines += ["np sync_stream after 2 data", "np sync_event in 2 optimizer",
                  "np allocs in 6 forward", "np allocs in 4 backward", "np frees in 6 release",
                  "done 4", "end"]
        d = os.path.join(TMP, name)
        write(os.path.join(d, "shard-rx-lx-p1.shard"), "\n".join(lines) + "\n")
        return d
    pl = placed("pl1")
    case("places: backward's allocations and the releases placed",
         ["places", pl, "--want", "allocs:in:backward:1", "--want", "frees:in:release:1",
          "--all-placed", "allocs,frees"], "PASS",
         "allocs 5.00/step: in forward 3.00, in backward 2.00", "frees 3.00/step: in release 3.00",
         "sync 3.00/step: after data 1.00, in optimizer 1.00, no range 1.00")
    case("places: the figure states what a defect would show",
         ["places", pl, "--all-placed", "allocs"], "PASS", "frees 3.00/step")
    case("places: synchronisations in no range",
         ["places", pl, "--all-placed", "sync"], "FAIL", "sync: 2 calls in no range")
    case("places: fewer than wanted",
         ["places", pl, "--want", "allocs:in:backward:3"], "FAIL",
         "allocs in backward: 2.00 per step, expected at least 3")
    case("places: not measured", ["places", placed("pl2", nc="nc kernels allocs")], "FAIL",
         "places not measured")
    # a library whose synchronisations are lost: none counted at all (the PyTorch canary makes 3
    # a step on the H100), or SYNCHRONIZATION not measured ('nc' without sync_*: unknown, not 0);
    # neither may pass as "every synchronisation placed"
    def unsynced(name, nc):
        lines = ["gpu ok", nc, "warmup 3"] + ["s %d %d %d" % (i, 100 * (i + 1), 100 * (i + 2))
                                             for i in range(6)]
        lines += ["done 6"] + ["n %d kernels 370" % i for i in (3, 4, 5)] + ["end"]
        d = os.path.join(TMP, name)
        write(os.path.join(d, "p.shard"), "\n".join(lines) + "\n")
        return d
    case("places: synchronisations not measured",
         ["places", unsynced("pl3", "nc kernels dtoh_pageable allocs frees places"),
          "--all-placed", "sync,dtoh_pageable", "--counted", "sync"], "FAIL",
         "sync: not measured ('nc' does not name sync_stream, sync_event, sync_context)")
    case("places: no synchronisation counted",
         ["places", unsynced("pl4", "nc kernels dtoh_pageable allocs frees sync_stream sync_event "
                                    "sync_context sync_ns places"),
          "--all-placed", "sync,dtoh_pageable", "--counted", "sync"], "FAIL",
         "sync: none counted in the 3 measured steps")
    case("places: a count to place that is not measured",
         ["places", unsynced("pl5", "nc kernels sync_stream sync_event sync_context places"),
          "--all-placed", "sync,dtoh_pageable"], "FAIL",
         "dtoh_pageable: not measured ('nc' does not name dtoh_pageable)")
    pl6 = placed("pl6", nc="nc kernels sync_stream sync_event sync_context dtoh_pageable allocs "
                           "frees places")
    case("places: synchronisations counted, none of the pageable copies",
         ["places", pl6, "--all-placed", "allocs,dtoh_pageable", "--counted", "sync"], "PASS",
         "sync 3.00/step")

    # graphs: launches, graph kernels and kernels per measured step
    def graphed(name, launches=(1, 1), gk=(100, 100), kernels=(120, 120)):
        lines = ["canary-gate-shard 1", "rank x", "warmup 1", "gpu ok",
                 "nc kernels graph_kernels graph_launches"]
        for i in range(3):
            j = max(0, i - 1)
            lines += ["s %d %d %d -1" % (i, 1000 * i, 1000 * i + 900),
                      "n %d graph_launches %d" % (i, launches[j]),
                      "n %d graph_kernels %d" % (i, gk[j]), "n %d kernels %d" % (i, kernels[j])]
        lines += ["done 3", "end"]
        d = os.path.join(TMP, name)
        write(os.path.join(d, "shard-rx-lx-p1.shard"), "\n".join(lines) + "\n")
        return d
    eager = graphed("ge", launches=(0, 0), gk=(0, 0), kernels=(118, 118))
    case("graphs: constant per step, not counted again as eager",
         ["graphs", graphed("g1"), "--eager", eager], "PASS", "graph launches [1]",
         "eager canary 118 kernels a step (graphs: 120, of them 20 eager)")
    case("graphs: graph kernels counted twice",
         ["graphs", graphed("g2", kernels=(220, 220)), "--eager", eager], "FAIL",
         "kernels a step 220 against 118 eager")
    case("graphs: launches vary", ["graphs", graphed("g3", launches=(1, 2))], "FAIL",
         "graph launches not one constant")
    case("graphs: no graph kernels", ["graphs", graphed("g4", gk=(0, 0))], "FAIL",
         "graph kernels not one constant above 0")

    # two processes on one GPU: 1 GB each, the merged peak their sum
    two = os.path.join(TMP, "two")
    for r in (0, 1):
        write(os.path.join(two, "shard-r%d-l%d-p%d.shard" % (r, r, r + 10)),
              "canary-gate-shard 1\nrank %d\ns 0 0 10 -1\nm 0 1000000000\nend\n" % r)
    single = os.path.join(TMP, "single")
    write(os.path.join(single, "shard-rx-lx-p9.shard"),
          "canary-gate-shard 1\nrank x\ns 0 0 10 -1\nm 0 990000000\nend\n")
    for peak, state, words in ((2000000000, "PASS", ["merged 1.86 GiB"]),
                               (4000000000, "FAIL", ["merged peak 2.00x the sum"]),
                               (1000000000, "FAIL", ["merged peak 0.50x the sum"])):
        art = json.load(open(artifact("two%d" % peak, runs=1)))
        art["runs"][0]["summary"]["peak_device_bytes"] = peak
        path = write(os.path.join(TMP, "two%d.json" % peak), json.dumps(art))
        case("two processes: merged peak %d" % peak,
             ["two-procs", two, "--artifact", path, "--single", single], state, *words)
    case("two processes: one shard only",
         ["two-procs", single, "--artifact", artifact("two1", runs=1)], "FAIL",
         "expected 2 shards with steps")

    # device memory both ways
    over = write(os.path.join(TMP, "mem4.txt"), mem % (100 << 20, "-"))
    case("memory: an over-count fails", ["device-memory", over, "--shard-dir", good], "FAIL",
         "more than 5% above", "= 2.00 of")
    near = write(os.path.join(TMP, "mem5.txt"), mem % (int(209715200 / 0.96), "-"))
    case("memory: 4% below passes", ["device-memory", near, "--shard-dir", good], "PASS",
         "= 0.96 of")

    # diagnosis: the anatomy's shares and the rules that fire
    def diagnosed(name, diag, anatomy=True):
        v = {"verdict": "pass", "headline": "h", "metrics": []}
        if anatomy:
            v["anatomy"] = [{"part": "gpu_idle", "baseline_share": 0.12, "current_share": 0.125,
                             "outcome": "pass"},
                            {"part": "range", "name": "data", "baseline_share": 0.3,
                             "current_share": 0.31, "outcome": "not_gated"}]
        if diag is not None:
            v["diagnosis"] = [{"rule": r, "severity": s} for r, s in diag]
        return write(os.path.join(TMP, name + "-diag.json"), json.dumps(v))
    case("diagnosis: nothing fires on an A/A",
         ["diagnosis", diagnosed("d1", [("launch_bound", "note")]), "--rc", 0, "--warnings",
          "none"], "PASS", "warnings: none; notes: launch_bound",
         "gpu_idle 12.0%->12.5% pass", "range data 30.0%->31.0% not_gated")
    case("diagnosis: a warning on an A/A",
         ["diagnosis", diagnosed("d2", [("host_bound", "warning")]), "--rc", 0, "--warnings",
          "none"], "FAIL", "a rule fired on an A/A: host_bound")
    case("diagnosis: the expected rule fires",
         ["diagnosis", diagnosed("d3", [("memory_growth", "warning")]), "--rc", 1, "--warnings",
          "memory_growth"], "PASS", "warnings: memory_growth")
    case("diagnosis: the expected rule does not fire",
         ["diagnosis", diagnosed("d4", []), "--rc", 1, "--warnings", "memory_growth"], "FAIL",
         "not fired: memory_growth")
    # a figure only (--warnings any: the counts variants, the PyTorch sync gate) cannot fail on
    # what fires, so it is information in the table, not a PASS among the real ones
    case("diagnosis: which rules fire is information",
         ["diagnosis", diagnosed("d7", [("host_bound", "warning")]), "--rc", 1, "--warnings",
          "any"], "INFO", "warnings: host_bound")
    case("diagnosis: information still needs the lists",
         ["diagnosis", diagnosed("d8", None), "--rc", 1, "--warnings", "any"], "FAIL",
         "no diagnosis list")
    case("diagnosis: no diagnosis in the verdict",
         ["diagnosis", diagnosed("d5", None), "--rc", 0], "FAIL", "no diagnosis list")
    case("diagnosis: no anatomy in the verdict",
         ["diagnosis", diagnosed("d6", [], anatomy=False), "--rc", 0], "FAIL", "no anatomy list")

    # --only: the groups left out must be shown, not gated
    gated = with_counts("o1", "fail", sync_rows)
    case("verdict: --only counts,memory not honoured",
         ["verdict", gated, "--rc", 1, "--expect", "counts", "--only", "counts,memory"], "FAIL",
         "not honoured: step_time_floor pass")
    ng = json.load(open(gated))
    ng["metrics"][0]["outcome"] = "not_gated"
    ng = write(os.path.join(TMP, "o2.json"), json.dumps(ng))
    case("verdict: --only counts,memory honoured",
         ["verdict", ng, "--rc", 1, "--expect", "counts", "--only", "counts,memory"], "PASS",
         "failed: synchronizations 1->2")
    case("verdict: reordered work must exit 0 under --only",
         ["verdict", with_counts("c11", "inconclusive", same_rows), "--rc", 1, "--expect",
          "counts-same"], "FAIL", "must exit 0")

    # detection: an A/A and a known slowdown
    slowv = verdict("det-slow", "fail", {"step_time_mean": (10.2, 0.001, "fail")})
    case("detection: no false alarm, detected",
         ["detection", "--aa", aa, "--aa-rc", 0, "--aa-s", 80, "--slow", slowv, "--slow-rc", 1,
          "--slow-s", 85], "PASS", "A/A inconclusive (exit 0, ? runs, ? look(s), 80 s)",
         "slowdown fail (exit 1, ? runs, ? look(s), 85 s): step_time_mean +10.2%")
    case("detection: a false alarm",
         ["detection", "--aa", slowv, "--aa-rc", 1, "--aa-s", 80, "--slow", slowv, "--slow-rc", 1,
          "--slow-s", 85], "FAIL", "false alarm on the A/A")
    case("detection: a miss",
         ["detection", "--aa", aa, "--aa-rc", 0, "--aa-s", 80, "--slow", aa, "--slow-rc", 0,
          "--slow-s", 85], "FAIL", "not detected")

    # the library's cost bound. Reference by hand: small pairs d = .10 .12 .08 .11 .09 ms (none
    # 10 ms): mean .10, s^2 = .001/4 = .00025, se = sqrt(.00025/5) = .0070711, t(.95, 4) =
    # 2.131847 (Student t table) -> bound .115075 ms = +1.15%. Large pairs (none 20 ms) .20 ms
    # more each, same spread -> bound .315075 ms = +1.58%. Kernels a step 100 and 300: per kernel
    # (.30 - .10)/200 = 1.000 us, se = sqrt(2 x .00025/5)/200 ms = 0.05 us, Welch df =
    # (2v)^2/(2 v^2/4) = 8, t(.95, 8) = 1.859548 -> bound 1.000 + 0.093 = 1.093 us; per step
    # (300 x .10 - 100 x .30)/200 = 0.
    rows = []
    for i, d in enumerate((0.10, 0.12, 0.08, 0.11, 0.09)):
        rows.append("small %d 10 %.2f" % (i, 10 + d))
        rows.append("large %d 20 %.2f" % (i, 20.2 + d))
    bound = write(os.path.join(TMP, "bound.tsv"), "\n".join(rows) + "\nbad line\n")
    case("overhead bound: per size, per kernel and per step, against the hand computation",
         ["overhead-bound", bound, "--kernels-small", 100, "--kernels-large", 300], "PASS",
         "small (100 kernels/step): 5 pairs, none 10.000 ms, cost +0.100 ms (+1.00%), "
         "95% bound +0.115 ms (+1.15%)", "95% bound +0.315 ms (+1.58%)",
         "per kernel 1.000 us (bound 1.093), per step 0.000 us")
    case("overhead bound: the bound, not the estimate, is limited",
         ["overhead-bound", bound, "--kernels-small", 100, "--kernels-large", 300, "--max-pct",
          1.5], "FAIL", "may reach +1.58% of a step")
    case("overhead bound: too few pairs",
         ["overhead-bound", write(os.path.join(TMP, "b2.tsv"), "small 0 10 10.1\n"),
          "--kernels-small", 100, "--kernels-large", 300], "FAIL", "fewer than 3 pairs")
    # Student t quantiles of the bound against a table (one-sided 95%, and 97.5% at 10 df)
    sys.path.insert(0, os.path.dirname(EVAL))
    import gpu_check_eval as ev
    for df, q, ref in ((1, 0.95, 6.313752), (2, 0.95, 2.919986), (4, 0.95, 2.131847),
                       (9, 0.95, 1.833113), (29, 0.95, 1.699127), (10, 0.975, 2.228139)):
        got = ev.t_quantile(q, df)
        ok = abs(got - ref) < 2e-6
        print("%s: t quantile %.3f at %d df = %.6f (table %.6f)" % (
            "ok" if ok else "FAILED", q, df, got, ref))
        if not ok:
            failures.append("t quantile %g %d" % (q, df))
    m, v = ev.mean_var([1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16])
    ok = abs(m - (1e9 + 10)) < 1e-6 and abs(v - 30.0) < 1e-6
    print("%s: Welford mean and variance of large values (%r, %r)" % ("ok" if ok else "FAILED",
                                                                       m, v))
    if not ok:
        failures.append("mean_var")

    script_checks()
    if failures:
        print("%d case(s) failed; files in %s" % (len(failures), TMP))
        return 1
    subprocess.run(["rm", "-rf", TMP])
    return 0


if __name__ == "__main__":
    sys.exit(main())
