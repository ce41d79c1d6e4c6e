#!/usr/bin/python3
"""torch.compile reference for bench_function: for each case, runs bench_function --json --only CASE (Ember's
eager and ember::function step times), then times the same training step in PyTorch, eager and torch.compile'd,
and prints the four beside each other with Ember's function against torch.compile (speedup > 1: Ember is
faster). The cases are bench_function's: the Fashion-MNIST MLP at batch 1, 8 and 128 and the Keras example CNN
at batch 128, one step each = forward, cross-entropy from logits, backward, Adam (lr 1e-3, epsilon 1e-7, as
Keras), float32, 2 threads, on random data shaped like Fashion-MNIST. Run it with a Python that has PyTorch
(see bench/compare_pytorch.py, whose models and settings this script imports).

Usage: compare_torch_compile.py [--json] [--bench-function PATH] [--only CASE] [--rounds N]
  --json            one JSON object per line, as the C++ bench programs print (bench/bench_util.h), with the
                    eager figures as extra keys
  --bench-function  the bench_function executable (default: build/bench/bench_function beside this script's repo)
  --only CASE       one of mlp_b1, mlp_b8, mlp_b128, cnn_b128
  --rounds N        rounds per figure, each figure the median (default 7, as bench_function)

torch.compile compiles the forward pass with the loss (AOTAutograd compiles the backward from it) and, separately,
the optimizer's step (PyTorch's recipe: the backward call itself is not traced by dynamo); shapes are static, as
ember::function's are. Inductor needs a C++ compiler and Python's headers: where compiling fails, the reason is
printed and the torch.compile column reads n/a.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_pytorch as cp  # noqa: E402  (sets OpenBLAS's environment, then imports torch)
import torch  # noqa: E402
from torch import nn  # noqa: E402

BATCHES = 8  # distinct random batches cycled through, as bench_function
WARMUP = 10  # steps before timing: compiling, and recompiling once Adam's state exists
# name: (model, batch, steps per timed round), as bench_function's cases
CASES = {"mlp_b1": ("mlp", 1, 1000), "mlp_b8": ("mlp", 8, 1000), "mlp_b128": ("mlp", 128, 100),
         "cnn_b128": ("cnn", 128, 6)}


class Step:
    """One model with Adam and CrossEntropyLoss; calling it trains one step. compiled: torch.compile the forward
    with the loss and the optimizer's step."""

    def __init__(self, kind, compiled):
        torch.manual_seed(42)  # eager and compiled start from the same weights
        self.channels_last = kind == "cnn"  # as compare_pytorch: oneDNN's convolutions without reorders
        model = cp.make_cnn() if kind == "cnn" else cp.make_mlp()
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        self.model = model.to(memory_format=fmt).train()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, eps=1e-7, foreach=True)
        loss_fn = nn.CrossEntropyLoss()

        def forward_loss(x, y):
            return loss_fn(self.model(x), y)

        self.forward_loss = torch.compile(forward_loss, dynamic=False) if compiled else forward_loss
        self.update = torch.compile(self.opt.step, dynamic=False) if compiled else self.opt.step

    def __call__(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = self.forward_loss(x, y)
        loss.backward()
        self.update()
        return loss


def batches(kind, batch):
    """BATCHES (x, y) pairs: pixels in [0, 1), labels in [0, 10)."""
    out = []
    for _ in range(BATCHES):
        if kind == "cnn":
            x = torch.rand(batch, 1, 28, 28).contiguous(memory_format=torch.channels_last)
        else:
            x = torch.rand(batch, 784)
        out.append((x, torch.randint(0, 10, (batch,))))
    return out


def run_steps(step, data, steps, start):
    """Seconds of `steps` steps over data from index start on."""
    t0 = time.perf_counter()
    for i in range(steps):
        step(*data[(start + i) % BATCHES])
    return time.perf_counter() - t0


def torch_case(name, rounds):
    """(eager us/step, compiled us/step or None, compile seconds or the failure's reason) for one case."""
    kind, batch, steps = CASES[name]
    torch._dynamo.reset()  # each case compiles afresh, not on top of the previous case's guards
    data = batches(kind, batch)
    eager = Step(kind, compiled=False)
    run_steps(eager, data, WARMUP, 0)
    compiled, compile_note = None, None
    try:
        compiled = Step(kind, compiled=True)
        compile_note = run_steps(compiled, data, WARMUP, 0)
    except Exception as e:  # noqa: BLE001  (inductor fails in many ways: no compiler, no headers, ...)
        compiled, compile_note = None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
    eager_us, compiled_us = [], []
    for r in range(rounds):
        # Alternating which goes first, as bench_function, so that neither always follows the other.
        order = [("e", eager), ("c", compiled)] if r % 2 == 0 else [("c", compiled), ("e", eager)]
        for tag, step in order:
            if step is None:
                continue
            us = run_steps(step, data, steps, r * steps) / steps * 1e6
            (eager_us if tag == "e" else compiled_us).append(us)
    return statistics.median(eager_us), statistics.median(compiled_us) if compiled_us else None, compile_note


def run_bench_function(path, name, rounds):
    """Ember's row for one case from bench_function --json: (eager us, function us)."""
    cmd = [path, "--json", "--only", name, "--rounds", str(rounds)]
    try:
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"compare_torch_compile.py: running {' '.join(cmd)} failed: {e}")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    row = next((r for r in rows if r["name"] == "function_" + name), None)
    if row is None:
        sys.exit(f"compare_torch_compile.py: bench_function printed no row function_{name}")
    return row["reference_value"], row["value"]


