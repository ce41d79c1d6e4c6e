#!/usr/bin/python3
"""PyTorch reference for bench_train: for each group of rows, runs bench_train --json --only GROUP (Ember's
figures), then measures the same rows in PyTorch on the same data, models, batch sizes, optimizer and loss,
and prints both with the speedup (> 1: Ember is faster). Run it with a Python that has PyTorch: Debian's
/usr/bin/python3 with python3-torch (`make bench` does), or, for PyPI's current release, a venv
(`python3 -m venv venv && venv/bin/pip install torch`, then `venv/bin/python bench/compare_pytorch.py`).

Usage: compare_pytorch.py [--json] [--bench-train PATH] [--only GROUP] [--rounds N]
  --json         one JSON object per line, as the C++ bench programs print (bench/bench_util.h)
  --bench-train  the bench_train executable (default: build/bench/bench_train beside this script's repo)
  --only GROUP   one of mlp128, cnn128, cnn128_bf16, latency, forward, rss, for both programs
  --rounds N     measure each group N times, Ember then PyTorch each time, and print for each row the
                 round with the median speedup and the range of the N speedups (default 1). On a VM whose
                 speed changes every few tens of seconds, one round can catch the two programs at
                 different speeds; the pairs of a round are measured seconds apart.

PyTorch is made as fast as it can be here, or the comparison flatters Ember: Debian's OpenBLAS picks a slow
generic kernel on this CPU unless OPENBLAS_CORETYPE names one, and its own threads fight torch's unless
OPENBLAS_NUM_THREADS=1 (both read when the library loads, so they are set before torch is imported); torch
defaults to one thread here; flushing denormals avoids a 2-3x slowdown once Adam's moments turn subnormal.
"""
import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import time


def _cpu_flags():
    """The CPU's feature flags from /proc/cpuinfo (empty where unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


_flags = _cpu_flags()
_core = "SkylakeX" if "avx512f" in _flags else "Haswell" if "avx2" in _flags else None  # as bench_matmul
if _core:
    os.environ["OPENBLAS_CORETYPE"] = _core
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402  (after the OpenBLAS settings above)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

THREADS = 2
TRAIN_IMAGES = 60000
CNN_STEPS = 60  # as bench_train: the CNN's epoch is projected from this many timed steps
LATENCY_STEPS = 2000  # batch 1 and 8 rows time this many steps
FORWARD_CALLS = 2000
GROUPS = ("rss", "mlp128", "cnn128", "cnn128_bf16", "latency", "forward")
# The targets, by row: the least speedup wanted (or, for memory, the most MiB).
TARGETS = {"mlp_b128_epoch": 1.5, "mlp_b128": 1.5, "cnn_b128": 1.5, "cnn_b128_epoch_est": 1.5,
           "mlp_b1_fit": 5.0, "mlp_b1_train_on_batch": 5.0, "mlp_b8_fit": 5.0, "mlp_b8_train_on_batch": 5.0,
           "cnn_b128_mixed_bfloat16": 1.3}
RSS_TARGET_MIB = 200


def read_idx(path, header_bytes):
    """The uint8 payload of an IDX file (gzip-compressed or not), read straight into a tensor so that the
    peak-memory row does not count a second copy of the images."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        header = f.read(header_bytes)
        count = 1
        for k in range(4, header_bytes, 4):  # the big-endian dimension sizes after the magic number
            count *= int.from_bytes(header[k:k + 4], "big")
        out = torch.empty(count, dtype=torch.uint8)
        if f.readinto(out.numpy()) != count:
            sys.exit(f"compare_pytorch.py: {path} is shorter than its header says")
    return out


def load_fashion_mnist_train():
    """The training split as bench_train reads it: uint8 images [N, 28, 28] and int64 labels."""
    dirs = []
    env = os.environ.get("EMBER_DATA_DIR")
    if env:
        dirs += [os.path.join(env, "fashion-mnist"), env]
    dirs.append("/usr/share/datasets/fashion-mnist")
    names = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    for d in dirs:
        paths = []
        for name in names:
            found = [p for p in (os.path.join(d, name + ".gz"), os.path.join(d, name)) if os.path.exists(p)]
            paths.append(found[0] if found else None)
        if all(paths):
            images = read_idx(paths[0], 16).view(-1, 28, 28)
            return images, read_idx(paths[1], 8).to(torch.int64)
    sys.exit("compare_pytorch.py: Fashion-MNIST not found in " + ", ".join(dirs) +
             " (sudo apt-get install dataset-fashion-mnist)")


def make_mlp():
    """784-256-256-10 with ReLU, logits out."""
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def make_cnn():
    """The Keras example CNN; 28 -> 26 -> 13 -> 11 -> 5, so Flatten gives 64 * 5 * 5."""
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.3), nn.Linear(1600, 128), nn.ReLU(),
                         nn.Linear(128, 10))


