//! Sanity checks of the pair-ranking task (issue 42 §2), read from its records:
//!
//! * a learner whose step-0 model scores every point alike
//!   ([`dyad_tensor_rank::PairRanker::starts_constant`]: RankSVM and SSR at `w = 0`, TR at
//!   `f = 0`, full KR at `K = 0`, low-rank KR at `B = ones`) has Kendall τ exactly 0 there, on
//!   every x value of every cell: the metric sits at chance on a constant scorer;
//! * a full-KR fit, a convex problem solved by Newton's method, ends at its optimum: its
//!   stationarity residual `‖∇E‖/‖∇E(0)‖` is at most [`crate::analysis::edges::STATIONARY`].

use crate::analysis::check::SanityLine;
use crate::analysis::results::ExperimentResults;
use crate::analysis::sanity_tasks::line;

/// The pair-ranking checks of one experiment (none for other tasks).
pub fn lines(res: &ExperimentResults<'_>) -> Vec<SanityLine> {
    let plan = res.plan;
    let residuals = crate::analysis::edges::stationarity(res);
    let mut out = Vec::new();
    for (si, sv) in plan.solvers.iter().enumerate() {
        let constant = sv
            .built()
            .and_then(|b| {
                b.family::<dyn dyad_tensor_rank::PairRanker>()
                    .map(|r| r.starts_constant())
            })
            .unwrap_or(false);
        let (mut start, mut start_bad, mut worst) = (0usize, Vec::new(), 0.0f64);
        for (ci, cell) in plan.cells.iter().enumerate() {
            if !constant || cell.solver != si {
                continue;
            }
            let Some(r) = &res.cells[ci] else { continue };
            for x in &r.records {
                if x.step == 0 && x.metric == "tau" && x.set == "all" {
                    start += 1;
                    worst = worst.max(x.value.abs());
                    if x.value != 0.0 {
                        start_bad.push(ci);
                    }
                }
            }
        }
        let mut push = |what: String, n: usize, bad: &[usize], ok: String| {
            if n > 0 {
                out.push(line(res, what, n, bad, ok));
            }
        };
        push(
            format!("{} at step 0 (constant scores) has Kendall τ 0", sv.label),
            start,
            &start_bad,
            format!("{start} evaluations, largest |τ| {worst:.1e}"),
        );
        if let Some(st) = residuals.iter().find(|x| x.solver == sv.label) {
            push(
                format!(
                    "{} ends at its optimum (‖∇E‖/‖∇E(0)‖ ≤ {:e})",
                    sv.label,
                    crate::analysis::edges::STATIONARY
                ),
                st.fits,
                &st.above,
                format!("{} fits, largest residual {:.1e}", st.fits, st.max),
            );
        }
    }
    out
}
