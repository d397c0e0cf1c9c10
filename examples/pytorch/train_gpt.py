#!/usr/bin/env python3
"""train_gpt.py: a small GPT-style model trained on synthetic tokens, the PyTorch canary of
canary-gate (docs/gpu.md).

Every training step is an NVTX range named "step" (torch.cuda.nvtx.range_push/range_pop) with
nested "copy", "forward", "backward", "optimizer" and "data" ranges, and the step's loss is
reported with torch.cuda.nvtx.mark("loss=<value>"). The script has no step-count logic beyond a
generous maximum (--max-steps): under canary-gate the gate ends it once warm-up + measured steps
are done.

Synthetic tokens: a seeded Markov chain over the vocabulary (each token has --branch possible
successors, drawn at random once), walked position by position on the host, so the loss falls
from ln(vocab) towards ln(branch). A step copies its batch to the device from pageable memory
("copy"), queues forward, backward and the optimizer, and draws the next batch on the host while
the GPU works ("data"), as a host-side data loader would; it ends with loss.item().

Variants (options, or the environment variable named in brackets):
  --variant sync   [CANARY_VARIANT=sync]  one extra loss.item() per step, after the optimizer
                   is queued and before the next batch is drawn: the host waits for the GPU
                   first, so drawing the batch no longer overlaps the GPU's work (step time)
  --variant reorder [CANARY_VARIANT=reorder] the next batch is drawn before the optimizer is
                   queued instead of after: the same work in another order (the same counts)
  --variant mem    [CANARY_VARIANT=mem]   every block keeps a copy of its attention
                   probabilities and MLP activation until the next step (peak device memory)
  --variant churn  [CANARY_VARIANT=churn] the step ends by emptying PyTorch's cache of device
                   memory in a range "release" (torch.cuda.empty_cache): the blocks it frees
                   are allocated again in the next step (device allocations and releases)
  --variant graphs [CANARY_VARIANT=graphs] forward and backward captured once in a CUDA graph
                   (torch.cuda.graph, after 3 eager warm-up steps on a side stream) and replayed
                   in a range "graph" every step; the batch is copied into the graph's static
                   input, the optimizer stays eager (CUDA only: --device cpu is refused, exit 2)
  --slow-ms X      [CANARY_SLOW_MS]       a known slowdown: X ms of host busy-waiting per step
                   in a range "slow", after loss.item() (the GPU is idle then, so the step is
                   X ms longer whatever the GPU does; the detection plan of ci/gpu-check)
  --exit os-exit   [CANARY_EXIT=os-exit]  end with os._exit(0) after --max-steps: no exit
                   handlers run (the injection library's shard stays a .part file)
  --profiler       [CANARY_PROFILER=1]    run torch.profiler (CPU and CUDA activities) around
                   the loop, entered before anything initialises CUDA (torch.cuda.is_available
                   included), prof.step() at every step end; whether kineto then holds CUPTI
                   before the injection library depends on PyTorch (ci/gpu-check reports which)

It prints one header line, "step N loss X" every --log-every steps, the number of distinct
libcupti files mapped in the process (/proc/self/maps) once the first step has ended
("libcupti_files=N ..."), and at a normal end "done steps=N ... mean_step_ms=X median_step_ms=Y"
over the steps after --timing-skip (its own clock; each step ends with loss.item(), a sync).
On CUDA it ends with PyTorch's own peaks ("torch_memory reserved_peak=N allocated_peak=N
alloc_conf=..."); with --print-reserved it also prints, as each step begins, what PyTorch's
allocator then holds and what the whole device has in use (cudaMemGetInfo: every process, the CUDA context
included): "torch_reserved step=K reserved=N allocated=N device_used=N", K from 0. ci/gpu-check
sets the library's device memory level at a traced step's start between the two.

--device cpu runs on the CPU (tests). CPU-only PyTorch builds have no torch.cuda.nvtx; there the
ranges and marks go through --nvtx-shim PATH [CANARY_NVTX_SHIM], the small NVTX library built
beside canary-gate (examples/pytorch/nvtx_shim.c), or are left out with a note on stderr.

Exit codes: 0 trained, 2 usage, 4 CUDA requested but unavailable, 5 non-finite loss.
"""

