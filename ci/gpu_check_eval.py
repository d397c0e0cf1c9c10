#!/usr/bin/env python3
"""gpu_check_eval.py: judges the evidence ci/gpu-check collects (docs/gpu.md).

Each subcommand reads files (shards, artifacts, JSON verdicts, canary output) and prints exactly
one line, "PASS<TAB>figure" or "FAIL<TAB>figure" ("INFO<TAB>figure" for a figure with nothing to
pass: diagnosis --warnings any), then exits 0; ci/gpu-check records that line as one check of
its summary table. A missing file or field is a FAIL that names it, never a crash;
an unexpected error is printed as a FAIL line too. Only the standard library is used.

  raw-shard DIR --rc N [--steps N] [--expect-part] [--stderr FILE] [--cpu]
                                                      the shard of one canary run (--cpu: a
                                                      CPU rehearsal, no GPU lines expected)
  shard-contract DIR --done N                         done / cupti / 7-field c lines
  artifact FILE [--pageable] [--trace FILE]           GPU metrics in a run artifact
  artifact-contract FILE --gate-output FILE...        new artifact fields, "stopped after N"
  verdict FILE --rc N --expect pass|timing|memory|counts|counts-same|place [--gpu any|required]
                                                      a gate's JSON verdict and exit code (counts:
                                                      a synchronisation or pageable copy count
                                                      FAILs; counts-same: no count FAILs; memory:
                                                      peak device memory FAILs, host RSS standing
                                                      in for it only without --gpu required)
  measured FILE --rc N --steps N [--gpu any|required] a run artifact: runs measured
  cupti-copies STDOUT [--shard-dir DIR]               libcupti files mapped in the canary
  device-memory STDOUT --shard-dir DIR                the shards' peak device memory against
                                                      the PyTorch canary's own reserved peak
  overhead TSV --reps N [--max-pct X]                 medians of none / nvtx / full
  overhead-parts TSV --reps N [--shards DIR]          medians of each configuration; with DIR,
                                                      each off-PART run's shard names PART as
                                                      left off (off-places: no np line)
  overhead-bound TSV --kernels-small K1 --kernels-large K2 [--max-pct X]
                                                      A B B A pairs of two sizes of the C canary:
                                                      per-kernel and per-step cost of the library
                                                      and the 95% upper confidence bound of its
                                                      cost (Student t; Welch for the split)
  anatomy-trace DIR [--comm PARTS] [--tolerance-ns N] a raw shard with a trace window: each
                                                      traced step's busy, compute, copy and
                                                      hidden-copy time against the unions rebuilt
                                                      from its tg lines; kernels per step against
                                                      the tg lines, and the op table's calls
                                                      against the measured steps' counts
  places DIR [--want COUNT:WHERE:RANGE:MIN]... [--all-placed COUNT,...] [--counted COUNT,...]
                                                      np lines of a raw shard: calls per measured
                                                      step at each place, and the calls in none
                                                      (--counted: measured and above 0)
  graphs DIR [--eager DIR]                            graph launches and graph kernels per step,
                                                      constant and not counted again as eager
  two-procs DIR --artifact FILE [--single DIR]        two processes' shards and the merged peak
  diagnosis FILE --rc N [--warnings none|any|RULE,...] the anatomy's shares and which rules fire
                                                      (any: INFO, the figure only)
  detection --aa FILE --aa-rc N --aa-s S --slow FILE --slow-rc N --slow-s S
                                                      false alarm, detection, seconds a decision
"""

import argparse
import json
import math
import os
import re
import statistics
import sys


class Fail(Exception):
    """A failed check: its message is the figure."""


def out(ok, figure, state=None):
    figure = " ".join(str(figure).split())
    if len(figure) > 400:
        figure = figure[:397] + "..."
    print("%s\t%s" % (state or ("PASS" if ok else "FAIL"), figure))


def fmt_bytes(n):
    if n is None:
        return "n/a"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return "%.2f %s" % (n / size, unit)
    return "%d B" % n


def describe_rc(rc):
    if rc == 0:
        return "exit 0"
    if rc == 124 or rc == 137:
        return "timed out (exit %d)" % rc
    if rc > 128:
        return "killed by signal %d" % (rc - 128)
    return "exit %d" % rc


# ----- shards -------------------------------------------------------------------------------

def read_shards(directory):
    """[(file name, [fields of each complete line])] of the shard files in directory."""
    if not os.path.isdir(directory):
        raise Fail("no shard directory %s" % directory)
    shards = []
    for name in sorted(os.listdir(directory)):
        if not (name.endswith(".shard") or name.endswith(".part")):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read().decode("utf-8", "replace")
        lines = data.split("\n")
        lines = lines[:-1]  # the text after the last newline is incomplete (or empty)
        shards.append((name, [ln.split(" ") for ln in lines if ln]))
    if not shards:
        raise Fail("no shard file in %s (the library wrote nothing)" % directory)
    return shards


def stepped(shards):
    """The shards whose process marked steps (a launcher parent marks none)."""
    return [(n, ls) for n, ls in shards if any(f[0] == "s" for f in ls)]


def last_line(path):
    """The last non-empty line of a file, or "" (a canary's error message)."""
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:240] if lines else ""


def cmd_raw_shard(a):
    try:
        raw_shard(a)
    except Fail as e:
        err = last_line(a.stderr) if a.stderr else ""
        if a.rc != 0 and err:
            raise Fail("%s (canary %s: %s)" % (e, describe_rc(a.rc), err))
        raise


def raw_shard(a):
    problems = []
    if a.rc != 0:
        problems.append("canary " + describe_rc(a.rc))
    try:
        shards = read_shards(a.dir)
    except Fail as e:
        raise Fail("; ".join(problems + [str(e)]))
    with_steps = stepped(shards)
    if not with_steps:
        raise Fail("%s; %d shard file(s), none with steps" % (describe_rc(a.rc), len(shards)))
    name, lines = with_steps[0]
    keys = [f[0] for f in lines]
    steps = sum(1 for k in keys if k == "s")
    finished = name.endswith(".shard")
    has_end = "end" in keys
    if a.expect_part:
        if finished or has_end:
            problems.append("expected an unfinished .part without 'end', got %s%s" %
                            (name, " with 'end'" if has_end else ""))
    else:
        if not finished:
            problems.append("shard left as .part (the process did not finish normally)")
        if not has_end:
            problems.append("no 'end' line")
    if a.steps is not None and steps != a.steps:
        problems.append("%d steps marked, expected %d" % (steps, a.steps))
    gpu = [f for f in lines if f[0] == "gpu"]
    gpu_state = " ".join(gpu[-1][1:]) if gpu else "no gpu line"
    gpu_problems = []
    if gpu_state != "ok":
        gpu_problems.append("gpu " + gpu_state)
    counters = [f for f in lines if f[0] == "c"]
    records = dropped = None
    if counters:
        try:
            records, dropped = int(counters[-1][1]), int(counters[-1][2])
        except (IndexError, ValueError):
            problems.append("bad c line: %s" % " ".join(counters[-1]))
    if not records:
        gpu_problems.append("no CUPTI records (c line %s)" % ("absent" if not counters else "0"))
    kernels = {}
    copies = 0
    for f in lines:
        if f[0] == "o" and len(f) >= 5:
            if f[1] == "kernel":
                kernels[" ".join(f[4:])] = kernels.get(" ".join(f[4:]), 0) + int(f[2])
            elif f[1] in ("memcpy", "memset"):
                copies += 1
    if not kernels:
        gpu_problems.append("no kernel op lines")
    peaks = [int(f[2]) for f in lines if f[0] == "m" and len(f) >= 3 and f[2].isdigit()]
    if not peaks:
        gpu_problems.append("no memory (m) lines")
    if not a.cpu:
        problems += gpu_problems
    figure = "%s; %s (%d lines, %s); %d steps; gpu %s; %s CUPTI records, %s dropped; " \
             "%d kernel names, %d calls; %d copy/set op lines; peak device %s" % (
                 describe_rc(a.rc), name, len(lines), "end" if has_end else "no end", steps,
                 gpu_state, "no" if records is None else records,
                 "?" if dropped is None else dropped, len(kernels), sum(kernels.values()),
                 copies, fmt_bytes(max(peaks) if peaks else None))
    if len(with_steps) > 1:
        figure += "; %d shards with steps" % len(with_steps)
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def cmd_shard_contract(a):
    shards = read_shards(a.dir)
    with_steps = stepped(shards) or shards
    name, lines = with_steps[0]
    problems, parts = [], []
    done = [f for f in lines if f[0] == "done"]
    if not done:
        problems.append("no 'done' line")
    else:
        parts.append("done %s" % done[-1][1])
        if a.done is not None and done[-1][1] != str(a.done):
            problems.append("'done %s', expected 'done %d'" % (done[-1][1], a.done))
    cupti = [f for f in lines if f[0] == "cupti"]
    if not cupti:
        problems.append("no 'cupti HOW PATH' line")
    else:
        how = cupti[-1][1] if len(cupti[-1]) > 1 else ""
        parts.append("cupti %s" % " ".join(cupti[-1][1:]))
        if how not in ("loaded", "env", "configured", "soname"):
            problems.append("cupti line's HOW '%s' is none of loaded/env/configured/soname" % how)
    counters = [f for f in lines if f[0] == "c"]
    if not counters:
        problems.append("no 'c' line")
    elif len(counters[-1]) < 8:
        problems.append("'c' line has %d fields, not 7 (%s)" % (len(counters[-1]) - 1,
                                                                 " ".join(counters[-1])))
    else:
        c = counters[-1]
        parts.append("records %s dropped %s zero_ts %s outside %s inside %s late_mem %s "
                     "overhead_ns %s" % tuple(c[1:8]))
        try:
            if int(c[5]) <= 0:
                problems.append("no kernel record inside a step (INSIDE 0, OUTSIDE %s)" % c[4])
        except ValueError:
            problems.append("bad c line %s" % " ".join(c))
    warnings = sorted({" ".join(f[1:]) for f in lines if f[0] == "w"})
    if warnings:
        parts.append("warnings: " + " / ".join(warnings))
    figure = "%s: %s" % (name, "; ".join(parts) if parts else "no contract line")
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


