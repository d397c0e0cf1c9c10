#!/usr/bin/env python3
"""Writes the seed corpus of every harness into fuzz/corpus/<harness>/ from the repository's own
fixtures (example artifacts, thresholds files, golden reports) and small hand-made inputs in each
harness's input format. Run from the repository root: python3 fuzz/make_corpus.py [SHARD_DIR]
(SHARD_DIR: shards written by the injection library, to seed fuzz_shard with real ones)."""
import glob
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def artifact():
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.json"))):
        put("artifact", os.path.basename(p), read(p))
    step = '{"wall_ns": %d, "tokens": 64, "gpu_busy_ns": %d}'
    steps = ", ".join(step % (1000000 + 1000 * i, 500000) for i in range(4))
    run = ('{"steps": [%s], "summary": {"step_time_mean_ns": 1001500, "step_time_median_ns": '
           '1001500, "step_time_p95_ns": 1002850, "tokens_per_sec": 63904.1, "peak_device_bytes": '
           '1048576, "peak_host_rss_bytes": 2097152}, "ops": [{"name": "void gemm<float, 4>(float*)",'
           ' "family": "gemm", "kind": "kernel", "calls": 8, "total_ns": 1600000}, {"name": '
           '"memcpy HtoD", "kind": "memcpy", "calls": 4, "total_ns": 4000}, {"name": "fwd|\\u001b[31m",'
           ' "kind": "range", "calls": 4, "total_ns": 900}], "dropped_records": 0, '
           '"zero_timestamp_records": 0}') % steps
    put("artifact", "small-gpu.json",
        '{"schema": "canary-gate/run", "schema_version": 1, "created_utc": "2026-01-01T00:00:00Z",'
        ' "gpu": {"available": true, "reason": null}, "environment": {"gpu_model": "NVIDIA H100",'
        ' "gpu_count": 1, "driver_version": "580.65.06", "cuda_version": "13.0", "cupti_status": '
        '"ok", "cpu_model": "x", "tool_version": "0.1.0", "canary_command": ["python", "train.py"],'
        ' "canary_hash": "fnv1a64:0123456789abcdef"}, "settings": {"steps": 4, "warmup": 1, "runs":'
        ' 2, "step_range": "step", "tokens_per_step": null}, "runs": [%s, %s]}' % (run, run))
    measured = run.replace(
        '"zero_timestamp_records": 0}',
        '"zero_timestamp_records": 0, "outside_step_records": 3, "inside_step_records": 17, '
        '"late_memory_records": 1, "cupti_overhead_ns": 5200, "stopped_after_steps": 5, '
        '"warnings": ["op table full: 3 more names not recorded", "\\u001b[31m"]}')
    put("artifact", "measured-window.json",
        '{"schema": "canary-gate/run", "schema_version": 1, "gpu": {"available": true}, '
        '"environment": {"gpu_count": 1, "cupti_status": "ok", "cupti_library": '
        '"loaded /venv/nvidia/cu13/lib/libcupti.so.13"}, "settings": {"steps": 4, "warmup": 1, '
        '"runs": 1}, "runs": [%s]}' % measured)
    # every string the report escapes at its widest ("@a" is 13 bytes in markdown, "|" six):
    # environment cells, the GPU's reasons, eight distinct library warnings, and eight range names
    # that take a share of the step (the anatomy lists them) and hold counted calls (their places)
    wide = json.loads(read("examples/current.json"))
    at = "@a" * 150
    for k in ("gpu_model", "driver_version", "cuda_version", "cupti_status", "cpu_model",
              "tool_version", "canary_hash"):
        wide["environment"][k] = at
    wide["environment"]["canary_command"] = [at]
    wide["gpu"] = {"available": False, "reason": at}
    for i, r in enumerate(wide["runs"]):
        r["warnings"] = [("%d%d" % (i, k) + at)[:300] for k in range(3)]
        r["gpu_state"] = {"available": False, "reason": at}  # quoted by the energy row's note
        counted = ("sync_stream", "sync_event", "sync_context", "dtoh_pageable", "allocs", "frees")
        for st in r["steps"]:
            st["counts"] = {k: 7 for k in counted}
        r["count_places"] = [{"count": k, "where": "in", "range": (chr(98 + j) + at)[:255],
                              "calls": 10 * (j + 1)} for k in counted for j in range(8)]
        r["ops"] += [{"name": (chr(98 + j) + at)[:255], "kind": "range", "calls": 30,
                      "total_ns": 300000000} for j in range(8)]
    put("artifact", "widest-text.json", json.dumps(wide))
    put("artifact", "newer-schema.json",
        '{"schema": "canary-gate/run", "schema_version": 99, "gpu": {"available": false}}')
    if os.path.exists("/tmp/cg-seed-art.json"):
        put("artifact", "nvtx-canary.json", read("/tmp/cg-seed-art.json"))


