"""Online Riemannian SGD on Pymanopt's fixed-rank manifold: the Python peer `py:loreta-pymanopt`.

The problem of dyad's `loreta` (LORETA spec §3.1) solved with a general-purpose manifold
toolbox, as the LORETA papers' comparison with generic Riemannian tools would: the bilinear
similarity S(q, p) = q^T W p with W of rank k on pymanopt.manifolds.FixedRankEmbedded(d, d, k)
(a point is a thin SVD (u, s, vt)), trained on the triplets dyad replays (triplets.npy), one
per step, by the generic loop of [JMLR] Algorithm 1:

    l     = max(0, 1 - q^T W (p+ - p-))
    Z     = -q (p+ - p-)^T                       the Euclidean gradient of l (when l > 0), by hand
    xi    = manifold.projection(W, Z)            the Riemannian gradient P_W(Z)
    W    <- manifold.retraction(W, -eta xi)      Pymanopt's retraction (QR of the tangent
                                                 factors, SVD of a 2k x 2k core, truncation)

Z is handed to Pymanopt as a scipy.sparse d x d matrix with nnz(q) nnz(p+ - p-) entries, which
its projection multiplies like any array (Z v, Z^T u: O(nnz k)); the rest of the projection
and the retraction cost O(dk^2). Not as the (U, S, V) ambient form Pymanopt also accepts:
Pymanopt 2.2.1 evaluates that as U @ S @ V.T @ X from the left, which forms the dense d x d
product (about 1 s a step at d = 10^4, a cost of that code path, not of the method). No
autodiff backend:
Pymanopt's `euclidean_to_riemannian_gradient` wants the gradient with respect to (u, s, vt) and
divides by s_j^2 - s_i^2, which is singular at the truncated identity (all s = 1); the
projection of the ambient gradient is the same Riemannian gradient without that singularity.

Same initialisation as dyad's `loreta` (the truncated identity: u = [I_k; 0], s = 1,
vt = [I_k 0]), same step size, same triplets; the retraction differs from LORETA's (both are
second-order), so the trajectories agree only to first order in eta. Timed by the script's own
clock inside the loop. Parameters: `rank` (k), `eta`. The model goes back as its factors
(A = u diag(s), B = vt^T; kind "lowrank").
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

import numpy as np
import scipy.sparse
from pymanopt.manifolds import FixedRankEmbedded


def main():
    run = dyadpeer.Run.from_argv(kind="lowrank")
    k = int(run.params["rank"])
    eta = float(run.params["eta"])
    checkpoints = run.checkpoints
    budget = run.budget
    d = run.x.shape[1]
    if not 0 < k < d:
        raise ValueError(f"rank {k} must be positive and below the {d} features")

    run.clock.start()
    indptr, indices, data = run.x.indptr, run.x.indices, run.x.data
    triplets = run.replay()
    manifold = FixedRankEmbedded(d, d, k)
    u, s, vt = np.eye(d, k), np.ones(k), np.eye(k, d)
    point = (u, s, vt)

    def row(i):
        lo, hi = indptr[i], indptr[i + 1]
        return indices[lo:hi], data[lo:hi]

    def factors(point):
        u, s, vt = point
        return u * s, vt.T

    nxt = 0
    if checkpoints and checkpoints[0] == 0:
        run.report(0, factors(point))
        nxt = 1
    for step in range(1, budget + 1):
        q, pos, neg = triplets[step - 1]
        q_idx, q_val = row(q)
        p_idx, p_val = row(pos)
        n_idx, n_val = row(neg)
        diff_idx = np.union1d(p_idx, n_idx)
        diff_val = np.zeros(len(diff_idx))
        diff_val[np.searchsorted(diff_idx, p_idx)] = p_val
        diff_val[np.searchsorted(diff_idx, n_idx)] -= n_val
        u, s, vt = point
        margin = ((q_val @ u[q_idx]) * s) @ (vt[:, diff_idx] @ diff_val)
        loss = max(0.0, 1.0 - margin)
        if not np.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss} at step {step}")
        if loss > 0.0:
            # The Euclidean gradient -q (p+ - p-)^T, sparse.
            z = scipy.sparse.csr_matrix(
                (
                    np.outer(-q_val, diff_val).ravel(),
                    np.tile(diff_idx, len(q_idx)),
                    np.concatenate(([0], np.cumsum(np.bincount(q_idx, minlength=d)) * len(diff_idx))),
                ),
                shape=(d, d),
            )
            xi = manifold.projection(point, z)
            point = manifold.retraction(point, -eta * xi)
            if not all(np.all(np.isfinite(x)) for x in point):
                raise FloatingPointError(f"non-finite model after step {step}")
        if step == checkpoints[nxt]:
            run.report(step, factors(point))
            nxt += 1
    run.finish()


if __name__ == "__main__":
    main()