# ----- artifacts ----------------------------------------------------------------------------

def load_json(path, what):
    if not os.path.isfile(path):
        raise Fail("no %s (%s was not written)" % (what, path))
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        raise Fail("%s %s is not JSON: %s" % (what, path, e))


def runs_of(art):
    runs = art.get("runs")
    if not isinstance(runs, list) or not runs:
        raise Fail("artifact has no runs")
    return runs


def cmd_artifact(a):
    art = load_json(a.file, "artifact")
    runs = runs_of(art)
    gpu = art.get("gpu") or {}
    problems = []
    if not gpu.get("available"):
        problems.append("GPU metrics unavailable: %s" % gpu.get("reason"))
    copies = set()
    kernels = calls = 0
    for i, run in enumerate(runs):
        ops = run.get("ops") or []
        kinds = {op.get("kind") for op in ops}
        copies |= {op.get("name") for op in ops if op.get("kind") == "memcpy"}
        kernels += sum(1 for op in ops if op.get("kind") == "kernel")
        calls += sum(op.get("calls", 0) for op in ops if op.get("kind") == "kernel")
        if "kernel" not in kinds:
            problems.append("run %d: no kernel ops" % i)
        if "memcpy" not in kinds:
            problems.append("run %d: no memcpy ops" % i)
        steps = run.get("steps") or []
        if not any((s.get("gpu_busy_ns") or 0) > 0 for s in steps):
            problems.append("run %d: no step has GPU busy time" % i)
        if not ((run.get("summary") or {}).get("peak_device_bytes") or 0) > 0:
            problems.append("run %d: no peak device memory" % i)
        if not steps or not all("loss" in s for s in steps):
            problems.append("run %d: a step has no loss" % i)
    if copies and not any(n.split()[-1] in ("pageable", "pinned", "managed") for n in copies):
        problems.append("no copy is named with its host memory kind (%s)" % ", ".join(sorted(copies)))
    if a.pageable and "memcpy HtoD pageable" not in copies:
        problems.append("no 'memcpy HtoD pageable' op (copies: %s)" % ", ".join(sorted(copies)))
    env = art.get("environment") or {}
    figure = "%d runs; %s, driver %s, CUDA %s; %d kernel ops/run, %d kernel calls; copies: %s; " \
             "peak device %s" % (len(runs), env.get("gpu_model"), env.get("driver_version"),
                                 env.get("cuda_version"), kernels // len(runs), calls,
                                 ", ".join(sorted(copies)) or "none",
                                 fmt_bytes((runs[0].get("summary") or {}).get("peak_device_bytes")))
    if a.trace:
        tr = load_json(a.trace, "trace")
        events = tr.get("traceEvents", tr) if isinstance(tr, dict) else tr
        if not isinstance(events, list):
            problems.append("trace has no event list")
        else:
            cats = {}
            for ev in events:
                if isinstance(ev, dict) and ev.get("ph") == "X":
                    cats[ev.get("cat")] = cats.get(ev.get("cat"), 0) + 1
            gpu_events = sum(v for k, v in cats.items() if k and re.search("kernel|gpu|memcpy", k))
            figure += "; trace %d events (%s)" % (len(events), ", ".join(
                "%s %d" % (k, v) for k, v in sorted(cats.items(), key=lambda kv: str(kv[0]))))
            if gpu_events == 0:
                problems.append("trace has no kernel or copy events")
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def cmd_artifact_contract(a):
    art = load_json(a.file, "artifact")
    runs = runs_of(art)
    problems, parts = [], []
    for key in ("outside_step_records", "inside_step_records", "late_memory_records",
                "cupti_overhead_ns"):
        values = [run.get(key) for run in runs]
        if any(v is None for v in values):
            problems.append("runs[].%s missing" % key)
        elif any(not isinstance(v, (int, float)) or v < 0 for v in values):
            problems.append("runs[].%s unknown (%s)" % (key, "/".join(str(v) for v in values)))
        else:
            parts.append("%s %s" % (key, "/".join(str(v) for v in values)))
    lib = (art.get("environment") or {}).get("cupti_library")
    if not lib:
        problems.append("environment.cupti_library missing")
    else:
        parts.append("cupti_library %s" % lib)
    text = ""
    for path in a.gate_output or []:
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                text += f.read()
    m = re.search(r"stopped after (\d+) steps?", text)
    if m:
        parts.append("'stopped after %s steps'" % m.group(1))
    else:
        problems.append("the gate's output never says 'stopped after N steps'")
    figure = "; ".join(parts) or "no contract field"
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def metric_summary(verdict, names):
    parts = []
    for m in verdict.get("metrics") or []:
        if m.get("name") not in names:
            continue
        d = m.get("delta_pct")
        p = m.get("p_value")
        parts.append("%s %s%s %s" % (
            m.get("name"), "n/a" if d is None else "%+.1f%%" % d,
            "" if p is None else " p=%.3g" % p, m.get("outcome")))
    return ", ".join(parts)


TIMING = ("step_time_mean", "step_time_p95", "step_time_floor", "tokens_per_sec")
MEMORY = ("peak_device_memory", "peak_host_rss")


def failed_counts(rows):
    """The count rows of a JSON verdict that FAILed, as "NAME BASE->CURRENT"."""
    return ["%s %s->%s" % (r.get("count") or "range " + str(r.get("range")), r.get("baseline"),
                           r.get("current")) for r in rows if r.get("outcome") == "fail"]


def places_of(rows, counts, wanted):
    """The places of the count rows named in counts, as "COUNT PLACE RANGE BASE->CURRENT", and
    whether one satisfies wanted(row, place, growth per step; None when a side is unknown)."""
    seen, ok = [], False
    for r in rows:
        if r.get("count") not in counts:
            continue
        for w in r.get("where") or []:
            seen.append("%s %s %s %s->%s" % (r.get("count"), w.get("place"), w.get("range"),
                                             w.get("baseline"), w.get("current")))
            known = w.get("current") is not None and w.get("baseline") is not None
            ok |= bool(wanted(r, w, w["current"] - w["baseline"] if known else None))
    return seen, ok


