//! Sanity checks of the pair-ranking task (issue 42 §2), read from its records:
//!
//! * a learner whose step-0 model scores every point alike
//!   ([`dyad_tensor_rank::PairRanker::starts_constant`]: RankSVM and SSR at `w = 0`, TR at
//!   `f = 0`, full KR at `K = 0`, low-rank KR at `B = ones`) has Kendall τ exactly 0 there, on
//!   every x value of every cell: the metric sits at chance on a constant scorer;
//! * a fit of a convex method that reports its stationarity residual
//!   ([`dyad_tensor_rank::PairRanker::is_convex`]: full KR, solved by Newton's method) ends at
//!   its optimum: its residual `‖∇E‖/‖∇E(0)‖` is at most
//!   [`crate::analysis::edges::STATIONARY`]. Low-rank KR's residual (non-convex, and capped
//!   in iterations) is a convergence diagnostic, in the report's tuning line, not a check.

use crate::analysis::check::SanityLine;
use crate::analysis::results::ExperimentResults;
use crate::analysis::sanity_tasks::line;

/// The pair-ranking checks of one experiment (none for other tasks).
pub fn lines(res: &ExperimentResults<'_>) -> Vec<SanityLine> {
    let plan = res.plan;
    let residuals = crate::analysis::edges::stationarity(res);
    let mut out = Vec::new();
    for (si, sv) in plan.solvers.iter().enumerate() {
        let ranker = sv
            .built()
            .and_then(|b| b.family::<dyn dyad_tensor_rank::PairRanker>());
        let constant = ranker.is_some_and(|r| r.starts_constant());
        let convex = ranker.is_some_and(|r| r.is_convex());
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
        if let Some(st) = residuals.iter().find(|x| convex && x.solver == sv.label) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cache::{CellResult, Record, test_cell};

    /// Every cell of a solver labelled `label` records a stationarity residual of `residual`.
    fn residual_lines(spec: &str, label: &str, residual: f64) -> Vec<SanityLine> {
        let (plan, _dir) = crate::analysis::quick_plan(&format!("tensor-ranking/{spec}"));
        let cells: Vec<Option<CellResult>> = plan
            .cells
            .iter()
            .map(|c| {
                let mut r = test_cell(&c.key);
                if plan.solvers[c.solver].label == label {
                    r.records = vec![Record {
                        set: "all".into(),
                        metric: "stationarity".into(),
                        step: 10,
                        seconds: 0.0,
                        k: None,
                        coord: None,
                        value: residual,
                    }];
                }
                Some(r)
            })
            .collect();
        assert!(plan.solvers.iter().any(|s| s.label == label), "{label}");
        lines(&ExperimentResults { plan: &plan, cells })
    }

    #[test]
    fn a_convex_fit_above_the_residual_bound_fails_and_a_non_convex_one_is_not_checked() {
        let stationary = |l: &SanityLine| l.what.contains("ends at its optimum");
        // Full KR (convex): checked, and failed above the bound.
        let ok = residual_lines("kr-full.toml", "KR (full)", 1e-9);
        assert!(ok.iter().any(|l| stationary(l) && l.ok), "{ok:?}");
        let bad = residual_lines("kr-full.toml", "KR (full)", 0.5);
        assert!(bad.iter().any(|l| stationary(l) && !l.ok), "{bad:?}");
        // Low-rank KR with BB steps (non-convex, capped): no check, whatever its residual (the
        // report's tuning line gives it).
        let lowrank = residual_lines("kr-step-rule.toml", "KR (BB)", 0.5);
        assert!(!lowrank.iter().any(stationary), "{lowrank:?}");
    }
}
