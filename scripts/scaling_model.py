#!/usr/bin/env python3
"""Data-parallel scaling model for 8 GPUs x N nodes (docs/distributed_scaling.md).

Simulates one synchronous training step per replica: a forward pass, a backward pass that makes the gradients
ready in reverse layer order at an even rate, and the gradient all-reduce in buckets of `--bucket-mb`, each
bucket started when its gradients are ready and the previous bucket is done (one communication stream), or,
without overlap, one all-reduce after the backward pass. Prints the step time and the scaling efficiency
(one GPU's step time / the step time at that scale, weak scaling: a fixed batch per GPU).

All-reduce times follow the alpha-beta model NCCL's documentation uses: a ring moves 2(p-1)/p of the buffer
through the slowest link (bus bandwidth) and pays 2(p-1) latencies; a double binary tree pays about 2 log2(p)
latencies and moves the buffer twice through its links. Inside a node the links are NVLink; across nodes each
GPU has its own NIC (rail-optimised), so a ring across nodes runs at the NIC's bandwidth.

Standard library only. Usage: scripts/scaling_model.py [--model resnet50|bert_large] [--bucket-mb 32] ...
"""
import argparse
import math

MODELS = {
    # parameters, compute time of a forward+backward step per GPU (s): assumptions, see the doc
    "resnet50": (25.6e6, 0.085),     # batch 256 per GPU, mixed precision, ~3,000 images/s on an H100
    "bert_large": (340e6, 0.200),    # batch 32 x 512 tokens per GPU, mixed precision
}


def allreduce_seconds(nbytes, gpus, algorithm, hw):
    """Time of one all-reduce of nbytes over `gpus` GPUs (8 per node)."""
    if gpus == 1:
        return 0.0
    nodes = math.ceil(gpus / 8)
    busbw = hw["nvlink_busbw"] if nodes == 1 else hw["nic_busbw"]
    alpha = hw["alpha_intra"] if nodes == 1 else hw["alpha_inter"]
    if algorithm == "ring":
        return 2 * (gpus - 1) / gpus * nbytes / busbw + 2 * (gpus - 1) * alpha
    # Double binary tree across nodes, chains inside them: log latency, about the ring's bandwidth.
    inside = min(gpus, 8)
    latency = 2 * math.ceil(math.log2(max(nodes, 2))) * hw["alpha_inter"] + 2 * (inside - 1) * hw["alpha_intra"]
    return 2 * nbytes / busbw + latency


def step_seconds(params, compute, gpus, algorithm, bucket_bytes, overlap, hw, grad_bytes=4):
    total = params * grad_bytes
    forward, backward = compute / 3, 2 * compute / 3
    if not overlap or gpus == 1:
        return compute + allreduce_seconds(total, gpus, algorithm, hw)
    comm_free = 0.0
    done = 0.0
    sent = 0.0
    while sent < total:
        size = min(bucket_bytes, total - sent)
        sent += size
        ready = forward + backward * sent / total  # the bucket's last gradient is final
        start = max(ready, comm_free)
        comm_free = start + allreduce_seconds(size, gpus, algorithm, hw)
        done = comm_free
    return max(forward + backward, done)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(MODELS), default="resnet50")
    p.add_argument("--bucket-mb", type=float, default=32.0)
    p.add_argument("--grad-bytes", type=int, default=4, help="bytes per gradient value (4: float32, 2: float16)")
    p.add_argument("--nvlink-busbw", type=float, default=450e9, help="intra-node all-reduce bus bandwidth, B/s")
    p.add_argument("--nic-busbw", type=float, default=45e9, help="inter-node bus bandwidth per GPU, B/s")
    p.add_argument("--alpha-intra", type=float, default=5e-6, help="latency per step inside a node, s")
    p.add_argument("--alpha-inter", type=float, default=15e-6, help="latency per step across nodes, s")
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    a = p.parse_args()
    hw = {"nvlink_busbw": a.nvlink_busbw, "nic_busbw": a.nic_busbw, "alpha_intra": a.alpha_intra,
          "alpha_inter": a.alpha_inter}
    params, compute = MODELS[a.model]
    bucket = a.bucket_mb * 2**20
    print(f"model {a.model}: {params / 1e6:.1f}M parameters, {params * a.grad_bytes / 2**20:.0f} MiB of gradients, "
          f"{compute * 1e3:.0f} ms compute per step; buckets of {a.bucket_mb:g} MiB")
    print(f"{'GPUs':>6} {'ring, no overlap':>18} {'ring, overlap':>15} {'tree, overlap':>15}")
    base = step_seconds(params, compute, 1, "ring", bucket, True, hw, a.grad_bytes)
    for n in a.nodes:
        gpus = 8 * n
        cells = []
        for algorithm, overlap in (("ring", False), ("ring", True), ("tree", True)):
            t = step_seconds(params, compute, gpus, algorithm, bucket, overlap, hw, a.grad_bytes)
            cells.append(f"{t * 1e3:7.1f} ms {base / t:4.0%}")
        print(f"{gpus:>6} {cells[0]:>18} {cells[1]:>15} {cells[2]:>15}")


if __name__ == "__main__":
    main()