def cmd_verdict(a):
    v = load_json(a.file, "JSON verdict")
    verdict = v.get("verdict")
    if verdict == "error":
        raise Fail("%s: canary failed: %s" % (describe_rc(a.rc), v.get("headline")))
    figure = "%s (%s): %s; %s" % (verdict, describe_rc(a.rc), metric_summary(v, TIMING),
                                  metric_summary(v, MEMORY))
    outcomes = {m.get("name"): m.get("outcome") for m in v.get("metrics") or []}
    if a.only:
        groups = set(a.only.split(","))
        shown = [n for n in TIMING + MEMORY if n in outcomes and
                 ("timing" if n in TIMING else "memory") not in groups and
                 outcomes[n] not in ("not_gated", "unavailable")]
        if shown:
            raise Fail("--only %s not honoured: %s gated | %s" % (
                a.only, ", ".join("%s %s" % (n, outcomes[n]) for n in shown), figure))
    if a.expect == "pass":
        ok = a.rc == 0 and verdict in ("pass", "inconclusive")
        if not ok:
            raise Fail("A/A expected no FAIL | " + figure)
    elif a.expect in ("counts", "counts-same"):
        rows = (v.get("counts") or {}).get("rows") or []
        failed = failed_counts(rows)
        figure = "counts: %s compared, %s changed, failed: %s; %s" % (
            (v.get("counts") or {}).get("compared"), (v.get("counts") or {}).get("changed"),
            ", ".join(failed) or "none", figure)
        if a.expect == "counts":
            ok = a.rc == 1 and verdict == "fail" and any(
                r.get("outcome") == "fail" and r.get("count") in ("synchronizations", "dtoh_pageable")
                for r in rows)
            if not ok:
                raise Fail("the extra .item() was not caught by its counts from one run | " + figure)
        elif failed or a.rc != 0 or verdict == "fail" or not rows:
            raise Fail("reordered work changed the counts or measured none, or the gate FAILed "
                       "(gated with --only counts,memory it must exit 0) | " + figure)
    elif a.expect == "place":
        # the extra .item() comes after the optimizer range: its synchronisation (or pageable
        # copy) must be placed there, one more per step
        rows = (v.get("counts") or {}).get("rows") or []
        seen, ok = places_of(rows, ("synchronizations", "dtoh_pageable"),
                             lambda r, w, grew: w.get("place") == "after" and
                             w.get("range") == "optimizer" and grew == 1)
        figure = "places: %s; %s" % (", ".join(seen) or "none", figure)
        if not ok:
            raise Fail("the extra .item() was not placed after the optimizer range | " + figure)
    elif a.expect == "churn":
        # the cache emptied at each step's end: allocations and releases FAIL from one run, and
        # the releases are placed in the "release" range, at least one more per step
        rows = (v.get("counts") or {}).get("rows") or []
        failed = failed_counts(rows)
        seen, placed = places_of(rows, ("allocs", "frees"),
                                 lambda r, w, grew: r.get("count") == "frees" and
                                 w.get("place") == "in" and w.get("range") == "release" and
                                 grew is not None and grew >= 1)
        figure = "failed: %s; places: %s; %s" % (", ".join(failed) or "none",
                                                ", ".join(seen) or "none", figure)
        if a.rc != 1 or verdict != "fail" or not any(
                r.get("outcome") == "fail" and r.get("count") in ("allocs", "frees")
                for r in rows):
            raise Fail("allocator churn was not caught by its counts from one run | " + figure)
        if not placed:
            raise Fail("releases not placed in the release range | " + figure)
    elif a.expect == "detected":
        rows = (v.get("counts") or {}).get("rows") or []
        timing = [n for n in TIMING if outcomes.get(n) == "fail"]
        counts = failed_counts(rows)
        if a.rc != 1 or verdict != "fail" or not (timing or counts):
            raise Fail("regression not detected by timing or counts | " + figure)
        figure = "caught by %s; %s" % ("; ".join(
            (["timing: " + ", ".join(timing)] if timing else []) +
            (["counts: " + ", ".join(counts)] if counts else [])), figure)
    elif a.expect == "timing":
        ok = a.rc == 1 and verdict == "fail" and any(outcomes.get(n) == "fail" for n in TIMING)
        if not ok:
            raise Fail("timing regression not detected | " + figure)
    else:
        # host RSS stands in for the device's peak only where there is no device (the CPU
        # rehearsal, --gpu any); on a GPU (--gpu required) the device's peak must FAIL
        name = "peak_device_memory" if a.gpu == "required" or outcomes.get(
            "peak_device_memory") not in (None, "unavailable") else "peak_host_rss"
        ok = a.rc == 1 and verdict == "fail" and outcomes.get(name) == "fail"
        if not ok:
            raise Fail("memory regression not detected (%s %s) | %s" %
                       (name, outcomes.get(name), figure))
    out(True, figure)


def gated_runs(a, need_runs):
    """The artifact a.file of a gated canary run: (art, runs, step counts, kernel ops, problems
    with the gate's exit code and the steps per run; no run at all is one when need_runs)."""
    art = load_json(a.file, "artifact")
    runs = runs_of(art)
    problems = []
    if a.rc != 0:
        problems.append("gate " + describe_rc(a.rc))
    counts = [len(run.get("steps") or []) for run in runs]
    if (need_runs and not runs) or any(c != a.steps for c in counts):
        problems.append("steps per run %s, expected %d" % (counts, a.steps))
    kernels = sum(1 for run in runs for op in run.get("ops") or [] if op.get("kind") == "kernel")
    return art, runs, counts, kernels, problems


def cmd_measured(a):
    art, runs, counts, kernels, problems = gated_runs(a, False)
    gpu = art.get("gpu") or {}
    if gpu.get("available"):
        state = "GPU metrics available, %d kernel ops" % kernels
        if kernels == 0:
            problems.append("GPU metrics said available but no kernel op was recorded")
    else:
        reason = gpu.get("reason")
        state = "GPU metrics unavailable: %s" % reason
        if not reason:
            problems.append("GPU metrics unavailable without a reason")
        elif a.gpu == "required":
            problems.append("GPU metrics unavailable")
    figure = "%s; %d run(s) of %s steps; %s" % (describe_rc(a.rc), len(runs),
                                                "/".join(map(str, counts)), state)
    if a.steps_from:
        got = (art.get("settings") or {}).get("steps_from")
        figure += "; steps from %s" % got
        if got != a.steps_from:
            problems.append("steps came from %s, expected %s" % (got, a.steps_from))
    if a.work:
        text, problem = step_work(runs, a.work)
        figure += "; " + text
        if problem:
            problems.append(problem)
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def step_work(runs, want):
    """The backward passes and optimizer steps per step the sitecustomize's marks counted
    (counts backward, optimizer_steps): want "B:O" needs every step of every run to hold exactly
    B and O, "any" at least one of each; what was counted, and the problem or None."""
    seen = {"backward": set(), "optimizer_steps": set()}
    missing = 0
    for run in runs:
        for st in run.get("steps") or []:
            c = st.get("counts") or {}
            for k in seen:
                if k in c:
                    seen[k].add(c[k])
                else:
                    missing += 1
    text = "backward passes a step %s, optimizer steps %s" % (
        "/".join(map(str, sorted(seen["backward"]))) or "none",
        "/".join(map(str, sorted(seen["optimizer_steps"]))) or "none")
    if missing:
        return text, "%d step counts of backward passes or optimizer steps missing (the " \
            "sitecustomize's marks were not counted)" % missing
    if want == "any":
        if 0 in seen["backward"] or 0 in seen["optimizer_steps"]:
            return text, "a step without a backward pass or an optimizer step"
        return text, None
    b, o = (int(x) for x in want.split(":"))
    if seen["backward"] != {b} or seen["optimizer_steps"] != {o}:
        return text, "expected %d backward pass(es) and %d optimizer step(s) in every step" % (b, o)
    return text, None