class Trainer:
    """A model with Keras's Adam (lr 1e-3, epsilon 1e-7) and the per-step work of Keras's train_step:
    cross-entropy from logits, backward, update, and the running loss and accuracy metrics."""

    def __init__(self, model, image_shape, channels_last=False, autocast=None):
        # channels_last lets oneDNN run the convolutions without reordering (measured here: ~1.3x faster);
        # the multi-tensor (foreach) Adam is ~1.6x faster than the per-parameter loop on these models.
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.model = model.to(memory_format=self.memory_format).train()
        self.shape = (-1,) + image_shape
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, foreach=True)
        # Mixed precision as PyTorch does it on a CPU: the forward pass and the loss under torch.autocast (float32
        # weights, matmuls and convolutions in `autocast`), the backward and the update outside it.
        self.autocast = autocast
        self.reset_metrics()

    def reset_metrics(self):
        """Zeroes the running loss and accuracy (Keras resets them in train_on_batch)."""
        self.loss_sum = torch.zeros(())
        self.correct = torch.zeros((), dtype=torch.int64)
        self.seen = 0

    def results(self):
        """The metrics' values as numbers, what Keras's train_on_batch returns."""
        return {"loss": (self.loss_sum / self.seen).item(), "accuracy": (self.correct / self.seen).item()}

    def step(self, x, y):
        """One training step on a prepared batch, updating the running metrics."""
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=self.autocast, enabled=self.autocast is not None):
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            self.loss_sum += loss.detach() * y.shape[0]
            self.correct += (logits.argmax(1) == y).sum()
            self.seen += y.shape[0]
        return loss

    def batch(self, images, labels, index):
        """The batch at `index` (a slice or index tensor), scaled to [0, 1] float32 here, as Ember's pipeline."""
        x = images[index].to(torch.float32).div_(255.0).view(self.shape)
        return x.contiguous(memory_format=self.memory_format), labels[index]

    def fit(self, images, labels, batch_size, steps=None, shuffle=True):
        """One epoch (or `steps` steps) over the data, a new order each call when shuffling."""
        n = images.shape[0]
        order = torch.randperm(n) if shuffle else None
        total = (n + batch_size - 1) // batch_size if steps is None else steps
        for i in range(total):
            start = (i * batch_size) % n
            index = order[start:start + batch_size] if shuffle else slice(start, start + batch_size)
            self.step(*self.batch(images, labels, index))


def seconds(fn):
    """Wall-clock seconds of one call of fn."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def fit_seconds(trainer, images, labels, batch_size, steps, reps, shuffle=True):
    """Best time of `reps` fit calls after a 5-step warm-up, as bench_train's fit_seconds."""
    trainer.fit(images, labels, batch_size, steps=5, shuffle=shuffle)
    return min(seconds(lambda: trainer.fit(images, labels, batch_size, steps, shuffle)) for _ in range(reps))


