#!/usr/bin/env python3
"""The Keras reference for apps/train_fashion_mnist: the same model, data and settings in Python Keras 3.

    python3 bench/keras_fashion_mnist.py --model cnn --seed 1 [--precision mixed_bfloat16]

Reads Debian's dataset-fashion-mnist files, scales the uint8 images to [0, 1], trains with Adam 1e-3 at
batch 128 for 5 epochs (shuffled each epoch), and prints the app's last line, test_accuracy=... test_loss=...
seconds_per_epoch=..., so the two can be compared seed for seed. Needs keras>=3 and tensorflow (not used by CI).
"""
import argparse
import gzip
import os
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name, offset):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def make_model(kind):
    L = keras.layers
    if kind == "mlp":
        body = [keras.Input((784,)), L.Dense(256, activation="relu"), L.Dense(256, activation="relu")]
    elif kind == "cnn":
        body = [keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(2),
                L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(), L.Dropout(0.3),
                L.Dense(128, activation="relu")]
    elif kind == "lstm":  # the classic Keras example RNN: the image's 28 rows as time steps
        body = [keras.Input((28, 28)), L.LSTM(128)]
    else:
        body = [keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation="relu"), L.GlobalAveragePooling2D()]
    return keras.Sequential(body + [L.Dense(10, dtype="float32")])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "seed_cnn", "lstm"])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precision", default="float32")
    a = p.parse_args()
    keras.utils.set_random_seed(a.seed)
    keras.mixed_precision.set_global_policy(a.precision)
    shape = {"mlp": (-1, 784), "lstm": (-1, 28, 28)}.get(a.model, (-1, 28, 28, 1))
    x = idx("train-images-idx3-ubyte.gz", 16).reshape(shape).astype("float32") / 255.0
    y = idx("train-labels-idx1-ubyte.gz", 8).astype("int64")
    xt = idx("t10k-images-idx3-ubyte.gz", 16).reshape(shape).astype("float32") / 255.0
    yt = idx("t10k-labels-idx1-ubyte.gz", 8).astype("int64")
    model = make_model(a.model)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    start = time.time()
    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, verbose=0, validation_data=(xt, yt))
    per_epoch = (time.time() - start) / a.epochs
    loss, acc = model.evaluate(xt, yt, batch_size=a.batch_size, verbose=0)
    print(f"test_accuracy={acc:.4f} test_loss={loss:.4f} seconds_per_epoch={per_epoch:.3f}")


if __name__ == "__main__":
    main()
