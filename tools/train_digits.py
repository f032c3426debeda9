"""A trained example without downloads: an MLP on scikit-learn's bundled ``load_digits``, written as ONNX.

``python tools/train_digits.py [OUT_DIR]`` (``make demo`` runs it; OUT_DIR defaults to the repository's
``designs/workloads``, where the files are also checked in) writes ``digits_mlp.onnx`` (64-32-16-10,
ReLU, logits out: Gemm/Relu nodes fc1, relu1, fc2, relu2, fc3), ``digits_val.npz`` (the 30 % held out from
training: ``designs/digits_mlp_fpga.yaml`` measures accuracy on it) and ``digits_all.npz`` (all 1,797 images,
for the throughput benchmark). Inputs are the 8x8 pixel intensities / 16, in [0, 1]. Deterministic: the
split and the training are seeded. A script, not part of the library: it imports nothing of dse, and tests and
benchmarks run it as a subprocess.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "designs" / "workloads"
HIDDEN = (32, 16)
SEED = 0
TRAIN_FRACTION = 0.7
MODEL_FILE = "digits_mlp.onnx"
VAL_FILE = "digits_val.npz"
ALL_FILE = "digits_all.npz"


def digits_data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)


def train(x: np.ndarray, y: np.ndarray):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    model = MLPClassifier(hidden_layer_sizes=HIDDEN, random_state=SEED, max_iter=400)
    with warnings.catch_warnings():  # a fixed iteration count is the point: deterministic, quick, good enough
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x, y)


def to_onnx(model, n_inputs: int):
    """Gemm + Relu nodes carrying the trained coefficients (no skl2onnx needed)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, prev = [], [], "x"
    layers = list(zip(model.coefs_, model.intercepts_, strict=True))
    for i, (w, b) in enumerate(layers, start=1):
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"fc{i}_w"),
            numpy_helper.from_array(b.astype(np.float32), f"fc{i}_b"),
        ]
        nodes.append(helper.make_node("Gemm", [prev, f"fc{i}_w", f"fc{i}_b"], [f"fc{i}_out"], name=f"fc{i}"))
        prev = f"fc{i}_out"
        if i < len(layers):
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i}_out"], name=f"relu{i}"))
            prev = f"relu{i}_out"
    graph = helper.make_graph(
        nodes,
        "digits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n_inputs])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, layers[-1][0].shape[1]])],
        inits,
    )
    # the producer keeps the trainer's old module name: the file's bytes (and the run fingerprints that hash
    # them) stay those of the checked-in model
    model_proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="dse.quant.digits"
    )
    onnx.checker.check_model(model_proto)
    return model_proto


def write_digits(out_dir: Path) -> dict[str, float]:
    """Train and write the model and data files into ``out_dir``; returns the float accuracies."""
    import onnx

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    x, y = digits_data()
    order = np.random.default_rng(SEED).permutation(len(x))
    cut = int(TRAIN_FRACTION * len(x))
    train_idx, val_idx = np.sort(order[:cut]), np.sort(order[cut:])
    model = train(x[train_idx], y[train_idx])
    onnx.save(to_onnx(model, x.shape[1]), str(out_dir / MODEL_FILE))
    np.savez(out_dir / VAL_FILE, x=x[val_idx], y=y[val_idx])
    np.savez(out_dir / ALL_FILE, x=x, y=y)
    return {"train": float(model.score(x[train_idx], y[train_idx])), "val": float(model.score(x[val_idx], y[val_idx]))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="retrain even when the files exist")
    args = parser.parse_args(argv)
    if args.force or not all((args.out_dir / f).is_file() for f in (MODEL_FILE, VAL_FILE, ALL_FILE)):
        scores = write_digits(args.out_dir)
        print(f"wrote {args.out_dir}/{MODEL_FILE}: float accuracy train {scores['train']:.4f}, val {scores['val']:.4f}")
    else:
        print(f"{args.out_dir}/{MODEL_FILE} exists (--force retrains)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
