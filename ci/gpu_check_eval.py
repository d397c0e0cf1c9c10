#!/usr/bin/env python3
"""gpu_check_eval.py: judges the evidence ci/gpu-check collects (docs/gpu.md).

Each subcommand reads files (shards, artifacts, JSON verdicts, canary output) and prints exactly
one line, "PASS<TAB>figure" or "FAIL<TAB>figure", then exits 0; ci/gpu-check records that line as
one check of its summary table. A missing file or field is a FAIL that names it, never a crash;
an unexpected error is printed as a FAIL line too. Only the standard library is used.

  raw-shard DIR --rc N [--steps N] [--expect-part] [--stderr FILE] [--cpu]
                                                      the shard of one canary run (--cpu: a
                                                      CPU rehearsal, no GPU lines expected)
  shard-contract DIR --done N                         done / cupti / 7-field c lines
  artifact FILE [--pageable] [--trace FILE]           GPU metrics in a run artifact
  artifact-contract FILE --gate-output FILE...        new artifact fields, "stopped after N"
  verdict FILE --rc N --expect pass|timing|memory|counts|counts-same|place
                                                      a gate's JSON verdict and exit code (counts:
                                                      a synchronisation or pageable copy count
                                                      FAILs; counts-same: no count FAILs)
  measured FILE --rc N --steps N [--gpu any|required] a run artifact: runs measured
  cupti-copies STDOUT [--shard-dir DIR]               libcupti files mapped in the canary
  device-memory STDOUT --shard-dir DIR                the shards' peak device memory against
                                                      the PyTorch canary's own reserved peak
  overhead TSV --reps N [--max-pct X]                 medians of none / nvtx / full
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


def out(ok, figure):
    figure = " ".join(str(figure).split())
    if len(figure) > 400:
        figure = figure[:397] + "..."
    print("%s\t%s" % ("PASS" if ok else "FAIL", figure))


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
        elif failed or a.rc not in (0, 1) or not rows:
            raise Fail("reordered work changed the counts or measured none | " + figure)
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
        name = "peak_device_memory" if outcomes.get("peak_device_memory") not in (
            None, "unavailable") else "peak_host_rss"
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
    if problems:
        raise Fail("; ".join(problems) + " | " + figure)
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
    must see at least 90% of it, whatever PYTORCH_CUDA_ALLOC_CONF (expandable segments map memory
    through the virtual memory API rather than cudaMalloc)."""
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
    if peak < 0.9 * reserved:
        raise Fail("the library's peak device memory leaves out memory PyTorch reserved | " + figure)
    out(True, figure)


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
    as a ratio to the runs without the library and to the full set-up. A diagnosis: it fails
    only on missing measurements."""
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
    if short or "none" not in med or "full" not in med:
        raise Fail("too few measurements (%s; need %d each, none and full among them) | %s" %
                   (", ".join(short) or "-", a.reps, figure))
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
    s = sub.add_parser("measured")
    s.add_argument("file")
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("--gpu", choices=["any", "required"], default="any")
    s.add_argument("--steps-from", choices=["nvtx", "optimizer"])
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
    s = sub.add_parser("overhead-parts")
    s.add_argument("tsv")
    s.add_argument("--reps", type=int, required=True)
    s = sub.add_parser("overhead")
    s.add_argument("tsv")
    s.add_argument("--reps", type=int, required=True)
    s.add_argument("--max-pct", type=float, default=10.0)
    a = p.parse_args(argv)
    handlers = {"raw-shard": cmd_raw_shard, "shard-contract": cmd_shard_contract,
                "artifact": cmd_artifact, "artifact-contract": cmd_artifact_contract,
                "verdict": cmd_verdict, "measured": cmd_measured,
                "cupti-copies": cmd_cupti_copies, "device-memory": cmd_device_memory,
                "profiler": cmd_profiler, "overhead": cmd_overhead,
                "overhead-parts": cmd_overhead_parts}
    try:
        handlers[a.cmd](a)
    except Fail as e:
        out(False, str(e))
    except Exception as e:  # a bug here must still leave one line for the table
        out(False, "evaluator error (%s): %s" % (type(e).__name__, e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
