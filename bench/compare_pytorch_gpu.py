#!/usr/bin/env python3
"""PyTorch reference for bench_gpu's ResNet-50 rows and train_fashion_mnist's epochs on a GPU, measured on the
same GPU in the same run (scripts/gpu_check.sh runs it after Ember's benchmarks and passes their rows):

- ResNet-50 as keras.applications.ResNet50 builds it, written here by hand (torchvision may be absent): NHWC
  (channels_last), 224x224x3, 1000 classes, biased convolutions, batch norm epsilon 1.001e-5 and Keras's
  momentum, the stride on each first block's 1x1 convolution (v1). One training step at batch 128 on
  synthetic data already on the GPU, Adam (fused, Keras's epsilon 1e-7), cross-entropy on the logits (the
  softmax folded into the loss, as PyTorch does it), in float32 with TF32 on, under torch.autocast float16
  with a GradScaler, and under torch.autocast bfloat16; each eager and, where capture works, replayed as one
  CUDA graph (whole-step capture with capturable fused Adam);
- the app's MLP (784-256-256-10) and the Keras example CNN: the seconds of one epoch of 60,000 28x28 images at
  batch 128 plus the evaluation of 10,000 (what train_fashion_mnist's seconds_per_epoch counts, its fit having
  validation data), float32 for both and autocast float16 for the CNN. The data are synthetic uint8 images
  kept on the GPU, PyTorch's fastest way for a data set this small.

PyTorch is made as fast as it offers here (cudnn.benchmark, channels_last, fused Adam, CUDA graphs), or the
comparison flatters Ember; each comparison takes PyTorch's faster mode and names it in its reference.

Rows (bench/bench_util.h's format: name, value, unit, reference, reference_value, speedup > 1: the value is
faster): PyTorch's own, `pytorch_*`; with --ember-rows FILE (bench_gpu --json rows, and gpu_check.sh's epoch
rows mlp_epoch_float32, cnn_epoch_float32, cnn_epoch_mixed_float16), also Ember against PyTorch:
resnet50_float32_vs_pytorch, resnet50_mixed_float16_vs_pytorch_amp, resnet50_mixed_bfloat16_vs_pytorch_amp
(speedup = PyTorch's step time / Ember's) and <epoch row>_vs_pytorch.

Usage: compare_pytorch_gpu.py [--json] [--ember-rows FILE] [--only resnet50|epochs] [--device cuda|cpu]
                              [--smoke] [--no-graphs]
  --smoke   tiny sizes (ResNet-50 at 32x32, batch 2; 512-image epochs): checks the script, e.g. on a CPU
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

KERAS_BN_EPSILON = 1.001e-5
KERAS_BN_MOMENTUM = 0.01  # Keras's momentum 0.99 is PyTorch's 0.01
RESNET50_TRAINABLE = 25583592  # keras.applications.ResNet50's trainable parameters (25,636,712 in all)


def bn(channels):
    return nn.BatchNorm2d(channels, eps=KERAS_BN_EPSILON, momentum=KERAS_BN_MOMENTUM)


class Block(nn.Module):
    """Keras's residual_block_v1: the stride on the first 1x1 convolution and on the projection shortcut."""

    def __init__(self, cin, filters, stride, conv_shortcut):
        super().__init__()
        self.shortcut = nn.Sequential(nn.Conv2d(cin, 4 * filters, 1, stride), bn(4 * filters)) if conv_shortcut \
            else None
        self.body = nn.Sequential(nn.Conv2d(cin, filters, 1, stride), bn(filters), nn.ReLU(inplace=True),
                                  nn.Conv2d(filters, filters, 3, 1, 1), bn(filters), nn.ReLU(inplace=True),
                                  nn.Conv2d(filters, 4 * filters, 1), bn(4 * filters))

    def forward(self, x):
        shortcut = x if self.shortcut is None else self.shortcut(x)
        return F.relu(shortcut + self.body(x))


def resnet50(classes=1000):
    """Logits; Keras's top softmax is in the loss."""
    layers = [nn.ZeroPad2d(3), nn.Conv2d(3, 64, 7, 2), bn(64), nn.ReLU(inplace=True), nn.ZeroPad2d(1),
              nn.MaxPool2d(3, 2)]
    cin = 64
    for filters, blocks, stride1 in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Block(cin, filters, stride1 if i == 0 else 1, i == 0))
            cin = 4 * filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def make_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def make_cnn():
    """The Keras example CNN on 28x28x1 (as bench/compare_pytorch.py)."""
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.3), nn.Linear(1600, 128), nn.ReLU(),
                         nn.Linear(128, 10))


