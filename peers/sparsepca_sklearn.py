"""scikit-learn's SparsePCA: the Python peer `py:sparsepca-sklearn` (Givens issue 15).

SparsePCA (Mairal et al.'s dictionary learning with an l1 penalty on the components) fits the
samples x variables matrix X = A^T, where A (dim x n, rows = genes, centred by the task) is
what dyad's sparse-PCA learners see; its components_ (m x dim) are the loadings, handed back
as Z = components_^T (dim x m), columns scaled to unit norm as every dyad learner's loadings
(zero columns stay zero), so that dyad's own code measures the adjusted explained
variance and the sparsity of every method alike. Parameters (scikit-learn's names and
defaults): n_components (required), alpha, ridge_alpha, max_iter, tol, method; the seed is
dyad's. Not iterative: one checkpoint, step 0, whose clock covers the fit call only; the
objective reported is scikit-learn's final `error_` (its own loss, not Eq. 6).
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

import numpy as np
from sklearn.decomposition import SparsePCA


def main():
    run = dyadpeer.Run.from_argv(kind="loadings")
    p = run.params
    x = np.ascontiguousarray(run.a.T)
    model = SparsePCA(
        n_components=int(p["n_components"]),
        alpha=float(p["alpha"]),
        ridge_alpha=float(p["ridge_alpha"]),
        max_iter=int(p["max_iter"]),
        tol=float(p["tol"]),
        method=p["method"],
        random_state=run.random_state,
    )
    run.clock.start()
    model.fit(x)
    error = model.error_[-1] if len(model.error_) else float("nan")
    z = model.components_.T.copy()
    norms = np.linalg.norm(z, axis=0)
    z[:, norms > 0] /= norms[norms > 0]
    run.report(0, z, objective=error)
    run.finish()


if __name__ == "__main__":
    main()
