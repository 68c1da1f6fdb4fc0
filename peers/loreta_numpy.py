"""LORETA-1 in plain NumPy: the Python peer `py:loreta-numpy` of dyad's `loreta`.

The bilinear similarity S(q, p) = q^T W p, W = A B^T of rank k (A, B: d x k), learned from the
triplets dyad replays (triplets.npy), one per step, under the ranking hinge
l = max(0, 1 - q^T W (p+ - p-)). A step with l > 0 takes the descent direction
-eta grad l = g1 g2^T, g1 = eta q, g2 = p+ - p-, through the LORETA retraction as written in
[JMLR] Algorithm 4 (LORETA-1), carrying the pseudo-inverses A^+, B^+ (k x d) and updating them
by the rank-one formula of Algorithm 7 in its corrected form (LORETA spec §2.4), literally:

    a1 = A^+ g1, b1 = B^+ g2, a2 = A a1, s = b1 . a1
    a3 = a2 (-1/2 + 3s/8) + g1 (1 - s/2),      Z1 = A + a3 b1^T
    b2 = (g2^T B) B^+,  b3 = b2 (-1/2 + 3s/8) + g2 (1 - s/2),   Z2 = B + b3 a1^T
    Z1^+ = A^+ + G(A, A^+, a3, b1),  Z2^+ = B^+ + G(B, B^+, b3, a1)

every correction computed from the old A, A^+, B, B^+ before any is written (spec §2.3
in-place order). Initialisation: the truncated identity A = B = [I_k; 0], A^+ = B^+ = [I_k 0]
(spec §2.8, dyad's `init = "identity"`). The choices dyad makes where the paper is silent are
repeated here, so both follow the same trajectory: a step with a zero gradient factor, or one
whose factor would lose rank (beta = 0 and w = 0 in Algorithm 7), changes nothing; beta and w
count as zero at |beta| <= 1e-12 and |w| <= 1e-12 max(1, |c|). A non-finite quantity is an
error. Rows are the CSR arrays of scipy.sparse; g1 and g2 are gathered sparsely where they are
read and scattered into dense d-vectors where Algorithm 4 adds them to dense ones; the factors
and pseudo-inverses are dense float64 arrays: O(dk) per step, as the algorithm.

Parameters: `rank` (k) and `eta` (the constant step size). The model goes back as its
factors (kind "lowrank"), never as d x d.
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

import numpy as np

TOL_BETA = 1e-12
TOL_W = 1e-12


def pinv_correction(f, fp, c, d):
    """G with (F + c d^T)^+ = F^+ + G: Algorithm 7 (corrected, LORETA spec §2.4). F is n x k of
    full column rank, fp its k x n pseudo-inverse, c an n-vector, d a k-vector. Returns None
    when F + c d^T loses rank (beta = 0 and w = 0)."""
    v = fp @ c
    beta = 1.0 + d @ v
    nv = fp.T @ d
    nh = fp @ nv
    w = c - f @ v
    w2, nv2 = w @ w, nv @ nv
    if not all(np.isfinite(x) for x in (beta, w2, nv2)):
        raise FloatingPointError(f"non-finite beta {beta}, |w|^2 {w2} or |nv|^2 {nv2}")
    beta_zero = abs(beta) <= TOL_BETA
    w_zero = np.sqrt(w2) <= TOL_W * max(1.0, np.sqrt(c @ c))
    if not beta_zero and not w_zero:
        sigma = beta / (w2 * nv2 + beta * beta)
        t = (w2 / beta) * nh + v
        return np.outer(nh / beta, w) - sigma * np.outer(t, (nv2 / beta) * w + nv)
    if beta_zero and not w_zero:
        return -np.outer(fp @ nv, nv) / nv2 - np.outer(v, w) / w2
    if not beta_zero and w_zero:
        return -np.outer(v, nv) / beta
    return None


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
    a = np.eye(d, k)
    b = np.eye(d, k)
    ap = np.eye(k, d)
    bp = np.eye(k, d)
    g1 = np.zeros(d)
    g2 = np.zeros(d)

    def row(i):
        lo, hi = indptr[i], indptr[i + 1]
        return indices[lo:hi], data[lo:hi]

    nxt = 0
    if checkpoints and checkpoints[0] == 0:
        run.report(0, (a, b))
        nxt = 1
    for step in range(1, budget + 1):
        q, pos, neg = triplets[step - 1]
        q_idx, q_val = row(q)
        p_idx, p_val = row(pos)
        n_idx, n_val = row(neg)
        # p+ - p- as a sparse vector over the union of both supports.
        diff_idx = np.union1d(p_idx, n_idx)
        diff_val = np.zeros(len(diff_idx))
        diff_val[np.searchsorted(diff_idx, p_idx)] = p_val
        diff_val[np.searchsorted(diff_idx, n_idx)] -= n_val
        # q^T A B^T (p+ - p-) through the k-dimensional projections.
        margin = (q_val @ a[q_idx]) @ (diff_val @ b[diff_idx])
        loss = max(0.0, 1.0 - margin)
        if not np.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss} at step {step}")
        if loss > 0.0 and np.any(q_val != 0.0) and np.any(diff_val != 0.0):
            g1[q_idx] = eta * q_val
            g2[diff_idx] = diff_val
            # Algorithm 4, steps 1-8.
            a1 = ap[:, q_idx] @ (eta * q_val)
            b1 = bp[:, diff_idx] @ diff_val
            a2 = a @ a1
            s = b1 @ a1
            if not np.isfinite(s):
                raise FloatingPointError(f"non-finite s = tr M {s} at step {step}")
            a3 = a2 * (-0.5 + 0.375 * s) + g1 * (1.0 - 0.5 * s)
            b2 = (diff_val @ b[diff_idx]) @ bp
            b3 = b2 * (-0.5 + 0.375 * s) + g2 * (1.0 - 0.5 * s)
            # Steps 9-10 from the old factors, then every write.
            ga = pinv_correction(a, ap, a3, b1)
            gb = pinv_correction(b, bp, b3, a1)
            if ga is not None and gb is not None:
                a += np.outer(a3, b1)
                b += np.outer(b3, a1)
                ap += ga
                bp += gb
            g1[q_idx] = 0.0
            g2[diff_idx] = 0.0
        if step == checkpoints[nxt]:
            run.report(step, (a, b))
            nxt += 1
    run.finish()


if __name__ == "__main__":
    main()
