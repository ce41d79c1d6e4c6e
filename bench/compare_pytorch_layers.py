#!/usr/bin/python3
"""PyTorch reference for bench_layers: runs bench_layers --json (Ember's figures), then measures the same
training step with torch.nn.MultiheadAttention (8 heads, 512 wide, batch_first, self-attention on (8, 256, 512)
float32: forward, backward of mean(y^2), SGD step) on the same number of threads, and prints both with the
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


def torch_step_ms():
    torch.set_num_threads(THREADS)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
    opt = torch.optim.SGD(mha.parameters(), lr=0.01)
    x = torch.rand(BATCH, SEQ, WIDTH) * 2 - 1

    def step():
        opt.zero_grad(set_to_none=True)
        y, _ = mha(x, x, x, need_weights=False)
        (y * y).mean().backward()
        opt.step()

    step()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        best = min(best, (time.perf_counter() - t0) / 3)
    return best * 1e3


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-layers", default=str(root / "build" / "bench" / "bench_layers"))
    args = parser.parse_args()
    out = subprocess.run([args.bench_layers, "--json"], check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = {r["name"]: r for r in map(json.loads, out.splitlines())}
    ember_ms = rows["mha_train_ms"]["value"]
    ref_ms = torch_step_ms()
    print(f"torch {torch.__version__}, {THREADS} threads; speedup > 1: Ember is faster")
    print(f"{'mha_train_ms':<20} ember {ember_ms:10.3f} ms  torch.nn.MultiheadAttention {ref_ms:10.3f} ms  "
          f"speedup {ref_ms / ember_ms:.3f}x")


if __name__ == "__main__":
    main()