def thresholds():
    for p in sorted(glob.glob(os.path.join(ROOT, "thresholds", "*.json"))):
        put("thresholds", os.path.basename(p), read(p))
    put("thresholds", "extends-strict.json",
        '{"extends": "strict", "measurement": {"runs": 5}, "ops": {"top_n": 3, "fdr_q": 0.1},'
        ' "environment_mismatch": "gate", "bootstrap_resamples": 500}')
    put("thresholds", "bad-key.json", '{"metrics": {"step_time_mean": {"alpha": 0.9}}}')


def event():
    ev = ('{"action": "synchronize", "number": 42, "pull_request": {"number": 42, "head": {"sha":'
          ' "0123456789abcdef0123456789abcdef01234567", "ref": "feature"}, "base": {"ref": "main"}}}')
    put("event", "pull_request.json", b"\x00" + ev.encode())
    put("event", "issue_comment.json",
        b"\x00" + b'{"issue": {"number": 7, "pull_request": {"url": "u"}}, "comment": {"body": "x"}}')
    put("event", "push.json", b"\x00" + b'{"ref": "refs/heads/main", "after": "abc1234"}')
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "*.md"))):
        put("event", "report-" + os.path.basename(p), b"\x01" + read(p))
    put("event", "report-id.md",
        b"\x01<!-- canary-gate:gpu-a100 -->\r\n<!-- canary-gate-verdict: fail -->\n# x\n")


def http():
    links = [
        '<https://api.github.com/repositories/1/issues/7/comments?per_page=100&page=2>; rel="next", '
        '<https://api.github.com/repositories/1/issues/7/comments?per_page=100&page=9>; rel="last"',
        '<https://a/l>; rel="last", <https://a/n>; title="a, b; c"; rel="next"',
        '<https://a/n> ; REL = "prev Next"',
    ]
    for i, l in enumerate(links):
        put("http", "link-%d" % i, b"\x00" + l.encode())
    page = ('[{"id": 11, "body": "hello"}, {"id": 12, "body": "<!-- canary-gate -->\\n## PASS"}]')
    put("http", "comments-page",
        b"\x01HTTP/2 200\r\ncontent-type: application/json\r\nLink: " + links[0].encode() +
        b"\r\nx-ratelimit-remaining: 4999\r\nx-ratelimit-reset: 1700000000\r\n\r\n" + page.encode())
    put("http", "rate-limited",
        b"\x01HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\nRetry-After: 30\r\n"
        b"x-ratelimit-remaining: 0\r\n\r\n"
        b'{"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com"}')
    put("http", "validation-failed",
        b"\x01HTTP/1.1 422 Unprocessable Entity\r\n\r\n"
        b'{"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": '
        b'"custom", "message": "body is too long (maximum is 65536 characters)"}]}')


# A measured window as the library ends it: "cupti", 7-field counters, repeated warnings, "done"
# (the process stopped before "end"), beside a rank whose library wrote the 3-field counters.
MEASURED_WINDOW = (
    "canary-gate-shard 1\npid 200\nrank 0\nwarmup 1\nstep_range step\ngpu ok\n"
    "cupti loaded /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13\n"
    "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_NOT_SUPPORTED\n"
    "s 0 1000 3000 10\ns 1 3000 4000 10\no kernel 2 300 _Z3fooIiEvT_\nb 1 250\n"
    "c 12 0 0 3 9 1 4000\ns 2 4000 5000 10\n"
    "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_NOT_SUPPORTED\n"
    "w op table full: 3 more names not recorded\nc 20 0 0 3 17 1 5200\ndone 3\n"
    "\n--- next shard ---\n"
    "canary-gate-shard 1\npid 201\nrank 1\ngpu ok\ncupti env /usr/local/cuda/lib64/libcupti.so.13\n"
    "s 0 1000 2500 10\ns 1 2500 4100 10\ns 2 4100 5200 10\nc 30 0 0 30 0 0 0\nc 31 0 0\n"
    "done 3\nend\n")


