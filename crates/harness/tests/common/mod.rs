//! Fixtures shared by the harness's integration tests: a workspace holding one spec in a
//! temporary directory, and helpers to plan and run it at the quick profile.
#![allow(dead_code)] // each test binary uses a subset

use dyad_harness::Workspace;
use dyad_harness::engine::run::{Progress, RunOptions, RunSummary, execute};
use dyad_harness::spec::profile::Profile;

/// A temporary workspace (dropped with the fixture).
pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub ws: Workspace,
}

/// `spec` as `experiments/demo/fig.toml` of a fresh workspace without data.
pub fn fixture(spec: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("experiments").join("demo");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::write(exp.join("fig.toml"), spec).unwrap();
    let ws = Workspace {
        experiments: dir.path().join("experiments"),
        results: dir.path().join("results"),
        data_dir: dir.path().join("no-data"),
    };
    Fixture { _dir: dir, ws }
}

pub fn opts(ws: &Workspace, threads: usize, keep_going: bool) -> RunOptions {
    RunOptions {
        results: ws.results.clone(),
        keep_going,
        threads: Some(threads),
        progress: Progress::Quiet,
        recompute: Default::default(),
    }
}

/// The error of reading and planning every spec of `ws` at the quick profile (panics if it
/// plans).
pub fn plan_error(ws: &Workspace) -> String {
    let ctx = ws.data_context();
    let specs = match ws.select_specs(&[]) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match ws.plan(&specs, Profile::Quick, &ctx) {
        Ok(_) => panic!("the plan was expected to fail"),
        Err(e) => e.to_string(),
    }
}

/// Every spec of `ws` planned at the quick profile (panics if it does not plan).
pub fn plan_quick(ws: &Workspace) -> Vec<dyad_harness::engine::plan::Plan> {
    let ctx = ws.data_context();
    ws.plan(&ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
        .unwrap()
}

pub fn plan_and_run(
    ws: &Workspace,
    threads: usize,
) -> (Vec<dyad_harness::engine::plan::Plan>, RunSummary) {
    let plans = plan_quick(ws);
    let s = execute(&plans, &opts(ws, threads, false));
    (plans, s)
}

/// Every cell of the first spec's quick plan as (solver name, cell key).
pub fn solver_keys(ws: &Workspace) -> Vec<(String, String)> {
    let plans = plan_quick(ws);
    plans[0]
        .cells
        .iter()
        .map(|c| (plans[0].solvers[c.solver].name.to_string(), c.key.clone()))
        .collect()
}

/// The verdict and detail of the claim `id` of a plan's spec.
pub fn judge_claim(
    plan: &dyad_harness::engine::plan::Plan,
    res: &dyad_harness::analysis::results::ExperimentResults<'_>,
    id: &str,
) -> dyad_harness::analysis::claims::Outcome {
    let c = plan
        .spec
        .spec
        .claims
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no claim {id}"));
    dyad_harness::analysis::claims::judge(res, c)
}
