"""metric-learn's ITML: the Python peer `py:itml-metric-learn`.

Information-theoretic metric learning (Davis et al. 2007) through metric-learn's
ITML_Supervised, which draws similar and dissimilar pairs from the labels (seeded by dyad's
seed) and fits on dyad's training rows (densified). Parameters (metric-learn's names and
defaults): gamma, max_iter, tol, n_constraints (null: metric-learn's 20 x classes^2), prior.

Not iterative, as the LMNN peer: one checkpoint, step 0, carries the learned metric M; the
clock covers the fit call only.
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

from metric_learn import ITML_Supervised


def main():
    run = dyadpeer.Run.from_argv(kind="mahalanobis")
    p = run.params
    x = run.x.toarray()
    learner = ITML_Supervised(
        gamma=float(p["gamma"]),
        max_iter=int(p["max_iter"]),
        tol=float(p["tol"]),
        n_constraints=None if p.get("n_constraints") is None else int(p["n_constraints"]),
        prior=p["prior"],
        random_state=run.random_state,
    )
    run.clock.start()
    learner.fit(x, run.labels)
    m = learner.get_mahalanobis_matrix()
    run.clock.pause()
    for step in run.checkpoints:
        run.report(step, m)
    run.finish()


if __name__ == "__main__":
    main()