def cmd_gpu_state(a):
    """The GPU's own state of the runs with NVML sampling (--on: runs[].gpu_state measured, an
    SM clock, energy per token and MFU, or each one's reason) and the runs without it (--off:
    their gpu_state says sampling was off), and the sampling's cost as the medians of the runs'
    median step times side by side. On the CPU (--cpu) NVML is absent: the runs must say why.
    The MFU must lie in (0, 1] and, with --precision, be against that precision's peak (the
    artifact's settings.precision)."""
    def runs_of(paths):
        out = []
        for p in paths:
            art = load_json(p, "artifact")
            for r in art.get("runs") or []:
                out.append((p, art, r))
        return out
    on, off = runs_of(a.on), runs_of(a.off)
    torch = runs_of([a.torch]) if a.torch else []
    problems, shown = [], []
    if not on or not off:
        raise Fail("runs with sampling on %d, off %d: both needed" % (len(on), len(off)))
    for p, _, r in off:
        g = r.get("gpu_state") or {}
        if g.get("available") or "CANARY_GATE_NVML=0" not in (g.get("reason") or ""):
            problems.append("%s: sampling off, but gpu_state %s" % (
                os.path.basename(p), g.get("reason") or "available"))
    for p, art, r in torch + on:  # the PyTorch canary's first: the figure is cut at its end
        g = r.get("gpu_state") or {}
        name = os.path.basename(p)
        if not g.get("available"):
            if a.cpu and g.get("reason"):
                shown.append("%s: %s" % (name, g.get("reason")))
                continue
            problems.append("%s: no GPU state: %s" % (name, g.get("reason")))
            continue
        devs = g.get("devices") or []
        if not devs:
            problems.append("%s: GPU state without a device" % name)
            continue
        d = devs[0]
        held = {k: v for k, v in (d.get("reason_samples") or {}).items() if v}
        tokens = sum(s.get("tokens") or 0 for s in r.get("steps") or [])
        ept = g["energy_j"] / tokens if g.get("energy_j") is not None and tokens else None
        precision = (art.get("settings") or {}).get("precision") or "bf16"
        shown.append("%s: SM %s/%s/%s MHz (min/median/max), %s-%s C, %s-%s W, reasons %s, "
                     "energy %s J/token%s, MFU %s%s" % (
                         name, d.get("sm_clock_min_mhz"), d.get("sm_clock_median_mhz"),
                         d.get("sm_clock_max_mhz"), d.get("temperature_min_c"),
                         d.get("temperature_max_c"), d.get("power_min_w"), d.get("power_max_w"),
                         held or "none", "%.3g" % ept if ept is not None else "n/a",
                         "" if ept is not None else " (%s)" % g.get("energy_reason"),
                         "%.3f" % g["mfu"] if g.get("mfu") is not None else "n/a",
                         " (%s peak)" % precision if g.get("mfu") is not None
                         else " (%s)" % g.get("mfu_reason")))
        if not d.get("sm_clock_median_mhz"):
            problems.append("%s: no SM clock" % name)
        if ept is None:
            problems.append("%s: no energy per token: %s" % (name, g.get("energy_reason")))
        if g.get("mfu") is None:
            problems.append("%s: no MFU: %s" % (name, g.get("mfu_reason")))
        elif not 0 < g["mfu"] <= 1:
            problems.append("%s: MFU %.3f outside (0, 1]: no fraction of the GPU's peak" % (
                name, g["mfu"]))
        if a.precision and precision != a.precision:
            # the peak for another precision: an fp32 canary's MFU against the bf16 peak reads
            # low by the ratio of the two peaks
            problems.append("%s: MFU against the %s peak, the canary trains in %s" % (
                name, precision, a.precision))
    med = {}
    for side, rs in (("on", on), ("off", off)):
        v = []
        for _, _, r in rs:
            w = sorted(s["wall_ns"] for s in r.get("steps") or [] if s.get("wall_ns"))
            if w:
                v.append(statistics.median(w) / 1e6)
        med[side] = statistics.median(v) if v else None
    cost = "no step times"
    if med["on"] and med["off"]:
        cost = "median step with sampling %.3f ms, without %.3f ms (x%.3f; %d v %d runs, no " \
               "bound)" % (med["on"], med["off"], med["on"] / med["off"], len(on), len(off))
    figure = "; ".join([cost] + shown)
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def toggle_pairs(durations, k):
    """[(on block's mean, off block's mean)] of one process's measured steps {m: duration} in
    blocks of k, on off off on: in every group of four blocks, (1st, 2nd) and (4th, 3rd); a
    block short of k steps makes no pair."""
    blocks = {}
    for m, t in durations.items():
        blocks.setdefault(m // k, []).append(t)
    pairs = []
    for g in range(0, max(blocks) + 1 if blocks else 0, 4):
        for on, off in ((g, g + 1), (g + 3, g + 2)):
            if len(blocks.get(on, [])) == k and len(blocks.get(off, [])) == k:
                pairs.append((statistics.mean(blocks[on]), statistics.mean(blocks[off])))
    return pairs


def toggle_seen(lines, warm, end, k):
    """Whether one toggled shard shows the toggle: (figure, problems). Its range ops' calls (the
    range times) cover the NVTX ranges begun in the on blocks' steps (its "n I ranges" counts)
    and no more (fewer only for a range still open, or a name the op table turned away); each
    placed count's np calls are at most its calls in the on blocks. A shard that counted no
    range in its measured steps had nothing to toggle."""
    on = [i for i in range(warm, end) if ((i - warm) // k) % 4 in (0, 3)]
    ranges = step_counts(lines, "ranges")
    on_r = sum(ranges.get(i, 0) for i in on)
    all_r = sum(v for i, v in ranges.items() if warm <= i < end)
    calls = sum(int(f[2]) for f in lines if f[0] == "o" and len(f) >= 5 and f[1] == "range")
    problems = []
    figure = "range ops %d of %d ranges (on blocks %d)" % (calls, all_r, on_r)
    if not all_r:
        problems.append("no NVTX range counted in the measured steps: nothing was toggled")
    elif calls > on_r:
        problems.append("range ops' calls %d exceed the on blocks' %d ranges (%d in all): the "
                        "off blocks were timed" % (calls, on_r, all_r))
    elif not calls:
        problems.append("no range timed in the on blocks (%d ranges there)" % on_r)
    placed = {}
    for f in lines:
        if f[0] == "np" and len(f) >= 5:
            placed[f[1]] = placed.get(f[1], 0) + int(f[3])
    for c, n in sorted(placed.items()):
        counts = step_counts(lines, c)
        in_on = sum(counts.get(i, 0) for i in on)
        figure += ", %s places %d of %d calls" % (c, n, sum(
            v for i, v in counts.items() if warm <= i < end))
        if n > in_on:
            problems.append("%s placed %d times, more than its %d calls in the on blocks: the "
                            "off blocks were placed" % (c, n, in_on))
    return figure, problems


def cmd_overhead_toggle(a):
    """The library's toggled work inside processes (CANARY_GATE_OVERHEAD_TOGGLE=K): each shard's
    measured steps in blocks of K, on off off on; within every group of four blocks the pairs
    (on 1st, off 2nd) and (on 4th, off 3rd), each the difference of the blocks' mean step times.
    The cost is the mean difference over the pairs of every shard given, bounded from above at
    95% (Student t), in ms and in percent of the off blocks' mean step. Fails when a shard does
    not show the toggle (toggle_seen: no range to toggle, or the off blocks timed or placed),
    when no pair was made or, with --max-pct, when the bound exceeds it."""
    diffs, offs, shown, problems = [], [], [], []
    for d in a.dirs:
        for name, lines in stepped(read_shards(d)):
            k = [int(f[1]) for f in lines if f[0] == "toggle" and len(f) > 1]
            if not k:
                raise Fail("%s: no toggle line (CANARY_GATE_OVERHEAD_TOGGLE not seen)" % name)
            warm, done, steps = window(lines)
            end = done if done is not None else max(steps) + 1 if steps else warm
            durations = {i - warm: hi - lo for i, (lo, hi) in steps.items() if warm <= i < end}
            pairs = toggle_pairs(durations, k[-1])
            diffs += [on - off for on, off in pairs]
            offs += [off for _, off in pairs]
            seen = toggle_seen(lines, warm, end, k[-1])
            problems += ["%s: %s" % (name, p) for p in seen[1]]
            shown.append("%s: %d pairs of %d-step blocks, %s" % (name, len(pairs), k[-1],
                                                                  seen[0]))
    if problems:
        raise Fail("; ".join(problems[:4]) + " | " + "; ".join(shown))
    if len(diffs) < 2:
        raise Fail("%d block pairs: too few for a bound | %s" % (len(diffs), "; ".join(shown)))
    est, bound, df = upper_bound([(1.0, diffs)])
    base = statistics.mean(offs)
    figure = "toggled work (range times, places) costs %+.4f ms a step (%+.2f%%), 95%% upper " \
             "bound %+.4f ms (%+.2f%%) over %d block pairs, off blocks %.3f ms a step; %s" % (
                 est / 1e6, 100 * est / base, bound / 1e6, 100 * bound / base, len(diffs),
                 base / 1e6, "; ".join(shown))
    if a.max_pct is not None and 100 * bound / base > a.max_pct:
        raise Fail("the bound exceeds %g%% | %s" % (a.max_pct, figure))
    out(True, figure)


def cmd_profiler(a):
    """A canary run with torch.profiler: it finished, and either canary-gate holds CUPTI (GPU
    metrics with kernels; the profiler then records no GPU events) or the profiler does and the
    artifact says so ("another profiler ..."). Which path happened is the figure."""
    art, runs, counts, kernels, problems = gated_runs(a, True)
    gpu = art.get("gpu") or {}
    reason = gpu.get("reason") or ""
    if gpu.get("available"):
        path = ("path: canary-gate holds CUPTI, %d kernel ops (torch.profiler's GPU events are "
                "lost)" % kernels)
        if kernels == 0:
            problems.append("GPU metrics said available but no kernel op was recorded")
    elif reason.startswith("another profiler"):
        path = "path: torch.profiler holds CUPTI; reason: %s" % reason
    else:
        path = "path: neither; GPU metrics unavailable: %s" % (reason or "no reason")
        problems.append("neither canary-gate's GPU metrics nor the 'another profiler' reason")
    figure = "%s; %s steps; %s" % (describe_rc(a.rc), "/".join(map(str, counts)) or "-", path)
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def cmd_cupti_copies(a):
    if not os.path.isfile(a.stdout):
        raise Fail("no canary output %s" % a.stdout)
    with open(a.stdout, errors="replace") as f:
        found = re.findall(r"^libcupti_files=(\S+) ?(.*)$", f.read(), re.M)
    if not found:
        raise Fail("the canary printed no libcupti_files line")
    count, paths = found[-1]
    figure = "%s mapped: %s" % (count, paths or "-")
    if a.shard_dir:
        try:
            shards = read_shards(a.shard_dir)
            lines = [f for _, ls in shards for f in ls if f[0] == "cupti"]
            figure += "; shard: %s" % (" ".join(lines[-1][1:]) if lines else "no cupti line")
        except Fail as e:
            figure += "; shard: %s" % e
    if count != "1":
        raise Fail("expected exactly 1 libcupti file | " + figure)
    out(True, figure)


def cmd_device_memory(a):
    """The library's peak device memory (the largest "m DEVICE PEAK" of the shards: CUPTI's
    MEMORY2 records) against what PyTorch says it reserved (torch_memory reserved_peak=N): CUPTI
    must agree within --tolerance-pct (default 5) both ways, whatever PYTORCH_CUDA_ALLOC_CONF
    (expandable segments map memory through the virtual memory API rather than cudaMalloc): less
    leaves memory out, more counts memory PyTorch never reserved (or counts some twice). With the
    canary's step-start figures (--print-reserved) and a traced step, the library's level then
    must also lie between PyTorch's reserved and the device's memory in use, and its excess over
    PyTorch's allocator be the same then as at the peak: the figure says where an excess sits."""
    if not os.path.isfile(a.stdout):
        raise Fail("no canary output %s" % a.stdout)
    with open(a.stdout, errors="replace") as f:
        found = re.findall(r"^torch_memory reserved_peak=(\d+) allocated_peak=(\d+) "
                           r"alloc_conf=(.*)$", f.read(), re.M)
    if not found:
        raise Fail("the canary printed no torch_memory line")
    reserved, allocated = int(found[-1][0]), int(found[-1][1])
    conf = found[-1][2]
    peaks = [int(f[2]) for _, ls in read_shards(a.shard_dir) for f in ls
             if f[0] == "m" and len(f) == 3 and f[2].isdigit()]
    figure = "PyTorch reserved %s (allocated %s, PYTORCH_CUDA_ALLOC_CONF %s)" % (
        fmt_bytes(reserved), fmt_bytes(allocated), conf)
    if not peaks:
        raise Fail("no m line in the shards: the library saw no device memory | " + figure)
    peak = max(peaks)
    figure = "library peak %s = %.2f of what %s" % (fmt_bytes(peak), peak / reserved, figure) \
        if reserved > 0 else "library peak %s; %s" % (fmt_bytes(peak), figure)
    if reserved <= 0:
        raise Fail("PyTorch reserved no device memory | " + figure)
    tol = a.tolerance_pct / 100.0
    problems = []
    if peak < (1 - tol) * reserved:
        problems.append("the library's peak device memory leaves out memory PyTorch reserved "
                        "(more than %g%% below)" % a.tolerance_pct)
    if peak > (1 + tol) * reserved:
        problems.append("the library's peak device memory is more than %g%% above what PyTorch "
                        "reserved" % a.tolerance_pct)
    start = level_at_trace_start(a.stdout, a.shard_dir)
    if start is not None:
        # The library counts every device allocation of the process, PyTorch's allocator only
        # its own: what lies outside it shows as the same excess when a traced step begins and
        # at the peak, within the bound above. An excess that changes is counted twice or a
        # release missed; a level above what the device has in use is counted but not there.
        k, level, res_k, used_k = start
        before, at_peak = level - res_k, peak - reserved
        slack = max(4 << 20, 0.01 * reserved)
        figure += "; step %d began at library %s, PyTorch %s, device in use %s: outside " \
                  "PyTorch's allocator %s then, %s at the peak" % (
                      k, fmt_bytes(level), fmt_bytes(res_k), fmt_bytes(used_k),
                      fmt_signed_bytes(before), fmt_signed_bytes(at_peak))
        if level < res_k:
            problems.append("the library's level when step %d began is below PyTorch's reserved"
                            % k)
        if level > used_k:
            problems.append("the library's level when step %d began is above what the device "
                            "had in use" % k)
        if abs(at_peak - before) > slack:
            problems.append("memory outside PyTorch's allocator changed from %s (step %d) to %s "
                            "(the peak), more than %s: counted twice or a release missed" % (
                                fmt_signed_bytes(before), k, fmt_signed_bytes(at_peak),
                                fmt_bytes(slack)))
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def fmt_signed_bytes(n):
    return ("-" if n < 0 else "+") + fmt_bytes(abs(n))


def level_at_trace_start(stdout, shard_dir):
    """(K, the library's device memory level when traced step K began (its "tm" lines at the
    trace window's start, summed over devices), PyTorch's reserved then, the device's memory in
    use then) from the canary's --print-reserved lines; None when either side is missing."""
    with open(stdout, errors="replace") as f:
        printed = {int(m[0]): (int(m[1]), int(m[2])) for m in re.findall(
            r"^torch_reserved step=(\d+) reserved=(\d+) allocated=\d+ device_used=(\d+)$",
            f.read(), re.M)}
    for _, lines in stepped(read_shards(shard_dir)):
        tw = [f for f in lines if f[0] == "tw" and len(f) >= 3]
        _, _, steps = window(lines)
        if not tw or int(tw[-1][1]) not in steps:
            continue
        k = int(tw[-1][1])
        tm = [(int(f[1]), int(f[2]), int(f[3])) for f in lines
              if f[0] == "tm" and len(f) == 4 and all(x.lstrip("-").isdigit() for x in f[1:])]
        first = {}
        for dev, ts, level in tm:
            if dev not in first or ts < first[dev][0]:
                first[dev] = (ts, level)
        if first and k in printed and all(ts == steps[k][0] for ts, _ in first.values()):
            return k, sum(level for _, level in first.values()), printed[k][0], printed[k][1]
    return None


def cmd_overhead(a):
    values = {"none": [], "nvtx": [], "full": []}
    with open(a.tsv) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0] in values:
                try:
                    v = float(parts[1])
                except ValueError:
                    continue
                if math.isfinite(v) and v > 0:
                    values[parts[0]].append(v)
    # NVTX only is optional (the PyTorch canary's check spends its runs on none and full)
    short = [k for k, v in values.items() if (v or k != "nvtx") and len(v) < a.reps]
    med = {k: statistics.median(v) for k, v in values.items() if v}
    parts = []
    for k in ("none", "nvtx", "full"):
        if k in med:
            s = "%s %.3f ms (n=%d" % (k, med[k], len(values[k]))
            s += ", %.3f-%.3f)" % (min(values[k]), max(values[k])) if len(values[k]) > 1 else ")"
            if k != "none" and "none" in med:
                s += " x%.3f" % (med[k] / med["none"])
            parts.append(s)
    figure = "; ".join(parts) or "nothing measured"
    if short:
        raise Fail("too few measurements for %s (need %d each) | %s" %
                   (", ".join(short), a.reps, figure))
    if "none" not in med or "full" not in med:
        raise Fail("no run without the library or none with it | " + figure)
    ratio = med["full"] / med["none"]
    if ratio > 1 + a.max_pct / 100:
        raise Fail("full instrumentation costs %+.1f%% (bound %+.0f%%) | %s" %
                   ((ratio - 1) * 100, a.max_pct, figure))
    out(True, figure)


def cmd_overhead_parts(a):
    """What each part of the set-up costs: the median step of every configuration in the file,
    as a ratio to the runs without the library and to the full set-up (a diagnosis: no limit on
    a ratio). It fails on missing measurements and, with --shards, on runs whose shards do not
    show the configuration: every run with the library wrote a shard, the full and off-PART
    runs' with CUPTI started (gpu ok), each off-PART run's warning that PART was left off (and,
    for places, no np line)."""
    values = {}
    order = []
    with open(a.tsv) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2:
                continue
            try:
                v = float(parts[1])
            except ValueError:
                continue
            if not (math.isfinite(v) and v > 0):
                continue
            if parts[0] not in values:
                values[parts[0]] = []
                order.append(parts[0])
            values[parts[0]].append(v)
    med = {k: statistics.median(v) for k, v in values.items()}
    shown = []
    for k in order:
        s = "%s %.3f ms (n=%d)" % (k, med[k], len(values[k]))
        if k != "none" and "none" in med:
            s += " x%.3f" % (med[k] / med["none"])
        if k not in ("none", "full") and "full" in med:
            s += " (%+.1f%% of full)" % ((med[k] / med["full"] - 1) * 100)
        shown.append(s)
    figure = "; ".join(shown) or "nothing measured"
    short = [k for k in order if len(values[k]) < a.reps]
    problems = []
    if a.shards:
        for k in order:
            if k == "none":
                continue
            for d in sorted(d for d in os.listdir(a.shards) if d.startswith("shards-%s-" % k)):
                # every run with the library writes a shard: without one, its step times are
                # those of a run without it, whatever its configuration says
                try:
                    ls = [f for _, l in read_shards(os.path.join(a.shards, d)) for f in l]
                except Fail:
                    problems.append("%s: no shard (the library wrote nothing)" % d)
                    continue
                gpu = [" ".join(f[1:]) for f in ls if f[0] == "gpu"]
                if (k == "full" or k.startswith("off-")) and (gpu or [""])[-1] != "ok":
                    problems.append("%s: no 'gpu ok' (%s)" % (
                        d, "gpu " + gpu[-1] if gpu else "no gpu line"))
                if not k.startswith("off-") or k == "off-all":
                    continue
                ws = [" ".join(f[1:]) for f in ls if f[0] == "w"]
                for part in k[4:].split("+"):
                    if not any("part left off" in w and w.split()[-1] == part for w in ws):
                        problems.append("%s: no warning that %s was left off" % (d, part))
                    if part == "places" and any(f[0] == "np" for f in ls):
                        problems.append("%s: np lines with places left off" % d)
    if problems:
        raise Fail("; ".join(sorted(set(problems))[:4]) + " | " + figure)
    if short or "none" not in med or "full" not in med:
        raise Fail("too few measurements (%s; need %d each, none and full among them) | %s" %
                   (", ".join(short) or "-", a.reps, figure))
    out(True, figure)


# ----- the anatomy against the trace ---------------------------------------------------------

def union(intervals):
    """Sorted, disjoint [start, end) intervals covering the given ones."""
    out = []
    for lo, hi in sorted(iv for iv in intervals if iv[1] > iv[0]):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return out


def clipped(u, lo, hi):
    """The ns of union u that lie in [lo, hi)."""
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in u)


def intersect(u, v):
    """The intersection of two unions (sorted, disjoint)."""
    out, i, j = [], 0, 0
    while i < len(u) and j < len(v):
        lo, hi = max(u[i][0], v[j][0]), min(u[i][1], v[j][1])
        if hi > lo:
            out.append([lo, hi])
        if u[i][1] < v[j][1]:
            i += 1
        else:
            j += 1
    return out


def step_counts(lines, name):
    """{step index: summed n-line deltas of count NAME}."""
    got = {}
    for f in lines:
        if f[0] == "n" and len(f) >= 4 and f[2] == name:
            got[int(f[1])] = got.get(int(f[1]), 0) + int(f[3])
    return got


def window(lines):
    """(warm-up W, first step after the window (done N), {index: (start, end)})."""
    warm = [int(f[1]) for f in lines if f[0] == "warmup" and len(f) > 1]
    done = [int(f[1]) for f in lines if f[0] == "done" and len(f) > 1]
    steps = {int(f[1]): (int(f[2]), int(f[3])) for f in lines if f[0] == "s" and len(f) >= 4}
    return (warm[-1] if warm else 0), (done[-1] if done else None), steps


def cmd_anatomy_trace(a):
    """Each traced step's busy (b), compute, copy and hidden-copy time (n lines) against the
    unions rebuilt from the shard's traced GPU work (tg lines: the records the Chrome trace is
    written from, to the ns), clipped to the step's interval as the library credits them; kernels
    per traced step against the tg kernels starting in it; and over the measured steps (most of
    them on the aggregation's hot path: traced steps take the general one) the op table's kernel
    calls against the per-step kernel counts."""
    shards = stepped(read_shards(a.dir))
    if not shards:
        raise Fail("no shard with steps in %s" % a.dir)
    name, lines = shards[0]
    parts = [p for p in (a.comm or "").split(",") if p]
    problems, shown = [], []
    warns = sorted({" ".join(f[1:]) for f in lines if f[0] == "w"})
    if any("COMM_KERNELS" in w for w in warns):
        problems.append("warning: " + " / ".join(w for w in warns if "COMM_KERNELS" in w))
    tw = [f for f in lines if f[0] == "tw" and len(f) >= 3]
    if not tw:
        raise Fail("no trace window (tw line) in %s: CANARY_GATE_TRACE_STEPS not seen" % name)
    first, last = int(tw[-1][1]), int(tw[-1][2])
    warm, done, steps = window(lines)
    kern, comp, copy, named = [], [], [], 0
    for f in lines:
        if f[0] != "tg" or len(f) < 8:
            continue
        iv = (int(f[4]), int(f[5]))
        if f[1] == "kernel":
            kern.append(iv)
            nm = " ".join(f[7:])
            if any(p in nm for p in parts):
                named += 1
            else:
                comp.append(iv)
        elif f[1] in ("memcpy", "memset"):
            copy.append(iv)
    if not kern:
        raise Fail("no traced kernel (tg kernel line) in %s" % name)
    uk, uc, ucp = union(kern), union(comp), union(copy)
    uh = intersect(ucp, uk)
    busy = {}
    for f in lines:
        if f[0] == "b" and len(f) >= 3:
            busy[int(f[1]) ] = busy.get(int(f[1]), 0) + int(f[2])
    have = {"busy": busy, "compute": step_counts(lines, "compute_ns"),
            "copy": step_counts(lines, "copy_ns"), "hidden": step_counts(lines, "copy_hidden_ns"),
            "kernels": step_counts(lines, "kernels")}
    # The shard writes a count's change only (a step whose copies were all exposed has no
    # copy_hidden_ns line): a count that "nc" names is 0 where no line gives it; busy likewise
    # once the GPU is measured. A count "nc" leaves out was not measured at all.
    measured = {"busy"} | {k for k, n in (("compute", "compute_ns"), ("copy", "copy_ns"),
                                          ("hidden", "copy_hidden_ns"), ("kernels", "kernels"))
                           if any(f[0] == "nc" and n in f[1:] for f in lines)}
    worst = {k: 0 for k in have}
    traced = [i for i in range(first, last + 1) if i in steps]
    if not traced:
        raise Fail("the trace window %d..%d holds no step" % (first, last))
    for i in traced:
        lo, hi = steps[i]
        want = {"busy": clipped(uk, lo, hi), "compute": clipped(uc, lo, hi),
                "copy": clipped(ucp, lo, hi), "hidden": clipped(uh, lo, hi),
                "kernels": sum(1 for s, _ in kern if lo <= s < hi)}
        for k, w in want.items():
            got = have[k].get(i, 0 if k in measured else None)
            if got is None:
                problems.append("step %d: no %s figure in the shard, and its 'nc' line does "
                                "not name the count" % (i, k))
                continue
            d = abs(got - w)
            worst[k] = max(worst[k], d)
            if d > (0 if k == "kernels" else a.tolerance_ns):
                problems.append("step %d %s: shard %d, trace %d" % (i, k, got, w))
        shown.append("step %d busy %.3f compute %.3f copy %.3f hidden %.3f ms, %d kernels" % (
            i, want["busy"] / 1e6, want["compute"] / 1e6, want["copy"] / 1e6,
            want["hidden"] / 1e6, want["kernels"]))
    figure = "%s: traced steps %d..%d, %d kernels, %d copies/sets traced; largest difference " \
             "busy %d ns, compute %d, copy %d, hidden %d, kernels %d; %s" % (
                 name, first, last, len(kern), len(copy), worst["busy"], worst["compute"],
                 worst["copy"], worst["hidden"], worst["kernels"], "; ".join(shown[:3]))
    if parts:
        figure += "; kernels named communication (%s): %d traced" % (",".join(parts), named)
        if named == 0:
            problems.append("no traced kernel holds %s" % ",".join(parts))
        exposed = sum(have["busy"].get(i, 0) - have["compute"].get(i, 0) for i in traced)
        figure += ", exposed communication %.3f ms over the traced steps" % (exposed / 1e6)
        if exposed <= 0:
            problems.append("no exposed communication although %s is named" % ",".join(parts))
    if done is not None:
        calls = sum(int(f[2]) for f in lines if f[0] == "o" and len(f) >= 5 and f[1] == "kernel")
        counted = sum(v for i, v in have["kernels"].items() if warm <= i < done)
        figure += "; op table %d kernel calls, steps %d..%d counted %d" % (
            calls, warm, done - 1, counted)
        if calls != counted:
            problems.append("op table's kernel calls %d != the measured steps' kernel counts %d"
                            % (calls, counted))
    else:
        problems.append("no 'done' line: the measured window did not end")
    if problems:
        raise Fail("; ".join(problems[:6]) + " | " + figure)
    out(True, figure)


# ----- places, graphs, two processes ---------------------------------------------------------

SYNCS = ("sync_stream", "sync_event", "sync_context")


def cmd_places(a):
    """The np lines of a raw shard (calls placed in or after an NVTX range, totals over the
    measured steps) per measured step, and each placed count's calls in no range (its n lines
    over the same steps minus its places). --want COUNT:WHERE:RANGE:MIN asks for at least MIN
    calls per step there (COUNT "sync" for the three synchronisation types); --all-placed
    COUNT,... for no call in no range, each count measured (named in the shard's nc line: a count
    it does not name is unknown, not 0); --counted COUNT,... for each count measured and above 0
    over the measured steps (a count whose calls were all lost places nothing, and has none in
    no range either)."""
    shards = stepped(read_shards(a.dir))
    if not shards:
        raise Fail("no shard with steps in %s" % a.dir)
    name, lines = shards[0]
    nc = [f for f in lines if f[0] == "nc"]
    warm, done, _ = window(lines)
    if done is None:
        raise Fail("%s: no 'done' line (the measured window did not end)" % name)
    if not nc or "places" not in nc[-1][1:]:
        raise Fail("%s: places not measured ('nc' %s)" % (
            name, " ".join(nc[-1][1:]) if nc else "absent"))
    measured = max(1, done - warm)
    named = set(nc[-1][1:])
    placed = {}
    for f in lines:
        if f[0] == "np" and len(f) >= 5:
            count = "sync" if f[1] in SYNCS else f[1]
            key = (count, f[2], " ".join(f[4:]))
            placed[key] = placed.get(key, 0) + int(f[3])
    totals = {}
    for c in SYNCS + ("dtoh_pageable", "allocs", "frees", "module_loads"):
        n = sum(v for i, v in step_counts(lines, c).items() if warm <= i < done)
        k = "sync" if c in SYNCS else c
        totals[k] = totals.get(k, 0) + n
    shown, problems = [], []
    for k in ("sync", "dtoh_pageable", "allocs", "frees", "module_loads"):
        ps = sorted(((v, key) for key, v in placed.items() if key[0] == k),
                    key=lambda vk: (-vk[0], vk[1]))
        none = totals[k] - sum(v for v, _ in ps)
        if not ps and not totals[k]:
            continue
        shown.append("%s %.2f/step: %s%s" % (k, totals[k] / measured, ", ".join(
            "%s %s %.2f" % (key[1], key[2], v / measured) for v, key in ps),
            "%sno range %.2f" % (", " if ps else "", none / measured) if none else ""))
        if a.all_placed and k in a.all_placed.split(",") and none:
            problems.append("%s: %d calls in no range" % (k, none))
    needed = [k for k in (a.all_placed or "").split(",") + (a.counted or "").split(",") if k]
    for k in sorted(set(needed), key=needed.index):
        names = SYNCS if k == "sync" else (k,)
        if k not in totals:
            raise Fail("bad count %s (one of %s)" % (k, ", ".join(sorted(totals))))
        unnamed = [n for n in names if n not in named]
        if unnamed:
            problems.append("%s: not measured ('nc' does not name %s)" % (k, ", ".join(unnamed)))
        elif a.counted and k in a.counted.split(",") and not totals[k]:
            problems.append("%s: none counted in the %d measured steps" % (k, measured))
    for want in a.want or []:
        try:
            k, where, rng, least = want.split(":")
            least = float(least)
        except ValueError:
            raise Fail("bad --want %s (COUNT:WHERE:RANGE:MIN)" % want)
        got = placed.get((k, where, rng), 0) / measured
        if got < least:
            problems.append("%s %s %s: %.2f per step, expected at least %g" % (
                k, where, rng, got, least))
    figure = "%s, %d measured steps; %s" % (name, measured, "; ".join(shown) or "nothing placed")
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def per_step(lines, name, warm, done):
    got = step_counts(lines, name)
    return [got.get(i, 0) for i in range(warm, done)]


def cmd_graphs(a):
    """The PyTorch canary's --variant graphs: every measured step launches the same number of
    graphs (at least 1) and graph kernels (more than 0, at most its kernels); with --eager (the
    plain canary's raw shard) the step's kernels are within 10% of the eager step's: a graph's
    kernels counted again as eager launches would nearly double them."""
    name, lines = (stepped(read_shards(a.dir)) or [(None, None)])[0]
    if name is None:
        raise Fail("no shard with steps in %s" % a.dir)
    warm, done, _ = window(lines)
    if done is None:
        raise Fail("%s: no 'done' line" % name)
    nc = [f for f in lines if f[0] == "nc"]
    if not nc or "graph_launches" not in nc[-1][1:]:
        raise Fail("%s: graph launches not measured ('nc' %s)" % (
            name, " ".join(nc[-1][1:]) if nc else "absent"))
    launches = per_step(lines, "graph_launches", warm, done)
    gk = per_step(lines, "graph_kernels", warm, done)
    kernels = per_step(lines, "kernels", warm, done)
    problems = []
    figure = "%s, steps %d..%d: graph launches %s, graph kernels %s, kernels %s per step" % (
        name, warm, done - 1, sorted(set(launches)), sorted(set(gk)), sorted(set(kernels)))
    if len(set(launches)) != 1 or launches[0] < 1:
        problems.append("graph launches not one constant of 1 or more a step")
    if len(set(gk)) != 1 or gk[0] < 1:
        problems.append("graph kernels not one constant above 0 a step")
    if len(set(kernels)) != 1:
        problems.append("kernels vary between steps")
    if any(g > k for g, k in zip(gk, kernels)):
        problems.append("more graph kernels than kernels")
    if a.eager:
        ename, elines = (stepped(read_shards(a.eager)) or [(None, None)])[0]
        ew, ed, _ = window(elines or [])
        eager = per_step(elines, "kernels", ew, ed) if ename and ed is not None else []
        if not eager:
            problems.append("no eager shard with a done line in %s" % a.eager)
        else:
            e = statistics.median(eager)
            g = statistics.median(kernels)
            figure += "; eager canary %g kernels a step (graphs: %g, of them %g eager)" % (
                e, g, g - statistics.median(gk))
            if e <= 0 or abs(g - e) > 0.1 * e:
                problems.append("kernels a step %g against %g eager: not within 10%%" % (g, e))
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


def peak_of(lines):
    """{device: largest m line} of one shard."""
    got = {}
    for f in lines:
        if f[0] == "m" and len(f) >= 3 and f[2].isdigit():
            got[f[1]] = max(got.get(f[1], 0), int(f[2]))
    return got


def cmd_two_procs(a):
    """Two processes of the C canary on one GPU: a shard each with steps and distinct ranks,
    each process's peak within 5% of one process alone (--single, its raw shard), and the merged
    artifact's peak the sum of the two (peaks add per device over processes: neither left out
    nor counted twice)."""
    shards = stepped(read_shards(a.dir))
    ranks = sorted({f[1] for _, ls in shards for f in ls if f[0] == "rank" and len(f) > 1})
    peaks = [peak_of(ls) for _, ls in shards]
    figure = "%d shards with steps, ranks %s, peaks %s" % (
        len(shards), ",".join(ranks) or "-",
        " + ".join(fmt_bytes(sum(p.values())) for p in peaks))
    problems = []
    if len(shards) != 2:
        problems.append("expected 2 shards with steps")
    if len(ranks) != 2:
        problems.append("expected 2 distinct ranks")
    if any(len(p) != 1 for p in peaks):
        problems.append("each process should see one device (%s)" % peaks)
    total = sum(sum(p.values()) for p in peaks)
    if a.single:
        one = [sum(peak_of(ls).values()) for _, ls in stepped(read_shards(a.single))]
        if one and one[0] > 0:
            figure += "; one process alone %s" % fmt_bytes(one[0])
            for p in peaks:
                v = sum(p.values())
                if abs(v - one[0]) > 0.05 * one[0]:
                    problems.append("a process's peak %s is not within 5%% of one alone" %
                                    fmt_bytes(v))
        else:
            problems.append("no single-process peak in %s" % a.single)
    art = load_json(a.artifact, "artifact")
    runs = runs_of(art)
    merged = (runs[0].get("summary") or {}).get("peak_device_bytes")
    figure += "; merged %s (sum of the shards %s)" % (fmt_bytes(merged), fmt_bytes(total))
    if not merged or total <= 0:
        problems.append("no merged or no per-process peak")
    elif abs(merged - total) > 0.05 * total:
        problems.append("merged peak %.2fx the sum of the two processes'" % (merged / total))
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


# ----- diagnosis and detection ---------------------------------------------------------------

def cmd_diagnosis(a):
    """The anatomy's shares (each part, both sides, its outcome) and the diagnosis rules that
    fire, by severity. --warnings none: no warning may fire (an A/A); RULE,...: each must fire
    as a warning; any: the figure only, an INFO line (both lists must be present, or FAIL)."""
    v = load_json(a.file, "JSON verdict")
    if v.get("verdict") == "error":
        raise Fail("%s: canary failed: %s" % (describe_rc(a.rc), v.get("headline")))
    anatomy, diag = v.get("anatomy"), v.get("diagnosis")
    problems = []
    if not isinstance(anatomy, list):
        problems.append("no anatomy list")
        anatomy = []
    if not isinstance(diag, list):
        problems.append("no diagnosis list")
        diag = []

    def pct(x):
        return "-" if x is None else "%.1f%%" % (100 * x)
    parts = ["%s%s %s->%s %s" % (p.get("part"), " " + p["name"] if p.get("name") else "",
                                 pct(p.get("baseline_share")), pct(p.get("current_share")),
                                 p.get("outcome")) for p in anatomy]
    warns = [d.get("rule") for d in diag if d.get("severity") == "warning"]
    notes = [d.get("rule") for d in diag if d.get("severity") != "warning"]
    figure = "%s (%s); warnings: %s; notes: %s; anatomy: %s" % (
        v.get("verdict"), describe_rc(a.rc), ", ".join(warns) or "none",
        ", ".join(notes) or "none", "; ".join(parts) or "none")
    if a.warnings == "none" and warns:
        problems.append("a rule fired on an A/A: %s" % ", ".join(warns))
    elif a.warnings not in ("none", "any"):
        missing = [r for r in a.warnings.split(",") if r not in warns]
        if missing:
            problems.append("expected warning(s) not fired: %s" % ", ".join(missing))
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure, "INFO" if a.warnings == "any" else None)


