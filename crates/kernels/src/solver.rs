//! Solver entries: how a learner crate tells the harness which solvers it has. Each family
//! crate exports one [`Solvers`] list (its `SOLVERS`), one [`SolverEntry`] per solver, usually
//! declared beside the solver's code (`pub const SOLVER: SolverEntry` in its file); the
//! harness's registry composes the lists. A solver is built from its spec parameters by
//! [`family`] (or a family's shorthand: [`ranker`], [`label_ranker`], ...): typed (unknown
//! parameters are errors, naming them), [`Checked`], kept in canonical form for hashing, and
//! boxed as its family's trait object.

use crate::{Checked, LabelRanker, ParamError, Ranker};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;

/// A solver the specs can name.
pub struct SolverEntry {
    pub name: &'static str,
    /// Default legend label.
    pub label: &'static str,
    pub description: &'static str,
    /// The learner family (what it trains on, what it reports); a task runs one family.
    pub family: &'static str,
    /// Bump when the solver's results change for the same parameters: exactly its cells
    /// recompute. (The code fingerprint kept beside each cell is derived from the source of
    /// the solver's crate and its path dependencies; nothing to list here.)
    pub version: u32,
    /// The largest difference in a recorded value that the same code on the same seed may show
    /// between two machines: 0 for a solver whose values reproduce to the bit on any x86-64
    /// machine; positive (with the reason beside it) for one whose kernels dispatch on the CPU
    /// and whose training carries the rounding on. `dyad compare` explains a difference within
    /// it as the machine's arithmetic (CI's fresh run against the committed reference).
    pub machine_tolerance: f64,
    pub build: fn(toml::Value) -> Result<BuiltSolver, ParamError>,
}

/// A crate's solver list: its package name (whose source tree, with that of its path
/// dependencies, fingerprints the cells of its solvers) and its entries.
pub struct Solvers {
    /// `env!("CARGO_PKG_NAME")` of the crate that exports the list.
    pub package: &'static str,
    pub entries: &'static [SolverEntry],
}

/// A solver built from spec parameters: its family's trait object, its canonical parameters
/// (defaults filled in) and whether it trains in steps.
pub struct BuiltSolver {
    pub canonical: serde_json::Value,
    pub iterative: bool,
    solver: Box<dyn Any + Send + Sync>,
}

impl BuiltSolver {
    /// Wrap a family's trait object (e.g. `Box<dyn Ranker>`).
    pub fn new<F: ?Sized + Send + Sync + 'static>(
        solver: Box<F>,
        canonical: serde_json::Value,
        iterative: bool,
    ) -> Self {
        Self {
            canonical,
            iterative,
            solver: Box::new(solver),
        }
    }

    /// The solver as a member of family `F` (e.g. `dyn Ranker`), if it is one.
    pub fn family<F: ?Sized + 'static>(&self) -> Option<&F> {
        self.solver.downcast_ref::<Box<F>>().map(|b| &**b)
    }
}

/// A family member from spec parameters: typed (unknown parameters are errors, naming
/// them), checked ([`Checked`]), kept in canonical form for hashing, and boxed as the
/// family's trait object `F`.
pub fn family<C, F>(
    v: toml::Value,
    iterative: impl Fn(&C) -> bool,
    boxed: impl FnOnce(C) -> Box<F>,
) -> Result<BuiltSolver, ParamError>
where
    C: Checked + DeserializeOwned + Serialize,
    F: ?Sized + Send + Sync + 'static,
{
    let config: C = typed(v)?;
    config.check()?;
    let canonical =
        serde_json::to_value(&config).map_err(|e| ParamError::new("", e.to_string()))?;
    let iterative = iterative(&config);
    Ok(BuiltSolver::new(boxed(config), canonical, iterative))
}

/// Deserialize a configuration; a bad key or value is a [`ParamError`] naming its path.
pub fn typed<C: DeserializeOwned>(v: toml::Value) -> Result<C, ParamError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let inner = inner.trim().to_string();
        // The path ends at the offending key (an unknown one included); at the root, an
        // unknown field is named by serde's message.
        let param = match (path.as_str(), inner.strip_prefix("unknown field `")) {
            (".", Some(rest)) => rest.split('`').next().unwrap_or_default().to_string(),
            (".", None) => String::new(),
            _ => path,
        };
        ParamError::new(param, inner)
    })
}

/// The family of [`Ranker`]s.
pub const RANKER: &str = "ranker";

/// Build a [`Ranker`] from spec parameters ([`family`]).
pub fn ranker<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: Ranker + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn Ranker>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`LabelRanker`]s.
pub const LABEL_RANKER: &str = "label-ranker";

/// Build a [`LabelRanker`] from spec parameters (as [`ranker`]).
pub fn label_ranker<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: LabelRanker + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn LabelRanker>(v, |c| c.is_iterative(), |c| Box::new(c))
}
