"""scikit-learn's LIBLINEAR logistic regression on the problems dyad's FuncISH classifier
test writes (crates/funcish/tests/logreg_sklearn.rs): the reference for
dyad_funcish::classify.

    python peers/logreg_sklearn.py DIR

DIR holds
  meta.json   {"n": rows, "d": features, "tol": eps, "max_iter": int,
               "fits": [{"rows": [...], "y": [+-1 ...], "c": C, "predict": [...]}, ...],
               "nested": {"c_grid": [...], "positives": [[...], ...],
                          "outer_folds": [[...], ...], "inner_folds": [[[...], ...], ...]}}
  x.f64       the n x d features, float64 little-endian, row-major

and the script writes DIR/out.json:
  {"fits": [{"w": [d weights], "b": bias, "proba": [...]}, ...],
   "nested": {"chosen_c": [[per outer fold] per category],
              "test_auc": [[...]], "inner_scores": [[[[per C] per inner] per outer] per cat]}}

Every fit is LogisticRegression(solver="liblinear", penalty="l2", C=C, fit_intercept=True,
intercept_scaling=1, tol=eps, max_iter=max_iter): LIBLINEAR -s 0 with the bias as an
appended constant feature 1 whose weight is regularised, the objective dyad solves. The
nested cross-validation follows dyad's folds exactly: AUC on each inner validation fold
(undefined folds skipped), C maximising the mean (ties to the smaller C), refit on the outer
training set, AUC on the outer test fold (null when undefined).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402


def fit(x, y, c, tol, max_iter):
    """(weights, bias) of the L2-regularised LR on rows x with labels y in {-1, +1}."""
    if len(np.unique(y)) < 2:
        raise ValueError("a fit needs both classes (scikit-learn refuses one class)")
    model = LogisticRegression(
        solver="liblinear",
        penalty="l2",
        C=c,
        fit_intercept=True,
        intercept_scaling=1,
        tol=tol,
        max_iter=max_iter,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(x, y)
    assert list(model.classes_) == [-1, 1]
    return model.coef_[0].copy(), float(model.intercept_[0])


def proba(x, w, b):
    return 1.0 / (1.0 + np.exp(-(x @ w + b)))


def auc(p, labels):
    if labels.all() or not labels.any():
        return None
    return float(roc_auc_score(labels, p))


def nested(x, spec, tol, max_iter):
    grid = spec["c_grid"]
    n = x.shape[0]
    out = {"chosen_c": [], "test_auc": [], "inner_scores": []}
    for pos in spec["positives"]:
        lab = np.zeros(n, dtype=bool)
        lab[pos] = True
        y = np.where(lab, 1, -1)
        chosen, aucs, scores = [], [], []
        for o, test in enumerate(spec["outer_folds"]):
            test = np.array(test, dtype=int)
            train = np.setdiff1d(np.arange(n), test)
            sc = []
            for val in spec["inner_folds"][o]:
                val = np.array(val, dtype=int)
                itrain = np.setdiff1d(train, val)
                row = []
                for c in grid:
                    w, b = fit(x[itrain], y[itrain], c, tol, max_iter)
                    row.append(auc(proba(x[val], w, b), lab[val]))
                sc.append(row)
            best, best_score = 0, -np.inf
            for k in range(len(grid)):
                v = [s[k] for s in sc if s[k] is not None]
                if v and np.mean(v) > best_score:
                    best, best_score = k, np.mean(v)
            w, b = fit(x[train], y[train], grid[best], tol, max_iter)
            chosen.append(grid[best])
            aucs.append(auc(proba(x[test], w, b), lab[test]))
            scores.append(sc)
        out["chosen_c"].append(chosen)
        out["test_auc"].append(aucs)
        out["inner_scores"].append(scores)
    return out


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    x = np.fromfile(os.path.join(d, "x.f64"), dtype="<f8").reshape(meta["n"], meta["d"])
    tol, max_iter = meta["tol"], meta["max_iter"]
    fits = []
    for spec in meta.get("fits", []):
        rows = np.array(spec["rows"], dtype=int)
        w, b = fit(x[rows], np.array(spec["y"]), spec["c"], tol, max_iter)
        pred = np.array(spec["predict"], dtype=int)
        fits.append({"w": w.tolist(), "b": b, "proba": proba(x[pred], w, b).tolist()})
    out = {"fits": fits}
    if "nested" in meta:
        out["nested"] = nested(x, meta["nested"], tol, max_iter)
    with open(os.path.join(d, "out.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
