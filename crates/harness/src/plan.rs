//! Grid expansion: a spec and a profile become cells, each with its cache key.
//!
//! A cell key is the sha256 of a canonical JSON document (keys sorted) holding exactly what
//! determines the cell's result: the result-format version, the task and a fingerprint of its
//! code, the resolved protocol, the data set's provider, canonical parameters, content
//! identity and code fingerprint, the solver's name, canonical parameters (defaults filled in)
//! and source fingerprint, the seed and the repeat index. Titles, plots, claims, comments and
//! the spec's own name are not in it, so cosmetic edits rerun nothing and two specs that
//! describe the same run share its cells.

use crate::cache::RESULT_FORMAT_VERSION;
use crate::data::{DataContext, Resolved, provider};
use crate::profile::{Profile, resolve_value};
use crate::registry::{self, HUMAN_TASK, RANKING_TASK, fingerprint};
use crate::spec::SplitKind;
use crate::spec::{LoadedSpec, SpecError, table_of};
use crate::tasks::human::HumanCell;
use crate::tasks::ranking::{RankingCell, SplitCell};
use serde_json::json;
use sha2::{Digest, Sha256};

/// One data set of a plan.
pub struct DatasetInstance {
    /// The spec's id for it (`"c10"`).
    pub id: String,
    /// The registry name the spec asked for.
    pub requested: String,
    /// The parameters as written in the spec (resolved for the profile).
    pub spec_params: toml::Table,
    pub resolved: Resolved,
}

/// One solver configuration of a plan (a grid point).
pub struct SolverInstance {
    pub name: &'static str,
    /// Legend label; grid points append their parameters.
    pub label: String,
    /// Resolved parameters as written (the learner is rebuilt from them when run).
    pub params: toml::Value,
    /// Canonical parameters, defaults filled in.
    pub canonical: serde_json::Value,
    pub fingerprint: String,
    pub iterative: bool,
    /// Candidate parameters tuned inside each cell (empty: nothing to tune). Each is the full
    /// parameter table (fixed parameters and grid point included).
    pub tune: Vec<toml::Value>,
    /// Data set ids this solver runs on (empty: all).
    pub datasets: Vec<String>,
    /// The solver's own checkpoint grid, if the spec gives one.
    pub checkpoints: Option<Vec<u64>>,
    /// Whether the hold-out chooses this solver's step count (spec `early_stopping`).
    pub select_steps: bool,
}

/// One unit of work.
#[derive(Debug, Clone)]
pub struct Cell {
    pub key: String,
    pub dataset: usize,
    pub solver: usize,
    pub repeat: u32,
    pub canonical: serde_json::Value,
}

/// A spec expanded for one profile.
pub struct Plan {
    pub spec: LoadedSpec,
    pub profile: Profile,
    pub datasets: Vec<DatasetInstance>,
    pub solvers: Vec<SolverInstance>,
    pub ranking: RankingCell,
    /// The simulated human evaluation run after the ranking task, if the spec asks for it.
    pub human: Option<HumanCell>,
    pub seed: u64,
    pub repeats: u32,
    pub cells: Vec<Cell>,
}

impl Plan {
    /// Whether any data set of the plan is a synthetic stand-in.
    pub fn any_synthetic(&self) -> bool {
        self.datasets.iter().any(|d| d.resolved.synthetic)
    }

    /// The cell's protocol: learners without steps ignore checkpoints and early stopping, so
    /// those stay out of their keys (their cells are shared across checkpoint grids).
    pub fn ranking_for(&self, solver: &SolverInstance) -> RankingCell {
        let mut r = self.ranking.clone();
        if let Some(c) = &solver.checkpoints {
            r.checkpoints = c.clone();
        }
        if !solver.iterative {
            r.checkpoints.clear();
        }
        let selects_steps = solver.iterative && solver.select_steps;
        if !selects_steps && solver.tune.is_empty() {
            // Nothing to choose on the hold-out.
            r.early_stopping = None;
        }
        // `false` only where a hold-out runs without choosing steps, so that every other
        // cell keeps its key.
        r.select_steps = selects_steps || !solver.iterative || r.early_stopping.is_none();
        r
    }
}

