//! Results of one experiment: its cells' records as a tidy table (written as Parquet and CSV
//! with provenance columns by [`super::tidy`]), and the statistics plots, reports and checks
//! read.

use super::tidy::{Column, Table};
use crate::engine::cache::{Cache, CellResult, Record};
use crate::engine::plan::Plan;
use crate::spec::{At, Selector, XAxis};
use crate::tasks::{
    SATURATION_SECONDS, SATURATION_STEP, SECONDS_PER_STEP, SELECTION_SECONDS, TRAIN_SECONDS,
};
use std::path::{Path, PathBuf};

/// Relative distance to the best validation mAP that counts as saturated.
pub const SATURATION_TOLERANCE: f64 = 0.01;

/// What the hold-out selects on: a set, a metric and its direction (the task's
/// [`crate::tasks::Task::selection`]; validation mAP for the ranking tasks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectionCurve<'a> {
    pub set: &'a str,
    pub metric: &'a str,
    pub higher_is_better: bool,
}

impl SelectionCurve<'static> {
    /// Validation mAP, higher is better.
    pub const VALIDATION_MAP: SelectionCurve<'static> = SelectionCurve {
        set: "validation",
        metric: "map",
        higher_is_better: true,
    };
}

/// The selection records of a cell's hold-out run, by step.
fn validation_curve<'r>(records: &'r [Record], sel: &SelectionCurve<'_>) -> Vec<&'r Record> {
    let mut val: Vec<&Record> = records
        .iter()
        .filter(|r| r.set == sel.set && r.metric == sel.metric && r.k.is_none())
        .collect();
    val.sort_by_key(|r| r.step);
    val
}

/// Whether the hold-out run was still improving at its last checkpoint: the saturation
/// checkpoint is the grid's last one (no earlier checkpoint is within the tolerance of the
/// best), so the saturation pseudo-metrics are lower bounds of the time to saturation.
pub fn unsaturated(records: &[Record], sel: &SelectionCurve<'_>) -> bool {
    let val = validation_curve(records, sel);
    val.len() > 1
        && first_saturated(&val, sel.higher_is_better)
            .is_some_and(|s| s.step == val[val.len() - 1].step)
}

/// The first selection record (by step) within [`SATURATION_TOLERANCE`] of the best.
pub fn saturation<'r>(records: &'r [Record], sel: &SelectionCurve<'_>) -> Option<&'r Record> {
    first_saturated(&validation_curve(records, sel), sel.higher_is_better)
}

/// [`saturation`] over a selection curve sorted by step.
fn first_saturated<'r>(val: &[&'r Record], higher: bool) -> Option<&'r Record> {
    let sign = if higher { 1.0 } else { -1.0 };
    let best = val
        .iter()
        .map(|r| sign * r.value)
        .fold(f64::NEG_INFINITY, f64::max);
    val.iter()
        .copied()
        .find(|r| sign * r.value >= best - SATURATION_TOLERANCE * best.abs())
}

/// A cell's value of a pseudo-metric: `None` when `metric` is not one, `Some(None)` when
/// the cell has no value for it (a learner without steps has no seconds per step).
fn pseudo_metric(
    cell: &CellResult,
    metric: &str,
    sel: Option<&SelectionCurve<'_>>,
) -> Option<Option<f64>> {
    let saturated = || sel.and_then(|s| saturation(&cell.records, s));
    Some(match metric {
        SATURATION_SECONDS => Some(saturated().map_or(cell.train_seconds, |r| r.seconds)),
        SATURATION_STEP => saturated().map(|r| r.step as f64),
        TRAIN_SECONDS => Some(cell.train_seconds),
        SELECTION_SECONDS => Some(cell.selection_seconds),
        SECONDS_PER_STEP => {
            let steps = cell
                .selected_step
                .or_else(|| cell.records.iter().map(|r| r.step).max())
                .unwrap_or(0);
            (steps > 0).then(|| cell.train_seconds / steps as f64)
        }
        _ => return None,
    })
}

