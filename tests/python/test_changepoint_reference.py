#!/usr/bin/env python3
"""test_changepoint_reference.py: the change-point scan and its p-value against the definition.

src/gate/changepoint.c scores a split with running sums kept in Fenwick trees over ranks. Here the
energy statistic of every split is computed as written in the definition (changepoint.h; E-divisive
means with exponent 1): every pair of values visited, the sums taken with math.fsum, integer series
in exact fractions. For many seeded random series (normal, skewed, heavy ties, a step, values of
nanosecond size around 2.4e7) every split's Q and the best split must agree with the C code's. The
permutation p-value of a series' first split is checked against a permutation test run here with
Python's own generator: both are Monte Carlo estimates of one p, so they must agree within their
sampling error.

Run by ctest (test_python__changepoint_reference). Standard library only.
Usage: test_changepoint_reference.py HARNESS (tests/gate/changepoint_harness, built).
Exits 0 when every case passes, 1 otherwise.
"""

import math
import random
import subprocess
import sys
from fractions import Fraction

failures = []


def energy(x, tau):
    """Q at tau by the definition: a*b/(a+b) times the between-sides mean distance doubled, less
    the mean distance of the pairs within each side."""
    left, right = x[:tau], x[tau:]
    a, b = len(left), len(right)
    exact = all(isinstance(v, int) for v in x)
    total = (lambda vs: sum(vs, Fraction(0))) if exact else math.fsum
    between = total([abs(l - r) for l in left for r in right])
    within_l = total([abs(left[i] - left[j]) for i in range(a) for j in range(i + 1, a)])
    within_r = total([abs(right[i] - right[j]) for i in range(b) for j in range(i + 1, b)])
    if exact:
        return Fraction(a * b, a + b) * (Fraction(2, a * b) * between
                                         - within_l / Fraction(a * (a - 1), 2)
                                         - within_r / Fraction(b * (b - 1), 2))
    return a * b / (a + b) * (2.0 * between / (a * b) - within_l / (a * (a - 1) / 2)
                              - within_r / (b * (b - 1) / 2))


def best_split(x, m):
    """Every split's Q, and the first tau with the largest (0 when none)."""
    q = {tau: energy(x, tau) for tau in range(m, len(x) - m + 1)}
    best = 0
    for tau in sorted(q):
        if best == 0 or q[tau] > q[best]:
            best = tau
    return q, best


def series(rng, kind, n):
    if kind == "normal":
        return [rng.gauss(10.0, 1.0) for _ in range(n)]
    if kind == "skewed":
        return [5.0 + rng.expovariate(1.0) for _ in range(n)]
    if kind == "ties":
        return [rng.randint(0, 3) for _ in range(n)]
    if kind == "step":
        at = rng.randint(1, n - 1)
        return [rng.gauss(0.0, 1.0) + (1.5 if i >= at else 0.0) for i in range(n)]
    # "ns": step times in nanoseconds, about 24 ms with a 10% spread
    return [round(2.4e7 * (1.0 + 0.1 * rng.gauss(0.0, 1.0))) + 0.5 for _ in range(n)]


def run_harness(harness, lines):
    p = subprocess.run([harness], input="".join(lines), capture_output=True, text=True)
    if p.returncode != 0:
        print("FAILED: harness exit %d: %s" % (p.returncode, p.stderr))
        sys.exit(1)
    return p.stdout.splitlines()


def check_scans(harness):
    rng = random.Random(20261124)
    cases = []
    kinds = ["normal", "skewed", "ties", "step", "ns"]
    for i in range(150):
        kind = kinds[i % len(kinds)]
        n = rng.randint(4, 36)
        m = rng.randint(2, 5)
        cases.append((kind, n, m, series(rng, kind, n)))
    lines = ["scan %d %s\n" % (m, " ".join(repr(float(v)) for v in x)) for _, _, m, x in cases]
    out = run_harness(harness, lines)
    at = 0
    worst = 0.0
    for kind, n, m, x in cases:
        name = "%s n=%d min_segment=%d" % (kind, n, m)
        best_c = int(out[at].split()[1])
        at += 1
        q_c = {}
        while at < len(out) and out[at].startswith("q "):
            _, tau, val = out[at].split()
            q_c[int(tau)] = float(val)
            at += 1
        q_ref, best_ref = best_split(x, m)
        # Q is a sum of n-ish distances: its rounding is relative to n times a mean distance.
        pairs = [abs(x[i] - x[j]) for i in range(n) for j in range(i + 1, n)]
        scale = float(math.fsum(pairs)) / max(len(pairs), 1) * n + 1e-300
        if sorted(q_c) != sorted(q_ref):
            failures.append(name + ": splits %s, expected %s" % (sorted(q_c), sorted(q_ref)))
            continue
        for tau in q_ref:
            err = abs(q_c[tau] - float(q_ref[tau])) / scale
            worst = max(worst, err)
            if err > 1e-12:
                failures.append("%s: Q(%d) %r, by definition %r" % (name, tau, q_c[tau],
                                                                     float(q_ref[tau])))
        # A different best split is accepted only at a tie of the definition's own values.
        if best_c != best_ref and (best_c not in q_ref or
                                   abs(float(q_ref[best_c] - q_ref[best_ref])) / scale > 1e-12):
            failures.append("%s: best split %d, by definition %d" % (name, best_c, best_ref))
    print("scan: %d series, largest difference %.2g of the scale" % (len(cases), worst))


def perm_p(x, m, perms, rng):
    _, best = best_split(x, m)
    observed = energy(x, best)
    y = list(x)
    hits = 0
    for _ in range(perms):
        rng.shuffle(y)
        q, b = best_split(y, m)
        hits += q[b] >= observed - 1e-9 * abs(observed)
    return (1 + hits) / (1 + perms)


def check_p_values(harness):
    """p of the first split: the C code with 19,999 permutations against 1,999 here."""
    rng = random.Random(7)
    n, m, perms_c, perms_py = 14, 3, 19999, 1999
    done = 0
    tries = 0
    while done < 3 and tries < 40:
        tries += 1
        x = [rng.gauss(0.0, 1.0) + (0.9 if i >= 7 else 0.0) for i in range(n)]
        p_ref = perm_p(x, m, perms_py, random.Random(tries))
        if not 0.02 <= p_ref <= 0.3:
            continue
        out = run_harness(harness, ["detect %d 0.5 %d %d %s\n" % (
            m, perms_c, tries, " ".join(repr(v) for v in x))])
        first = [ln.split() for ln in out if ln.startswith("point ") and
                 int(ln.split()[4]) == 0 and int(ln.split()[5]) == n]
        if len(first) != 1:
            failures.append("p check %d: no point for the whole series in %r" % (tries, out))
            continue
        p_c = float(first[0][2])
        sd = math.sqrt(p_ref * (1 - p_ref) * (1.0 / perms_c + 1.0 / perms_py))
        ok = abs(p_c - p_ref) <= 4.5 * sd
        print("%s: p %.4f, here %.4f (sd %.4f)" % ("ok" if ok else "FAILED", p_c, p_ref, sd))
        if not ok:
            failures.append("p check %d: p %.4f, here %.4f" % (tries, p_c, p_ref))
        done += 1
    if done < 3:
        failures.append("p check: only %d series with p in [0.02, 0.3]" % done)


def main():
    if len(sys.argv) != 2:
        print("usage: test_changepoint_reference.py HARNESS", file=sys.stderr)
        return 2
    check_scans(sys.argv[1])
    check_p_values(sys.argv[1])
    for f in failures:
        print("FAILED: " + f)
    print("%s" % ("all passed" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