def fmt(x):
    return f"{x:10.1f}" if x is not None else f"{'n/a':>10}"


def print_row(name, ember_eager, ember_function, torch_eager, torch_compiled, ref_name, as_json):
    """One case: Ember's two figures and PyTorch's two; speedup = torch.compile / Ember function."""
    speedup = torch_compiled / ember_function if torch_compiled is not None else None
    if as_json:
        print(json.dumps({"name": "function_" + name, "value": ember_function, "unit": "us/step",
                          "reference": ref_name, "reference_value": torch_compiled,
                          "speedup": round(speedup, 4) if speedup is not None else None,
                          "ember_eager": ember_eager, "torch_eager": torch_eager}))
    else:
        vs = f"{speedup:7.3f}x" if speedup is not None else f"{'n/a':>8}"
        print(f"{name:<10} {ember_eager:10.1f} {ember_function:10.1f} {torch_eager:10.1f} {fmt(torch_compiled)} "
              f"{vs} {torch_eager / ember_function:8.3f}x")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bench-function", default=str(pathlib.Path(__file__).resolve().parents[1] /
                                                        "build" / "bench" / "bench_function"))
    parser.add_argument("--only", choices=tuple(CASES))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cp.setup_torch()
    ref_name = f"torch.compile_{torch.__version__.split('+')[0]}"
    if not args.json:
        print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; us per training step, median of "
              f"{args.rounds} rounds; speedup > 1: Ember's function is faster")
        print(f"{'case':<10} {'ember':>10} {'ember':>10} {'torch':>10} {'torch':>10} {'vs':>8} {'vs torch':>9}")
        print(f"{'':<10} {'eager':>10} {'function':>10} {'eager':>10} {'compile':>10} {'compile':>8} {'eager':>9}")
    notes = []
    # A rerun finds the kernels in inductor's on-disk cache, so its warm-up is not a first compile's cost.
    cache_note = " (inductor's FX graph cache on)" if torch._inductor.config.fx_graph_cache else ""
    # Case by case, Ember then PyTorch (never at once, so they don't share the cores).
    for name in (args.only,) if args.only else tuple(CASES):
        ember_eager, ember_function = run_bench_function(args.bench_function, name, args.rounds)
        torch_eager, torch_compiled, note = torch_case(name, args.rounds)
        print_row(name, ember_eager, ember_function, torch_eager, torch_compiled, ref_name, args.json)
        notes.append(f"{name}: torch.compile " +
                     (f"warm-up ({WARMUP} steps, compiling) {note:.1f} s" + cache_note if torch_compiled is not None
                      else f"failed, {note}"))
    # Compile times and failures go to stderr with --json, so stdout stays one JSON object per line.
    print("\n".join(notes), file=sys.stderr if args.json else sys.stdout)


if __name__ == "__main__":
    main()
