#!/usr/bin/python3
"""Mixed precision's gain in Ember and in PyTorch on this CPU, in the same run.

For the MLP and the Keras example CNN at batch 128 (the models of bench/compare_pytorch.py), each framework's
training step under float32, float16 and bfloat16: Ember's `mixed_float16` / `mixed_bfloat16` policies from
`build/bench/bench_mixed --json`, PyTorch's `torch.autocast("cpu", dtype)` around the forward pass and the loss
(float32 weights, foreach Adam, channels_last). Prints, per model and half type, each framework's gain over its own
float32 step (float32 time / mixed time) and Ember's speed against PyTorch's under that policy. Needs a Python with
PyPI's torch (e.g. `python3 -m venv venv && venv/bin/pip install torch`, then
`venv/bin/python bench/compare_pytorch_mixed.py`); CI never runs it.
"""
import argparse
import json
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_pytorch as cp  # noqa: E402  (its OpenBLAS settings come before torch's import)
import torch  # noqa: E402

# Timed steps per measurement: PyTorch's float16 convolutions on a CPU take seconds a step.
STEPS = {"mlp": {None: 40, torch.float16: 40, torch.bfloat16: 40},
         "cnn": {None: 10, torch.float16: 2, torch.bfloat16: 10}}
MODELS = {"mlp": (cp.make_mlp, (784,), False), "cnn": (cp.make_cnn, (1, 28, 28), True)}
POLICIES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def torch_step_ms(model, dtype, images, labels):
    """PyTorch's training step in ms (best of 3 timed runs after a 3-step warm-up)."""
    make, shape, channels_last = MODELS[model]
    torch.manual_seed(42)
    trainer = cp.Trainer(make(), shape, channels_last=channels_last, autocast=dtype)
    steps = STEPS[model][dtype]
    trainer.fit(images, labels, 128, steps=3)
    return min(cp.seconds(lambda: trainer.fit(images, labels, 128, steps)) for _ in range(3)) / steps * 1e3


def ember_rows(bench_mixed, model):
    """bench_mixed's step rows of one model, by name."""
    cmd = [bench_mixed, "--json", "--only", model]
    try:
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"compare_pytorch_mixed.py: running {' '.join(cmd)} failed: {e}")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["name"]: r for r in rows if r["name"].endswith("_step")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bench-mixed", default=str(pathlib.Path(__file__).resolve().parents[1] /
                                                     "build" / "bench" / "bench_mixed"))
    parser.add_argument("--only", choices=tuple(MODELS))
    args = parser.parse_args()
    cp.setup_torch()
    images, labels = cp.load_fashion_mnist_train()
    ref_name = f"pytorch_{torch.__version__.split('+')[0]}"
    if not args.json:
        print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; batch 128, ms per training step; "
              "gain: the framework's float32 step time / its mixed step time")
        print(f"{'row':34} {'ember':>8} {'gain':>7} {'torch':>9} {'gain':>7}  ember vs torch")
    for model in (args.only,) if args.only else tuple(MODELS):
        ember = ember_rows(args.bench_mixed, model)  # Ember first, then PyTorch: never both at once
        torch_f32 = torch_step_ms(model, None, images, labels)
        for policy, dtype in POLICIES.items():
            row = ember[f"{model}_mixed_{policy}_step"]
            torch_ms = torch_step_ms(model, dtype, images, labels)
            ember_gain, torch_gain = row["reference_value"] / row["value"], torch_f32 / torch_ms
            name = f"{model}_mixed_{policy}_step"
            if args.json:
                print(json.dumps({"name": name, "value": row["value"], "unit": "ms", "reference": ref_name,
                                  "reference_value": torch_ms, "speedup": round(torch_ms / row["value"], 4),
                                  "gain": round(ember_gain, 4), "reference_gain": round(torch_gain, 4)}))
            else:
                print(f"{name:34} {row['value']:8.3f} {ember_gain:6.3f}x {torch_ms:9.3f} {torch_gain:6.3f}x  "
                      f"{torch_ms / row['value']:.2f}x")


if __name__ == "__main__":
    main()
