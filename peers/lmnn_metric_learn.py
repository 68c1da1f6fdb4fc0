"""metric-learn's LMNN: the Python peer `py:lmnn-metric-learn`.

Large-margin nearest neighbour (Weinberger & Saul), as implemented by metric-learn, fitted on
dyad's training rows (densified) and labels. Parameters (metric-learn's names and defaults):
n_neighbors, min_iter, max_iter, learn_rate, regularization, convergence_tol, init; the
random_state is dyad's seed.

metric-learn trains to convergence in one call and exposes no intermediate models, so the
peer is not iterative: dyad asks for one checkpoint, step 0, and receives the learned metric
M = L^T L there (the convention of dyad's own learners without steps). The clock covers the
fit call only.
"""

import dyadpeer  # first: pins BLAS to one thread before NumPy loads

from metric_learn import LMNN


def main():
    run = dyadpeer.Run.from_argv(kind="mahalanobis")
    p = run.params
    x = run.x.toarray()
    learner = LMNN(
        init=p["init"],
        n_neighbors=int(p["n_neighbors"]),
        min_iter=int(p["min_iter"]),
        max_iter=int(p["max_iter"]),
        learn_rate=float(p["learn_rate"]),
        regularization=float(p["regularization"]),
        convergence_tol=float(p["convergence_tol"]),
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
