#!/usr/bin/python3
"""tf.function reference for bench_function: for each case, runs bench_function --json --only CASE (Ember's eager,
ember::function and jit_compile step times), then times the same training step in TensorFlow/Keras run eagerly, as
a tf.function and as a tf.function with jit_compile (XLA), and prints them beside each other with each framework's
compiled step against its own eager one (speedup > 1: the compiled step is faster). The cases are bench_function's:
the Fashion-MNIST MLP at batch 1, 8 and 128 and the Keras example CNN at batch 128, one step each = forward,
cross-entropy from logits, backward, Adam (lr 1e-3, epsilon 1e-7), float32, 2 threads, on random data shaped like
Fashion-MNIST. Run it with a Python that has TensorFlow (`pip install tensorflow-cpu` in a venv).

Usage: compare_tf_function.py [--json] [--bench-function PATH] [--only CASE] [--rounds N]
  --json            one JSON object per line, as the C++ bench programs print (bench/bench_util.h): TensorFlow's
                    tf.function (and XLA) step against its eager one, with Ember's figures as extra keys
  --bench-function  the bench_function executable (default: build/bench/bench_function beside this script's repo)
  --only CASE       one of mlp_b1, mlp_b8, mlp_b128, cnn_b128
  --rounds N        rounds per figure, each figure the median (default 7, as bench_function)
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

THREADS = 2
BATCHES = 8  # distinct random batches cycled through, as bench_function
WARMUP = 10  # steps before timing: tracing and compiling
# name: (model, batch, steps per timed round), as bench_function's cases
CASES = {"mlp_b1": ("mlp", 1, 1000), "mlp_b8": ("mlp", 8, 1000), "mlp_b128": ("mlp", 128, 100),
         "cnn_b128": ("cnn", 128, 6)}
MODES = ("eager", "function", "jit")


def make_model(kind):
    """The MLP (784-256-256-10, relu, logits out) or the Keras example CNN, as bench_function builds them."""
    if kind == "mlp":
        return keras.Sequential([keras.Input((784,)), keras.layers.Dense(256, activation="relu"),
                                 keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
    return keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, activation="relu"),
                             keras.layers.MaxPooling2D(2), keras.layers.Conv2D(64, 3, activation="relu"),
                             keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dropout(0.3),
                             keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])


class Step:
    """One model with Adam and sparse cross-entropy from logits; calling it trains one step (a GradientTape, then
    apply_gradients), eagerly or as a tf.function (with jit_compile for "jit")."""

    def __init__(self, kind, mode):
        keras.utils.set_random_seed(42)
        self.model = make_model(kind)
        self.opt = keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7)
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.opt.build(self.model.trainable_variables)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = self.loss_fn(y, self.model(x, training=True))
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
            return loss

        self.step = step if mode == "eager" else tf.function(step, jit_compile=(mode == "jit"))

    def __call__(self, x, y):
        return self.step(x, y)


def batches(kind, batch):
    """BATCHES (x, y) pairs: pixels in [0, 1), labels in [0, 10)."""
    shape = (batch, 28, 28, 1) if kind == "cnn" else (batch, 784)
    return [(tf.random.uniform(shape), tf.random.uniform((batch,), 0, 10, dtype=tf.int32)) for _ in range(BATCHES)]


def run_steps(step, data, steps, start):
    """Seconds of `steps` steps over data from index start on (the last loss read back, so the work is done)."""
    t0 = time.perf_counter()
    loss = None
    for i in range(steps):
        loss = step(*data[(start + i) % BATCHES])
    float(loss)
    return time.perf_counter() - t0


def tf_case(name, rounds):
    """{mode: us per step} for one case, the modes' rounds interleaved (each round starting with another mode)."""
    kind, batch, steps = CASES[name]
    data = batches(kind, batch)
    runs = {mode: Step(kind, mode) for mode in MODES}
    for step in runs.values():
        run_steps(step, data, WARMUP, 0)
    times = {mode: [] for mode in MODES}
    for r in range(rounds):
        order = MODES[r % 3:] + MODES[:r % 3]
        for mode in order:
            times[mode].append(run_steps(runs[mode], data, steps, r * steps) / steps * 1e6)
    return {mode: statistics.median(t) for mode, t in times.items()}


def run_bench_function(path, name, rounds):
    """Ember's figures for one case from bench_function --json: {mode: us per step}."""
    cmd = [path, "--json", "--only", name, "--rounds", str(rounds)]
    try:
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"compare_tf_function.py: running {' '.join(cmd)} failed: {e}")
    rows = {r["name"]: r for r in (json.loads(line) for line in out.splitlines() if line.startswith("{"))}
    if "function_" + name not in rows or "jit_" + name not in rows:
        sys.exit(f"compare_tf_function.py: bench_function printed no rows function_{name} and jit_{name}")
    return {"eager": rows["function_" + name]["reference_value"], "function": rows["function_" + name]["value"],
            "jit": rows["jit_" + name]["value"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bench-function", default=str(pathlib.Path(__file__).resolve().parents[1] /
                                                        "build" / "bench" / "bench_function"))
    parser.add_argument("--only", choices=tuple(CASES))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    version = tf.__version__
    if not args.json:
        print(f"TensorFlow {version}, Keras {keras.__version__}, {THREADS} threads; us per training step, median of "
              f"{args.rounds} rounds; speedup: a framework's compiled step against its own eager one")
        print(f"{'case':<10} {'ember':>9} {'ember':>9} {'ember':>9} {'tf':>9} {'tf':>9} {'tf':>9} "
              f"{'ember':>7} {'ember':>7} {'tf':>7} {'tf':>7}")
        print(f"{'':<10} {'eager':>9} {'function':>9} {'jit':>9} {'eager':>9} {'function':>9} {'jit':>9} "
              f"{'fn':>7} {'jit':>7} {'fn':>7} {'jit':>7}")
    # Case by case, Ember then TensorFlow (never at once, so they don't share the cores).
    for name in (args.only,) if args.only else tuple(CASES):
        ember = run_bench_function(args.bench_function, name, args.rounds)
        ref = tf_case(name, args.rounds)
        if args.json:
            for mode in ("function", "jit"):
                print(json.dumps({"name": f"tf_{mode}_{name}", "value": ref[mode], "unit": "us/step",
                                  "reference": f"tf_eager_{version}", "reference_value": ref["eager"],
                                  "speedup": round(ref["eager"] / ref[mode], 4),
                                  "ember_eager": ember["eager"], "ember": ember[mode],
                                  "ember_speedup": round(ember["eager"] / ember[mode], 4)}))
        else:
            print(f"{name:<10} {ember['eager']:9.1f} {ember['function']:9.1f} {ember['jit']:9.1f} "
                  f"{ref['eager']:9.1f} {ref['function']:9.1f} {ref['jit']:9.1f} "
                  f"{ember['eager'] / ember['function']:6.3f}x {ember['eager'] / ember['jit']:6.3f}x "
                  f"{ref['eager'] / ref['function']:6.3f}x {ref['eager'] / ref['jit']:6.3f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