/// Hex sha256 of a canonical JSON value (serde_json maps are sorted by key).
pub fn cell_key(canonical: &serde_json::Value) -> String {
    dyad_datasets::identity::hex(&Sha256::digest(canonical.to_string().as_bytes()))
}

fn resolve_table(t: toml::Table, profile: Profile) -> toml::Table {
    match resolve_value(&toml::Value::Table(t), profile) {
        toml::Value::Table(t) => t,
        _ => unreachable!("a table resolves to a table"),
    }
}

/// Cartesian product of a grid table, in key order.
fn grid_points(grid: &toml::Table) -> Vec<toml::Table> {
    let mut points = vec![toml::Table::new()];
    for (k, v) in grid {
        let values = v.as_array().cloned().unwrap_or_default();
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |x| {
                    let mut q = p.clone();
                    q.insert(k.clone(), x.clone());
                    q
                })
            })
            .collect();
    }
    points
}

/// Expand `spec` for `profile`. Resolving data sets reads no data when their content
/// identity is already known.
pub fn plan(spec: &LoadedSpec, profile: Profile, ctx: &DataContext) -> Result<Plan, SpecError> {
    let s = &spec.spec;
    let r = s
        .protocol
        .ranking
        .as_ref()
        .expect("validated: ranking task present");
    let at = |v: &Option<crate::profile::PerProfile<usize>>| v.as_ref().map(|v| *v.at(profile));
    let split = match r.split {
        SplitKind::PerClass => SplitCell::PerClass {
            train: at(&r.train_per_class).expect("validated"),
            test: at(&r.test_per_class).expect("validated"),
        },
        SplitKind::Official => SplitCell::Official {
            max_train: at(&r.max_train),
            max_test: at(&r.max_test),
        },
    };
    let ranking = RankingCell {
        split,
        evaluate: r.evaluate.clone(),
        k_max: r.k_max,
        precision_at_every_checkpoint: r.precision_at_every_checkpoint,
        model_statistics: r.model_statistics,
        checkpoints: s
            .protocol
            .checkpoints
            .at(profile)
            .steps()
            .map_err(|e| spec.error(format!("key `protocol.checkpoints`: {e}")))?,
        early_stopping: r.early_stopping.clone(),
        select_steps: true,
    };

    let mut datasets = Vec::new();
    for d in &s.datasets {
        let at = d.name.span().start;
        let p = provider(d.name.get_ref()).ok_or_else(|| {
            spec.error_at(
                at,
                format!(
                    "key `datasets.name`: unknown data set \"{}\" (known: {})",
                    d.name.get_ref(),
                    crate::data::PROVIDERS
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let (params, params_at) = table_of(&d.params, at);
        let params = resolve_table(params, profile);
        let resolved = (p.resolve)(ctx, &params)
            .map_err(|e| spec.error_at(params_at, format!("data set `{}`: {e}", d.id)))?;
        datasets.push(DatasetInstance {
            id: d.id.clone(),
            requested: p.name.to_string(),
            spec_params: params,
            resolved,
        });
    }

    let mut solvers = Vec::new();
    for sv in &s.solvers {
        let at = sv.name.span().start;
        let entry = registry::solver(sv.name.get_ref()).ok_or_else(|| {
            spec.error_at(
                at,
                format!(
                    "key `solvers.name`: unknown solver \"{}\" (known: {})",
                    sv.name.get_ref(),
                    registry::SOLVERS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let (base, params_at) = table_of(&sv.params, at);
        let base = resolve_table(base, profile);
        let grid = resolve_table(table_of(&sv.grid, at).0, profile);
        let fp = fingerprint(entry.sources);
        for point in grid_points(&grid) {
            let mut params = base.clone();
            let mut suffix = Vec::new();
            for (k, v) in &point {
                params.insert(k.clone(), v.clone());
                suffix.push(format!("{k}={v}"));
            }
            let params = toml::Value::Table(params);
            let built = (entry.build)(params.clone()).map_err(|e| {
                spec.error_at(
                    params_at,
                    format!("key `solvers.params` of `{}`: {e}", entry.name),
                )
            })?;
            let mut tune = Vec::new();
            let mut tune_canonical = Vec::new();
            for candidate in grid_points(&resolve_table(table_of(&sv.tune, at).0, profile)) {
                if candidate.is_empty() {
                    continue;
                }
                let mut full = params.as_table().cloned().unwrap_or_default();
                full.extend(candidate);
                let full = toml::Value::Table(full);
                let b = (entry.build)(full.clone()).map_err(|e| {
                    spec.error_at(
                        params_at,
                        format!("key `solvers.tune` of `{}`: {e}", entry.name),
                    )
                })?;
                tune_canonical.push(b.canonical);
                tune.push(full);
            }
            let canonical = if tune.is_empty() {
                built.canonical
            } else {
                serde_json::json!({ "params": built.canonical, "tune": tune_canonical })
            };
            let base_label = sv.label.clone().unwrap_or_else(|| entry.label.to_string());
            let label = if suffix.is_empty() {
                base_label
            } else {
                format!("{base_label} ({})", suffix.join(", "))
            };
            solvers.push(SolverInstance {
                name: entry.name,
                label,
                params,
                canonical,
                fingerprint: fp.clone(),
                iterative: built.learner.is_iterative(),
                tune,
                datasets: sv.datasets.clone(),
                checkpoints: sv
                    .checkpoints
                    .as_ref()
                    .map(|c| c.at(profile).steps().expect("validated")),
                select_steps: sv.early_stopping,
            });
        }
    }
    {
        let mut labels = std::collections::BTreeSet::new();
        for sv in &solvers {
            if !labels.insert(sv.label.as_str()) {
                return Err(spec.error(format!(
                    "two solvers share the label \"{}\"; give one a `label`",
                    sv.label
                )));
            }
        }
    }

    let repeats = *s.protocol.repeats.at(profile);
    let human = s.protocol.human_evaluation.clone();
    if human.is_some()
        && let Some(d) = datasets.iter().find(|d| d.resolved.name != "web-standin")
    {
        return Err(spec.error(format!(
            "key `protocol.human_evaluation`: the simulated raters judge latent concepts, which \
             only the web stand-in has; data set `{}` is `{}`",
            d.id, d.resolved.name
        )));
    }
    let task = if human.is_some() {
        &HUMAN_TASK
    } else {
        &RANKING_TASK
    };
    let task_fp = fingerprint(task.sources);
    let mut plan = Plan {
        spec: spec.clone(),
        profile,
        datasets,
        solvers,
        ranking,
        human,
        seed: s.protocol.seed,
        repeats,
        cells: Vec::new(),
    };
    let mut cells = Vec::new();
    for (di, d) in plan.datasets.iter().enumerate() {
        for (si, sv) in plan.solvers.iter().enumerate() {
            if !sv.datasets.is_empty() && !sv.datasets.contains(&d.id) {
                continue;
            }
            let protocol = serde_json::to_value(plan.ranking_for(sv)).expect("serializable");
            let mut task_key = json!({ "name": task.name, "code": task_fp, "protocol": protocol });
            if let Some(h) = &plan.human {
                task_key["human"] = serde_json::to_value(h).expect("serializable");
            }
            for repeat in 0..repeats {
                let canonical = json!({
                    "format": RESULT_FORMAT_VERSION,
                    "task": task_key,
                    "data": {
                        "name": d.resolved.name,
                        "params": d.resolved.params,
                        "identity": d.resolved.identity,
                        "code": d.resolved.code,
                    },
                    "solver": { "name": sv.name, "params": sv.canonical, "code": sv.fingerprint },
                    "seed": plan.seed,
                    "repeat": repeat,
                });
                cells.push(Cell {
                    key: cell_key(&canonical),
                    dataset: di,
                    solver: si,
                    repeat,
                    canonical,
                });
            }
        }
    }
    plan.cells = cells;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points_are_the_cartesian_product() {
        let g: toml::Table = toml::from_str("a = [1, 2]\nb = [\"x\", \"y\", \"z\"]").unwrap();
        let pts = grid_points(&g);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[0]["a"].as_integer(), Some(1));
        assert_eq!(pts[5]["b"].as_str(), Some("z"));
        assert_eq!(grid_points(&toml::Table::new()).len(), 1);
    }
}