def cmd_detection(a):
    """One A/A decision and one at a known slowdown with the main command: a FAIL on the A/A is
    a false alarm, anything but a FAIL on the slowdown a miss; the seconds each took."""
    def one(path, rc):
        v = load_json(path, "JSON verdict")
        seq = v.get("sequential") or {}
        runs = (v.get("current") or {}).get("runs")
        return (v.get("verdict"), rc, metric_summary(v, TIMING),
                ", %s runs, %s look(s)" % ("?" if runs is None else runs, seq.get("looks", "?")))
    aa, slow = one(a.aa, a.aa_rc), one(a.slow, a.slow_rc)
    figure = "A/A %s (%s%s, %.0f s): %s | slowdown %s (%s%s, %.0f s): %s" % (
        aa[0], describe_rc(aa[1]), aa[3], a.aa_s, aa[2], slow[0], describe_rc(slow[1]),
        slow[3], a.slow_s, slow[2])
    problems = []
    if aa[0] == "fail" or aa[1] == 1:
        problems.append("false alarm on the A/A")
    elif aa[1] != 0:
        problems.append("A/A gate %s" % describe_rc(aa[1]))
    if slow[0] != "fail" or slow[1] != 1:
        problems.append("the known slowdown was not detected")
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
    out(True, figure)


