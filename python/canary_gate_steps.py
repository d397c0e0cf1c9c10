"""Steps from the optimizer: canary-gate marks training steps in a PyTorch script that marks none.

canary-gate puts this folder first on PYTHONPATH when it runs a canary with --steps-from auto or
optimizer; its sitecustomize.py imports this module, which does nothing unless the launcher set
CANARY_GATE_STEPS_FROM. Then, once the script imports torch.optim, every completed step() of the
counted optimizer ends one step and begins the next: an NVTX start/end range of the default
domain named CANARY_GATE_OPTIMIZER_RANGE, emitted through the tool's small NVTX library
(CANARY_GATE_NVTX_LIB, loaded with ctypes), so it works with CPU-only and CUDA builds of PyTorch
alike and the injection library sees it as any NVTX range. A step is the time from the end of
one optimizer step to the end of the next (the first optimizer step begins the first range).

The counted optimizer is the N-th to call step() (CANARY_GATE_STEP_OPTIMIZER, default 1): with
several optimizers per training step (a GAN's discriminator and generator) the first to step
counts. Optimizers are numbered among those alive (weak references, never addresses): a script
that makes a fresh optimizer each epoch has each one counted in turn, the last one garbage once
the new one is bound to its name; an optimizer the script keeps alive keeps its number. Gradient
accumulation gives one step per optimizer step. A step() called from inside another (an optimizer
subclass calling super().step()) is counted once.

What a step holds is counted too, so that a change in it is seen: every backward pass
(torch.autograd.backward, which Tensor.backward calls; one made inside a running pass, a
reentrant checkpoint's, is part of it; one another thread begins meanwhile is one more) and every
optimizer's step() are NVTX marks ("canary-gate/backward", "canary-gate/optimizer-step-made") the
injection library counts per step (the counts backward and optimizer_steps). A pull request that
makes the counted optimizer step five times per iteration, or accumulates gradients over more
backward passes, changes them: its steps are another unit of work, not a faster or slower one.

Hooks: PyTorch 2.x's global optimizer step post-hook
(torch.optim.optimizer.register_optimizer_step_post_hook); before it (1.13) the step() of each
optimizer class is wrapped when its first instance is made. Nothing here synchronises a device,
and nothing is imported before the script imports torch.optim itself.

With CANARY_GATE_STEPS_FROM=auto the injection library decides: a script whose own NVTX "step"
ranges come first keeps them, and these ranges are then ignored.
"""

import atexit
import ctypes
import importlib.abc
import os
import sys
import threading
import weakref

_OPTIMIZER_MODULE = "torch.optim.optimizer"


class _Marker:
    """Start/end NVTX ranges of the default domain through the tool's NVTX library."""

    def __init__(self, lib_path, name):
        lib = ctypes.CDLL(lib_path)
        lib.canary_shim_start.argtypes = [ctypes.c_char_p]
        lib.canary_shim_start.restype = ctypes.c_uint64
        lib.canary_shim_end.argtypes = [ctypes.c_uint64]
        lib.canary_shim_end.restype = None
        lib.canary_shim_mark.argtypes = [ctypes.c_char_p]
        lib.canary_shim_mark.restype = None
        self._start = lib.canary_shim_start
        self._end = lib.canary_shim_end
        self._mark = lib.canary_shim_mark
        self._name = name.encode()
        self._open = None

    def hooked(self):
        """A mark once the optimizers are hooked: NVTX loads the injection library now, so a
        script that then steps no optimizer is told it marked no step (not that the library
        never loaded)."""
        self._mark(b"canary-gate/optimizer-hooked")

    def backward(self):
        """A backward pass begun (counted in the step it begins in: the count backward)."""
        self._mark(b"canary-gate/backward")

    def optimizer_step(self):
        """An optimizer step made, any optimizer's (the count optimizer_steps); the counted
        optimizer's is marked before its boundary, so it counts in the step it ends."""
        self._mark(b"canary-gate/optimizer-step-made")

    def boundary(self):
        """Ends the running step (if any) and begins the next."""
        if self._open is not None:
            self._end(self._open)
        self._open = self._start(self._name)


class _Counter:
    """Turns completed step() calls of the counted optimizer into step boundaries.

    Optimizers are numbered in the order they first call step(): the list holds weak references,
    so one that is garbage (a script making a fresh optimizer each epoch) leaves its place to the
    next new one to step, whatever the addresses of either, and a live one keeps its place."""

    def __init__(self, marker, which):
        self._marker = marker
        self._which = which  # 1-based, in the order optimizers first call step()
        self._order = []  # weak references, in the order of their first step()
        self._most = 0  # the most optimizers alive at once that had stepped
        self._lock = threading.Lock()
        self._depth = threading.local()

    def _place(self, optimizer):
        """optimizer's number (1-based) among the optimizers that have stepped: a new one takes
        the first place an optimizer now garbage left, else the next; a live one keeps its own
        (the list is never compacted, so the generator a GAN keeps stays #2 while each epoch's
        critic optimizer takes #1 in turn)."""
        free = None
        for i, r in enumerate(self._order):
            o = r()
            if o is optimizer:
                return i + 1
            if o is None and free is None:
                free = i
        try:
            ref = weakref.ref(optimizer)
        except TypeError:  # no weak references (a __slots__ class): kept for good
            ref = lambda o=optimizer: o  # noqa: E731
        if free is None:
            self._order.append(ref)
            free = len(self._order) - 1
        else:
            self._order[free] = ref
        self._most = max(self._most, sum(1 for r in self._order if r() is not None))
        return free + 1

    def stepped(self, optimizer):
        with self._lock:
            self._marker.optimizer_step()
            if self._place(optimizer) == self._which:
                self._marker.boundary()

    def backward(self):
        self._marker.backward()

    def hooked(self):
        self._marker.hooked()

    def report(self):
        """At exit: a counted optimizer that never stepped (fewer optimizers than
        --step-optimizer asks for) is said on stderr, where the gate's hint points."""
        if 0 < self._most < self._which:
            print("canary-gate: --step-optimizer %d, but the script stepped %d optimizer%s: no "
                  "step was marked" % (self._which, self._most, "" if self._most == 1 else "s"),
                  file=sys.stderr, flush=True)

    def enter(self):
        d = getattr(self._depth, "n", 0)
        self._depth.n = d + 1
        return d == 0

    def leave(self):
        self._depth.n -= 1