# Peak memory by GPU: two ranks given one GPU each (both see it as device 0), a third on the
# first's GPU, a fourth from a library that names no UUID.
UUIDS = (
    "canary-gate-shard 1\npid 300\nrank 0\ngpu ok\ndevice 0 NVIDIA H100 80GB HBM3\n"
    "uuid 0 GPU-6a1e2f30-0b1c-4d2e-8f30-415263748596\ns 0 1000 2000 -1\nm 0 5000\nend\n"
    "\n--- next shard ---\n"
    "canary-gate-shard 1\npid 301\nrank 1\ngpu ok\nuuid 0 GPU-00010203-0405-0607-0809-0a0b0c0d0e0f\n"
    "uuid 0 GPU-ffffffff-0405-0607-0809-0a0b0c0d0e0f\ns 0 1000 2100 -1\nm 0 7000\nend\n"
    "\n--- next shard ---\n"
    "canary-gate-shard 1\npid 302\nrank 2\ngpu ok\nuuid 0 GPU-6a1e2f30-0b1c-4d2e-8f30-415263748596\n"
    "uuid 1 MIG-1\ns 0 1000 2000 -1\nm 0 1000\nm 1 9\nend\n"
    "\n--- next shard ---\n"
    "canary-gate-shard 1\npid 303\nrank 3\ngpu ok\ns 0 1000 2000 -1\nm 0 3000\nend\n")


