#!/usr/bin/python3
"""PyTorch reference for bench_layers: runs bench_layers --json (Ember's figures), then measures the same
training steps (forward, backward of mean(y^2), SGD step, float32) in PyTorch on the same number of threads:
torch.nn.MultiheadAttention (8 heads, 512 wide, batch_first, self-attention on (8, 256, 512)) and torch.nn.LSTM
(128 features to 256 units, batch_first, on (64, 100, 128), y the last step's output), and prints both with the
speedup (> 1: Ember is faster). Run it with a Python that has PyTorch (Debian's python3-torch, or a venv).

Usage: compare_pytorch_layers.py [--bench-layers PATH]
"""
import argparse
import json
import os
import pathlib
import subprocess
import time

# Set before torch loads its BLAS (see compare_pytorch.py): OpenBLAS's own threads would fight torch's.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402

THREADS = 2
BATCH, SEQ, WIDTH, HEADS = 8, 256, 512, 8
LSTM_BATCH, LSTM_STEPS, LSTM_FEATURES, LSTM_UNITS = 64, 100, 128, 256


def best_ms(module, forward, reps):
    """The best of 3 rounds of `reps` SGD steps of mean(forward()^2), in ms per step (as bench_layers)."""
    opt = torch.optim.SGD(module.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        y = forward()
        (y * y).mean().backward()
        opt.step()

    step()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e3


def torch_step_ms():
    torch.set_num_threads(THREADS)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
    x = torch.rand(BATCH, SEQ, WIDTH) * 2 - 1
    mha_ms = best_ms(mha, lambda: mha(x, x, x, need_weights=False)[0], 3)
    lstm = torch.nn.LSTM(LSTM_FEATURES, LSTM_UNITS, batch_first=True)
    seq = torch.rand(LSTM_BATCH, LSTM_STEPS, LSTM_FEATURES) * 2 - 1
    lstm_ms = best_ms(lstm, lambda: lstm(seq)[0][:, -1], 2)
    return {"mha_train_ms": (mha_ms, "torch.nn.MultiheadAttention"), "lstm_train_ms": (lstm_ms, "torch.nn.LSTM")}


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-layers", default=str(root / "build" / "bench" / "bench_layers"))
    args = parser.parse_args()
    out = subprocess.run([args.bench_layers, "--json"], check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = {r["name"]: r for r in map(json.loads, out.splitlines())}
    refs = torch_step_ms()
    print(f"torch {torch.__version__}, {THREADS} threads; speedup > 1: Ember is faster")
    for name, (ref_ms, ref_name) in refs.items():
        ember_ms = rows[name]["value"]
        print(f"{name:<20} ember {ember_ms:10.3f} ms  {ref_name:<28} {ref_ms:10.3f} ms  "
              f"speedup {ref_ms / ember_ms:.3f}x")


if __name__ == "__main__":
    main()