/// Mean, standard deviation (n-1), standard error of the mean and count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub sd: f64,
    pub sem: f64,
    pub n: usize,
}

impl Stat {
    pub fn of(values: &[f64]) -> Option<Stat> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Stat {
            mean,
            sd,
            sem: sd / (n as f64).sqrt(),
            n,
        })
    }
}

/// A plan with whatever of its cells is cached.
pub struct ExperimentResults<'a> {
    pub plan: &'a Plan,
    /// Aligned with `plan.cells`.
    pub cells: Vec<Option<CellResult>>,
}

/// The point of a curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    pub x: f64,
    pub y: Stat,
}

impl<'a> ExperimentResults<'a> {
    pub fn load(plan: &'a Plan, cache: &Cache) -> Self {
        let cells = plan.cells.iter().map(|c| cache.get(&c.key)).collect();
        Self { plan, cells }
    }

    /// [`ExperimentResults::load`] with each cached cell's content digest (aligned with
    /// `plan.cells`), for stamping what is derived from the cells ([`Self::write_tables`]).
    pub fn load_digested(plan: &'a Plan, cache: &Cache) -> (Self, Vec<Option<String>>) {
        let (cells, digests) = (plan.cells.iter())
            .map(|c| match cache.get_digested(&c.key) {
                Some((r, d)) => (Some(r), Some(d)),
                None => (None, None),
            })
            .unzip();
        (Self { plan, cells }, digests)
    }

