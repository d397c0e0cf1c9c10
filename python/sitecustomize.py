"""canary-gate's sitecustomize: runs the user's own sitecustomize, then marks steps from the
optimizer when the launcher asked for it (canary_gate_steps.py, beside this file).

canary-gate puts this folder first on PYTHONPATH for a canary run with --steps-from auto or
optimizer, keeping the user's PYTHONPATH after it; Python imports the first sitecustomize on
sys.path, this one, which first finds and runs the next one on the path (the user's, or the
distribution's), so that one still runs, under the same module name.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _run_next_sitecustomize():
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    rest = [p for p in sys.path if os.path.realpath(os.path.abspath(p or ".")) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _run_next_sitecustomize()
finally:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import canary_gate_steps
    finally:
        del sys.path[0]
    canary_gate_steps.install_from_environment()
