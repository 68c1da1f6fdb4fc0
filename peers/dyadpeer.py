"""The protocol between dyad and a peer script (README, "Python peers").

dyad runs `python peers/<script>.py DIR` in the peers' virtual environment, with DIR holding:

  meta.json        {"protocol": 1, "solver": name, "params": {...}, "seed": int,
                    "n": rows, "dim": features}
  x.npz            the training rows, CSR (data, indices, indptr, shape, format):
                   scipy.sparse.load_npz reads it
  labels.npy       int64, one class per row
  checkpoints.npy  int64, the steps at which to report the model, strictly increasing
  triplets.npy     int32 or int64, (budget, 3): (query, positive, negative) row indices of
                   training steps 1..budget, exactly the triplets dyad's OASIS would draw
                   (triplet learners only)

or, for learners of a dense array, instead of x.npz and labels.npy:

  a.npy            float64 of meta.json's "shape" (meta.json then has "array": "a.npy"):
                   a data matrix (dim, n), rows = variables (genes), columns = samples
                   (sparse PCA), or a symmetric tensor (K, K, K) (tensor decomposition)

The script writes, under DIR/out/, one model per checkpoint (a d x d float64 .npy: `W` of a
bilinear similarity p^T W q, or `M` of a Mahalanobis distance; or, for kind "lowrank", the
two factors of W = A B^T, each a d x k float64 .npy, `file` holding A and `file_b` B, so a
rank-k model never travels as d x d; for kind "loadings", the dim x m loadings Z with the
script's own final objective in the entry's "objective"; for kind "decomposition", the K x r
components with their r weights in the entry's "weights") and, last, report.json:

  {"protocol": 1,
   "kind": "bilinear" | "mahalanobis" | "lowrank" | "loadings" | "decomposition",
   "checkpoints": [{"step": s, "seconds": t, "file": "model_<s>.npy"}, ...]}

with one entry per requested checkpoint, in order; `seconds` is the script's own training
clock (time spent training so far, reading inputs and writing models excluded). A script
that fails exits non-zero; dyad reports the tail of its stderr. Everything runs on one
thread: the BLAS thread variables are set here, before NumPy is imported.
"""

import os

for _var in (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
):
    os.environ[_var] = "1"

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402

PROTOCOL = 1
KINDS = ("bilinear", "mahalanobis", "lowrank", "loadings", "decomposition")


class Clock:
    """A stopwatch that accumulates only the time it runs (perf_counter, wall time)."""

    def __init__(self):
        self.total = 0.0
        self._since = None

    def start(self):
        if self._since is None:
            self._since = time.perf_counter()

    def pause(self):
        if self._since is not None:
            self.total += time.perf_counter() - self._since
            self._since = None
        return self.total


class Run:
    """One invocation: the inputs dyad wrote, the clock, and the models reported so far."""

    def __init__(self, directory, kind):
        if kind not in KINDS:
            raise ValueError(f"model kind {kind!r} is not one of {KINDS}")
        self.dir = directory
        self.kind = kind
        with open(os.path.join(directory, "meta.json")) as f:
            meta = json.load(f)
        if meta.get("protocol") != PROTOCOL:
            raise ValueError(
                f"dyad speaks peer protocol {meta.get('protocol')}, this helper {PROTOCOL}"
            )
        self.params = meta["params"]
        self.seed = int(meta["seed"])
        self.checkpoints = [int(s) for s in np.load(os.path.join(directory, "checkpoints.npy"))]
        if "array" in meta:
            # A dense array (a data matrix or a tensor), no rows or labels.
            self.a = np.load(os.path.join(directory, meta["array"]))
            self.x, self.labels, self.triplets = None, None, None
            if list(self.a.shape) != list(meta["shape"]):
                raise ValueError(f"{meta['array']} disagrees with meta.json on its shape")
        else:
            self.a = None
            self.x = scipy.sparse.load_npz(os.path.join(directory, "x.npz")).tocsr()
            self.labels = np.load(os.path.join(directory, "labels.npy"))
            path = os.path.join(directory, "triplets.npy")
            self.triplets = np.load(path) if os.path.exists(path) else None
            if self.x.shape != (meta["n"], meta["dim"]) or len(self.labels) != meta["n"]:
                raise ValueError("inputs disagree with meta.json on the number of rows or features")
        self.out = os.path.join(directory, "out")
        os.makedirs(self.out, exist_ok=True)
        self.clock = Clock()
        self._reported = []

    @classmethod
    def from_argv(cls, kind):
        if len(sys.argv) != 2:
            sys.exit(f"usage: {sys.argv[0]} DIR (the directory dyad wrote)")
        return cls(sys.argv[1], kind)

    @property
    def budget(self):
        """The last checkpoint: the number of training steps to take (0: none)."""
        return self.checkpoints[-1] if self.checkpoints else 0

    def replay(self):
        """dyad's triplets for steps 1..budget as a list of (query, positive, negative) rows;
        an error when dyad wrote fewer than the budget needs."""
        budget = self.budget
        have = 0 if self.triplets is None else len(self.triplets)
        if budget > 0 and have < budget:
            raise ValueError(f"need {budget} triplets, dyad wrote {have}")
        return self.triplets[:budget].tolist() if budget > 0 else []

    @property
    def random_state(self):
        """The seed as a NumPy / scikit-learn random_state (32 bits)."""
        return self.seed % (2**32)

    def report(self, step, model, objective=None, weights=None):
        """Write the model after `step` steps, off the clock: a matrix, or for kind "lowrank"
        the pair of factors (A, B) of W = A B^T; kind "loadings" also gives the objective,
        kind "decomposition" the components' weights."""
        seconds = self.clock.pause()
        save = lambda name, m: np.save(  # noqa: E731
            os.path.join(self.out, name), np.ascontiguousarray(m, dtype=np.float64)
        )
        entry = {"step": int(step), "seconds": seconds}
        if objective is not None:
            entry["objective"] = float(objective)
        if weights is not None:
            entry["weights"] = [float(w) for w in weights]
        if self.kind == "lowrank":
            a, b = model
            entry["file"], entry["file_b"] = f"model_{int(step)}_a.npy", f"model_{int(step)}_b.npy"
            save(entry["file"], a)
            save(entry["file_b"], b)
        else:
            entry["file"] = f"model_{int(step)}.npy"
            save(entry["file"], model)
        self._reported.append(entry)
        self.clock.start()

    def finish(self):
        """Stop the clock and write report.json (atomically: its presence means success)."""
        self.clock.pause()
        doc = {"protocol": PROTOCOL, "kind": self.kind, "checkpoints": self._reported}
        tmp = os.path.join(self.out, "report.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, os.path.join(self.out, "report.json"))
