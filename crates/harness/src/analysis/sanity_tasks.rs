//! Sanity checks of the tasks without probes of their own (issue 42 §2), read from the
//! records every cell already holds, so no cell recomputes for them:
//!
//! * **ranges**: a metric that is a fraction, an AUC, a normalised mutual information or a
//!   Kendall τ lies in its range on every record (a value outside is a bug in the metric or a
//!   non-finite result, never a finding);
//! * **shared values**: what depends on the data split only — the clustering by the true
//!   mixture (`optimal_nmi`), a random ranking's expected precision (`chance`) — is the same
//!   for every solver of a data set and repeat: the solvers saw the same split;
//! * **identities**: a number the task computes two ways agrees — sparse PCA's cardinality is
//!   its density times `d m` at every checkpoint of a cell, FuncISH's `mean_auc` is the mean of
//!   its categories' AUCs.
//!
//! The ranking task's probes ([`crate::analysis::check::sanity`]) and the pair-ranking checks
//! ([`crate::analysis::sanity_pairs`]) are apart.

use crate::analysis::check::SanityLine;
use crate::analysis::results::ExperimentResults;
use crate::engine::cache::Record;
use std::collections::BTreeMap;

/// Relative rounding allowed where a value is computed two ways.
const ROUNDING: f64 = 1e-9;

/// `(task, metrics, low, high)`: every record of these metrics lies in `[low, high]`.
const RANGES: &[(&str, &[&str], f64, f64)] = &[
    (
        "sparse-pca",
        &[
            "explained_variance",
            "density",
            "capped_explained_variance",
            "capped_density",
        ],
        0.0,
        1.0,
    ),
    (
        "sparse-pca",
        &["cardinality", "flops_all_rows", "flops_active_rows"],
        0.0,
        f64::INFINITY,
    ),
    ("tensor-decomposition", &["nmi", "optimal_nmi"], 0.0, 1.0),
    (
        "tensor-decomposition",
        &["centre_error", "residual", "flops"],
        0.0,
        f64::INFINITY,
    ),
    ("label-ranking", &["map", "precision", "chance"], 0.0, 1.0),
    (
        "human-evaluation",
        &["map", "precision", "chance"],
        0.0,
        1.0,
    ),
    ("pair-ranking", &["tau"], -1.0, 1.0),
    (
        "gene-function",
        &[
            "mean_auc",
            "neural_mean_auc",
            "other_mean_auc",
            "category_auc",
            "auc_by_size",
            "fold_mean_auc",
            "neural_vs_other_auc",
            "significant_fraction",
            "neural_significant_fraction",
            "other_significant_fraction",
        ],
        0.0,
        1.0,
    ),
    ("gene-retrieval", &["precision"], 0.0, 1.0),
];

/// `(task, metric)`: the same value for every solver of a data set and repeat, record by
/// record (set, k and coordinate alike; at any step).
const SHARED: &[(&str, &str)] = &[
    ("tensor-decomposition", "optimal_nmi"),
    ("label-ranking", "chance"),
];

/// The checks of one experiment (none for a task without any).
pub fn lines(res: &ExperimentResults<'_>) -> Vec<SanityLine> {
    let task = res.plan.task.name();
    let mut out = Vec::new();
    for &(_, metrics, lo, hi) in RANGES.iter().filter(|r| r.0 == task) {
        if let Some(l) = range(res, metrics, lo, hi) {
            out.push(l);
        }
    }
    for &(_, metric) in SHARED.iter().filter(|r| r.0 == task) {
        if let Some(l) = shared(res, metric) {
            out.push(l);
        }
    }
    match task {
        "sparse-pca" => out.extend(cardinality(res)),
        "gene-function" => out.extend(mean_of_categories(res)),
        _ => {}
    }
    out
}