AUTOCAST = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}


class Step:
    """One training step of `model` on static input buffers: eager, or captured once as a CUDA graph and
    replayed. float16 scales the loss with a GradScaler, as torch.amp's recipe."""

    def __init__(self, model, x, y, precision, device, graph):
        self.model, self.x, self.y, self.device = model, x, y, device
        self.dtype = AUTOCAST[precision]
        cuda = device == "cuda"
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, fused=cuda, capturable=cuda and graph)
        self.scaler = torch.amp.GradScaler("cuda") if cuda and precision == "float16" else None
        self.graph = None
        if graph:
            self._capture()

    def _eager(self):
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device, dtype=self.dtype or torch.float32, enabled=self.dtype is not None):
            loss = F.cross_entropy(self.model(self.x), self.y)
        if self.scaler is None:
            loss.backward()
            self.opt.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        return loss

    def _capture(self):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs' whole-network recipe
            for _ in range(3):
                self._eager()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.loss = self._eager()

    def __call__(self):
        if self.graph is not None:
            self.graph.replay()
            return self.loss
        return self._eager()


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def resnet50_images_per_second(precision, graph, a):
    size, batch, warmup, steps = (32, 2, 1, 2) if a.smoke else (224, 128, 3, 10)
    torch.manual_seed(5)
    model = resnet50().to(a.device, memory_format=torch.channels_last).train()
    trainable = sum(p.numel() for p in model.parameters())
    if trainable != RESNET50_TRAINABLE:
        sys.exit(f"compare_pytorch_gpu.py: ResNet-50 has {trainable} trainable parameters, Keras's has "
                 f"{RESNET50_TRAINABLE}")
    x = torch.rand(batch, 3, size, size, device=a.device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=a.device)
    step = Step(model, x, y, precision, a.device, graph)
    for _ in range(warmup):
        step()
    sync(a.device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(a.device)
    return batch * steps / (time.perf_counter() - t0)


def epoch_seconds(kind, precision, graph, a):
    """One epoch's seconds (after a warm-up of a few steps): training steps over shuffled batches, then the
    evaluation of the test images (loss and accuracy), as Keras's fit with validation data."""
    train_n, test_n, batch = (512, 256, 128) if a.smoke else (60000, 10000, 128)
    torch.manual_seed(6)
    model = (make_mlp() if kind == "mlp" else make_cnn()).to(a.device).train()
    images = torch.randint(0, 256, (train_n + test_n, 1, 28, 28), dtype=torch.uint8, device=a.device)
    labels = torch.randint(0, 10, (train_n + test_n,), device=a.device)
    x = images[:batch].float().div_(255)  # the step's static input buffers, filled for each batch
    y = labels[:batch].clone()
    step = Step(model, x, y, precision, a.device, graph)
    dtype = AUTOCAST[precision]

    def run_epoch():
        model.train()
        order = torch.randperm(train_n, device=a.device)
        for start in range(0, train_n - batch + 1, batch):  # full batches: the graph's buffers have one shape
            index = order[start:start + batch]
            x.copy_(images[index].float().div_(255))
            y.copy_(labels[index])
            step()
        model.eval()
        correct = torch.zeros((), dtype=torch.int64, device=a.device)
        loss_sum = torch.zeros((), device=a.device)
        with torch.no_grad(), torch.autocast(a.device, dtype=dtype or torch.float32, enabled=dtype is not None):
            for start in range(train_n, train_n + test_n, batch):
                tx = images[start:start + batch].float().div_(255)
                ty = labels[start:start + batch]
                logits = model(tx)
                loss_sum += F.cross_entropy(logits.float(), ty, reduction="sum")
                correct += (logits.argmax(1) == ty).sum()
        return (correct.item(), loss_sum.item())  # the host read that ends Keras's epoch

    for _ in range(5):
        step()
    sync(a.device)
    t0 = time.perf_counter()
    run_epoch()
    sync(a.device)
    return time.perf_counter() - t0


def row(name, value, unit, reference="none", reference_value=0.0, speedup=0.0):
    return {"name": name, "value": value, "unit": unit, "reference": reference, "reference_value": reference_value,
            "speedup": speedup}


def print_row(r, as_json):
    if as_json:
        print(json.dumps(r), flush=True)
    else:
        print(f"{r['name']:<44} {r['value']:12.3f} {r['unit']:<6} {r['reference']:<34} {r['reference_value']:12.3f} "
              f"speedup {r['speedup']:.3f}x", flush=True)


def pytorch_rows(name, results, higher_is_better):
    """PyTorch's rows from {mode: value}, and its best (mode, value) for the comparisons."""
    unit = "img/s" if higher_is_better else "s"
    rows = []  # the eager row is printed as soon as it is measured
    if "eager" in results and "cuda_graph" in results:
        g, e = results["cuda_graph"], results["eager"]
        rows.append(row(f"pytorch_{name}_cuda_graph_vs_eager", g, unit, "pytorch_eager", e,
                        g / e if higher_is_better else e / g))
    return rows, (max if higher_is_better else min)(results.items(), key=lambda kv: kv[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--ember-rows", help="a file of Ember's JSON rows to compare against")
    p.add_argument("--only", choices=("resnet50", "epochs"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--no-graphs", action="store_true")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("compare_pytorch_gpu.py: no GPU visible to PyTorch: skipped", file=sys.stderr)
        return 2
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # float32 rows are TF32, as Ember's (TF's default)
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    ember = {}
    if a.ember_rows:
        with open(a.ember_rows) as f:
            for line in f:
                if line.strip().startswith("{"):
                    r = json.loads(line)
                    ember[r["name"]] = r
    if not a.json:
        name = torch.cuda.get_device_name() if a.device == "cuda" else "CPU"
        print(f"PyTorch {torch.__version__} on {name}", flush=True)

    failed = False
    # (PyTorch's name, autocast precision, Ember's row, comparison row)
    resnet = [("resnet50_float32", "float32", "resnet50_float32", "resnet50_float32_vs_pytorch"),
              ("resnet50_amp_float16", "float16", "resnet50_mixed_float16_vs_float32",
               "resnet50_mixed_float16_vs_pytorch_amp"),
              ("resnet50_amp_bfloat16", "bfloat16", "resnet50_mixed_bfloat16_vs_float32",
               "resnet50_mixed_bfloat16_vs_pytorch_amp")]
    epochs = [("mlp_epoch_float32", "mlp", "float32", "mlp_epoch_float32"),
              ("cnn_epoch_float32", "cnn", "float32", "cnn_epoch_float32"),
              ("cnn_epoch_amp_float16", "cnn", "float16", "cnn_epoch_mixed_float16")]
    jobs = []
    if a.only in (None, "resnet50"):
        jobs += [(name, lambda g, prec=prec: resnet50_images_per_second(prec, g, a), True, ember_name, vs)
                 for name, prec, ember_name, vs in resnet]
    if a.only in (None, "epochs"):
        jobs += [(name, lambda g, k=kind, prec=prec: epoch_seconds(k, prec, g, a), False, ember_name,
                  ember_name + "_vs_pytorch") for name, kind, prec, ember_name in epochs]
    # Every eager measurement first, then the CUDA graphs: a capture that fails can leave the context unusable,
    # and then only graph rows are lost.
    results = {name: {} for name, *_ in jobs}
    jobs_higher = {name: higher_is_better for name, _, higher_is_better, *_ in jobs}
    for mode in ("eager", "cuda_graph") if a.device == "cuda" and not a.no_graphs else ("eager",):
        for name, fn, *_ in jobs:
            try:
                results[name][mode] = fn(mode == "cuda_graph")
                if mode == "eager":  # at once, so that a run stopped by its time limit keeps it
                    print_row(row(f"pytorch_{name}", results[name][mode], "img/s" if jobs_higher[name] else "s"),
                              a.json)
            except Exception as e:  # e.g. a capture PyTorch refuses: the eager figure stands
                print(f"compare_pytorch_gpu.py: {name} ({mode}): {type(e).__name__}: {e}", file=sys.stderr)
                failed |= mode == "eager"
            if a.device == "cuda":
                torch.cuda.empty_cache()
    for name, fn, higher_is_better, ember_name, vs in jobs:
        if not results[name]:
            continue
        rows, (mode, best) = pytorch_rows(name, results[name], higher_is_better)
        for r in rows:
            print_row(r, a.json)
        e = ember.get(ember_name)
        if e is not None and e["value"] > 0:
            speedup = e["value"] / best if higher_is_better else best / e["value"]
            print_row(row(vs, e["value"], e["unit"], f"pytorch_{name}_{mode}", best, speedup), a.json)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