# ----- the library's cost: a confidence bound ------------------------------------------------

def betacf(x, p, q):
    """The continued fraction of the regularised incomplete beta function (Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (p + q) * x / (p + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (q - m) * x / ((p + m2 - 1) * (p + m2)),
                    -(p + m) * (p + q + m) * x / ((p + m2) * (p + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(x, p, q):
    """The regularised incomplete beta function I_x(p, q)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lb = math.lgamma(p + q) - math.lgamma(p) - math.lgamma(q) + p * math.log(x) + \
        q * math.log(1 - x)
    if x < (p + 1) / (p + q + 2):
        return math.exp(lb) * betacf(x, p, q) / p
    return 1.0 - math.exp(lb) * betacf(1 - x, q, p) / q


def t_cdf(t, df):
    """Student's t distribution function with df (> 0, not necessarily whole) degrees."""
    tail = 0.5 * betainc(df / (df + t * t), df / 2.0, 0.5)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(prob, df):
    """The prob quantile of Student's t with df degrees (bisection on t_cdf, to 1e-10)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < prob:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2


def mean_var(xs):
    """Mean and sample variance (Welford)."""
    mean = m2 = 0.0
    for n, x in enumerate(xs, 1):
        d = x - mean
        mean += d / n
        m2 += d * (x - mean)
    return mean, (m2 / (len(xs) - 1) if len(xs) > 1 else float("nan"))


def upper_bound(terms, level=0.95):
    """The one-sided upper confidence bound of sum(c * mean(xs)) over terms [(c, xs)]: Student
    t with Welch-Satterthwaite degrees of freedom (one term: n - 1). Returns (estimate, bound,
    df)."""
    est, var, den = 0.0, 0.0, 0.0
    for c, xs in terms:
        m, v = mean_var(xs)
        est += c * m
        part = c * c * v / len(xs)
        var += part
        den += part * part / (len(xs) - 1)
    df = var * var / den if den > 0 else float(sum(len(xs) - 1 for _, xs in terms))
    return est, est + t_quantile(level, df) * math.sqrt(var), df


def cmd_overhead_bound(a):
    """Short processes of two sizes of the C canary run A B B A (none, full): each full run paired
    with the none run beside it gives the library's cost per step d = full - none (ms). With K1
    and K2 kernels a step, d = per-kernel cost x K + per-step cost: both estimated from the two
    sizes' mean d, and the 95% upper confidence bound of the cost at each size (Student t on the
    pairs) is the figure that must stay under --max-pct of the step."""
    pairs = {"small": [], "large": []}
    base = {"small": [], "large": []}
    with open(a.tsv) as f:
        for line in f:
            p = line.split()
            if len(p) != 4 or p[0] not in pairs:
                continue
            try:
                none, full = float(p[2]), float(p[3])
            except ValueError:
                continue
            if math.isfinite(none) and math.isfinite(full) and none > 0 and full > 0:
                pairs[p[0]].append(full - none)
                base[p[0]].append(none)
    short = [k for k, v in pairs.items() if len(v) < 3]
    shown = []
    for k, k_kernels in (("small", a.kernels_small), ("large", a.kernels_large)):
        if len(pairs[k]) >= 2:
            est, ub, df = upper_bound([(1.0, pairs[k])])
            none = statistics.mean(base[k])
            shown.append("%s (%g kernels/step): %d pairs, none %.3f ms, cost %+.3f ms (%+.2f%%), "
                         "95%% bound %+.3f ms (%+.2f%%)" % (
                             k, k_kernels, len(pairs[k]), none, est, 100 * est / none, ub,
                             100 * ub / none))
    figure = "; ".join(shown) or "nothing measured"
    if short:
        raise Fail("fewer than 3 pairs for %s | %s" % (", ".join(short), figure))
    dk = a.kernels_large - a.kernels_small
    if dk <= 0:
        raise Fail("the large size must launch more kernels a step (%g, %g) | %s" % (
            a.kernels_small, a.kernels_large, figure))
    per_kernel = upper_bound([(1.0 / dk, pairs["large"]), (-1.0 / dk, pairs["small"])])
    per_step = upper_bound([(a.kernels_large / dk, pairs["small"]),
                            (-a.kernels_small / dk, pairs["large"])])
    figure += "; per kernel %.3f us (bound %.3f), per step %.3f us (bound %.3f)" % (
        tuple(round(1e3 * x, 3) + 0.0 for x in (per_kernel[0], per_kernel[1], per_step[0],
                                                per_step[1])))
    worst = max(upper_bound([(1.0, pairs[k])])[1] / statistics.mean(base[k]) for k in pairs)
    if worst * 100 > a.max_pct:
        raise Fail("the library's cost may reach %+.2f%% of a step (95%% upper bound; limit "
                   "%g%%) | %s" % (100 * worst, a.max_pct, figure))
    out(True, figure)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("raw-shard")
    s.add_argument("dir")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--steps", type=int)
    s.add_argument("--expect-part", action="store_true")
    s.add_argument("--stderr")
    s.add_argument("--cpu", action="store_true")
    s = sub.add_parser("shard-contract")
    s.add_argument("dir")
    s.add_argument("--done", type=int)
    s = sub.add_parser("artifact")
    s.add_argument("file")
    s.add_argument("--pageable", action="store_true")
    s.add_argument("--trace")
    s = sub.add_parser("artifact-contract")
    s.add_argument("file")
    s.add_argument("--gate-output", nargs="+", help="the gate's terminal output, reports")
    s = sub.add_parser("verdict")
    s.add_argument("file")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--expect", choices=["pass", "timing", "detected", "memory", "counts", "place",
                                        "churn", "counts-same"],
                   required=True)
    s.add_argument("--only", help="the groups the gate was given with --only: the others' "
                   "metrics must be shown, not gated")
    s.add_argument("--gpu", choices=["any", "required"], default="any",
                   help="required: a memory regression is judged by peak device memory alone")
    s = sub.add_parser("measured")
    s.add_argument("file")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("--gpu", choices=["any", "required"], default="any")
    s.add_argument("--steps-from", choices=["nvtx", "optimizer"])
    s.add_argument("--work", help="B:O, every step's backward passes and optimizer steps as "
                   "counted from the sitecustomize's marks, or any: at least one of each")
    s = sub.add_parser("overhead-toggle")
    s.add_argument("dirs", nargs="+")
    s.add_argument("--max-pct", type=float)
    s = sub.add_parser("gpu-state")
    s.add_argument("--on", nargs="+", required=True)
    s.add_argument("--off", nargs="+", required=True)
    s.add_argument("--torch", help="a run of the PyTorch canary with sampling (its readings)")
    s.add_argument("--precision", help="the canaries' precision: the MFU of every sampled run "
                   "must be against its peak (settings.precision, bf16 when absent)")
    s.add_argument("--cpu", action="store_true")
    s = sub.add_parser("profiler")
    s.add_argument("file")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s = sub.add_parser("cupti-copies")
    s.add_argument("stdout")
    s.add_argument("--shard-dir")
    s = sub.add_parser("device-memory")
    s.add_argument("stdout")
    s.add_argument("--shard-dir", required=True)
    s.add_argument("--tolerance-pct", type=float, default=5.0)
    s = sub.add_parser("overhead-parts")
    s.add_argument("tsv")
    s.add_argument("--reps", type=int, required=True)
    s.add_argument("--shards", help="the folder of the runs' shard folders (shards-CFG-I)")
    s = sub.add_parser("overhead-bound")
    s.add_argument("tsv")
    s.add_argument("--kernels-small", type=float, required=True)
    s.add_argument("--kernels-large", type=float, required=True)
    s.add_argument("--max-pct", type=float, default=5.0)
    s = sub.add_parser("anatomy-trace")
    s.add_argument("dir")
    s.add_argument("--comm")
    s.add_argument("--tolerance-ns", type=int, default=1000)
    s = sub.add_parser("places")
    s.add_argument("dir")
    s.add_argument("--want", action="append")
    s.add_argument("--all-placed")
    s.add_argument("--counted")
    s = sub.add_parser("graphs")
    s.add_argument("dir")
    s.add_argument("--eager")
    s = sub.add_parser("two-procs")
    s.add_argument("dir")
    s.add_argument("--artifact", required=True)
    s.add_argument("--single")
    s = sub.add_parser("diagnosis")
    s.add_argument("file")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--warnings", default="any")
    s = sub.add_parser("detection")
    s.add_argument("--aa", required=True)
    s.add_argument("--aa-rc", type=int, required=True)
    s.add_argument("--aa-s", type=float, required=True)
    s.add_argument("--slow", required=True)
    s.add_argument("--slow-rc", type=int, required=True)
    s.add_argument("--slow-s", type=float, required=True)
    s = sub.add_parser("overhead")
    s.add_argument("tsv")
    s.add_argument("--reps", type=int, required=True)
    s.add_argument("--max-pct", type=float, default=10.0)
    a = p.parse_args(argv)
    handlers = {"raw-shard": cmd_raw_shard, "shard-contract": cmd_shard_contract,
                "artifact": cmd_artifact, "artifact-contract": cmd_artifact_contract,
                "verdict": cmd_verdict, "measured": cmd_measured,
                "cupti-copies": cmd_cupti_copies, "device-memory": cmd_device_memory,
                "profiler": cmd_profiler, "gpu-state": cmd_gpu_state,
                "overhead-toggle": cmd_overhead_toggle, "overhead": cmd_overhead,
                "overhead-parts": cmd_overhead_parts, "overhead-bound": cmd_overhead_bound,
                "anatomy-trace": cmd_anatomy_trace, "places": cmd_places, "graphs": cmd_graphs,
                "two-procs": cmd_two_procs, "diagnosis": cmd_diagnosis,
                "detection": cmd_detection}
    try:
        handlers[a.cmd](a)
    except Fail as e:
        out(False, str(e))
    except Exception as e:  # a bug here must still leave one line for the table
        out(False, "evaluator error (%s): %s" % (type(e).__name__, e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
