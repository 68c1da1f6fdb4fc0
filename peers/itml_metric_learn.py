"""metric-learn's ITML: the Python peer `py:itml-metric-learn`.

Information-theoretic metric learning (Davis et al. 2007) through metric-learn's
ITML_Supervised, which draws similar and dissimilar pairs from the labels (seeded by dyad's
seed) and fits on dyad's training rows (densified). Parameters (metric-learn's names and
defaults): gamma, max_iter, tol, n_constraints (null: metric-learn's 20 x classes^2), prior;
and squared_bounds (dyad's): when true, the bounds are the 5th / 95th percentiles of squared
distances of 1,000 random pairs of rows (dyad's ITML, the authors' code) instead of
metric-learn's percentiles of unsquared distances of all pairs.

Not iterative, as the LMNN peer: one checkpoint, step 0, carries the learned metric M; the
clock covers the fit call only.

Workaround: metric-learn 0.7.0 updates A by `A += np.outer(Av, Av * beta)`, whose two
triangles round differently; after thousands of projections (20 Newsgroups, d = 1,000) the
drift exceeds `np.allclose`'s tolerance and `components_from_metric` refuses metric-learn's
own matrix ("The input metric should be symmetric"). We hand it (A + A^T) / 2, which moves A
by that rounding drift only; the largest drift is printed to stderr.

Workaround: a pair of identical rows (on 20 Newsgroups, documents left empty or duplicated
by the pipeline) has distance 0, so metric-learn's projection computes 1/0 - 1/0 and A
becomes NaN. dyad's ITML drops such pairs. So does this peer: it runs ITML_Supervised.fit's
own steps (metric-learn's `Constraints.positive_negative_pairs` with 20 C^2 pairs from the
same random_state, `wrap_pairs`, `_BaseITML._fit`) with the zero-distance pairs removed in
between (their count is printed to stderr).
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

import sys

import numpy as np
from metric_learn import ITML_Supervised
from metric_learn.constraints import Constraints, wrap_pairs
from metric_learn.itml import _BaseITML
from metric_learn import itml as _itml

_components_from_metric = _itml.components_from_metric


def _symmetrised(metric, tol=None):
    drift = float(np.max(np.abs(metric - metric.T))) if metric.size else 0.0
    print(f"itml peer: largest asymmetry of metric-learn's A: {drift:.3e}", file=sys.stderr)
    return _components_from_metric((metric + metric.T) / 2.0, tol)


_itml.components_from_metric = _symmetrised


def main():
    run = dyadpeer.Run.from_argv(kind="mahalanobis")
    p = run.params
    x = run.x.toarray()
    labels = np.asarray(run.labels)
    bounds = None
    if p.get("squared_bounds"):
        rng = np.random.default_rng(run.random_state)
        a = rng.integers(0, len(x), 1000)
        b = rng.integers(0, len(x), 1000)
        d2 = np.sum((x[a] - x[b]) ** 2, axis=1)
        lo, hi = np.percentile(d2, [5.0, 95.0])
        bounds = (max(lo, 1e-9), max(hi, 1e-9))
    learner = ITML_Supervised(
        gamma=float(p["gamma"]),
        max_iter=int(p["max_iter"]),
        tol=float(p["tol"]),
        n_constraints=None if p.get("n_constraints") is None else int(p["n_constraints"]),
        prior=p["prior"],
        random_state=run.random_state,
    )
    run.clock.start()
    n = p.get("n_constraints")
    n = 20 * len(np.unique(labels)) ** 2 if n is None else int(n)
    a, b, c, d = Constraints(labels).positive_negative_pairs(n, random_state=learner.random_state)
    pos = np.any(x[a] != x[b], axis=1)
    neg = np.any(x[c] != x[d], axis=1)
    dropped = int((~pos).sum() + (~neg).sum())
    print(f"itml peer: {dropped} pairs of identical rows dropped", file=sys.stderr)
    pairs, y = wrap_pairs(x, (a[pos], b[pos], c[neg], d[neg]))
    _BaseITML._fit(learner, pairs, y, bounds=bounds)
    m = learner.get_mahalanobis_matrix()
    run.clock.pause()
    for step in run.checkpoints:
        run.report(step, m)
    run.finish()


if __name__ == "__main__":
    main()