/// A sanity line over `n` checked values: it holds when no cell is in `bad` (the plan's cell
/// indices, once per failing value), else its detail names the failing cells.
pub(crate) fn line(
    res: &ExperimentResults<'_>,
    what: String,
    n: usize,
    bad: &[usize],
    ok: String,
) -> SanityLine {
    let plan = res.plan;
    let mut cells: Vec<usize> = bad.to_vec();
    cells.sort_unstable();
    cells.dedup();
    SanityLine {
        experiment: plan.spec.id.clone(),
        what,
        ok: bad.is_empty(),
        detail: if bad.is_empty() {
            ok
        } else {
            format!(
                "fails in {} of {n}: {}",
                bad.len(),
                cells
                    .iter()
                    .map(|&c| crate::engine::run::describe(plan, c))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        },
    }
}

/// Every record of every cell with one of `metrics`, with its cell's index.
fn records<'a>(
    res: &'a ExperimentResults<'_>,
    metrics: &'a [&str],
) -> impl Iterator<Item = (usize, &'a Record)> + 'a {
    res.cells.iter().enumerate().flat_map(move |(ci, r)| {
        r.iter()
            .flat_map(|r| r.records.iter())
            .filter(move |x| metrics.contains(&x.metric.as_str()))
            .map(move |x| (ci, x))
    })
}

fn range(res: &ExperimentResults<'_>, metrics: &[&str], lo: f64, hi: f64) -> Option<SanityLine> {
    let (mut n, mut bad, mut undefined) = (0usize, Vec::new(), 0usize);
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for (ci, x) in records(res, metrics) {
        n += 1;
        // NaN is how a task records an undefined value (a fraction of no categories, τ on
        // an empty set): counted apart, not out of range.
        if x.value.is_nan() {
            undefined += 1;
            continue;
        }
        min = min.min(x.value);
        max = max.max(x.value);
        if x.value < lo || x.value > hi {
            bad.push(ci);
        }
    }
    let bound = |v: f64| {
        if v.is_infinite() {
            "∞".to_string()
        } else {
            format!("{v}")
        }
    };
    (n > 0).then(|| {
        line(
            res,
            format!(
                "{} lie{} in [{}, {}]",
                metrics.join(", "),
                if metrics.len() == 1 { "s" } else { "" },
                bound(lo),
                bound(hi)
            ),
            n,
            &bad,
            if undefined == n {
                format!("{n} records, all undefined")
            } else if undefined > 0 {
                format!("{n} records ({undefined} undefined), from {min:.3e} to {max:.3e}")
            } else {
                format!("{n} records, from {min:.3e} to {max:.3e}")
            },
        )
    })
}

/// A record's place within its cell: set, k and coordinate. Not its step: a property of the
/// split is recorded at each solver's own last step.
fn place(x: &Record) -> String {
    format!(
        "{}|{:?}|{}",
        x.set,
        x.k,
        x.coord
            .as_ref()
            .map(|c| serde_json::to_string(c).unwrap_or_default())
            .unwrap_or_default()
    )
}

fn shared(res: &ExperimentResults<'_>, metric: &str) -> Option<SanityLine> {
    let plan = res.plan;
    // (data set, repeat, place) -> the first value seen and its cell.
    let mut first: BTreeMap<(usize, u32, String), (f64, usize)> = BTreeMap::new();
    let (mut n, mut bad, mut worst) = (0usize, Vec::new(), 0.0f64);
    let mut solvers = std::collections::BTreeSet::new();
    for (ci, x) in records(res, &[metric]) {
        let cell = &plan.cells[ci];
        solvers.insert(cell.solver);
        let key = (cell.dataset, cell.repeat, place(x));
        match first.get(&key) {
            None => {
                first.insert(key, (x.value, ci));
            }
            Some(&(v, _)) => {
                n += 1;
                let dev = (x.value - v).abs();
                worst = worst.max(dev);
                if dev > ROUNDING * v.abs().max(1.0) || x.value.is_nan() != v.is_nan() {
                    bad.push(ci);
                }
            }
        }
    }
    (n > 0 && solvers.len() > 1).then(|| {
        line(
            res,
            format!("{metric} (a property of the split) is the same for every solver"),
            n,
            &bad,
            format!(
                "{n} records compared across {} solvers, largest difference {worst:.1e}",
                solvers.len()
            ),
        )
    })
}

/// Sparse PCA: `cardinality / density` is the loadings' size `d m`, the same at every
/// checkpoint of a cell.
fn cardinality(res: &ExperimentResults<'_>) -> Option<SanityLine> {
    let (mut n, mut bad) = (0usize, Vec::new());
    for (ci, r) in res.cells.iter().enumerate() {
        let Some(r) = r else { continue };
        let value = |x: &Record, m: &str| {
            r.records
                .iter()
                .find(|y| y.metric == m && y.set == x.set && y.step == x.step && y.coord == x.coord)
                .map(|y| y.value)
        };
        let mut size: Option<f64> = None;
        for x in r.records.iter().filter(|x| x.metric == "cardinality") {
            let Some(density) = value(x, "density") else {
                continue;
            };
            n += 1;
            if density == 0.0 {
                if x.value != 0.0 {
                    bad.push(ci);
                }
                continue;
            }
            let s = x.value / density;
            match size {
                None => size = Some(s),
                Some(s0) if (s - s0).abs() > ROUNDING * s0 => bad.push(ci),
                Some(_) => {}
            }
        }
    }
    (n > 0).then(|| {
        line(
            res,
            "cardinality is density × d m at every checkpoint".into(),
            n,
            &bad,
            format!("{n} checkpoints"),
        )
    })
}

/// FuncISH: `mean_auc` is the mean of `category_auc` over the categories (a cell's last
/// step, set by set).
fn mean_of_categories(res: &ExperimentResults<'_>) -> Option<SanityLine> {
    let (mut n, mut bad, mut worst) = (0usize, Vec::new(), 0.0f64);
    for (ci, r) in res.cells.iter().enumerate() {
        let Some(r) = r else { continue };
        for m in r.records.iter().filter(|x| x.metric == "mean_auc") {
            let cats: Vec<f64> = r
                .records
                .iter()
                .filter(|x| x.metric == "category_auc" && x.set == m.set && x.step == m.step)
                .map(|x| x.value)
                .collect();
            if cats.is_empty() {
                continue;
            }
            n += 1;
            let mean = cats.iter().sum::<f64>() / cats.len() as f64;
            let dev = (mean - m.value).abs();
            worst = worst.max(dev);
            if dev.is_nan() || dev > 1e-9 {
                bad.push(ci);
            }
        }
    }
    (n > 0).then(|| {
        line(
            res,
            "mean_auc is the mean of the categories' AUCs".into(),
            n,
            &bad,
            format!("{n} cells, largest difference {worst:.1e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cache::{CellResult, test_cell};
    use crate::engine::plan::Plan;

    /// The committed tensor-decomposition spec (Givens and TPM on synthetic mixtures) at its
    /// quick profile.
    fn plan() -> (Plan, tempfile::TempDir) {
        crate::analysis::quick_plan("givens/fig3.toml")
    }

    fn record(metric: &str, value: f64) -> Record {
        Record {
            set: "samples".into(),
            metric: metric.into(),
            step: 7,
            seconds: 0.0,
            k: None,
            coord: None,
            value,
        }
    }

    /// Every cell records `nmi` = 0.5 and the split's `optimal_nmi` = 0.8 + 0.01 repeat.
    fn cells(plan: &Plan) -> Vec<Option<CellResult>> {
        plan.cells
            .iter()
            .map(|c| {
                let mut r = test_cell(&c.key);
                r.records = vec![
                    record("nmi", 0.5),
                    record("optimal_nmi", 0.8 + 0.01 * c.repeat as f64),
                ];
                Some(r)
            })
            .collect()
    }

    fn check(plan: &Plan, cells: Vec<Option<CellResult>>) -> Vec<SanityLine> {
        lines(&ExperimentResults { plan, cells })
    }

    #[test]
    fn consistent_records_pass_every_check() {
        let (plan, _dir) = plan();
        assert!(plan.solvers.len() > 1 && plan.cells.len() > 2);
        let out = check(&plan, cells(&plan));
        let whats: Vec<&str> = out.iter().map(|l| l.what.as_str()).collect();
        assert!(
            whats
                .iter()
                .any(|w| w.starts_with("nmi, optimal_nmi lie in [0, 1]"))
                && whats
                    .iter()
                    .any(|w| w.starts_with("optimal_nmi (a property")),
            "{whats:?}"
        );
        assert!(out.iter().all(|l| l.ok), "{out:?}");
    }

    #[test]
    fn a_value_out_of_range_or_a_split_value_that_differs_fails_and_names_the_cell() {
        let (plan, _dir) = plan();
        // One cell's NMI above 1: out of range.
        let mut c = cells(&plan);
        c[1].as_mut().unwrap().records[0].value = 1.5;
        let out = check(&plan, c);
        let bad: Vec<&SanityLine> = out.iter().filter(|l| !l.ok).collect();
        assert_eq!(bad.len(), 1, "{out:?}");
        assert!(bad[0].what.starts_with("nmi, optimal_nmi"), "{bad:?}");
        assert!(
            bad[0]
                .detail
                .contains(&crate::engine::run::describe(&plan, 1)),
            "{}",
            bad[0].detail
        );
        // An undefined value is counted, not failed.
        let mut c = cells(&plan);
        c[1].as_mut().unwrap().records[0].value = f64::NAN;
        let out = check(&plan, c);
        assert!(out.iter().all(|l| l.ok), "{out:?}");
        assert!(
            out.iter().any(|l| l.detail.contains("(1 undefined)")),
            "{out:?}"
        );
        // The last cell (another solver than the first of its split) sees another optimum.
        let mut c = cells(&plan);
        let last = plan.cells.len() - 1;
        c[last].as_mut().unwrap().records[1].value += 1e-6;
        let out = check(&plan, c);
        let bad: Vec<&SanityLine> = out.iter().filter(|l| !l.ok).collect();
        assert_eq!(bad.len(), 1, "{out:?}");
        assert!(
            bad[0].what.starts_with("optimal_nmi (a property"),
            "{bad:?}"
        );
    }
}