    /// The task's hold-out selection curve, if it has one.
    pub fn selection(&self) -> Option<SelectionCurve<'static>> {
        self.plan
            .task
            .selection()
            .map(|(set, metric)| SelectionCurve {
                set,
                metric,
                higher_is_better: self.plan.metric(metric).higher_is_better,
            })
    }

    /// The cached cells whose stored source fingerprints differ from the current code's,
    /// counted by what changed (`solver oasis`, `task retrieval`, `data caltech256-standin`):
    /// a cell whose solver and task both changed counts under both.
    pub fn stale_code(&self) -> Vec<(String, usize)> {
        self.stale().1
    }

    /// How many cached cells were computed by code that has changed since (each cell once).
    pub fn stale_cells(&self) -> usize {
        self.stale().0
    }

    fn stale(&self) -> (usize, Vec<(String, usize)>) {
        let mut by: std::collections::BTreeMap<String, usize> = Default::default();
        let mut cells = 0;
        for (cell, r) in self.plan.cells.iter().zip(&self.cells) {
            let Some(r) = r else { continue };
            let mut this = false;
            for part in crate::engine::cache::changed_parts(&cell.code, &r.code) {
                let name = match part {
                    "solver" => format!("solver {}", self.plan.solvers[cell.solver].name),
                    "task" => format!("task {}", self.plan.task.name()),
                    "data" => format!("data {}", self.plan.datasets[cell.dataset].resolved.name),
                    other => other.to_string(),
                };
                *by.entry(name).or_default() += 1;
                this = true;
            }
            cells += this as usize;
        }
        (cells, by.into_iter().collect())
    }

    pub fn missing(&self) -> usize {
        self.cells.iter().filter(|c| c.is_none()).count()
    }

    pub fn complete(&self) -> bool {
        self.missing() == 0
    }

    /// Missing cells per data set of the plan (in its order).
    pub fn missing_by_dataset(&self) -> Vec<usize> {
        let mut missing = vec![0usize; self.plan.datasets.len()];
        for (cell, r) in self.plan.cells.iter().zip(&self.cells) {
            missing[cell.dataset] += r.is_none() as usize;
        }
        missing
    }

    /// Indices of the solver instances a selector's `solver` names: by label, else by
    /// registry name.
    pub fn solvers_named(&self, name: &str) -> Vec<usize> {
        let by_label: Vec<usize> = (0..self.plan.solvers.len())
            .filter(|&i| self.plan.solvers[i].label == name)
            .collect();
        if !by_label.is_empty() {
            return by_label;
        }
        (0..self.plan.solvers.len())
            .filter(|&i| self.plan.solvers[i].name == name)
            .collect()
    }

    fn dataset_index(&self, id: &str) -> Option<usize> {
        self.plan.datasets.iter().position(|d| d.id == id)
    }

    /// Cached cells of one data set and solver instance.
    fn cells_of(&self, dataset: usize, solver: usize) -> impl Iterator<Item = &CellResult> {
        self.plan
            .cells
            .iter()
            .zip(&self.cells)
            .filter(move |(c, _)| c.dataset == dataset && c.solver == solver)
            .filter_map(|(_, r)| r.as_ref())
    }

    /// One value per cached repeat for a selector. Errors name what could not be matched.
    pub fn select(&self, sel: &Selector) -> Result<Vec<f64>, String> {
        Ok(self.select_repeats(sel)?.into_values().collect())
    }

    /// [`select`](Self::select) keyed by repeat index (for paired comparisons).
    pub fn select_repeats(
        &self,
        sel: &Selector,
    ) -> Result<std::collections::BTreeMap<u32, f64>, String> {
        let ds = match &sel.dataset {
            Some(id) => vec![
                self.dataset_index(id)
                    .ok_or(format!("no data set `{id}`"))?,
            ],
            None => (0..self.plan.datasets.len()).collect(),
        };
        let solvers = match &sel.solver {
            Some(s) => self.solvers_named(s),
            None => (0..self.plan.solvers.len()).collect(),
        };
        if solvers.len() != 1 || ds.len() != 1 {
            return Err(format!(
                "selector must name exactly one data set and one solver (matched {} and {})",
                ds.len(),
                solvers.len()
            ));
        }
        let mut values = std::collections::BTreeMap::new();
        let curve = self.selection();
        let higher = self.plan.metric(&sel.metric).higher_is_better;
        for cell in self.cells_of(ds[0], solvers[0]) {
            if let Some(v) = pseudo_metric(cell, &sel.metric, curve.as_ref()) {
                if let Some(v) = v {
                    values.insert(cell.repeat, v);
                }
                continue;
            }
            let matching = cell.records.iter().filter(|r| {
                r.set == sel.set
                    && r.metric == sel.metric
                    && r.k == sel.k
                    && sel
                        .coord
                        .is_none_or(|c| r.coord.as_ref().is_some_and(|x| x.value == c))
            });
            let pick = match sel.at {
                At::Last => matching.max_by_key(|r| r.step),
                At::Best if higher => matching.max_by(|a, b| a.value.total_cmp(&b.value)),
                At::Best => matching.min_by(|a, b| a.value.total_cmp(&b.value)),
                At::Step(s) => matching.into_iter().find(|r| r.step == s),
            };
            if let Some(r) = pick {
                values.insert(cell.repeat, r.value);
            }
        }
        if values.is_empty() {
            return Err(format!(
                "no records for metric `{}`{} on set `{}`",
                sel.metric,
                sel.k.map(|k| format!("@{k}")).unwrap_or_default(),
                sel.set
            ));
        }
        Ok(values)
    }

    /// The mean over repeats of `metric` at each value of the named coordinate `x` (one per
    /// category, say), keyed by the value's bits: what [`paired`] matches across solvers.
    pub fn coordinate_means(
        &self,
        di: usize,
        si: usize,
        set: &str,
        metric: &str,
        x: &XAxis,
        k: Option<u32>,
    ) -> std::collections::BTreeMap<u64, f64> {
        self.curve(di, si, set, metric, x, k)
            .into_iter()
            .map(|p| (p.x.to_bits(), p.y.mean))
            .collect()
    }

    /// A curve of `metric` on `set` against `x`, averaged over repeats (points present in
    /// every cached repeat only). For `x = k`, each repeat's last step is used. For a named
    /// x, the records' coordinate of that name, or else the metric of that name recorded at
    /// the same step, set, k and coordinate. A cell with several records at one point (e.g.
    /// one per simulated rater) contributes them all: the statistics then pool those samples
    /// with the repeats.
    pub fn curve(
        &self,
        dataset: usize,
        solver: usize,
        set: &str,
        metric: &str,
        x: &XAxis,
        k: Option<u32>,
    ) -> Vec<CurvePoint> {
        let cells: Vec<&CellResult> = self.cells_of(dataset, solver).collect();
        Self::curve_of(&cells, set, metric, x, k)
    }

    /// `solver`'s curve minus `reference`'s, paired by repeat: at each x both have in a
    /// repeat, the difference of the two repeats' values; the statistics are over those
    /// paired differences (repeats where either has no point at x are left out there).
    #[allow(clippy::too_many_arguments)]
    pub fn difference_curve(
        &self,
        dataset: usize,
        solver: usize,
        reference: usize,
        set: &str,
        metric: &str,
        x: &XAxis,
        k: Option<u32>,
    ) -> Vec<CurvePoint> {
        let refs: Vec<&CellResult> = self.cells_of(dataset, reference).collect();
        let mut by_x: std::collections::BTreeMap<u64, (f64, Vec<f64>)> = Default::default();
        for cell in self.cells_of(dataset, solver) {
            let Some(other) = refs.iter().find(|r| r.repeat == cell.repeat) else {
                continue;
            };
            let mine = Self::curve_of(&[cell], set, metric, x, k);
            let theirs = Self::curve_of(&[*other], set, metric, x, k);
            for p in &mine {
                if let Some(q) = theirs.iter().find(|q| q.x == p.x) {
                    let e = by_x.entry(p.x.to_bits()).or_insert((p.x, Vec::new()));
                    e.1.push(p.y.mean - q.y.mean);
                }
            }
        }
        let mut points: Vec<CurvePoint> = by_x
            .into_values()
            .filter_map(|(x, d)| Stat::of(&d).map(|y| CurvePoint { x, y }))
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        points
    }

    /// [`curve`](Self::curve) over the given cells.
    fn curve_of(
        cells: &[&CellResult],
        set: &str,
        metric: &str,
        x: &XAxis,
        k: Option<u32>,
    ) -> Vec<CurvePoint> {
        #[derive(Default)]
        struct Point {
            x: Vec<f64>,
            values: Vec<f64>,
            /// Cells that contributed (cells are visited in order, so the last one suffices
            /// to count them).
            cells: usize,
            last_cell: Option<usize>,
        }
        let coord_named = |name: &str| {
            cells
                .iter()
                .flat_map(|c| &c.records)
                .any(|r| r.coord.as_ref().is_some_and(|c| c.name == name))
        };
        let named_is_coord = matches!(x, XAxis::Named(n) if coord_named(n));
        // Points are keyed by the exact bits of their x (or the step / k).
        let mut by_x: std::collections::BTreeMap<(u64, u64), Point> = Default::default();
        for (ci, cell) in cells.iter().enumerate() {
            let recs = cell
                .records
                .iter()
                .filter(|r| r.set == set && r.metric == metric);
            let last = recs.clone().map(|r| r.step).max();
            // For a coordinate x: the last step recorded at each (coordinate, k).
            let mut last_at: std::collections::HashMap<(u64, Option<u32>), u64> =
                Default::default();
            if named_is_coord {
                for r in recs.clone() {
                    if let Some(c) = &r.coord {
                        let e = last_at.entry((c.value.to_bits(), r.k)).or_insert(r.step);
                        *e = (*e).max(r.step);
                    }
                }
            }
            // For an x metric: its records by (step, k, coord bits).
            let x_metric: std::collections::HashMap<(u64, Option<u32>, Option<u64>), f64> = match x
            {
                XAxis::Named(name) if !named_is_coord => cell
                    .records
                    .iter()
                    .filter(|r| r.set == set && &r.metric == name)
                    .map(|r| {
                        (
                            (r.step, r.k, r.coord.as_ref().map(|c| c.value.to_bits())),
                            r.value,
                        )
                    })
                    .collect(),
                _ => Default::default(),
            };
            for r in recs {
                let (key, xv) = match x {
                    XAxis::K => {
                        if Some(r.step) != last {
                            continue;
                        }
                        match r.k {
                            Some(k) => ((u64::from(k), 0), k as f64),
                            None => continue,
                        }
                    }
                    XAxis::Param => continue,
                    XAxis::Step | XAxis::Seconds => {
                        if r.k != k {
                            continue;
                        }
                        let xv = if *x == XAxis::Seconds {
                            r.seconds
                        } else {
                            r.step as f64
                        };
                        ((r.step, 0), xv)
                    }
                    XAxis::Named(name) if named_is_coord => match &r.coord {
                        Some(c)
                            if &c.name == name
                                && last_at.get(&(c.value.to_bits(), r.k)) == Some(&r.step) =>
                        {
                            ((c.value.to_bits(), u64::from(r.k.unwrap_or(0))), c.value)
                        }
                        _ => continue,
                    },
                    XAxis::Named(_) => {
                        let c = r.coord.as_ref().map(|c| c.value.to_bits());
                        match x_metric.get(&(r.step, r.k, c)) {
                            Some(&xv) => {
                                ((r.step, c.unwrap_or(0) ^ u64::from(r.k.unwrap_or(0))), xv)
                            }
                            None => continue,
                        }
                    }
                };
                let e = by_x.entry(key).or_default();
                if e.last_cell != Some(ci) {
                    e.cells += 1;
                    e.last_cell = Some(ci);
                }
                e.values.push(r.value);
                e.x.push(xv);
            }
        }
        let mut points: Vec<CurvePoint> = by_x
            .into_values()
            .filter(|p| p.cells == cells.len())
            .filter_map(|p| {
                let x = p.x.iter().sum::<f64>() / p.x.len() as f64;
                Stat::of(&p.values).map(|y| CurvePoint { x, y })
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        points
    }

    /// The numeric value of the first of `names` among a data set's spec parameters.
    pub fn dataset_param(&self, id: &str, names: &[String]) -> Option<f64> {
        let d = self.plan.datasets.iter().find(|d| d.id == id)?;
        Self::numeric_param(d, names)
    }

    /// The first of `names` among a data set's `vars`, else among its spec parameters.
    fn numeric_param(d: &crate::engine::plan::DatasetInstance, names: &[String]) -> Option<f64> {
        if let Some(v) = names.iter().find_map(|p| d.vars.get(p)) {
            return Some(*v);
        }
        number(names.iter().find_map(|p| d.spec_params.get(p))?)
    }

    /// One point per data set: x = the data set's numeric parameter `x_param` (as written
    /// in the spec), y = `metric` (at the last step) over repeats. Data sets where the solver
    /// has no cached cell or the parameter is not a number are skipped.
    pub fn param_series(
        &self,
        solver: usize,
        set: &str,
        metric: &str,
        k: Option<u32>,
        x_param: &[String],
        datasets: &[String],
    ) -> Vec<CurvePoint> {
        let mut points: Vec<CurvePoint> = (0..self.plan.datasets.len())
            .filter(|&di| datasets.is_empty() || datasets.contains(&self.plan.datasets[di].id))
            .filter_map(|di| self.param_point(di, solver, set, metric, k, x_param))
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        points
    }

    /// The x values of [`param_series`](Self::param_series) whose y is only a lower bound:
    /// a saturation pseudo-metric of a cell whose hold-out run had not saturated by the end
    /// of its grid ([`unsaturated`]).
    pub fn lower_bound_xs(&self, solver: usize, metric: &str, x_param: &[String]) -> Vec<f64> {
        let Some(sel) = self.selection() else {
            return Vec::new();
        };
        if !matches!(metric, SATURATION_SECONDS | SATURATION_STEP) {
            return Vec::new();
        }
        (0..self.plan.datasets.len())
            .filter(|&di| {
                self.cells_of(di, solver)
                    .any(|c| unsaturated(&c.records, &sel))
            })
            .filter_map(|di| Self::numeric_param(&self.plan.datasets[di], x_param))
            .collect()
    }

    /// A solver instance's point at `x` on one data set: `metric` at the last step over
    /// repeats (plots whose x axis is a solver grid parameter).
    pub fn point_at(
        &self,
        dataset: usize,
        solver: usize,
        set: &str,
        metric: &str,
        k: Option<u32>,
        x: f64,
    ) -> Option<CurvePoint> {
        let sel = Selector {
            dataset: Some(self.plan.datasets[dataset].id.clone()),
            solver: Some(self.plan.solvers[solver].label.clone()),
            metric: metric.to_string(),
            set: set.to_string(),
            k,
            coord: None,
            at: At::Last,
        };
        let v = self.select(&sel).ok()?;
        Stat::of(&v).map(|y| CurvePoint { x, y })
    }

    /// One data set's point of [`param_series`](Self::param_series).
    pub fn param_point(
        &self,
        dataset: usize,
        solver: usize,
        set: &str,
        metric: &str,
        k: Option<u32>,
        x_param: &[String],
    ) -> Option<CurvePoint> {
        let d = &self.plan.datasets[dataset];
        let x = Self::numeric_param(d, x_param)?;
        let sel = Selector {
            dataset: Some(d.id.clone()),
            solver: Some(self.plan.solvers[solver].label.clone()),
            metric: metric.to_string(),
            set: set.to_string(),
            k,
            coord: None,
            at: At::Last,
        };
        let v = self.select(&sel).ok()?;
        Stat::of(&v).map(|y| CurvePoint { x, y })
    }

    /// The tidy table: one row per record, with provenance columns.
    pub fn table(&self) -> Table {
        let p = self.plan;
        let mut cols: Cols = Cols::default();
        for (cell, r) in p.cells.iter().zip(&self.cells) {
            let Some(r) = r else { continue };
            let d = &p.datasets[cell.dataset];
            let sv = &p.solvers[cell.solver];
            for rec in &r.records {
                cols.experiment.push(p.spec.id.clone());
                cols.figure.push(p.spec.spec.figure.clone());
                cols.profile.push(p.profile.as_str().to_string());
                cols.dataset.push(d.id.clone());
                cols.dataset_name.push(r.dataset.clone());
                cols.dataset_identity.push(r.dataset_identity.clone());
                cols.synthetic.push(r.synthetic);
                cols.solver.push(r.solver.clone());
                cols.label.push(sv.label.clone());
                cols.params.push(r.params.to_string());
                cols.repeat.push(r.repeat);
                cols.seed.push(r.seed);
                cols.set.push(rec.set.clone());
                cols.metric.push(rec.metric.clone());
                cols.step.push(rec.step);
                cols.k.push(rec.k);
                cols.coord.push(rec.coord.as_ref().map(|c| c.name.clone()));
                cols.coord_value.push(rec.coord.as_ref().map(|c| c.value));
                cols.solver_seconds.push(rec.seconds);
                cols.value.push(rec.value);
                cols.selected_step.push(r.selected_step);
                cols.tuned.push(r.tuned.as_ref().map(|t| t.to_string()));
                cols.train_seconds.push(r.train_seconds);
                cols.selection_seconds.push(r.selection_seconds);
                cols.eval_seconds.push(r.eval_seconds);
                cols.cell_key.push(r.key.clone());
                cols.git_commit.push(r.git_commit.clone());
                cols.dyad_version.push(r.dyad_version.clone());
            }
        }
        cols.into_table()
    }

    /// Write `<dir>/<name>.parquet` and `<dir>/<name>.csv` atomically, then `<name>.stamp`:
    /// the [`Self::table_stamp`] of `digests` (the cells' content digests, as
    /// [`Self::load_digested`] gives them) and the two files' sizes. When the stamp file
    /// already says exactly that, the tables are what this call would write and are left
    /// alone (a re-run with every cell cached writes no table). Returns the two paths and
    /// whether they were left alone.
    pub fn write_tables(
        &self,
        dir: &Path,
        digests: &[Option<String>],
    ) -> Result<([PathBuf; 2], bool), String> {
        let name = self.plan.spec.id.replace('/', "-");
        let paths = [
            dir.join(format!("{name}.parquet")),
            dir.join(format!("{name}.csv")),
        ];
        let stamp_path = dir.join(format!("{name}.stamp"));
        let stamp = self.table_stamp(digests);
        let sizes = || -> Option<String> {
            let len = |p: &PathBuf| std::fs::metadata(p).ok().map(|m| m.len().to_string());
            Some(format!("{stamp} {} {}\n", len(&paths[0])?, len(&paths[1])?))
        };
        if sizes().is_some_and(|want| std::fs::read_to_string(&stamp_path).ok() == Some(want)) {
            return Ok((paths, true));
        }
        let table = self.table();
        for (p, bytes) in paths.iter().zip([table.parquet()?, table.csv()?]) {
            crate::engine::cache::write_atomic(p, &bytes)
                .map_err(|e| format!("{}: {e}", p.display()))?;
        }
        let written = sizes().ok_or_else(|| format!("{}: not written", paths[0].display()))?;
        crate::engine::cache::write_atomic(&stamp_path, written.as_bytes())
            .map_err(|e| format!("{}: {e}", stamp_path.display()))?;
        Ok((paths, false))
    }

    /// What [`Self::table`]'s files are a function of: the code that builds and encodes them
    /// (source fingerprints and the versions of the encoding crates), the plan's names
    /// (experiment, figure, profile, data set ids, solver labels) and each cell's content
    /// digest (`None`: not cached).
    pub fn table_stamp(&self, digests: &[Option<String>]) -> String {
        use sha2::{Digest, Sha256};
        static CODE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            crate::registry::fingerprint(&[
                "harness/src/analysis/results.rs",
                "harness/src/analysis/tidy.rs",
            ])
        });
        let p = self.plan;
        let mut h = Sha256::new();
        let mut put = |s: &str| {
            h.update(s.as_bytes());
            h.update([0]);
        };
        put(&CODE);
        put(env!("DYAD_TABLE_DEPS"));
        put(&p.spec.id);
        put(&p.spec.spec.figure);
        put(p.profile.as_str());
        for (cell, d) in p.cells.iter().zip(digests) {
            put(&p.datasets[cell.dataset].id);
            put(&p.solvers[cell.solver].label);
            put(d.as_deref().unwrap_or("-"));
        }
        dyad_datasets::identity::hex(&h.finalize())
    }
}