def mlp128_rows(images, labels):
    """The MLP at batch 128: one full shuffled epoch."""
    s = fit_seconds(Trainer(make_mlp(), (784,)), images, labels, 128, None, 3)
    return {"mlp_b128_epoch": s, "mlp_b128": ((TRAIN_IMAGES + 127) // 128) / s}


def cnn128_rows(images, labels):
    """The CNN at batch 128: CNN_STEPS shuffled steps, projected to an epoch."""
    s = fit_seconds(Trainer(make_cnn(), (1, 28, 28), channels_last=True), images, labels, 128, CNN_STEPS, 2)
    steps_per_s = CNN_STEPS / s
    return {"cnn_b128": steps_per_s, "cnn_b128_epoch_est": ((TRAIN_IMAGES + 127) // 128) / steps_per_s}


def cnn128_bf16_rows(images, labels):
    """The CNN at batch 128 under torch.autocast bfloat16 (Ember: the mixed_bfloat16 policy), as cnn128_rows."""
    trainer = Trainer(make_cnn(), (1, 28, 28), channels_last=True, autocast=torch.bfloat16)
    s = fit_seconds(trainer, images, labels, 128, CNN_STEPS, 2)
    return {"cnn_b128_mixed_bfloat16": CNN_STEPS / s}


def latency_rows(images, labels):
    """The MLP at batch 1 and 8: LATENCY_STEPS steps as fit takes them and as a train_on_batch loop."""
    rows = {}
    for b in (1, 8):
        trainer = Trainer(make_mlp(), (784,))
        s = fit_seconds(trainer, images, labels, b, LATENCY_STEPS, 2, shuffle=False)
        rows[f"mlp_b{b}_fit"] = LATENCY_STEPS / s
        # train_on_batch: batches prepared beforehand; Keras resets the metrics and returns their values.
        batches = [trainer.batch(images, labels, slice(i * b, (i + 1) * b)) for i in range(256)]

        def loop():
            for i in range(LATENCY_STEPS):
                x, y = batches[i % len(batches)]
                trainer.reset_metrics()
                trainer.step(x, y)
                trainer.results()

        for i in range(20):
            trainer.step(*batches[i])
        rows[f"mlp_b{b}_train_on_batch"] = LATENCY_STEPS / min(seconds(loop) for _ in range(2))
    return rows


def forward_rows(images, labels):
    """The MLP's eager forward pass at batch 1, without autograd (Ember's model(x) outside a tape)."""
    model = make_mlp().eval()
    x = images[:1].to(torch.float32).div_(255.0).view(1, 784)

    def calls():
        for _ in range(FORWARD_CALLS):
            model(x)

    with torch.no_grad():
        calls()
        s = min(seconds(calls) for _ in range(5))
    return {"mlp_b1_forward": s / FORWARD_CALLS * 1e6}


def peak_rss_mib():
    """This process's peak resident set (VmHWM) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def rss_rows(images, labels):
    """One full MLP epoch at batch 128; meant to run alone in its process (see spawn_rss)."""
    Trainer(make_mlp(), (784,)).fit(images, labels, 128)
    return {"mlp_epoch_peak_rss": peak_rss_mib()}


def spawn_rss():
    """This script's rss row in a fresh process, so nothing measured before inflates its peak."""
    out = subprocess.run([sys.executable, __file__, "--rss-child"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def setup_torch():
    """The fastest settings PyTorch has here (the OpenBLAS ones are set at import, above)."""
    torch.set_num_threads(THREADS)
    torch.set_flush_denormal(True)
    torch.manual_seed(42)


GROUP_ROWS = {"mlp128": mlp128_rows, "cnn128": cnn128_rows, "cnn128_bf16": cnn128_bf16_rows, "latency": latency_rows,
              "forward": forward_rows}


def run_bench_train(path, group):
    """Ember's rows of one group from bench_train --json, in its order."""
    cmd = [path, "--json", "--only", group]
    try:
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"compare_pytorch.py: running {' '.join(cmd)} failed: {e}")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def verdict(name, value, speedup):
    """Whether a row meets the issue's target, for the human-readable table."""
    if name == "mlp_epoch_peak_rss":
        return f"target < {RSS_TARGET_MIB} MiB: {'met' if value < RSS_TARGET_MIB else 'missed'}"
    if name in TARGETS:
        return f"target >= {TARGETS[name]:g}x: {'met' if speedup >= TARGETS[name] else 'missed'}"
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bench-train", default=str(pathlib.Path(__file__).resolve().parents[1] /
                                                     "build" / "bench" / "bench_train"))
    parser.add_argument("--only", choices=GROUPS)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)  # spawn_rss's process
    args = parser.parse_args()
    setup_torch()
    if args.rss_child:
        print(json.dumps(rss_rows(*load_fashion_mnist_train())))
        return
    ref_name = f"pytorch_{torch.__version__.split('+')[0]}"
    if not args.json:
        print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
              f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}; speedup > 1: Ember is faster")
    data = None
    # Group by group, Ember then PyTorch (never at once, so they don't share the cores): on a shared machine
    # the two figures of a row then see about the same load.
    for group in (args.only,) if args.only else GROUPS:
        rounds = []  # (Ember's rows, PyTorch's figures) per round
        for _ in range(max(1, args.rounds)):
            ember_rows = run_bench_train(args.bench_train, group)
            if group == "rss":
                reference = spawn_rss()
            else:
                data = data or load_fashion_mnist_train()
                reference = GROUP_ROWS[group](*data)
            rounds.append((ember_rows, reference))
        for i, row in enumerate(rounds[0][0]):
            measured = sorted(((r[0][i], r[1]) for r in rounds), key=lambda pair: speedup_of(pair[0], pair[1]))
            speedups = [speedup_of(row_r, ref_r) for row_r, ref_r in measured]
            median_row, median_ref = measured[(len(measured) - 1) // 2]
            print_row(median_row, median_ref, ref_name, args.json, speedups if len(speedups) > 1 else None)


def speedup_of(row, reference):
    """Ember's speedup over PyTorch for one row (> 1: Ember is faster)."""
    name = row["name"]
    if name not in reference:
        sys.exit(f"compare_pytorch.py: bench_train printed row '{name}', which this script does not measure")
    ref = reference[name]
    return row["value"] / ref if row["higher_is_better"] else ref / row["value"]


def print_row(row, reference, ref_name, as_json, speedups=None):
    """One row, Ember's figure beside PyTorch's, as JSON (bench/bench_util.h's keys) or a table line; with
    several rounds, the median round's figures and every round's speedup."""
    name, value, unit = row["name"], row["value"], row["unit"]
    ref = reference[name]
    speedup = speedup_of(row, reference)
    if as_json:
        line = {"name": name, "value": value, "unit": unit, "reference": ref_name, "reference_value": ref,
                "speedup": round(speedup, 4)}
        if speedups:
            line["round_speedups"] = [round(x, 4) for x in speedups]
        print(json.dumps(line))
    else:
        spread = f" (rounds {speedups[0]:.2f}-{speedups[-1]:.2f}x)" if speedups else ""
        print(f"{name:<24} ember {value:10.3f} {unit:<8} pytorch {ref:10.3f} {unit:<8} "
              f"speedup {speedup:6.3f}x  {verdict(name, value, speedup)}{spread}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