def _wrap_class_step(cls, counter):
    """Wraps cls.step once (PyTorch without global step hooks)."""
    step = cls.__dict__.get("step")
    if step is None or getattr(step, "_canary_gate_wrapped", False):
        return

    def wrapped(self, *args, **kwargs):
        outer = counter.enter()
        try:
            result = step(self, *args, **kwargs)
        finally:
            counter.leave()
        if outer:
            counter.stepped(self)
        return result

    wrapped.__name__ = getattr(step, "__name__", "step")
    wrapped.__doc__ = getattr(step, "__doc__", None)
    wrapped._canary_gate_wrapped = True
    wrapped.hooked = True  # PyTorch 1.13's profiler wrapper checks this flag: wrap once
    setattr(cls, "step", wrapped)


def _in_backward_probe(torch):
    """A function telling whether the calling thread is running a backward pass (the autograd
    engine's node being evaluated on it: a custom Function's backward, a hook, on the caller's
    thread or a device's autograd thread), or None when this PyTorch cannot tell.
    torch._C._will_engine_execute_node answers for the thread's current graph task and raises
    when there is none."""
    will_execute = getattr(getattr(torch, "_C", None), "_will_engine_execute_node", None)
    if will_execute is None:
        return None
    try:
        node = (torch.zeros(1, requires_grad=True) * 1).grad_fn  # any node: kept alive here
    except Exception:  # noqa: BLE001 (never break the script)
        return None

    def in_backward():
        try:
            will_execute(node)
            return True
        except RuntimeError:
            return False

    return in_backward


def _wrap_backward(counter):
    """Counts the backward passes (torch.autograd.backward, which Tensor.backward calls): a call
    made on a thread that is not running one. A reentrant checkpoint's backward calls
    torch.autograd.backward from inside the outer pass (on the device's autograd thread on a
    GPU): that is part of the outer pass, not one more; a pass another thread begins meanwhile
    (two models trained on two threads) is one more. Without the engine's answer (older PyTorch)
    a call made while no other is running in the process counts."""
    autograd = sys.modules.get("torch.autograd")
    backward = getattr(autograd, "backward", None)
    if backward is None or getattr(backward, "_canary_gate_wrapped", False):
        return
    in_backward = _in_backward_probe(sys.modules.get("torch"))
    running = [0]
    lock = threading.Lock()

    def wrapped(*args, **kwargs):
        if in_backward is not None:
            if not in_backward():
                counter.backward()
            return backward(*args, **kwargs)
        with lock:
            first = running[0] == 0
            running[0] += 1
        if first:
            counter.backward()
        try:
            return backward(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    wrapped.__name__ = getattr(backward, "__name__", "backward")
    wrapped.__doc__ = getattr(backward, "__doc__", None)
    wrapped.__wrapped__ = backward
    wrapped._canary_gate_wrapped = True
    autograd.backward = wrapped


def _install(module, counter):
    """Hooks the optimizers of torch.optim.optimizer (the module just executed) and counts the
    backward passes."""
    _wrap_backward(counter)
    counter.hooked()
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is not None:

        def post_hook(optimizer, args, kwargs):
            counter.stepped(optimizer)

        register(post_hook)
        return
    base = module.Optimizer
    init = base.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        for cls in type(self).__mro__:
            if cls is base or (isinstance(cls, type) and issubclass(cls, base)):
                _wrap_class_step(cls, counter)

    base.__init__ = __init__


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then installs the hooks."""

    def __init__(self, real, counter):
        self._real = real
        self._counter = counter

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        try:
            _install(module, self._counter)
        except Exception as e:  # never break the script
            print("canary-gate: cannot hook the optimizers (%s): steps are not marked" % e,
                  file=sys.stderr)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds torch.optim.optimizer with the other finders and hooks it once executed."""

    def __init__(self, counter):
        self._counter = counter

    def find_spec(self, name, path, target=None):
        if name != _OPTIMIZER_MODULE:
            return None
        sys.meta_path.remove(self)  # once; the real finders do the finding
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader, self._counter)
        return spec


def install_from_environment(environ=os.environ):
    """Called by sitecustomize: hooks the optimizers when the launcher asked for it."""
    how = environ.get("CANARY_GATE_STEPS_FROM", "")
    if how not in ("auto", "optimizer"):
        return
    lib = environ.get("CANARY_GATE_NVTX_LIB", "")
    name = environ.get("CANARY_GATE_OPTIMIZER_RANGE", "")
    try:
        which = int(environ.get("CANARY_GATE_STEP_OPTIMIZER", "1"))
        marker = _Marker(lib, name)
    except (OSError, ValueError, AttributeError) as e:
        print("canary-gate: cannot mark steps from the optimizer (%s, CANARY_GATE_NVTX_LIB=%s)"
              % (e, lib), file=sys.stderr)
        return
    counter = _Counter(marker, which)
    if which > 1:
        atexit.register(counter.report)
    if _OPTIMIZER_MODULE in sys.modules:
        _install(sys.modules[_OPTIMIZER_MODULE], counter)
    else:
        sys.meta_path.insert(0, _Finder(counter))