#[derive(Default)]
struct Cols {
    experiment: Vec<String>,
    figure: Vec<String>,
    profile: Vec<String>,
    dataset: Vec<String>,
    dataset_name: Vec<String>,
    dataset_identity: Vec<String>,
    synthetic: Vec<bool>,
    solver: Vec<String>,
    label: Vec<String>,
    params: Vec<String>,
    repeat: Vec<u32>,
    seed: Vec<u64>,
    set: Vec<String>,
    metric: Vec<String>,
    step: Vec<u64>,
    k: Vec<Option<u32>>,
    /// The record's second coordinate: its name and value.
    coord: Vec<Option<String>>,
    coord_value: Vec<Option<f64>>,
    solver_seconds: Vec<f64>,
    value: Vec<f64>,
    selected_step: Vec<Option<u64>>,
    /// The parameters chosen on the hold-out, for solvers with `tune`.
    tuned: Vec<Option<String>>,
    train_seconds: Vec<f64>,
    selection_seconds: Vec<f64>,
    eval_seconds: Vec<f64>,
    cell_key: Vec<String>,
    git_commit: Vec<String>,
    dyad_version: Vec<String>,
}

impl Cols {
    fn into_table(self) -> Table {
        use Column::*;
        let mut t = Table::default();
        t.push("experiment", Str(self.experiment));
        t.push("figure", Str(self.figure));
        t.push("profile", Str(self.profile));
        t.push("dataset", Str(self.dataset));
        t.push("dataset_name", Str(self.dataset_name));
        t.push("dataset_identity", Str(self.dataset_identity));
        t.push("synthetic", Bool(self.synthetic));
        t.push("solver", Str(self.solver));
        t.push("label", Str(self.label));
        t.push("params", Str(self.params));
        t.push("repeat", U32(self.repeat));
        t.push("seed", U64(self.seed));
        t.push("set", Str(self.set));
        t.push("metric", Str(self.metric));
        t.push("step", U64(self.step));
        t.push("k", OptU32(self.k));
        t.push("coord", OptStr(self.coord));
        t.push("coord_value", OptF64(self.coord_value));
        t.push("solver_seconds", F64(self.solver_seconds));
        t.push("value", F64(self.value));
        t.push("selected_step", OptU64(self.selected_step));
        t.push("tuned", OptStr(self.tuned));
        t.push("train_seconds", F64(self.train_seconds));
        t.push("selection_seconds", F64(self.selection_seconds));
        t.push("eval_seconds", F64(self.eval_seconds));
        t.push("cell_key", Str(self.cell_key));
        t.push("git_commit", Str(self.git_commit));
        t.push("dyad_version", Str(self.dyad_version));
        t
    }
}