def shard(shard_dir):
    put("shard", "two-ranks",
        "canary-gate-shard 1\npid 100\nrank 0\nlocal_rank 0\nwarmup 1\nstep_range step\n"
        "gpu ok\ndevice 0 NVIDIA H100 80GB HBM3\ncuda 13.0\ndriver 580.65.06\n"
        "s 0 1000 3000 10\ns 1 3000 4000 10\nb 1 200\nb 1 50\n"
        "o kernel 2 300 _Z3fooIiEvT_\no range 1 900 fwd\\\\pass\\x09x\n"
        "s 2 4000 5500 10\no memcpy 1 100 memcpy HtoD\nm 0 5000\nm 0 4000\n"
        "c 10 1 2\nc 20 3 4\nl 1 2.5\nw buffer cap reached\nend\n"
        "\n--- next shard ---\n"
        "canary-gate-shard 1\npid 101\nrank 1\ngpu unavailable no driver\n"
        "s 0 100 2200 20\ns 1 2200 3000 20\ns 2 3000 6000 20\n"
        "o range 2 100 fwd\\\\pass\\x09x\nm 0 7000\nm 1 1000\nc 5 0 0\ns 3 6000 70")
    put("shard", "traced",
        "canary-gate-shard 1\npid 7\nrank 0\nwarmup 0\nstep_range step\ntw 0 1\n"
        "s 0 1000 2000 10\ntd 1 NCCL\ntr 4242 1100 1900 0 forward\n"
        "tr 4243 1200 1300 1 AllReduce \\x1b[31m\"q\\\\\n"
        "tg kernel 0 7 1500 2500 -1 _Z3fooIiEvT_\ntg memcpy 1 13 2600 2700 4096 memcpy HtoD pageable\n"
        "tm 0 1400 1048576\ntm 0 1600 0\ns 1 2000 3000 10\nl 1 2.5\ntx 5 2\nend\n")
    put("shard", "measured-window", MEASURED_WINDOW)
    put("shard", "counts",
        "canary-gate-shard 1\npid 9\nrank 0\nwarmup 1\nstep_range step\ngpu ok\n"
        "nc kernels graph_kernels sync_stream sync_event sync_context sync_wait_event sync_ns "
        "copies dtoh_pageable dtoh_pageable_bytes allocs frees module_loads jit\n"
        "s 0 1000 2000 -1\nn 0 kernels 735\nn 0 module_loads 2\nn 0 jit 1\nn 0 ranges 4\n"
        "s 1 2000 3000 -1\nn 1 kernels 326\nn 1 graph_kernels 300\nn 1 sync_stream 1\n"
        "n 1 sync_ns 41000\nn 1 dtoh_pageable 1\nn 1 dtoh_pageable_bytes 4\nn 1 copies 3\n"
        "n 1 allocs 2\nn 1 frees 2\nn 1 sync_wait_event 5\nn 1 ranges 4\nn 0 kernels 1\n"
        "n 1 newer_count 3\nend\n")
    put("shard", "gpu-times",
        "canary-gate-shard 1\npid 9\nrank 0\nwarmup 0\nstep_range step\ngpu ok\n"
        "nc kernels compute_ns copy_ns copy_hidden_ns\ns 0 1000 2000 -1\nb 0 700\n"
        "n 0 compute_ns 500\nn 0 copy_ns 90\nn 0 copy_hidden_ns 60\ns 1 2000 3000 -1\nb 1 600\n"
        "n 1 compute_ns 900\nn 1 copy_ns 0\nn 1 copy_hidden_ns 7\nn 2 compute_ns 5\nend\n")
    put("shard", "places",
        "canary-gate-shard 1\npid 9\nrank 0\nwarmup 0\nstep_range step\ngpu ok\n"
        "nc sync_stream sync_context dtoh_pageable allocs frees places\ns 0 1000 2000 -1\n"
        "s 1 2000 3000 -1\nnp allocs in 1 forward\nnp frees after 1 forward\n"
        "np sync_stream in 2 forward\nnp sync_stream in 1 forward\nnp dtoh_pageable after 2 "
        "back\\x09ward\nnp sync_context in 1 \nnp newer_count in 1 x\nend\n"
        "\n--- next shard ---\n"
        "canary-gate-shard 1\npid 10\nrank 1\ngpu ok\nnc sync_stream places\n"
        "s 0 1000 2000 -1\ns 1 2000 3000 -1\nnp sync_stream in 3 forward\nend\n")
    put("shard", "uuids", UUIDS)
    put("shard", "secret-names",
        "canary-gate-shard 1\npid 9\nwarmup 0\nstep_range step\ntw 0 0\n"
        "s 0 1000 9000 -1\ntr 77 1100 1200 0 load hf_SECRETvalue123\n"
        "o range 1 100 load hf_SECRETvalue123\no range 1 90 fetch https://user:pw12345678@host/shard\n"
        "o kernel 1 50 push_ghp_0123456789abcdefABCDEF0123456789\n"
        "w CANARY_GATE_CUPTI_PATH hf_SECRETvalue123 is not a file\nend\n")
    put("shard", "stray-steps",
        "canary-gate-shard 1\npid 9\nwarmup 0\nstep_range step\nsteps_from nvtx\n"
        "s 0 1000 9000 -1\nw 'step' ranges nested in a step: counted, never measured as steps\n"
        "ss 2 0\ns 1 9000 17000 -1\nw 'step' ranges on threads other than the first step's: "
        "counted, never measured as steps\nss 4 7\nend\n")
    if shard_dir and os.path.isdir(shard_dir):
        files = sorted(glob.glob(os.path.join(shard_dir, "*.shard")) +
                       glob.glob(os.path.join(shard_dir, "*.part")))
        for i, p in enumerate(files):
            with open(p, "rb") as f:
                put("shard", "nvtx-canary-%d" % i, f.read())