import argparse
import ctypes
import math
import os
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the gate reports the canary's stderr
    print("train_gpt: cannot import torch: %s" % e, file=sys.stderr)
    sys.exit(4)


def flops_per_token(a):
    """Model FLOPs of one token, forward and backward: 6N for the matmul weights N = 12 L C^2 + C V
    (qkv 3C^2, proj C^2, fc 4C^2, fc_out 4C^2 a block, and the head; embeddings, biases and
    layernorms do no matmul), and 12 L C T for attention, which multiplies q.k and att.v over all
    T positions (the mask is applied after): 2 x 2 T C a token and layer forward, 3x with backward.
    canary-gate reads the printed line for MFU (its --flops-per-token)."""
    n = 12 * a.layers * a.width * a.width + a.width * a.vocab
    return 6 * n + 12 * a.layers * a.width * a.seq


def parse_args(argv):
    p = argparse.ArgumentParser(description="small GPT canary on synthetic tokens")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--width", type=int, default=384)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--branch", type=int, default=4, help="successors of each token")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=100000,
                   help="a generous maximum; under canary-gate the gate stops the canary")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--timing-skip", type=int, default=5,
                   help="first steps left out of the printed step-time statistics")
    p.add_argument("--variant", default=os.environ.get("CANARY_VARIANT", "none"),
                   choices=["none", "sync", "reorder", "mem", "churn", "graphs"])
    p.add_argument("--slow-ms", type=float, default=float(os.environ.get("CANARY_SLOW_MS") or 0),
                   help="host busy-waiting per step (ms), in a range 'slow'")
    p.add_argument("--exit", dest="exit_mode", default=os.environ.get("CANARY_EXIT", "normal"),
                   choices=["normal", "os-exit"])
    p.add_argument("--profiler", action="store_true",
                   default=os.environ.get("CANARY_PROFILER", "0") not in ("", "0"))
    p.add_argument("--nvtx-shim", default=os.environ.get("CANARY_NVTX_SHIM", ""))
    p.add_argument("--print-reserved", action="store_true",
                   help="print PyTorch's reserved and allocated device memory as each step "
                        "begins (torch_reserved lines; CUDA only)")
    a = p.parse_args(argv)
    for name in ("layers", "width", "heads", "seq", "batch", "vocab", "branch", "max_steps",
                 "log_every"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.width % a.heads != 0:
        p.error("--width must be a multiple of --heads")
    if a.timing_skip < 0:
        p.error("--timing-skip must not be negative")
    if not (a.slow_ms >= 0 and math.isfinite(a.slow_ms)):
        p.error("--slow-ms must be a finite number of ms, 0 or more")
    if a.variant == "graphs" and a.device != "cuda":
        p.error("--variant graphs needs --device cuda (CUDA graphs have no CPU form)")
    return a


class Markers:
    """NVTX ranges and marks: torch.cuda.nvtx on CUDA; on the CPU the shim, else nothing."""

    def __init__(self, device, shim_path):
        if device == "cuda" or not shim_path:
            try:
                torch.cuda.nvtx.range_push("canary-probe")  # CPU-only builds raise here
                torch.cuda.nvtx.range_pop()
                self.push = torch.cuda.nvtx.range_push
                self.pop = torch.cuda.nvtx.range_pop
                self.mark = torch.cuda.nvtx.mark
                self.how = "torch.cuda.nvtx"
                return
            except (RuntimeError, AttributeError) as e:
                if device == "cuda":
                    raise
                print("train_gpt: no NVTX in this PyTorch (%s) and no --nvtx-shim: steps are "
                      "not marked" % e, file=sys.stderr)
                self.push = self.mark = lambda s: None
                self.pop = lambda: None
                self.how = "none"
                return
        lib = ctypes.CDLL(shim_path)
        for name in ("canary_shim_push", "canary_shim_pop", "canary_shim_mark"):
            getattr(lib, name).restype = None
        lib.canary_shim_push.argtypes = [ctypes.c_char_p]
        lib.canary_shim_mark.argtypes = [ctypes.c_char_p]
        lib.canary_shim_pop.argtypes = []
        self.push = lambda s: lib.canary_shim_push(s.encode())
        self.pop = lib.canary_shim_pop
        self.mark = lambda s: lib.canary_shim_mark(s.encode())
        self.how = "shim"


class Block(nn.Module):
    def __init__(self, width, heads, keep):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_out = nn.Linear(4 * width, width)
        self.keep = keep
        self.kept = None

    def forward(self, x, mask):
        b, t, c = x.shape
        hd = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        h = F.gelu(self.fc(self.ln2(x)))
        if self.keep:  # the memory variant: copies that live until the next step
            self.kept = (att.detach().clone(), h.detach().clone())
        return x + self.fc_out(h)


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok = nn.Embedding(a.vocab, a.width)
        self.pos = nn.Embedding(a.seq, a.width)
        self.blocks = nn.ModuleList(
            Block(a.width, a.heads, a.variant == "mem") for _ in range(a.layers))
        self.ln = nn.LayerNorm(a.width)
        self.head = nn.Linear(a.width, a.vocab, bias=False)
        self.register_buffer("mask", torch.ones(a.seq, a.seq, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


class Tokens:
    """Seeded synthetic sequences drawn on the host: a walk of a random Markov chain."""

    def __init__(self, a):
        self.g = torch.Generator().manual_seed(a.seed)
        self.successors = torch.randint(0, a.vocab, (a.vocab, a.branch), generator=self.g)
        self.batch, self.length, self.vocab, self.branch = a.batch, a.seq + 1, a.vocab, a.branch

    def next(self):
        """A host batch (pageable memory): inputs and targets, each [batch, seq] int64."""
        pick = torch.randint(0, self.branch, (self.batch, self.length), generator=self.g)
        seq = torch.empty(self.batch, self.length, dtype=torch.long)
        cur = torch.randint(0, self.vocab, (self.batch,), generator=self.g)
        seq[:, 0] = cur
        for t in range(1, self.length):
            cur = self.successors[cur, pick[:, t]]
            seq[:, t] = cur
        return seq[:, :-1], seq[:, 1:]


class GraphStep:
    """Forward and backward captured once in a CUDA graph (the variant graphs): replay() runs
    them on the batch copied into the static inputs and leaves the loss in self.loss and the
    gradients in the parameters' .grad (the same tensors at every replay)."""

    def __init__(self, model, opt, x, y):
        self.x, self.y = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # eager warm-up, as torch.cuda.graphs asks
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                model(self.x, self.y).backward()
        torch.cuda.current_stream().wait_stream(side)
        opt.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.loss = model(self.x, self.y)
            self.loss.backward()

    def replay(self, x, y):
        self.x.copy_(x)
        self.y.copy_(y)
        self.graph.replay()
        return self.loss


def busy_wait(ms):
    """The host busy for ms milliseconds (a known slowdown, exact to the clock's resolution)."""
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def libcupti_files():
    """The distinct libcupti files mapped into this process."""
    paths = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if os.path.basename(path).startswith("libcupti"):
                        paths.add(os.path.realpath(path))
    except OSError:
        return None
    return sorted(paths)


def main(argv):
    a = parse_args(argv)
    prof = None
    if a.profiler:
        # Entered before torch.cuda.is_available(), whose cudaGetDeviceCount runs cuInit (and
        # with it the injection library's InitializeInjection), so the profiler asks for CUPTI
        # first where kineto subscribes when a trace is prepared.
        acts = [torch.profiler.ProfilerActivity.CPU]
        if a.device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("train_gpt: --device cuda but torch.cuda.is_available() is False (torch %s, "
              "built for CUDA %s)" % (torch.__version__, torch.version.cuda), file=sys.stderr)
        return 4
    mk = Markers(a.device, a.nvtx_shim)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    model = GPT(a).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    data = Tokens(a)
    params = sum(p.numel() for p in model.parameters())
    print("canary-torch device=%s torch=%s cuda=%s layers=%d width=%d heads=%d seq=%d batch=%d "
          "vocab=%d params=%d tokens_per_step=%d variant=%s exit=%s profiler=%d markers=%s "
          "slow_ms=%g" %
          (a.device, torch.__version__, torch.version.cuda, a.layers, a.width, a.heads, a.seq,
           a.batch, a.vocab, params, a.batch * a.seq, a.variant, a.exit_mode, int(prof is not None),
           mk.how, a.slow_ms), flush=True)
    print("canary-gate flops_per_token: %d" % flops_per_token(a), flush=True)

    host_x, host_y = data.next()
    graphed = None
    if a.variant == "graphs":  # captured before the first step: its set-up is no step's work
        graphed = GraphStep(model, opt, host_x.to(dev), host_y.to(dev))
    times = []
    first = last = None
    for step in range(a.max_steps):
        if a.print_reserved and dev.type == "cuda":  # the allocator's level the step starts at
            free, total = torch.cuda.mem_get_info()
            print("torch_reserved step=%d reserved=%d allocated=%d device_used=%d" % (
                step, torch.cuda.memory_reserved(), torch.cuda.memory_allocated(), total - free),
                flush=True)
        t0 = time.perf_counter()
        mk.push("step")
        mk.push("copy")
        x, y = host_x.to(dev), host_y.to(dev)  # from pageable host memory
        mk.pop()
        if graphed is not None:
            mk.push("graph")
            loss = graphed.replay(x, y)
            mk.pop()
        else:
            mk.push("forward")
            loss = model(x, y)
            mk.pop()
            mk.push("backward")
            loss.backward()
            mk.pop()
        if a.variant == "reorder":  # the same work, the host's part first
            mk.push("data")
            next_batch = data.next()
            mk.pop()
        mk.push("optimizer")
        opt.step()
        if graphed is None:  # a replay writes the same .grad tensors again
            opt.zero_grad(set_to_none=True)
        mk.pop()
        if a.variant == "sync" and not math.isfinite(loss.item()):  # the extra sync
            print("train_gpt: non-finite loss at step %d" % (step + 1), file=sys.stderr)
            return 5
        if a.variant == "reorder":
            host_x, host_y = next_batch
        else:
            mk.push("data")
            host_x, host_y = data.next()  # the host draws the next batch while the GPU works
            mk.pop()
        value = loss.item()  # synchronises: the step's GPU work ends inside the step
        mk.mark("loss=%r" % value)
        if a.slow_ms > 0:
            mk.push("slow")
            busy_wait(a.slow_ms)
            mk.pop()
        if a.variant == "churn" and dev.type == "cuda":  # allocator churn: the cache let go
            mk.push("release")
            torch.cuda.empty_cache()
            mk.pop()
        mk.pop()
        if prof is not None:
            prof.step()
        times.append(time.perf_counter() - t0)
        if first is None:
            first = value
            files = libcupti_files()
            if files is None:
                print("libcupti_files=unknown (/proc/self/maps unreadable)", flush=True)
            else:
                print("libcupti_files=%d %s" % (len(files), " ".join(files) or "-"), flush=True)
        last = value
        if not math.isfinite(value):
            print("train_gpt: non-finite loss %r at step %d" % (value, step + 1), file=sys.stderr)
            return 5
        if (step + 1) % a.log_every == 0:
            print("step %d loss %.6f" % (step + 1, value), flush=True)

    kept = sorted(times[a.timing_skip:]) if len(times) > a.timing_skip else sorted(times)
    mean_ms = 1e3 * sum(kept) / len(kept)
    median_ms = 1e3 * (kept[len(kept) // 2] if len(kept) % 2 else
                       (kept[len(kept) // 2 - 1] + kept[len(kept) // 2]) / 2)
    print("done steps=%d first_loss=%.6f last_loss=%.6f mean_step_ms=%.3f median_step_ms=%.3f "
          "timed_steps=%d" % (len(times), first, last, mean_ms, median_ms, len(kept)), flush=True)
    if dev.type == "cuda":  # PyTorch's own account, beside the peak the library measures
        print("torch_memory reserved_peak=%d allocated_peak=%d alloc_conf=%s" %
              (torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated(),
               os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "-"), flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)
    if a.exit_mode == "os-exit":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