/// A TOML integer or float as `f64` (spec parameters, grid points).
pub fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// The values of two [`ExperimentResults::coordinate_means`] at the coordinates both have, in
/// coordinate order.
pub fn paired(
    a: &std::collections::BTreeMap<u64, f64>,
    b: &std::collections::BTreeMap<u64, f64>,
) -> (Vec<f64>, Vec<f64>) {
    a.iter()
        .filter_map(|(k, &u)| b.get(k).map(|&v| (u, v)))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::{Record, SelectionCurve, Stat, saturation, unsaturated};

    #[test]
    fn saturation_is_the_first_checkpoint_within_one_percent_of_the_best() {
        let rec = |set: &str, step: u64, value: f64| Record {
            set: set.into(),
            metric: "map".into(),
            step,
            seconds: step as f64 / 10.0,
            k: None,
            coord: None,
            value,
        };
        let v = SelectionCurve::VALIDATION_MAP;
        let curve = [
            rec("validation", 0, 0.10),
            rec("validation", 10, 0.08),
            rec("validation", 100, 0.1985),
            rec("validation", 1000, 0.1995),
            rec("validation", 10000, 0.200),
            rec("test", 5, 0.5),
        ];
        // Best 0.200: 0.1985 is within 1 % (>= 0.198), 0.08 and 0.10 are not.
        let s = saturation(&curve, &v).unwrap();
        assert_eq!((s.step, s.seconds), (100, 10.0));
        // A falling curve saturates at its start; no validation records, no saturation.
        let falling = [rec("validation", 0, 0.3), rec("validation", 10, 0.2)];
        assert_eq!(saturation(&falling, &v).unwrap().step, 0);
        assert!(saturation(&curve[5..], &v).is_none());
        // Saturated before the grid's end: exact. Still rising at the last checkpoint (no
        // earlier value within 1 % of it): a lower bound. One checkpoint, or none: exact.
        assert!(!unsaturated(&curve, &v));
        let rising = [
            rec("validation", 0, 0.10),
            rec("validation", 10, 0.15),
            rec("validation", 100, 0.19),
        ];
        assert!(unsaturated(&rising, &v));
        assert!(!unsaturated(&falling, &v));
        assert!(!unsaturated(&rising[2..], &v));
        assert!(!unsaturated(&curve[5..], &v));
    }

    #[test]
    fn stat_matches_hand_computation() {
        let s = Stat::of(&[1.0, 2.0, 3.0, 6.0]).unwrap();
        assert_eq!(s.mean, 3.0);
        // sample variance = (4 + 1 + 0 + 9) / 3
        assert!((s.sd - (14.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((s.sem - s.sd / 2.0).abs() < 1e-12);
        assert_eq!(Stat::of(&[5.0]).unwrap().sd, 0.0);
        assert!(Stat::of(&[]).is_none());
    }
}
