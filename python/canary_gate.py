"""canary_gate: mark a training script's steps and ranges for canary-gate, on any PyTorch build.

    import canary_gate

    for batch in loader:
        with canary_gate.step(tokens=batch.numel()):
            with canary_gate.range("forward"):
                loss = model(batch)
            with canary_gate.range("backward"):
                loss.backward()
            optimizer.step()

step() marks one training step (an NVTX range of the default domain named as canary-gate's
--step-range, "step" by default) whose int64 payload is the step's token count; range(name)
marks a part of a step, which the report times as an op of kind "range" (never a step:
range("step") is timed as "step (part)"); loss(value) reports the step's loss. They go through
the tool's own NVTX library (libcanary-nvtx-shim.so, loaded with ctypes), not through
torch.cuda.nvtx, which raises on CPU-only builds of PyTorch: the same script is measured on a
workstation's CPU build and a GPU runner's CUDA build.

Outside canary-gate every call is a no-op (no library is loaded, nothing is imported): the
script runs as it always did. Under the gate the library is the one the launcher names
(CANARY_GATE_NVTX_LIB), else the one beside the injection library NVTX loads
(NVTX_INJECTION64_PATH): the tool's companions live in one folder. With --steps-from optimizer
the optimizer marks the steps: step() then marks none (its ranges still count), so a step is
never marked twice.

Found without installing: canary-gate puts the folder holding this file first on PYTHONPATH for
a canary run (with --steps-from auto, the default, or optimizer); 'pip install' of the
repository's python/ folder installs this module alone, for --steps-from nvtx or an IDE.

Threading: ranges nest per thread (NVTX push/pop); a step begun on a thread ends on it. The
library is loaded once, at the first call, under a lock. Nothing here synchronises a device.
"""

import contextlib
import ctypes
import operator
import os
import sys
import threading

__version__ = "0.1.0"
__all__ = ["step", "range", "loss", "active", "__version__"]

_SHIM = "libcanary-nvtx-shim.so"
_OPTIMIZER_RANGE = "canary-gate/optimizer-step"
_PART = b" (part)"

_lock = threading.Lock()
_state = None  # None: not looked up yet; else a _Shim (which may be inactive)


class _Shim:
    """The tool's NVTX library, or nothing (every call a no-op)."""

    def __init__(self, environ):
        self.lib = None
        self.payload = False
        self.step_name = None  # None: step() marks nothing
        if not environ.get("NVTX_INJECTION64_PATH"):
            return  # outside the gate
        path = environ.get("CANARY_GATE_NVTX_LIB") or os.path.join(
            os.path.dirname(environ["NVTX_INJECTION64_PATH"]), _SHIM)
        if not os.path.exists(path):
            return  # another NVTX tool (a profiler), not canary-gate
        try:
            lib = ctypes.CDLL(path)
            lib.canary_shim_push.argtypes = [ctypes.c_char_p]
            lib.canary_shim_push.restype = None
            lib.canary_shim_pop.argtypes = []
            lib.canary_shim_pop.restype = None
            lib.canary_shim_mark.argtypes = [ctypes.c_char_p]
            lib.canary_shim_mark.restype = None
        except (OSError, AttributeError) as e:
            print("canary_gate: cannot load canary-gate's NVTX library '%s' (%s): steps and "
                  "ranges are not marked" % (path, e), file=sys.stderr)
            return
        try:
            lib.canary_shim_push_payload.argtypes = [ctypes.c_char_p, ctypes.c_int64]
            lib.canary_shim_push_payload.restype = None
            self.payload = True
        except AttributeError:  # a library older than this module: steps without tokens
            pass
        self.lib = lib
        name = environ.get("CANARY_GATE_STEP_RANGE") or "step"
        if environ.get("CANARY_GATE_STEPS_FROM") != "optimizer" and name != _OPTIMIZER_RANGE:
            self.step_name = name.encode()
        # the names the injection library takes as a step: a part never wears one
        self.step_names = {n.encode() for n in (name, environ.get("CANARY_GATE_STEP_FALLBACK"),
                                                _OPTIMIZER_RANGE) if n}
        self.renamed = {}

    def part_name(self, name):
        """The name a part (range()) is marked with: name, unless the library would take it as a
        step; then name + " (part)", said once on stderr."""
        if name not in self.step_names:
            return name
        part = self.renamed.get(name)
        if part is None:
            part = name + _PART
            while part in self.step_names:
                part += _PART
            self.renamed[name] = part
            text = name.decode("utf-8", "replace")
            print("canary_gate.range(%r): '%s' names canary-gate's steps (canary_gate.step()); "
                  "this part of a step is timed as '%s'"
                  % (text, text, part.decode("utf-8", "replace")), file=sys.stderr, flush=True)
        return part


def _shim():
    global _state
    s = _state
    if s is None:
        with _lock:
            if _state is None:
                _state = _Shim(os.environ)
            s = _state
    return s


def active():
    """True when the calls mark something: the script runs under canary-gate."""
    return _shim().lib is not None


def _tokens(tokens):
    if tokens is None:
        return None
    n = operator.index(tokens)  # an int, or anything integral (a numpy or 0-d integer tensor)
    if n < 0 or n >= 2**63:
        raise ValueError("canary_gate.step: tokens=%d: expected 0 to 2**63 - 1" % n)
    return n


class _Range(contextlib.ContextDecorator):
    """An NVTX push/pop range; step() when step is True."""

    def __init__(self, name, tokens, step):
        if not isinstance(name, str):
            raise TypeError("canary_gate.range: the name must be a str, not %s"
                            % type(name).__name__)
        self._name = name.encode("utf-8")
        self._tokens = tokens
        self._step = step
        self._pushed = threading.local()

    def __enter__(self):
        s = _shim()
        lib = s.lib
        pushed = False
        if lib is not None:
            if not self._step:
                lib.canary_shim_push(s.part_name(self._name))
                pushed = True
            elif s.step_name is not None:
                if self._tokens is not None and s.payload:
                    lib.canary_shim_push_payload(s.step_name, self._tokens)
                else:
                    lib.canary_shim_push(s.step_name)
                pushed = True
        stack = getattr(self._pushed, "stack", None)
        if stack is None:
            stack = self._pushed.stack = []
        stack.append(pushed)
        return self

    def __exit__(self, *exc):
        if self._pushed.stack.pop():
            _shim().lib.canary_shim_pop()
        return False


def step(tokens=None):
    """A context manager (or decorator) marking one training step; tokens: the step's token
    count (an integer >= 0), or None when the step has none (canary-gate's --tokens-per-step
    then gives it)."""
    return _Range("step", _tokens(tokens), True)


def range(name):  # noqa: A001 (canary_gate.range, as torch.cuda.nvtx.range)
    """A context manager (or decorator) marking a part of a step named name (a str): the report
    times it as an op of kind "range". A part is never a step: named as the gate's steps are
    ("step", or --step-range's name), it is timed as "<name> (part)", and stderr says so once."""
    return _Range(name, None, False)


def loss(value):
    """Reports the loss of the step most recently begun. value: a number; float() of a GPU
    tensor synchronises the device, so pass a value the script already has on the host."""
    lib = _shim().lib
    if lib is not None:
        lib.canary_shim_mark(("loss=%r" % float(value)).encode())
