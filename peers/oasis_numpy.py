"""OASIS in plain NumPy/SciPy: the Python peer `py:oasis-numpy` of dyad's `oasis`.

The bilinear similarity S_W(p, q) = p^T W q, W0 = I, learned by the passive-aggressive PA-I
step of Chechik et al. (2010) on the triplets dyad replays (triplets.npy), one per step:

    l   = max(0, 1 - p^T W (p+ - p-))
    tau = min(C, l / (||p||^2 ||p+ - p-||^2))     (tau = 0 when l = 0 or the norm is 0)
    W  <- W + tau p (p+ - p-)^T

touching only the nnz(p) x nnz(p+ - p-) entries of W the rank-one update covers. Rows stay
sparse (the CSR arrays of scipy.sparse); W is a dense float64 array. Parameters: `c` (C).
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

import numpy as np


def main():
    run = dyadpeer.Run.from_argv(kind="bilinear")
    c = float(run.params["c"])
    checkpoints = run.checkpoints
    budget = run.budget

    run.clock.start()
    indptr, indices, data = run.x.indptr, run.x.indices, run.x.data
    d = run.x.shape[1]
    triplets = run.replay()
    W = np.eye(d)

    def row(i):
        lo, hi = indptr[i], indptr[i + 1]
        return indices[lo:hi], data[lo:hi]

    nxt = 0
    if checkpoints and checkpoints[0] == 0:
        run.report(0, W)
        nxt = 1
    for step in range(1, budget + 1):
        q, a, b = triplets[step - 1]
        p_idx, p_val = row(q)
        a_idx, a_val = row(a)
        b_idx, b_val = row(b)
        # p+ - p- as a sparse vector over the union of both supports.
        diff_idx = np.union1d(a_idx, b_idx)
        diff_val = np.zeros(len(diff_idx))
        diff_val[np.searchsorted(diff_idx, a_idx)] = a_val
        diff_val[np.searchsorted(diff_idx, b_idx)] -= b_val
        block = np.ix_(p_idx, diff_idx)
        margin = p_val @ (W[block] @ diff_val)
        loss = max(0.0, 1.0 - margin)
        v_norm_sq = (p_val @ p_val) * (diff_val @ diff_val)
        if loss > 0.0 and v_norm_sq > 0.0:
            tau = min(c, loss / v_norm_sq)
            W[block] += np.outer(tau * p_val, diff_val)
        if step == checkpoints[nxt]:
            run.report(step, W)
            nxt += 1
    run.finish()


if __name__ == "__main__":
    main()