def opname():
    names = [
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
        "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, "
        "false, false>(float*, float const*, int, int, int, bool const*, int, bool)",
        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>("
        "cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4::Params)",
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "triton_red_fused__softmax_12",
        "fwd|<b>\x1b[31mred\x1b[0m\xc2\x9b\xff",
        "_ZN7cutlass6KernelINS_4gemm6kernel4GemmIfLi4EEEEEvNT_6ParamsE",
        "WWW.evil.example/login https://e.vil mailto:a@e.vil",
    ]
    for i, n in enumerate(names):
        put("opname", "name-%d" % i, n.encode("latin-1") if "\xff" in n else n.encode())


def nvtx():
    # byte code (fuzz/fuzz_nvtx.c): op, then the op's operands
    def s(text):
        b = text.encode()
        return bytes([len(b)]) + b
    attr_step = bytes([0, 0]) + s("step") + bytes([1]) + struct.pack(">q", 128)
    step = bytes([10]) + attr_step
    pop = bytes([2])
    nested = bytes([0]) + s("forward") + pop + bytes([0]) + s("backward\\x\n") + pop
    put("nvtx", "steps-nested", (step + nested + pop) * 4)
    dom = bytes([3]) + s("NCCL")
    dpush = bytes([4, 0, 0, 0]) + s("allreduce") + bytes([0]) + bytes(8)
    put("nvtx", "domains", dom + (step + dpush + bytes([5, 0]) + pop) * 3)
    startend = bytes([6]) + s("data") + bytes([8, 0])
    loss = bytes([13 | 0x10]) + s("2.75")
    put("nvtx", "start-end-loss", (step + startend + loss + pop) * 3)
    reg = bytes([9, 1]) + s("step")
    put("nvtx", "registered", reg + (bytes([1, 0, 2]) + s("") + bytes([1]) + bytes(8) + pop) * 3)


def agg():
    def ev(op, back=0, dur=0):
        return bytes([op]) + struct.pack(">H", back) + struct.pack(">I", dur)[1:]
    out = bytes([1])
    for k in range(4):
        out += ev(0) + ev(3, 10, 5000) + ev(2, 0, 20000) + ev(3, 5000, 8000) + ev(4, 100, 300)
        out += ev(6, 10, 0x10005) + ev(6 | 0x10, 5, 0x10005) + ev(5, 0, 50) + ev(7, 0, 10)
        out += ev(2, 0, 40000) + ev(1)
    put("agg", "steps", out)
    put("agg", "settle", out[:200] + ev(8) + out[200:])
    # bursts of ~2000 kernels in time order with copies among them (op 15): the busy ring fills
    # and the copies' kept rings give way; then a late copy (out of order)
    burst = ev(0) + ev(15, 300, 2000 | (20 << 11) | (40 << 17)) + ev(15, 77, 1900) + ev(1)
    put("agg", "bursts", bytes([1]) + burst * 2)
    put("agg", "bursts-late", bytes([1]) + burst * 2 + ev(0) + ev(4, 60000, 300) + ev(1))


def agg_paths():
    # setup byte: warm-up 0, window without end, batches of 256 (index 4 << 2)
    setup = bytes([4 << 2])
    step = bytes([0])
    # a burst of 2000 disjoint kernels (gap 3, length 5), copies among them, a few late ones
    burst = bytes([7]) + struct.pack(">H", 2000) + bytes([3, 4, 0x17, 40]) + bytes([9] * 60)
    # 300 disjoint kernels, then 424 inside the last one, then one late (in a gap)
    fill = bytes([7]) + struct.pack(">H", 300) + bytes([5, 4, 0, 0])
    inside = bytes([8 | 0x10]) + struct.pack(">H", 424) + bytes([0, 0, 0x08, 0])
    late = bytes([4 | 0x80]) + struct.pack(">H", 2500) + bytes([2, 3])
    put("agg_paths", "bursts", setup + step + burst + bytes([10]) + burst + bytes([2]))
    put("agg_paths", "late-in-a-gap", setup + step + fill + inside + late + bytes([2]))
    # kernels of no duration after 300 disjoint ones, one more, one late; batches of one
    zero = b"".join(bytes([5, 0, 1, 3, 10]) for _ in range(212))
    early = bytes([4 | 0x80]) + struct.pack(">H", 4505) + bytes([2, 3])  # among the first half
    put("agg_paths", "no-duration",
        bytes([0]) + step + fill + zero + bytes([5, 5, 2]) + early + bytes([2]))
    # communication kernels (names 5 + 37k) among compute ones in counted steps, graph kernels
    comm = bytes([12, 0, 0, 0, 64]) + bytes([7]) + struct.pack(">H", 900) + bytes([1, 8, 0x45, 0])
    put("agg_paths", "communication", setup + step + comm + bytes([0]) + comm + bytes([2]))


def main():
    artifact()
    thresholds()
    event()
    http()
    shard(sys.argv[1] if len(sys.argv) > 1 else None)
    opname()
    nvtx()
    agg()
    agg_paths()


if __name__ == "__main__":
    main()
