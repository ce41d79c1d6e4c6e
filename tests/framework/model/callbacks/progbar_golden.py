"""Prints the golden strings of tests/framework/model/callbacks/test_progbar.cpp from the reference:
tf-keras's Progbar (pip package tf_keras, tf_keras/src/utils/generic_utils.py) driven by a fake clock.

Usage: PYTHONPATH=<dir holding tf_keras> python3 progbar_golden.py

Ember's non-terminal mode writes only each bar's finished line (tf-keras writes every redraw, each
after a "\\n"), so for those cases the expected text is tf-keras's final message without its leading
"\\n" and without the blanking spaces a redraw pads with.
"""
import io
import math
import sys

from tf_keras.src.utils import generic_utils

NAN = float("nan")
INF = float("inf")

# name: (target (None: unknown), verbose, dynamic, stateful names ("all": every name), steps), each
# step (clock time, current, values, finalize (None: default)); the Progbar is made at time 0.
CASES = {
    "dynamic": (5, 1, True, "all", [
        (0.2, 1, [("loss", 0.5)], None),
        (0.21, 2, [("loss", 0.45)], None),  # within the 0.05 s interval: not drawn
        (0.4, 3, [("loss", 0.4), ("accuracy", 0.75)], None),
        (1.0, 5, [("loss", 0.4123), ("accuracy", 0.8521)], None),
    ]),
    "plain": (5, 1, False, "all", [
        (0.2, 1, [("loss", 0.5)], None),
        (0.4, 3, [("loss", 0.4), ("accuracy", 0.75)], None),
        (1.0, 5, [("loss", 0.4123), ("accuracy", 0.8521), ("val_loss", 0.5)], None),
    ]),
    "big_target": (469, 1, True, "all", [
        (0.5, 1, [("loss", 2.3)], None),
        (0.6, 12, [("loss", 0.4)], None),
        (3.0, 469, [("loss", 0.4123), ("accuracy", 0.8521)], None),
    ]),
    "unknown": (None, 1, True, "all", [
        (0.1, 1, [("loss", 1.0)], None),
        (0.3, 2, [("loss", 0.9)], None),
        (0.5, 3, [("loss", 0.8)], True),
    ]),
    "formats": (4, 1, True, "all", [
        (0.001, 1, [("a", 0.0005), ("b", -0.5), ("c", 1234.5678), ("d", 0.001), ("e", NAN),
                    ("f", -INF), ("g", -0.0002)], None),
        (0.0015, 4, [], None),
    ]),
    "averaged": (4, 1, True, [], [
        (1.0, 1, [("loss", 1.0)], None),
        (2.0, 3, [("loss", 0.5)], None),
        (3.0, 4, [("loss", 0.25)], None),
    ]),
    "eta_hours": (100000, 1, True, "all", [
        (0.5, 1, [], None),
        (1.5, 2, [], None),
        (301.5, 1000, [], None),
        (50000.0, 100000, [], None),
    ]),
    "verbose2": (10, 2, True, "all", [
        (0.5, 3, [("loss", 0.7)], None),
        (2.0, 10, [("loss", 0.5), ("accuracy", -0.25), ("val_loss", 0.0005)], None),
    ]),
}


class FakeTime:
    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now


def run(target, verbose, dynamic, stateful, steps):
    clock = FakeTime()
    generic_utils.time = clock
    names = sorted({k for _, _, values, _ in steps for k, _ in values})
    bar = generic_utils.Progbar(target, verbose=verbose,
                                stateful_metrics=names if stateful == "all" else stateful)
    bar._dynamic_display = dynamic
    # With the real clock the first update is always drawn (time.time() is far from 0); a clock that
    # starts at 0 needs this to behave the same.
    bar._last_update = -math.inf
    out = []
    for t, current, values, finalize in steps:
        clock.now = t
        saved, sys.stdout = sys.stdout, io.StringIO()
        try:
            bar.update(current, values, finalize=finalize)
        finally:
            text, sys.stdout = sys.stdout.getvalue(), saved
        out.append(text)
    if not dynamic and verbose == 1:
        out = [t[1:].rstrip("\n").rstrip(" ") + "\n" if t.endswith("\n") else "" for t in out]
    return out


def cpp_literal(s):
    """A C++ expression for s, with a leading run of backspaces written as backspaces(n)."""
    n = len(s) - len(s.lstrip("\b"))
    body = '"' + s[n:].replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r").replace(
        "\n", "\\n") + '"'
    return f"backspaces({n}) + {body}" if n else body


for name, case in CASES.items():
    print(f"// {name}")
    for text in run(*case):
        print("  " + cpp_literal(text) + ",")
