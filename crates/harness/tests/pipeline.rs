//! The harness end to end on small specs: cache keys, resume, determinism, failures, outputs.

use dyad_harness::Workspace;
use dyad_harness::analysis::cost::{OUR_CHECKS, PAPERS_FIGURES};
use dyad_harness::analysis::results::ExperimentResults;
use dyad_harness::engine::cache::Cache;
use dyad_harness::engine::run::execute;
use dyad_harness::registry::{self, SOURCE_FINGERPRINTS, fingerprint_in};
use dyad_harness::spec::Origin;
use dyad_harness::spec::profile::Profile;
use std::path::Path;

const SPEC: &str = r#"
title = "demo"
paper = "demo"
figure = "F1"

[[datasets]]
id = "small"
name = "caltech256-standin"
params = { classes = 4, per_class = 12, dim = 200, seed = 5 }

[protocol]
repeats = 2
seed = 7
checkpoints = { max = 400, every = 200 }

[protocol.retrieval]
train_per_class = 7
test_per_class = 5
evaluate = ["train", "test"]
k_max = 5

[[solvers]]
name = "oasis"
params = { c = 0.1 }

[[solvers]]
name = "euclidean"

[[plots]]
id = "map"
title = "mAP"
x = "step"
metric = "map"
x_label = "steps"
y_label = "mAP"

[[plots]]
id = "prec"
title = "precision"
x = "k"
metric = "precision"
sets = ["test"]
x_label = "k"
y_label = "precision"
chance = true

[[claims]]
id = "c1"
text = "OASIS beats Euclidean"
quote = "OASIS achieved consistently superior results"
section = "JMLR §5.3.3"
kind = "greater"
metric = "map"
solver = "oasis"
versus = "euclidean"

[[expect]]
dataset = "small"
solver = "euclidean"
metric = "map"
min = 0.0
max = 1.0

[[expect]]
dataset = "small"
solver = "oasis"
metric = "map"
min = 2.0
"#;

mod common;
use common::{
    Fixture, fixture, judge_claim, opts, plan_and_run, plan_error, plan_quick, solver_keys,
};

#[test]
fn cache_keys_are_stable_and_change_with_parameters_and_data_only() {
    let f = fixture(SPEC);
    let base = solver_keys(&f.ws);
    assert_eq!(base.len(), 4);
    assert_eq!(base, solver_keys(&f.ws), "keys must be stable across plans");

    let write = |s: String| std::fs::write(f.ws.experiments.join("demo/fig.toml"), s).unwrap();
    // Cosmetic edits: comments, title, plots, claims.
    write(format!(
        "# a comment\n{}",
        SPEC.replace("title = \"demo\"", "title = \"renamed\"")
    ));
    assert_eq!(solver_keys(&f.ws), base);
    // A solver parameter: OASIS cells change, Euclidean cells do not.
    write(SPEC.replace("params = { c = 0.1 }", "params = { c = 0.2 }"));
    let k = solver_keys(&f.ws);
    for ((name, a), (_, b)) in base.iter().zip(&k) {
        assert_eq!(name == "oasis", a != b, "{name}");
    }
    // Writing a default explicitly changes nothing.
    write(SPEC.replace("params = { c = 0.1 }", "params = {}"));
    assert_eq!(solver_keys(&f.ws), base);
    // The data: every cell changes.
    write(SPEC.replace("seed = 5", "seed = 6"));
    for ((_, a), (_, b)) in base.iter().zip(&solver_keys(&f.ws)) {
        assert_ne!(a, b);
    }
    // The checkpoint grid matters to OASIS only (Euclidean has no steps).
    write(SPEC.replace("every = 200", "every = 100"));
    for ((name, a), (_, b)) in base.iter().zip(&solver_keys(&f.ws)) {
        assert_eq!(name == "oasis", a != b, "{name}");
    }
}

#[test]
fn a_solver_source_edit_changes_only_that_solvers_fingerprint() {
    // The fingerprint table with one file's token hash changed, as after a code edit there.
    let edited: Vec<(&str, &str)> = SOURCE_FINGERPRINTS
        .iter()
        .map(|&(p, h)| {
            if p == "metric-baselines/src/euclidean.rs" {
                (p, "edited")
            } else {
                (p, h)
            }
        })
        .collect();
    let changed = |solver: &str| {
        let dirs = registry::package_sources(registry::package_of(solver).unwrap());
        fingerprint_in(SOURCE_FINGERPRINTS, dirs) != fingerprint_in(&edited, dirs)
    };
    // The crate of the baseline and the crates built on it change; the others do not.
    assert!(changed("euclidean") && changed("lmnn"));
    assert!(changed("oasis") && changed("loreta"));
    assert!(!changed("d-aroma") && !changed("givens-spca") && !changed("tr"));
    let oasis = registry::solver("oasis").unwrap();
    // The plan keeps the registry's fingerprint beside the cell as provenance, not in its key.
    let f = fixture(SPEC);
    let ctx = f.ws.data_context();
    let plans =
        f.ws.plan(&f.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
            .unwrap();
    let c = &plans[0].cells[0];
    let solver = &plans[0].solvers[c.solver];
    assert_eq!(c.code["solver"], registry::solver_fingerprint(solver.name));
    assert!(c.canonical["solver"].get("code").is_none());
    assert_eq!(
        c.canonical["solver"]["version"],
        serde_json::json!(oasis.version)
    );
}

/// As after an edit of `solver`'s sources (`part` = "solver") or of the task's, without a
/// version bump: the same keys, other code fingerprints for that solver's cells.
fn edit_code(plan: &mut dyad_harness::engine::plan::Plan, solver: &str, part: &str) {
    let i = plan.solvers.iter().position(|s| s.name == solver).unwrap();
    for c in plan.cells.iter_mut().filter(|c| c.solver == i) {
        c.code.insert(part.into(), "edited".into());
    }
}

#[test]
fn the_report_warns_when_a_cells_code_changed_since_it_ran() {
    let f = fixture(SPEC);
    let (mut plans, _) = plan_and_run(&f.ws, 2);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    assert!(res.stale_code().is_empty());
    // As after an edit of OASIS's sources without a version bump: same keys, other code.
    edit_code(&mut plans[0], "oasis", "solver");
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    assert_eq!(res.stale_code(), vec![("solver oasis".to_string(), 2)]);
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("WARNING: 2 of 4 cells were computed by code that has changed"),
        "{md}"
    );
    // A cell whose solver and task both changed counts once (it said "4 of 4" here).
    edit_code(&mut plans[0], "oasis", "task");
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    assert_eq!(res.stale_cells(), 2);
    assert_eq!(res.stale_code().iter().map(|(_, n)| n).sum::<usize>(), 4);
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("WARNING: 2 of 4 cells"), "{md}");
}

#[test]
fn bumping_a_version_recomputes_exactly_the_affected_cells() {
    let f = fixture(SPEC);
    let (mut plans, first) = plan_and_run(&f.ws, 2);
    assert_eq!(first.computed, 4);
    let opts = opts(&f.ws, 2, false);
    // A new solver version: only that solver's cells run again.
    let oasis = plans[0]
        .solvers
        .iter()
        .position(|s| s.name == "oasis")
        .unwrap();
    plans[0].solvers[oasis].version += 1;
    dyad_harness::engine::plan::rekey(&mut plans[0]);
    let s = execute(&plans, &opts);
    assert_eq!((s.computed, s.cached), (2, 2));
    // A new provider version: every cell on the data set.
    plans[0].datasets[0].resolved.version += 1;
    dyad_harness::engine::plan::rekey(&mut plans[0]);
    let s = execute(&plans, &opts);
    assert_eq!((s.computed, s.cached), (4, 0));
    // A new task version: every cell of the task.
    plans[0].task_version += 1;
    dyad_harness::engine::plan::rekey(&mut plans[0]);
    assert_eq!(execute(&plans, &opts).computed, 4);
    // And nothing else: the same plan again computes nothing.
    assert_eq!(execute(&plans, &opts).computed, 0);
}

#[test]
fn recompute_stale_reruns_exactly_the_changed_cells_and_compares_them() {
    use dyad_harness::engine::run::{Recompute, RunOptions};
    let f = fixture(SPEC);
    let (mut plans, _) = plan_and_run(&f.ws, 2);
    let cache = f.ws.cache();
    let with = |recompute| RunOptions {
        recompute,
        ..opts(&f.ws, 2, false)
    };
    // As after an edit of OASIS's sources: its 2 cells are stale, the others not.
    edit_code(&mut plans[0], "oasis", "solver");
    assert_eq!(execute(&plans, &with(Recompute::Missing)).computed, 0);
    let s = execute(&plans, &with(Recompute::Stale));
    assert_eq!((s.computed, s.cached), (2, 2));
    assert_eq!(s.recomputed.len(), 2);
    for r in &s.recomputed {
        let c = r.comparison.as_ref().unwrap();
        assert!(c.identical() && c.shared > 0, "{}: {c}", r.cell);
        assert!(r.kept.is_none(), "an identical old cell is deleted");
        assert!(!r.compared_elsewhere, "compared by this run");
        assert!(
            r.cell.contains("OASIS") || r.cell.contains("oasis"),
            "{}",
            r.cell
        );
    }
    // The new cells carry the current code: nothing is stale any more.
    let s = execute(&plans, &with(Recompute::Stale));
    assert_eq!((s.computed, s.recomputed.len()), (0, 0));
    // A cell whose stored value is not what the code computes: the difference is found, and
    // the old cell kept for inspection.
    let key = plans[0].cells[0].key.clone();
    let mut cell = cache.get(&key).unwrap();
    let i = cell.records.iter().position(|r| r.value > 0.0).unwrap();
    cell.records[i].value += 0.25;
    cell.code.insert("task".into(), "older".into());
    cache.put(&cell).unwrap();
    let s = execute(&plans, &with(Recompute::Stale));
    assert_eq!(s.computed, 1);
    let r = &s.recomputed[0];
    let c = r.comparison.as_ref().unwrap();
    assert_eq!((c.differ, c.added, c.removed), (1, 0, 0), "{c}");
    assert!((c.max_abs - 0.25).abs() < 1e-12, "{c}");
    assert!(!c.reproduces_old());
    let kept = r.kept.as_ref().unwrap();
    assert!(!r.compared_elsewhere);
    assert_eq!(
        cache.superseded(&key).unwrap().records[i].value,
        cell.records[i].value
    );
    assert!(kept.exists());
    // `all`: every cell again, each identical.
    let s = execute(&plans, &with(Recompute::All));
    assert_eq!((s.computed, s.cached), (4, 0));
    assert!(
        s.recomputed
            .iter()
            .all(|r| r.comparison.as_ref().is_some_and(|c| c.identical()))
    );
    // An old cell without a record the task now writes (a metric added since): the others
    // are compared, the new one counted, and the old cell, fully reproduced, deleted.
    let key = plans[0].cells[1].key.clone();
    let mut cell = cache.get(&key).unwrap();
    let n = cell.records.len();
    cell.records.remove(n / 2);
    cell.code.insert("task".into(), "older".into());
    cache.put(&cell).unwrap();
    let s = execute(&plans, &with(Recompute::Stale));
    let c = s.recomputed[0].comparison.as_ref().unwrap();
    assert_eq!(
        (c.shared, c.differ, c.added, c.removed),
        (n - 1, 0, 1, 0),
        "{c}"
    );
    assert!(c.reproduces_old() && !c.identical());
    assert!(s.recomputed[0].kept.is_none() && cache.superseded(&key).is_none());
    // A recomputation stopped after moving a cell aside: a plain run computes it and compares.
    let key = plans[0].cells[3].key.clone();
    cache.supersede(&key).unwrap();
    let s = execute(&plans, &with(Recompute::Missing));
    assert_eq!(s.computed, 1);
    assert!(s.recomputed[0].comparison.as_ref().unwrap().identical());
    assert!(cache.superseded(&key).is_none());
    // Stopped after computing the new cell but before comparing: the next run, with nothing
    // to compute, still compares it and removes the old file.
    let key = plans[0].cells[2].key.clone();
    let new = cache.get(&key).unwrap();
    cache.supersede(&key).unwrap();
    cache.put(&new).unwrap();
    let s = execute(&plans, &with(Recompute::Missing));
    assert_eq!((s.computed, s.recomputed.len()), (0, 1));
    assert!(s.recomputed[0].comparison.as_ref().unwrap().identical());
    assert!(cache.superseded(&key).is_none());
}

#[test]
fn a_second_run_recomputes_nothing_and_loads_no_data() {
    let f = fixture(SPEC);
    let (_, first) = plan_and_run(&f.ws, 2);
    assert!(first.ok(), "{:?}", first.failed);
    assert_eq!((first.total, first.computed, first.cached), (4, 4, 0));
    assert_eq!(first.datasets_loaded, 1);
    let (_, second) = plan_and_run(&f.ws, 2);
    assert_eq!(
        (second.computed, second.cached, second.datasets_loaded),
        (0, 4, 0)
    );
}

#[test]
fn results_are_bit_identical_at_any_thread_count() {
    let a = fixture(SPEC);
    let b = fixture(SPEC);
    let (plans_a, _) = plan_and_run(&a.ws, 1);
    let (plans_b, _) = plan_and_run(&b.ws, 2);
    let values = |ws: &Workspace, plans: &[dyad_harness::engine::plan::Plan]| {
        let cache = ws.cache();
        let res = ExperimentResults::load(&plans[0], &cache);
        res.cells
            .iter()
            .flat_map(|c| c.as_ref().unwrap().records.clone())
            .map(|r| (r.set, r.metric, r.step, r.k, r.value.to_bits()))
            .collect::<Vec<_>>()
    };
    let va = values(&a.ws, &plans_a);
    assert!(va.len() > 40);
    assert_eq!(va, values(&b.ws, &plans_b));
}

const BAD_DATA: &str = r#"
[[datasets]]
id = "tiny"
name = "caltech256-standin"
params = { classes = 4, per_class = 6, dim = 200, seed = 5 }
"#;

/// A data set whose class sizes are not known before it is generated: the web stand-in's
/// smallest concepts hold fewer than the split's 12 images.
const BAD_AT_RUN: &str = r#"
[[datasets]]
id = "tiny"
name = "web-standin"
params = { images = 200, dim = 300, idf_reference = 0 }
"#;

#[test]
fn sizes_the_data_cannot_hold_are_refused_before_any_data_is_read() {
    let spec = SPEC.replace("[protocol]", &format!("{BAD_DATA}\n[protocol]"));
    let f = fixture(&spec);
    let e = plan_error(&f.ws);
    assert!(
        e.contains("fig.toml:14:") && e.contains("has 6 rows"),
        "{e}"
    );
    // Absurd sizes are refused with an estimate, not an out-of-memory abort.
    for (from, to, what) in [
        ("repeats = 2", "repeats = 1000000000", "protocol.repeats"),
        (
            "max = 400, every = 200",
            "max = 10000000000000, every = 200",
            "checkpoints",
        ),
        ("k_max = 5", "k_max = 0", "k_max"),
        ("params = { c = 0.1 }", "params = { c = 0.0 }", "`c`"),
        ("params = { c = 0.1 }", "params = { c = -0.1 }", "`c`"),
        ("params = { c = 0.1 }", "params = { c = nan }", "`c`"),
        ("params = { c = 0.1 }", "params = { c = \"x\" }", "`c`"),
        (
            "versus = \"euclidean\"",
            "versus = \"euclidan\"",
            "no solver \"euclidan\"",
        ),
        (
            "train_per_class = 7",
            "train_per_class = 100000",
            "has 12 rows",
        ),
    ] {
        let g = fixture(&SPEC.replace(from, to));
        let ctx = g.ws.data_context();
        let e =
            g.ws.select_specs(&[])
                .map_err(|e| e.to_string())
                .and_then(|s| {
                    g.ws.plan(&s, Profile::Quick, &ctx)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
                .err()
                .unwrap_or_else(|| panic!("{to} accepted"));
        assert!(e.contains(what), "{to}: {e}");
        // Every one names the spec file and a line.
        assert!(e.contains("fig.toml:"), "{to}: {e}");
        if to.contains("c = ") {
            let line = SPEC
                .lines()
                .position(|l| l.contains("params = { c = 0.1 }"))
                .unwrap()
                + 1;
            assert!(e.contains(&format!("fig.toml:{line}:")), "{to}: {e}");
        }
    }
}

/// Parameters that were once checked by free-text `validate()` (LORETA, HIER, ITML, the
/// LORETA-1 safeguards) name themselves: a bad value is refused at plan time at the line of
/// its key, in `params` (inline or as a table, nested or not) or in `grid`.
#[test]
fn bad_parameters_are_refused_at_the_line_of_their_key() {
    for (solver, param) in [
        ("name = \"loreta\"\nparams = { rank = 0 }", "`rank`"),
        (
            "name = \"loreta\"\n[solvers.params]\nrank = 3\nsafeguards = { drift_tolerance = 0.0 }",
            "`safeguards.drift_tolerance`",
        ),
        (
            "name = \"loreta-psd\"\n[solvers.params]\neta = 0.1\n\n[solvers.params.safeguards]\nrebalance_every = 5",
            "`safeguards.rebalance_every`",
        ),
        (
            "name = \"hier\"\nparams = { hierarchy = { blocks = { size = 0 } } }",
            "`hierarchy.blocks.size`",
        ),
        (
            "name = \"itml\"\nparams = { max_iter = 10 }\ngrid = { gamma = [1.0, -1.0] }",
            "`gamma`",
        ),
        (
            "name = \"iterative-pa\"\nparams = { rank = 2, zero_init_updates = 1 }",
            "`zero_init_updates`",
        ),
    ] {
        let spec = SPEC.replace(
            "[[solvers]]\nname = \"euclidean\"\n",
            &format!("[[solvers]]\nname = \"euclidean\"\n\n[[solvers]]\n{solver}\n"),
        );
        // The line written last in the solver's block is the key's.
        let last = solver.lines().last().unwrap();
        let line = spec.lines().position(|l| l == last).unwrap() + 1;
        let e = plan_error(&fixture(&spec).ws);
        assert!(e.contains(param), "{solver}: {e}");
        assert!(
            e.contains(&format!("fig.toml:{line}:")),
            "{solver}: line {line}: {e}"
        );
    }
}

/// Sizes that would allocate without bound are refused at plan time, at their key, with the
/// size in the message: a k of 10^9 (precision@k is kept per query), grids of 3,000 x 3,000
/// points, a tuning grid of 10^6 candidates, 1,000 repeats of a 1,000-point grid.
#[test]
fn sizes_that_would_exhaust_memory_are_refused_before_anything_is_allocated() {
    let values = |n: usize| {
        let v: Vec<String> = (0..n).map(|i| format!("{}.0", i + 1)).collect();
        format!("[{}]", v.join(", "))
    };
    let oasis = "[[solvers]]\nname = \"oasis\"\nparams = { c = 0.1 }\n";
    for (edit, key, words) in [
        (
            SPEC.replace("k_max = 5", "k_max = 1000000000"),
            "k_max = 1000000000",
            "1000000000 exceeds the limit of 10000 (precision@1..k_max is kept for every \
             query: 8 TB per 1,000 queries)",
        ),
        (
            SPEC.replace(
                oasis,
                &format!(
                    "[[solvers]]\nname = \"oasis\"\ngrid = {{ c = {}, aggressiveness = {} }}\n",
                    values(3000),
                    values(3000)
                ),
            ),
            "grid = ",
            "9000000 grid points (aggressiveness: 3000 x c: 3000) exceed the limit of 100000",
        ),
        (
            SPEC.replace(
                "k_max = 5",
                "k_max = 5\nearly_stopping = { validation_fraction = 0.2 }",
            )
            .replace(
                oasis,
                &format!(
                    "[[solvers]]\nname = \"oasis\"\ntune = {{ c = {}, aggressiveness = {} }}\n",
                    values(1000),
                    values(1000)
                ),
            ),
            "tune = ",
            "1000000 tuning candidates (aggressiveness: 1000 x c: 1000) exceed the limit of 10000",
        ),
        (
            SPEC.replace("repeats = 2", "repeats = 1000").replace(
                oasis,
                &format!(
                    "[[solvers]]\nname = \"oasis\"\ngrid = {{ c = {} }}\n",
                    values(1000)
                ),
            ),
            "title",
            "1001000 cells exceed the limit of 100000",
        ),
        (
            // 4 classes x 5 test rows: 19 candidates per query.
            // Known only with the data set's shape: the error names the data set's line.
            SPEC.replace("k_max = 5", "k_max = 20"),
            "name = \"caltech256-standin\"",
            "k_max`: 20 exceeds the 19 candidates each query of the test set of `small` ranks",
        ),
        (
            // A dense d x d model on 2,000,000 features: a lower bound against the machine.
            SPEC.replace("dim = 200,", "dim = 2000000,"),
            "name = \"oasis\"",
            "solver `OASIS` on `small`: one cell needs at least 32 TB (the learner on 28 \
             training rows of 2000000 features: 32 TB; the evaluation: 5 KB), more than the",
        ),
        (
            // A tuned size: the cell is as large as its largest candidate (LORETA's factors,
            // 4 d k, at k = 1,000,000 of 2,000,000 features), not as its default rank.
            SPEC.replace("dim = 200,", "dim = 2000000,")
                .replace(
                    "k_max = 5",
                    "k_max = 5\nearly_stopping = { validation_fraction = 0.2 }",
                )
                .replace(
                    oasis,
                    "[[solvers]]\nname = \"loreta\"\ntune = { rank = [5, 1000000] }\n",
                ),
            "name = \"loreta\"",
            "one cell needs at least 64 TB (the learner on 28 training rows of 2000000 \
             features: 64 TB",
        ),
        (
            // LMNN holds an n x n array over its training rows.
            SPEC.replace("per_class = 12", "per_class = 400000")
                .replace("train_per_class = 7", "train_per_class = 399990")
                .replace(oasis, "[[solvers]]\nname = \"lmnn\"\n"),
            "name = \"lmnn\"",
            "solver `LMNN` on `small`: one cell needs at least 20 TB (the learner on 1599960 \
             training rows of 200 features: 20 TB",
        ),
    ] {
        assert_ne!(edit, SPEC, "{key}: the edit did not apply");
        let e = plan_error(&fixture(&edit).ws);
        assert!(e.contains(words), "{key}: {e}");
        if key != "title" {
            let line = edit.lines().position(|l| l.starts_with(key)).unwrap() + 1;
            assert!(e.contains(&format!("fig.toml:{line}:")), "{key}: {e}");
        }
    }
}

/// `dyad plan --cost`: every distinct cell counted once, its wall time split into phases that
/// add up to it, by paper, spec and solver; a missing cell is counted, not recorded.
#[test]
fn the_recorded_cost_adds_up_to_the_cells_wall_time() {
    let f = fixture(SPEC);
    let (plans, s) = plan_and_run(&f.ws, 1);
    assert!(s.ok(), "{:?}", s.failed);
    let cache = Cache::new(&f.ws.results);
    // The same spec planned twice: its cells are counted once.
    let ctx = f.ws.data_context();
    let mut twice =
        f.ws.plan(&f.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
            .unwrap();
    twice.extend(
        f.ws.plan(&f.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
            .unwrap(),
    );
    // The second copy is a check of ours (`origin = "ours"`): the cells the paper's figure
    // also names stay the paper's, whichever spec comes first.
    twice[0].spec.spec.origin = Origin::Ours;
    let c = dyad_harness::analysis::cost::recorded(&twice, &cache);
    assert_eq!((c.total.cells, c.total.recorded), (4, 4));
    let kinds: Vec<(&str, usize, usize)> = c
        .kinds
        .iter()
        .map(|k| (k.name.as_str(), k.cells, k.recorded))
        .collect();
    assert_eq!(kinds, [(PAPERS_FIGURES, 4, 4), (OUR_CHECKS, 0, 0)]);
    assert_eq!(c.kinds[0].phases, c.total.phases);
    // Named by our check alone, they are ours.
    let ours = dyad_harness::analysis::cost::recorded(&twice[..1], &cache);
    assert_eq!((ours.kinds[0].cells, ours.kinds[1].cells), (0, 4));
    assert_eq!(ours.kinds[1].phases, c.total.phases);
    assert!(
        dyad_harness::analysis::cost::kinds_line(&ours)
            .starts_with("the papers' figures and tables 0 s (0 of 0 cells), our checks"),
        "{}",
        dyad_harness::analysis::cost::kinds_line(&ours)
    );
    let wall: f64 = plans[0]
        .cells
        .iter()
        .map(|k| cache.get(&k.key).unwrap().wall_seconds)
        .sum();
    assert!((c.total.phases.total() - wall).abs() < 1e-9 * wall.max(1.0));
    // Each distinct cell's time once, for the wall-time estimate; on one core, their sum.
    assert_eq!(c.cells.len(), 4);
    let one_core = dyad_harness::analysis::cost::makespan(&c.cells, 1);
    assert!((one_core - wall).abs() < 1e-2, "{one_core} vs {wall}");
    assert_eq!(c.papers.len(), 1);
    assert_eq!(c.papers[0].name, "demo");
    assert_eq!(c.specs[0].name, "demo/fig");
    let mut solvers: Vec<(&str, usize)> = c
        .solvers
        .iter()
        .map(|r| (r.name.as_str(), r.cells))
        .collect();
    solvers.sort();
    assert_eq!(solvers, [("demo euclidean", 2), ("demo oasis", 2)]);
    // A cell removed from the cache is counted but not recorded.
    cache.remove(&plans[0].cells[0].key).unwrap();
    let c = dyad_harness::analysis::cost::recorded(&plans, &cache);
    assert_eq!((c.total.cells, c.total.recorded), (4, 3));
    assert_eq!(c.cells.len(), 3);
}

/// SPEC with a second data set whose 4 cells fail at run time (too few images per class for
/// the split), planned at the quick profile.
fn with_failing_cells() -> (Fixture, Vec<dyad_harness::engine::plan::Plan>) {
    let f = fixture(&SPEC.replace("[protocol]", &format!("{BAD_AT_RUN}\n[protocol]")));
    let plans = plan_quick(&f.ws);
    (f, plans)
}

#[test]
fn failures_are_reported_and_never_cached() {
    let (f, plans) = with_failing_cells();
    let s = execute(&plans, &opts(&f.ws, 1, true));
    assert_eq!((s.total, s.computed, s.failed.len()), (8, 4, 4));
    assert!(s.failed[0].error.contains("class"), "{}", s.failed[0].error);
    assert_eq!(Cache::new(&f.ws.results).len(), 4);
    // Fail-fast: with one thread the first failure stops the rest.
    let (g, plans) = with_failing_cells();
    let s = execute(&plans, &opts(&g.ws, 1, false));
    assert_eq!(s.failed.len(), 1);
    assert!(s.skipped > 0);
    assert_eq!(Cache::new(&g.ws.results).len() + s.skipped + 1, 8);
}

/// A recomputation that stops early (here fail-fast on a cell that cannot run, taken first
/// because it has no timing) leaves every cached cell it had not reached in the cache: cells
/// are moved aside one by one as they are taken up, not all at the start.
#[test]
fn a_stopped_recomputation_leaves_the_cells_it_did_not_reach_cached() {
    use dyad_harness::engine::run::{Recompute, RunOptions};
    let (f, plans) = with_failing_cells();
    let s = execute(&plans, &opts(&f.ws, 1, true));
    assert_eq!((s.computed, s.failed.len()), (4, 4));
    let cache = Cache::new(&f.ws.results);
    let before: Vec<String> = cache.keys();
    let s = execute(
        &plans,
        &RunOptions {
            recompute: Recompute::All,
            ..opts(&f.ws, 1, false)
        },
    );
    assert_eq!((s.computed, s.failed.len(), s.skipped), (0, 1, 7));
    assert_eq!(cache.keys(), before);
    assert!(s.recomputed.is_empty());
    let aside = f.ws.results.join("cache").join("superseded");
    assert!(std::fs::read_dir(&aside).map_or(true, |mut d| d.next().is_none()));
    // With the failing cells out of the way, every cell is computed again and compared.
    let s = execute(
        &plans,
        &RunOptions {
            recompute: Recompute::All,
            ..opts(&f.ws, 1, true)
        },
    );
    assert_eq!(s.recomputed.len(), 4);
    assert!(
        s.recomputed
            .iter()
            .all(|r| r.comparison.as_ref().is_some_and(|c| c.identical()))
    );
}

/// A tidy table is written again exactly when what it is made of changed: a re-run with every
/// cell cached leaves the files alone (the stamp says they are current), a changed cell or a
/// missing file rewrites them.
#[test]
fn tables_are_rewritten_only_when_their_cells_change() {
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let written = f.ws.outputs(&plans).unwrap();
    assert!(!written[0].tables_kept);
    let csv = written[0].tables[1].clone();
    let text = std::fs::read_to_string(&csv).unwrap();
    // Same size, other bytes: only a skipped write leaves this in place.
    let marked = text.replacen("demo/fig", "DEMO/FIG", 1);
    assert_ne!(marked, text);
    std::fs::write(&csv, &marked).unwrap();
    assert!(f.ws.outputs(&plans).unwrap()[0].tables_kept);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), marked);
    // A file of another size is rewritten.
    std::fs::write(&csv, "x").unwrap();
    assert!(!f.ws.outputs(&plans).unwrap()[0].tables_kept);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
    // A changed cell changes the stamp: the table is written again, with the new value.
    std::fs::write(&csv, &marked).unwrap();
    let cache = Cache::new(&f.ws.results);
    let key = &plans[0].cells[0].key;
    let mut cell = cache.get(key).unwrap();
    let old = cell.records[0].value;
    cell.records[0].value = old + 1.0;
    cache.put(&cell).unwrap();
    f.ws.outputs(&plans).unwrap();
    let now = std::fs::read_to_string(&csv).unwrap();
    assert!(!now.contains("DEMO/FIG"), "{now}");
    assert!(now.contains(&format!("{:?}", old + 1.0)), "{now}");
}

#[test]
fn outputs_tables_figures_report_and_checks() {
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let written = f.ws.outputs(&plans).unwrap();
    assert_eq!(written[0].tables.len(), 2);
    assert_eq!(written[0].figures.len(), 4);
    // The parquet table reads back with its provenance columns, one row per record, the
    // values those of the cells.
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let file = std::fs::File::open(&written[0].tables[0]).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let names: Vec<String> = (0..schema.num_columns())
        .map(|i| schema.column(i).name().to_string())
        .collect();
    for col in [
        "cell_key",
        "seed",
        "dataset_identity",
        "synthetic",
        "git_commit",
        "dyad_version",
        "train_seconds",
        "value",
    ] {
        assert!(names.iter().any(|n| n == col), "missing column {col}");
    }
    let value = names.iter().position(|n| *n == "value").unwrap();
    let read: Vec<f64> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().get_double(value).unwrap())
        .collect();
    let cache = Cache::new(&f.ws.results);
    let res = dyad_harness::analysis::results::ExperimentResults::load(&plans[0], &cache);
    let Some(dyad_harness::analysis::tidy::Column::F64(values)) =
        res.table().column("value").cloned()
    else {
        panic!("no value column")
    };
    assert!(!values.is_empty());
    assert_eq!(read.len(), values.len());
    assert!(
        read.iter()
            .zip(&values)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
    let csv = std::fs::read_to_string(&written[0].tables[1]).unwrap();
    assert_eq!(csv.lines().count(), read.len() + 1);
    // Figures are deterministic.
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    let before: Vec<Vec<u8>> = written[0].figures.iter().map(|p| bytes(p)).collect();
    let again = f.ws.outputs(&plans).unwrap();
    let after: Vec<Vec<u8>> = again[0].figures.iter().map(|p| bytes(p)).collect();
    assert_eq!(before, after);
    assert!(
        std::str::from_utf8(&before[0])
            .unwrap()
            .contains("SYNTHETIC")
    );
    // The report marks synthetic data and judges the claim.
    let [html, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    // The sections are on the paper's page (`index.html` is the overview).
    let html = html.with_file_name(dyad_harness::presentation::report::paper_page("demo"));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("SYNTHETIC"), "{md}");
    assert!(md.contains("[c1]"), "{md}");
    assert!(
        std::fs::read_to_string(html)
            .unwrap()
            .contains("<img src=\"figures/demo-fig-prec.png\"")
    );
    // Checks: the impossible band fails and is named.
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let lines = dyad_harness::analysis::check::check(&res);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ok);
    assert!(
        !lines[1].ok && lines[1].what.contains("oasis map"),
        "{:?}",
        lines[1]
    );
}

/// A report is what its cache holds, nothing carried over from the report it replaces:
/// cells gone, the section says NOT RUN and its figures are deleted; partly computed, it
/// says INCOMPLETE with what each data set misses; computed again, it is the first report
/// to the byte (figures included), as the committed paper report is regenerated from
/// `results/archive`.
#[test]
fn a_report_shows_only_what_its_cache_holds() {
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let figures = |md: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(md.with_file_name("figures"))
            .map(|d| {
                d.flatten()
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        (name, std::fs::read(e.path()).unwrap())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let fresh = read(&md);
    let drawn = figures(&md);
    assert!(
        fresh.contains("[c1]") && !fresh.contains("NOT RUN"),
        "{fresh}"
    );
    assert!(!drawn.is_empty());
    // A file the report did not draw (an earlier report's figure) does not stay beside it.
    let stray = md.with_file_name("figures").join("demo-f1-old-plot.png");
    std::fs::write(&stray, b"an earlier report's figure").unwrap();
    // Cells gone: NOT RUN, and no figure.
    let cells = f.ws.cache().root().join("cells");
    let aside = f.ws.cache().root().join("cells-aside");
    std::fs::rename(&cells, &aside).unwrap();
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let gone = read(&md);
    assert!(
        gone.contains("NOT RUN") && !gone.contains("holds — "),
        "{gone}"
    );
    assert!(figures(&md).is_empty(), "{:?}", figures(&md).len());
    // Partly computed: INCOMPLETE, with what each data set misses.
    std::fs::remove_dir_all(&cells).ok();
    std::fs::rename(&aside, &cells).unwrap();
    let cache = f.ws.cache();
    let key = &plans[0].cells[0].key;
    cache.supersede(key).unwrap();
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let text = read(&md);
    assert!(
        text.contains(
            "INCOMPLETE for profile `quick`: 1 of 4 cells are missing. Missing by data set: \
             `small` 1; complete: none"
        ) && !text.contains("NOT RUN"),
        "{text}"
    );
    // The cells back: the first report, byte for byte.
    cache.put(&cache.superseded(key).unwrap()).unwrap();
    cache.forget_superseded(key).unwrap();
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    assert_eq!(read(&md), fresh);
    assert_eq!(figures(&md), drawn);
    assert!(!stray.exists());
}

/// SPEC with a second data set, `other` (same stand-in, another seed).
fn two_datasets() -> String {
    SPEC.replace(
        "[protocol]",
        "[[datasets]]\nid = \"other\"\nname = \"caltech256-standin\"\nparams = { classes = 4, per_class = 12, dim = 200, seed = 6 }\n\n[protocol]",
    )
}

/// A claim's verdict is labelled real or SYNTHETIC by the data sets it reads (issue 42 §3):
/// its `datasets`, else those its solver runs on, plus its `versus_dataset`; never by the
/// other data sets of its spec. Here `other` is marked real by hand (a label only: the cells
/// are the same). The report prints the paper's words under each claim of the paper and
/// counts our diagnostics apart.
#[test]
fn claims_are_labelled_by_the_data_they_read() {
    let spec = two_datasets()
        .replace("versus = \"euclidean\"", "versus = \"Euclidean\"")
        .replace("solver = \"euclidean\"", "solver = \"Euclidean\"")
        .replace(
            "[[plots]]\nid = \"map\"",
            "[[solvers]]\nname = \"euclidean\"\nlabel = \"Euclidean (other)\"\ndatasets = [\"other\"]\n\n[[plots]]\nid = \"map\"",
        )
        .replacen(
            "[[claims]]",
            r#"[[claims]]
id = "reads-other"
text = "the solver of `other` alone"
quote = "OASIS achieved consistently superior results"
section = "JMLR §5.3.3"
kind = "value-within"
metric = "map"
solver = "Euclidean (other)"
range = [0.0, 1.0]

[[claims]]
id = "reads-both"
text = "a solver of both"
origin = "ours"
kind = "value-within"
metric = "map"
solver = "oasis"
range = [0.0, 1.0]

[[claims]]
id = "versus-small"
text = "other against small"
quote = "OASIS achieved consistently superior results"
section = "JMLR §5.3.3"
kind = "close"
metric = "map"
solver = "oasis"
datasets = ["other"]
versus_dataset = "small"
tolerance = 1.0

[[claims]]
id = "explicit-other"
text = "OASIS on other, named"
origin = "ours"
kind = "value-within"
metric = "map"
solver = "oasis"
datasets = ["other"]
range = [0.0, 1.0]

[[claims]]"#,
            1,
        );
    let f = fixture(&spec);
    let (mut plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let other = plans[0]
        .datasets
        .iter()
        .position(|d| d.id == "other")
        .unwrap();
    plans[0].datasets[other].resolved.synthetic = false;
    plans[0].datasets[other].resolved.note = "real (for this test)".into();
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let label = |id: &str| judge_claim(&plans[0], &res, id).synthetic;
    assert!(
        !label("reads-other"),
        "a solver restricted to `other` reads `other` only"
    );
    assert!(
        label("reads-both") && label("c1"),
        "a solver of both reads the stand-in"
    );
    assert!(label("versus-small"), "`versus_dataset` is read too");
    assert!(!label("explicit-other"));
    drop(res);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let [html, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    // The sections are on the paper's page (`index.html` is the overview).
    let html = html.with_file_name(dyad_harness::presentation::report::paper_page("demo"));
    let text = read(&md);
    assert!(
        text.contains("- ✅ holds — the solver of `other` alone [reads-other]: other: 0.",)
            && text
                .contains("\n  > “OASIS achieved consistently superior results” — JMLR §5.3.3\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "- shape check on SYNTHETIC data: our diagnostic, not the paper's claim: ✅ holds — \
             a solver of both [reads-both]"
        ) && text.contains("- our diagnostic, not the paper's claim: ✅ holds — OASIS on other")
            && text.contains("- shape check on SYNTHETIC data: ✅ holds — other against small"),
        "{text}"
    );
    let counts = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Claims of the paper on real data"))
            .unwrap()
            .to_string()
    };
    let line = counts(&text);
    let one = "1 hold, 0 do not hold, 0 not distinguishable, 0 not comparable";
    assert!(
        line.starts_with(&format!(
            "Claims of the paper on real data: {one}. Shape checks on SYNTHETIC data: "
        )) && line.ends_with(&format!(
            "Our diagnostics (not the paper's claims) on real data: {one}; on SYNTHETIC data: {one}."
        )),
        "{line}"
    );
    let header = text
        .lines()
        .find(|l| l.starts_with("Generated by"))
        .unwrap();
    assert!(
        header.contains(&format!("Claims of the papers judged on real data: {one}."))
            && header.contains("Our own diagnostics, not claims of the papers (2 claims)"),
        "{header}"
    );
    assert!(read(&html).contains("<blockquote class=\"quote\">“OASIS achieved"));
}

/// A partly computed spec shows the summary of its complete data sets (a long paper run's
/// finished panels), never of the data sets that still miss cells.
#[test]
fn an_incomplete_report_summarises_its_complete_data_sets_only() {
    let two = two_datasets()
        .replacen(
            "[[expect]]",
            "[[claims]]\nid = \"c2\"\ntext = \"OASIS beats Euclidean on other\"\norigin = \"ours\"\nkind = \"greater\"\nmetric = \"map\"\nsolver = \"oasis\"\nversus = \"euclidean\"\ndatasets = [\"other\"]\n\n[[expect]]",
            1,
        );
    let f = fixture(&two);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let (plans, _) = plan_and_run(&f.ws, 2);
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let full = read(&md);
    let full_width = svg_width(&md.with_file_name("figures").join("demo-fig-map.svg"));
    let row = |text: &str, data: &str| text.lines().any(|l| l.starts_with(&format!("| {data} (")));
    assert!(row(&full, "small") && row(&full, "other"), "{full}");
    let first_small = plans[0].cells.iter().find(|c| c.dataset == 0).unwrap();
    f.ws.cache().supersede(&first_small.key).unwrap();
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let text = read(&md);
    assert!(
        text.contains("Missing by data set: `small` 1; complete: `other`"),
        "{text}"
    );
    assert!(row(&text, "other") && !row(&text, "small"), "{text}");
    // The claim about `other` alone is judged as in the full report; the one over both waits.
    let line = |t: &str, id: &str| -> Option<String> {
        t.lines().find(|l| l.contains(id)).map(String::from)
    };
    assert!(
        text.contains("Claims (1 of 2 judged:")
            && line(&text, "[c2]") == line(&full, "[c2]")
            && line(&text, "[c2]").is_some()
            && line(&text, "[c1]").is_some_and(|l| l.contains("not run: 1 of the 8 cells")),
        "{text}"
    );
    // The plots of the complete data set, titled PARTIAL; gone once every cell is there.
    let figs = md.parent().unwrap().join("figures");
    let partial = figs.join("demo-fig-map-partial.png");
    assert!(
        partial.is_file() && text.contains("figures/demo-fig-map-partial.png"),
        "{text}"
    );
    // One panel (the complete data set) where the full figure had two: a narrower figure;
    // the full figure is not left beside it.
    assert!(svg_width(&figs.join("demo-fig-map-partial.svg")) < full_width);
    assert!(!figs.join("demo-fig-map.svg").exists());
    // The complete data set's rows are the full report's.
    let rows = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("| other ("))
            .map(String::from)
            .collect()
    };
    assert_eq!(rows(&text), rows(&full));
    let (plans, _) = plan_and_run(&f.ws, 2);
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    assert!(!partial.exists() && !read(&md).contains("partial"));
}

/// The width an SVG file declares.
fn svg_width(path: &Path) -> u32 {
    let svg = std::fs::read_to_string(path).unwrap();
    svg.split("width=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{}: no width", path.display()))
}

/// `dyad plan --solver/--dataset` estimates the listed cells from the timings of every cell
/// of the specs: a solver never timed on this data set takes its time on another.
#[test]
fn estimates_of_a_narrowed_plan_learn_from_every_cell() {
    let two = two_datasets();
    let f = fixture(&two);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let cache = f.ws.cache();
    let oasis_on = |d: usize| -> Vec<String> {
        plans[0]
            .cells
            .iter()
            .filter(|c| c.dataset == d && plans[0].solvers[c.solver].name == "oasis")
            .map(|c| c.key.clone())
            .collect()
    };
    let small: Vec<f64> = oasis_on(0)
        .iter()
        .map(|k| cache.get(k).unwrap().wall_seconds)
        .collect();
    for k in oasis_on(1) {
        cache.supersede(&k).unwrap();
    }
    let ctx = f.ws.data_context();
    let specs = f.ws.select_specs(&[]).unwrap();
    let mut narrowed = f.ws.plan(&specs, Profile::Quick, &ctx).unwrap();
    let filter = dyad_harness::engine::plan::CellFilter {
        solvers: vec!["oasis".into()],
        datasets: vec!["other".into()],
    };
    filter.narrow(&mut narrowed).unwrap();
    assert_eq!(narrowed[0].cells.len(), 2);
    let e = &dyad_harness::engine::cluster::estimate(&f.ws, &plans, &narrowed)[0].1;
    assert_eq!((e.missing, e.unknown), (2, 0));
    let want = 2.0 * small.iter().sum::<f64>() / small.len() as f64;
    assert!((e.seconds - want).abs() < 1e-9, "{} {want}", e.seconds);
    // Learning from the narrowed plans alone, nothing would be known.
    let e = &dyad_harness::engine::cluster::estimate(&f.ws, &narrowed, &narrowed)[0].1;
    assert_eq!((e.missing, e.unknown), (2, 2));
}

/// SPEC with OASIS's C tuned over {0.001, 0.5} on a 30 % hold-out.
fn tuned_oasis() -> String {
    SPEC.replace("params = { c = 0.1 }", "tune = { c = [0.001, 0.5] }")
        .replace(
            "k_max = 5",
            "k_max = 5\nearly_stopping = { validation_fraction = 0.3 }",
        )
}

/// A cell whose tuning grid changed has no cell of its own to go by: `dyad plan` estimates it
/// from the same cell cached on the old grid, its model selection scaled by the grids' sizes
/// (two candidates before, three now), not from the solver's other cells.
#[test]
fn estimates_of_a_changed_grid_scale_the_old_grids_selection() {
    let spec = tuned_oasis();
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let cache = f.ws.cache();
    let old: Vec<(f64, f64)> = plans[0]
        .cells
        .iter()
        .filter(|c| plans[0].solvers[c.solver].name == "oasis")
        .map(|c| {
            let r = cache.get(&c.key).unwrap();
            assert!(r.selection_seconds > 0.0 && r.selection_seconds <= r.wall_seconds);
            (r.wall_seconds, r.selection_seconds)
        })
        .collect();
    assert_eq!(old.len(), 2);
    let exp = f.ws.experiments.join("demo").join("fig.toml");
    std::fs::write(
        &exp,
        spec.replace("c = [0.001, 0.5]", "c = [0.001, 0.5, 5.0]"),
    )
    .unwrap();
    let regrid = plan_quick(&f.ws);
    let e = &dyad_harness::engine::cluster::estimate(&f.ws, &regrid, &regrid)[0].1;
    assert_eq!((e.missing, e.unknown), (2, 0));
    let scaled: Vec<f64> = old.iter().map(|(w, sel)| w - sel + sel * 1.5).collect();
    // Each of the two missing cells at the mean of the old repeats, scaled.
    let want = 2.0 * (scaled[0] + scaled[1]) / 2.0;
    assert!((e.seconds - want).abs() < 1e-9, "{} {want}", e.seconds);
    // The scaling itself: the rest kept, selection in proportion to the candidates.
    let r = dyad_harness::engine::cluster::Regridded {
        wall: 10.0,
        selection: 6.0,
        candidates: 2,
    };
    assert_eq!(r.seconds_at(3), 13.0);
    assert_eq!(r.seconds_at(2), 10.0);
    // An untuned cell is a grid of one.
    let untuned = regrid[0]
        .cells
        .iter()
        .find(|c| regrid[0].solvers[c.solver].name == "euclidean")
        .unwrap();
    let (_, one) = dyad_harness::engine::cluster::untuned_shape(&untuned.canonical).unwrap();
    assert_eq!(one, 1);
}

/// A cell whose task version was bumped (its key changed) is estimated from the cell the old
/// version computed, not left without a timing.
#[test]
fn estimates_of_a_bumped_version_read_the_old_versions_cell() {
    let f = fixture(SPEC);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let cache = f.ws.cache();
    let cell = &plans[0].cells[0];
    // The cell as an older version of the task computed it: another key, version 0.
    let mut old = cache.get(&cell.key).unwrap();
    old.canonical["task"]["version"] = serde_json::json!(0);
    old.key = "0".repeat(64);
    old.wall_seconds = 1234.0;
    old.selection_seconds = 0.0;
    cache.put(&old).unwrap();
    // Every cell of the plan is gone but that old one.
    for c in &plans[0].cells {
        cache.remove(&c.key).unwrap();
    }
    let now = plan_quick(&f.ws);
    let e = &dyad_harness::engine::cluster::estimate(&f.ws, &now, &now)[0].1;
    assert_eq!(e.missing, now[0].cells.len());
    // The bumped cell and its other repeat at the old one's time; the other solver's cells
    // have nothing to go by.
    assert_eq!(e.missing, 4);
    assert_eq!((e.seconds, e.unknown), (2.0 * 1234.0, 2), "{e:?}");
}

#[test]
fn a_renamed_task_table_names_its_new_name_and_keeps_cell_keys() {
    // `[protocol.ranking]` was the retrieval task's table: a spec still using it is told the
    // new table, at its line.
    let f = fixture(&SPEC.replace("[protocol.retrieval]", "[protocol.ranking]"));
    let err = plan_error(&f.ws);
    assert!(
        err.contains("fig.toml:16:")
            && err.contains("now `[protocol.retrieval]` (task `retrieval`)"),
        "{err}"
    );
    // The keys still hash the task's former name, so no cell computed before the rename is
    // lost.
    let f = fixture(SPEC);
    let specs = f.ws.select_specs(&[]).unwrap();
    let plans =
        f.ws.plan(&specs, Profile::Quick, &f.ws.data_context())
            .unwrap();
    assert_eq!(plans[0].task.name(), "retrieval");
    for c in &plans[0].cells {
        assert_eq!(c.canonical["task"]["name"], "label-ranking");
    }
}

#[test]
fn unknown_solver_or_data_set_names_the_line() {
    let f = fixture(&SPEC.replace("name = \"euclidean\"", "name = \"euclidian\""));
    let err = plan_error(&f.ws);
    assert!(
        err.contains("fig.toml:27:") && err.contains("unknown solver \"euclidian\""),
        "{err}"
    );
    let f = fixture(&SPEC.replace("params = { c = 0.1 }", "params = { c = 0.1, steps = 3 }"));
    let err = plan_error(&f.ws);
    assert!(
        err.contains("fig.toml:24:") && err.contains("unknown field `steps`"),
        "{err}"
    );
}

fn repo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_annotated_example_in_experiments_readme_is_a_valid_spec() {
    let readme = std::fs::read_to_string(repo_root().join("experiments/README.md")).unwrap();
    let start = readme.find("```toml\n").expect("a toml block") + 8;
    let end = start + readme[start..].find("```").unwrap();
    let spec = dyad_harness::spec::LoadedSpec::parse(
        Path::new("experiments/oasis/example.toml"),
        readme[start..end].to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let f = fixture(SPEC);
    let ctx = f.ws.data_context();
    for p in [Profile::Quick, Profile::Paper] {
        let plan =
            dyad_harness::engine::plan::plan(&spec, p, &ctx).unwrap_or_else(|e| panic!("{e}"));
        // Two data sets x (OASIS, Euclidean) plus fast-LMNN on c10 only.
        assert_eq!(
            plan.cells.len(),
            (2 * 2 + 1) * *spec.spec.protocol.repeats.at(p) as usize
        );
    }
}

#[test]
fn every_committed_spec_parses_and_plans_at_both_profiles() {
    let f = fixture(SPEC);
    let ws = Workspace {
        experiments: repo_root().join("experiments"),
        results: f.ws.results.clone(),
        data_dir: f.ws.data_dir.clone(),
    };
    let specs = ws.select_specs(&[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(specs.len() >= 5, "{}", specs.len());
    let ctx = ws.data_context();
    for p in [Profile::Quick, Profile::Paper] {
        let plans = ws.plan(&specs, p, &ctx).unwrap_or_else(|e| panic!("{e}"));
        // Specs that extend J-F6 run its cells (J-T5 adds its own on top).
        let keys = |id: &str| -> std::collections::BTreeSet<String> {
            plans
                .iter()
                .find(|p| p.spec.id == id)
                .unwrap()
                .cells
                .iter()
                .map(|c| c.key.clone())
                .collect()
        };
        assert_eq!(keys("oasis/table4"), keys("oasis/fig6"));
        assert!(keys("oasis/table5").is_superset(&keys("oasis/fig6")));
        assert!(keys("oasis/table5").len() > keys("oasis/fig6").len());
        for plan in &plans {
            assert!(!plan.cells.is_empty());
            // Without data every data set is a marked stand-in.
            assert!(
                plan.datasets
                    .iter()
                    .all(|d| d.resolved.synthetic && d.resolved.note.contains("SYNTHETIC"))
            );
        }
    }
}

#[test]
fn tuned_parameters_are_chosen_on_the_hold_out_and_recorded() {
    let spec = tuned_oasis();
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let oasis: Vec<_> = res
        .cells
        .iter()
        .flatten()
        .filter(|c| c.solver == "oasis")
        .collect();
    assert_eq!(oasis.len(), 2);
    for c in oasis {
        let tuned = c.tuned.as_ref().expect("a tuned choice");
        assert!(
            [0.001, 0.5].contains(&tuned["c"].as_f64().unwrap()),
            "{tuned}"
        );
        assert!(c.selected_step.is_some());
        assert!(c.records.iter().any(|r| r.set == "validation"));
    }
    // `early_stopping = false`: the candidates are compared at their last step, the final
    // run covers the whole checkpoint grid, and no step count is selected.
    let whole = fixture(&spec.replace(
        "tune = { c = [0.001, 0.5] }",
        "tune = { c = [0.001, 0.5] }\nearly_stopping = false",
    ));
    let (plans, s) = plan_and_run(&whole.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &whole.ws.cache());
    for c in res.cells.iter().flatten().filter(|c| c.solver == "oasis") {
        assert!(c.tuned.is_some() && c.selected_step.is_none());
        let steps = |set: &str| {
            let mut v: Vec<u64> = c
                .records
                .iter()
                .filter(|r| r.set == set && r.metric == "map")
                .map(|r| r.step)
                .collect();
            v.dedup();
            v
        };
        assert_eq!(steps("validation"), vec![400]);
        assert_eq!(steps("test"), vec![0, 200, 400]);
    }
    // Tuning without a hold-out is a spec error.
    let bad = fixture(&SPEC.replace("params = { c = 0.1 }", "tune = { c = [0.1, 1.0] }"));
    let e = plan_error(&bad.ws);
    assert!(e.contains("tuning needs"), "{e}");
}

#[test]
fn the_official_split_uses_the_data_sets_own_parts() {
    let spec = SPEC
        .replace(
            "name = \"caltech256-standin\"\nparams = { classes = 4, per_class = 12, dim = 200, seed = 5 }",
            "name = \"mnist-standin\"\nparams = { train = 60, test = 30 }",
        )
        .replace("train_per_class = 7\ntest_per_class = 5", "split = \"official\"\nmax_train = 40");
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    // 30 official test rows, each query ranking the 29 others: chance = relevant / 29.
    let chance = res.cells[0]
        .as_ref()
        .unwrap()
        .records
        .iter()
        .find(|r| r.metric == "chance" && r.set == "test")
        .unwrap()
        .value;
    assert!(((chance * 29.0) - 2.0).abs() < 1e-9, "{chance}");
    let e = fixture(&SPEC.replace(
        "train_per_class = 7\ntest_per_class = 5",
        "split = \"official\"",
    ));
    assert!(e.ws.select_specs(&[]).is_ok());
}

#[test]
fn claim_kinds_judge_margins_and_closeness() {
    // Two copies of the same solver give identical numbers: `close` holds at tolerance 0,
    // strict `greater` is not distinguishable (no difference at all), `greater` with a margin
    // holds; OASIS and Euclidean differ.
    let spec = SPEC
        // Two OASIS instances: the base claim and band name theirs by label.
        .replace(
            "solver = \"oasis\"\nversus = \"euclidean\"",
            "solver = \"OASIS\"\nversus = \"euclidean\"",
        )
        .replace(
            "dataset = \"small\"\nsolver = \"oasis\"",
            "dataset = \"small\"\nsolver = \"OASIS\"",
        )
        .replace(
            "[[solvers]]\nname = \"euclidean\"",
            "[[solvers]]\nname = \"euclidean\"\n\n[[solvers]]\nname = \"oasis\"\nlabel = \"twin\"\nparams = { c = 0.1 }",
        )
        .replace(
            "[[claims]]",
            r#"[[claims]]
id = "same"
text = "the twins agree"
origin = "ours"
kind = "close"
metric = "precision"
solver = "OASIS"
versus = "twin"
tolerance = 0.0

[[claims]]
id = "strict"
text = "OASIS beats its twin"
origin = "ours"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "twin"

[[claims]]
id = "margin"
text = "OASIS is at least as good as its twin"
origin = "ours"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "twin"
tolerance = 0.001

[[claims]]
id = "half"
text = "OASIS beats half of its twin"
origin = "ours"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "twin"
factor = 0.5

[[claims]]
id = "double"
text = "OASIS beats twice its twin"
origin = "ours"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "twin"
factor = 2.0

[[claims]]
id = "apart"
text = "OASIS and Euclidean agree to 1e-9"
origin = "ours"
kind = "close"
metric = "map"
solver = "OASIS"
versus = "euclidean"
tolerance = 1e-9

[[claims]]
id = "as-much"
text = "OASIS is as good as its twin: the factor 1"
origin = "ours"
kind = "factor"
metric = "map"
solver = "OASIS"
versus = "twin"
paper_value = 1.0
tolerance = 0.01

[[claims]]
id = "twice"
text = "OASIS is twice its twin"
origin = "ours"
kind = "factor"
metric = "map"
solver = "OASIS"
versus = "twin"
paper_value = 2.0
tolerance = 0.1

[[claims]]
id = "ten-times-log"
text = "OASIS is ten times its twin, to half a decade"
origin = "ours"
kind = "factor"
metric = "map"
solver = "OASIS"
versus = "twin"
paper_value = 10.0
tolerance = 0.5
log = true

[[claims]]
id = "no-difference"
text = "OASIS and its twin differ by nothing"
origin = "ours"
kind = "difference"
metric = "map"
solver = "OASIS"
versus = "twin"
paper_value = 0.0
tolerance = 0.001

[[claims]]"#,
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.failed.is_empty());
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let verdict = |id: &str| judge_claim(&plans[0], &res, id).verdict;
    use dyad_harness::analysis::claims::Verdict;
    assert_eq!(verdict("same"), Verdict::Holds);
    assert_eq!(verdict("strict"), Verdict::NotDistinguishable);
    assert_eq!(verdict("margin"), Verdict::Holds);
    assert_eq!(verdict("apart"), Verdict::DoesNotHold);
    assert_eq!(verdict("half"), Verdict::Holds);
    assert_eq!(verdict("double"), Verdict::DoesNotHold);
    // Stated numbers: the twins' ratio is exactly 1 on every split.
    let detail = |id: &str| judge_claim(&plans[0], &res, id).detail;
    assert_eq!(verdict("as-much"), Verdict::Holds);
    assert!(
        detail("as-much").contains("×1.00 [×1.00, ×1.00] measured vs ×1.00 in the paper")
            && detail("as-much").contains("agrees")
            && detail("as-much").contains("paired over 2 splits"),
        "{}",
        detail("as-much")
    );
    assert_eq!(verdict("twice"), Verdict::DoesNotHold);
    assert!(detail("twice").contains("far"), "{}", detail("twice"));
    assert_eq!(verdict("ten-times-log"), Verdict::DoesNotHold);
    assert!(detail("ten-times-log").contains("±0.5 decades"));
    assert_eq!(verdict("no-difference"), Verdict::Holds);

    // A `close` claim without a tolerance is a spec error naming the key.
    let bad = fixture(&spec.replace("tolerance = 0.0\n", ""));
    let err = bad.ws.select_specs(&[]).err().unwrap().to_string();
    assert!(
        err.contains("claim `same`") && err.contains("tolerance"),
        "{err}"
    );
}

#[test]
fn model_statistics_are_recorded_only_when_asked() {
    let count = |spec: &str| {
        let f = fixture(spec);
        let (plans, s) = plan_and_run(&f.ws, 2);
        assert!(s.ok(), "{:?}", s.failed);
        let res = ExperimentResults::load(&plans[0], &f.ws.cache());
        res.cells
            .iter()
            .flatten()
            .filter(|c| c.solver == "oasis")
            .flat_map(|c| &c.records)
            .filter(|r| r.set == "model" && r.metric == "symmetry_index")
            .map(|r| r.value)
            .collect::<Vec<_>>()
    };
    assert!(count(SPEC).is_empty());
    let on = count(&SPEC.replace("k_max = 5", "k_max = 5\nmodel_statistics = true"));
    // One final model per repeat; a trained OASIS matrix is not symmetric, so 0 < rho < 1.
    assert_eq!(on.len(), 2);
    assert!(on.iter().all(|&r| r > 0.0 && r < 1.0), "{on:?}");
}

#[test]
fn parameter_axes_fit_power_laws_across_providers() {
    // y = 3 x^2 exactly: the fit returns (3, 2).
    let pts: Vec<(f64, f64)> = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|&x| (x, 3.0 * x * x))
        .collect();
    let (a, b) = dyad_harness::analysis::stats::power_fit(&pts).unwrap();
    assert!((a - 3.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-12, "{a} {b}");
    assert!(dyad_harness::analysis::stats::power_fit(&pts[..1]).is_none());

    // Data sets of two providers on one axis through a list of parameter names.
    let spec = SPEC
        .replace(
            "[[datasets]]\nid = \"small\"",
            "[[datasets]]\nid = \"other\"\nname = \"caltech256-standin\"\nparams = { classes = 4, per_class = 16, dim = 200, seed = 5 }\n\n[[datasets]]\nid = \"small\"",
        )
        .replace(
            "[[claims]]",
            "[[claims]]\nid = \"slope\"\ntext = \"time grows with size\"\norigin = \"ours\"\nkind = \"slope-within\"\nmetric = \"map\"\nsolver = \"euclidean\"\nx_param = [\"nothing\", \"per_class\"]\nrange = [-100.0, 100.0]\n\n[[claims]]",
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let names = vec!["nothing".to_string(), "per_class".to_string()];
    assert_eq!(res.dataset_param("other", &names), Some(16.0));
    assert_eq!(res.dataset_param("small", &names), Some(12.0));
    let si = res.solvers_named("euclidean")[0];
    let xs: Vec<f64> = res
        .param_series(si, "test", "map", None, &names, &[])
        .iter()
        .map(|p| p.x)
        .collect();
    assert_eq!(xs, vec![12.0, 16.0]);
    let c = plans[0]
        .spec
        .spec
        .claims
        .iter()
        .find(|c| c.id == "slope")
        .unwrap();
    let o = dyad_harness::analysis::claims::judge(&res, c);
    assert_eq!(
        o.verdict,
        dyad_harness::analysis::claims::Verdict::Holds,
        "{}",
        o.detail
    );
    assert!(o.detail.contains("fitted exponent"), "{}", o.detail);
}

const WEB_SPEC: &str = r#"
title = "raters"
paper = "demo"
figure = "F3"

[[datasets]]
id = "web"
name = "web-standin"
params = { images = 1500, dim = 2000, idf_reference = 0 }

[protocol]
repeats = 1
seed = 3
checkpoints = { max = 3000, log_points = 4 }

[protocol.retrieval]
split = "official"
evaluate = ["test"]
k_max = 10
early_stopping = { validation_fraction = 0.1 }

[protocol.human_evaluation]
panel = { raters = 6 }
sizes = { queries = 12, top = 5, negatives = 5 }

[[solvers]]
name = "oasis"
params = { c = 0.1 }

[[solvers]]
name = "euclidean"

[[claims]]
id = "raters"
text = "raters prefer OASIS, at least up to a margin"
origin = "ours"
kind = "greater"
metric = "precision"
set = "human"
solver = "oasis"
versus = "euclidean"
tolerance = 1.0

[[plots]]
id = "per-query"
title = "per query"
x = "k"
metric = "precision"
sets = ["per query: raters", "per query: ranker"]
solvers = ["OASIS"]
x_label = "query"
y_label = "precision"
"#;

#[test]
fn the_simulated_human_evaluation_adds_rater_records_to_the_ranking_cell() {
    let f = fixture(WEB_SPEC);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let plain = fixture(&WEB_SPEC.replace(
        "[protocol.human_evaluation]\npanel = { raters = 6 }\nsizes = { queries = 12, top = 5, negatives = 5 }\n",
        "",
    ));
    let (plain_plans, s) = plan_and_run(&plain.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let plain_res = ExperimentResults::load(&plain_plans[0], &plain.ws.cache());
    for (ci, cell) in res.cells.iter().enumerate() {
        let cell = cell.as_ref().expect("computed");
        let other = plain_res.cells[ci].as_ref().expect("computed");
        assert_ne!(cell.key, other.key, "the human task has its own keys");
        // The ranking part is the retrieval task's, record for record.
        let automatic: Vec<_> = cell
            .records
            .iter()
            .filter(|r| r.set == "test" || r.set == "validation" || r.set.starts_with("sanity"))
            .map(|r| (r.set.clone(), r.metric.clone(), r.step, r.k, r.value))
            .collect();
        let expected: Vec<_> = other
            .records
            .iter()
            .map(|r| (r.set.clone(), r.metric.clone(), r.step, r.k, r.value))
            .collect();
        assert_eq!(automatic, expected);
        assert_eq!(cell.selected_step, other.selected_step);

        let of = |set: &str, metric: &str| -> Vec<(Option<u32>, f64)> {
            cell.records
                .iter()
                .filter(|r| r.set == set && r.metric == metric)
                .map(|r| (r.k, r.value))
                .collect()
        };
        let human = of("human", "precision");
        assert_eq!(
            human.iter().map(|p| p.0).collect::<Vec<_>>(),
            (1..=5).map(Some).collect::<Vec<_>>()
        );
        // J-F3C: one record per rater and k for each of the selected queries (12 queries
        // reach mAP ranks 1, 6 and 11), and their mean is the query's precision.
        for rank in [1, 6, 11] {
            let set = format!("human: query at mAP rank {rank}");
            let recs = of(&set, "precision");
            assert_eq!(recs.len(), 6 * 5, "{set}");
            assert!(recs.iter().all(|(_, v)| (0.0..=1.0).contains(v)));
        }
        assert!(of("human: query at mAP rank 16", "precision").is_empty());
        assert!(human.iter().all(|(_, v)| (0.0..=1.0).contains(v)));
        for m in [
            "map",
            "ap_sd_over_queries",
            "ap_sd_over_raters",
            "negatives_marked",
        ] {
            assert_eq!(of("human", m).len(), 1, "{m}");
        }
        // J-F3D: sorted by human precision, best first; one ranker value per query.
        let raters = of("per query: raters", "precision");
        let ranker = of("per query: ranker", "precision");
        assert_eq!(raters.len(), ranker.len());
        assert!(!raters.is_empty() && raters.len() <= 12);
        assert!(raters.windows(2).all(|w| w[0].1 >= w[1].1), "{raters:?}");
    }
    // The pooled curve of a J-F3C set averages the raters: its points are the per-k means.
    let si = plans[0]
        .solvers
        .iter()
        .position(|s| s.name == "oasis")
        .unwrap();
    let curve = res.curve(
        0,
        si,
        "human: query at mAP rank 1",
        "precision",
        &dyad_harness::spec::XAxis::K,
        None,
    );
    assert_eq!(curve.len(), 5);
    assert!(curve.iter().all(|p| p.y.n == 6));
    // A claim over precision without k covers the ks the set records (1..=5), not k_max.
    let claim = &plans[0].spec.spec.claims[0];
    let o = dyad_harness::analysis::claims::judge(&res, claim);
    assert_eq!(
        o.verdict,
        dyad_harness::analysis::claims::Verdict::Holds,
        "{}",
        o.detail
    );
    assert!(o.detail.contains("5/5 k"), "{}", o.detail);

    // Data sets without latent concepts are refused when planning.
    let bad = fixture(&WEB_SPEC.replace(
        "name = \"web-standin\"\nparams = { images = 1500, dim = 2000, idf_reference = 0 }",
        "name = \"caltech256-standin\"\nparams = { classes = 3, per_class = 10, dim = 50 }",
    ));
    let ctx = bad.ws.data_context();
    let err = match bad
        .ws
        .plan(&bad.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
    {
        Ok(_) => panic!("a caltech data set must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("human-evaluation") && err.contains("web stand-in"),
        "{err}"
    );
}

/// The second task (ranking labels per example) end to end, the larger example that
/// docs/extending.md ("A new task") points to.
const LABELS_SPEC: &str = r#"
title = "labels"
paper = "demo"
figure = "L1"

[[datasets]]
id = "small"
name = "caltech256-standin"
params = { classes = 6, per_class = 20, dim = 200, seed = 5 }

[protocol]
repeats = 2
seed = 3
checkpoints = { max = 0 }

[protocol.label_ranking]
train_per_class = 12
test_per_class = 8
k_max = 3

[[solvers]]
name = "centroid"
"#;

#[test]
fn a_second_task_ranks_labels_per_example() {
    let f = fixture(LABELS_SPEC);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert_eq!(plans[0].task.name(), "label-ranking");
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let sel = |metric: &str, k: Option<u32>| {
        let v = res
            .select(&dyad_harness::spec::Selector {
                dataset: Some("small".into()),
                solver: Some("centroid".into()),
                metric: metric.into(),
                set: "test".into(),
                k,
                coord: None,
                at: dyad_harness::spec::At::Last,
            })
            .unwrap();
        v.iter().sum::<f64>() / v.len() as f64
    };
    // Six labels, one relevant per example: chance 1/6; the centroids learn the classes.
    assert!((sel("chance", None) - 1.0 / 6.0).abs() < 1e-12);
    assert!(sel("map", None) > 0.5, "{}", sel("map", None));
    assert!(sel("precision", Some(1)) > 1.0 / 6.0);
    // The report's summary shows the task's headline metrics.
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("label mAP (test)") && md.contains("label prec@1 (test)"),
        "{md}"
    );
    // A ranker is not a label ranker: the family is checked when the plan is built.
    let g = fixture(&LABELS_SPEC.replace("name = \"centroid\"", "name = \"oasis\""));
    let e = plan_error(&g.ws);
    assert!(
        e.contains("is a ranker") && e.contains("label-ranker"),
        "{e}"
    );
}

#[test]
fn claims_compare_across_data_sets_and_vars_are_plot_coordinates() {
    // `twin` holds the same data as `small` (same provider parameters), `big` more rows per
    // class; `vars` give each a coordinate that is not a provider parameter.
    let spec = SPEC
        .replace(
            "[[datasets]]\nid = \"small\"",
            "[[datasets]]\nid = \"twin\"\nname = \"caltech256-standin\"\nparams = { classes = 4, per_class = 12, dim = 200, seed = 5 }\nvars = { rank = 30 }\n\n[[datasets]]\nid = \"small\"",
        )
        .replace(
            "params = { classes = 4, per_class = 12, dim = 200, seed = 5 }\n\n[protocol]",
            "params = { classes = 4, per_class = 12, dim = 200, seed = 5 }\nvars = { rank = 10 }\n\n[protocol]",
        )
        .replace(
            "[[claims]]",
            r#"[[claims]]
id = "same-data"
text = "OASIS on small and on its twin agree"
origin = "ours"
kind = "close"
metric = "map"
solver = "OASIS"
datasets = ["small"]
versus_dataset = "twin"
tolerance = 0.0

[[claims]]
id = "other-solver"
text = "OASIS on small beats Euclidean on the twin"
origin = "ours"
kind = "greater"
metric = "map"
solver = "OASIS"
versus = "euclidean"
datasets = ["small"]
versus_dataset = "twin"

[[claims]]"#,
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let judge = |id: &str| judge_claim(&plans[0], &res, id);
    use dyad_harness::analysis::claims::Verdict;
    let same = judge("same-data");
    assert_eq!(same.verdict, Verdict::Holds, "{}", same.detail);
    assert!(same.detail.contains("small vs twin"), "{}", same.detail);
    assert_eq!(judge("other-solver").verdict, Verdict::Holds);
    // vars are plot coordinates: one point per data set at its rank.
    let rank = vec!["rank".to_string()];
    assert_eq!(res.dataset_param("twin", &rank), Some(30.0));
    let si = res.solvers_named("oasis")[0];
    let xs: Vec<f64> = res
        .param_series(si, "test", "map", None, &rank, &[])
        .iter()
        .map(|p| p.x)
        .collect();
    assert_eq!(xs, vec![10.0, 30.0]);
    // A claim naming an unknown data set is refused at planning, naming the key.
    let bad = fixture(&spec.replace(
        "versus_dataset = \"twin\"\ntolerance",
        "versus_dataset = \"nope\"\ntolerance",
    ));
    let err = bad.ws.select_specs(&[]).err().unwrap().to_string();
    assert!(
        err.contains("versus_dataset") && err.contains("nope"),
        "{err}"
    );
}

#[test]
fn a_candidate_that_diverges_on_the_hold_out_is_not_chosen() {
    // Naive PSD GD with a huge step diverges (the papers' instability); tuned beside a sane
    // step, the cell succeeds with the sane one. Alone, the divergence fails the cell.
    let spec = SPEC
        .replace(
            "name = \"oasis\"\nparams = { c = 0.1 }",
            "name = \"naive-psd-gd\"\ntune = { eta = [1e6, 0.05] }\nearly_stopping = false\nparams = { rank = 3 }",
        )
        .replace(
            "k_max = 5",
            "k_max = 5\nearly_stopping = { validation_fraction = 0.3 }",
        )
        .replace("solver = \"oasis\"", "solver = \"naive-psd-gd\"");
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 1);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    for c in res
        .cells
        .iter()
        .flatten()
        .filter(|c| c.solver == "naive-psd-gd")
    {
        assert_eq!(c.tuned.as_ref().unwrap()["eta"].as_f64(), Some(0.05));
    }
    let alone = fixture(&spec.replace("tune = { eta = [1e6, 0.05] }", "tune = { eta = [1e6] }"));
    let (_, s) = plan_and_run(&alone.ws, 1);
    assert!(
        !s.failed.is_empty(),
        "a diverging solver must fail its cell"
    );
}

#[test]
fn label_rankers_tune_on_a_hold_out_of_the_training_rows() {
    // Rank 1 cannot separate six labels, rank 5 can: the hold-out must choose rank 5, and the
    // choice is recorded with the cell.
    let spec = LABELS_SPEC
        .replace(
            "checkpoints = { max = 0 }",
            "checkpoints = { max = 3000, every = 1500 }",
        )
        .replace(
            "k_max = 3",
            "k_max = 3\ntuning = { validation_fraction = 0.25 }",
        )
        .replace(
            "name = \"centroid\"",
            "name = \"loreta-labels\"\ntune = { rank = [1, 5] }",
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let cells: Vec<_> = res.cells.iter().flatten().collect();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c.tuned.as_ref().unwrap()["rank"].as_u64(), Some(5));
        assert!(c.selection_seconds > 0.0);
    }
    // Without the hold-out table, a tune grid is refused at planning.
    let bad = fixture(&spec.replace("tuning = { validation_fraction = 0.25 }\n", ""));
    let e = plan_error(&bad.ws);
    assert!(e.contains("tuning needs"), "{e}");
}

#[test]
fn a_solver_grid_parameter_can_be_the_x_axis() {
    // OASIS over a grid of C: one series "OASIS" through its grid points; Euclidean (no
    // grid) is drawn at the data set's `vars` value.
    let spec = SPEC
        .replace(
            "params = { classes = 4, per_class = 12, dim = 200, seed = 5 }",
            "params = { classes = 4, per_class = 12, dim = 200, seed = 5 }\nvars = { c = 2.0 }",
        )
        .replace("params = { c = 0.1 }", "grid = { c = [0.01, 0.1, 1.0] }")
        .replace("solver = \"oasis\"", "solver = \"OASIS (c=0.1)\"")
        .replace(
            "[[plots]]\nid = \"map\"",
            "[[plots]]\nid = \"by-c\"\ntitle = \"mAP against C\"\nx = \"param\"\nx_param = \"c\"\nmetric = \"map\"\nx_label = \"C\"\ny_label = \"mAP\"\nlog_x = true\n\n[[plots]]\nid = \"map\"",
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let plot = &plans[0].spec.spec.plots[0];
    assert_eq!(plot.id, "by-c");
    let l = dyad_harness::presentation::plots::layout(&res, plot);
    let names: Vec<String> = l
        .legend
        .as_ref()
        .unwrap()
        .entries
        .iter()
        .map(|e| e.lines.iter().map(|t| t.text.clone()).collect::<String>())
        .collect();
    assert_eq!(names, vec!["OASIS".to_string(), "Euclidean".to_string()]);
    let x = &l.panels[0].x;
    assert!(x.lo <= 0.01 && x.hi >= 2.0, "{x:?}");
}

#[test]
fn the_solvers_a_plot_draws_have_distinct_colours() {
    // Ten OASIS instances and Euclidean: eleven drawn solvers, eleven colours (a palette
    // indexed by solver position modulo 8 gave instances 1 and 9 one colour). A plot drawing
    // only the first and the ninth instance gives them the first two colours.
    let spec = SPEC
        .replace(
            "params = { c = 0.1 }",
            "grid = { c = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.2, 0.3, 0.5, 0.7] }",
        )
        .replace("solver = \"oasis\"", "solver = \"OASIS (c=0.1)\"")
        .replace(
            "checkpoints = { max = 400, every = 200 }",
            "checkpoints = { max = 40, every = 20 }",
        )
        .replace("repeats = 2", "repeats = 1")
        .replace(
            "[[plots]]\nid = \"prec\"",
            "[[plots]]\nid = \"two\"\ntitle = \"two\"\nx = \"step\"\nmetric = \"map\"\nsets = [\"test\"]\nsolvers = [\"OASIS (c=0.01)\", \"OASIS (c=0.5)\"]\nx_label = \"steps\"\ny_label = \"mAP\"\n\n[[plots]]\nid = \"prec\"",
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let entries = |id: &str| {
        let plot = plans[0]
            .spec
            .spec
            .plots
            .iter()
            .find(|p| p.id == id)
            .unwrap();
        dyad_harness::presentation::plots::layout(&res, plot)
            .legend
            .unwrap()
            .entries
    };
    // The step plot draws train (dashed) and test of each solver: one colour per solver.
    let all = entries("map");
    assert_eq!(all.len(), 22);
    let mut colours: Vec<(u8, u8, u8)> =
        all.iter().filter(|e| !e.dashed).map(|e| e.color).collect();
    assert_eq!(colours.len(), 11);
    colours.sort();
    colours.dedup();
    assert_eq!(colours.len(), 11, "{colours:?}");
    let pair: Vec<(u8, u8, u8)> = entries("two").iter().map(|e| e.color).collect();
    let first_two: Vec<(u8, u8, u8)> = all
        .iter()
        .filter(|e| !e.dashed)
        .take(2)
        .map(|e| e.color)
        .collect();
    assert_eq!(pair, first_two);
}

#[test]
fn a_plot_traces_one_k_of_precision_against_steps() {
    // With `precision_at_every_checkpoint`, precision@k is recorded at every checkpoint; a
    // step plot with `k` draws that k's trace (and only it), matching the selected records.
    let spec = SPEC.replace(
        "k_max = 5\n",
        "k_max = 5\nprecision_at_every_checkpoint = true\n",
    );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let si = res.solvers_named("oasis")[0];
    let step = dyad_harness::spec::XAxis::Step;
    let p3 = res.curve(0, si, "test", "precision", &step, Some(3));
    let steps: Vec<f64> = p3.iter().map(|p| p.x).collect();
    assert_eq!(steps, vec![0.0, 200.0, 400.0]);
    // Each point is the mean over repeats of the records at that step and k.
    for p in &p3 {
        let sel = dyad_harness::spec::Selector {
            dataset: Some("small".into()),
            solver: Some("OASIS".into()),
            metric: "precision".into(),
            set: "test".into(),
            k: Some(3),
            coord: None,
            at: dyad_harness::spec::At::Step(p.x as u64),
        };
        let v = res.select(&sel).unwrap();
        assert_eq!(v.len(), 2);
        assert!((p.y.mean - (v[0] + v[1]) / 2.0).abs() < 1e-15);
    }
    // Another k is another curve; without k the step plot of precision is empty.
    let p1 = res.curve(0, si, "test", "precision", &step, Some(1));
    assert_eq!(p1.len(), 3);
    assert_ne!(
        p1.iter().map(|p| p.y.mean).collect::<Vec<_>>(),
        p3.iter().map(|p| p.y.mean).collect::<Vec<_>>()
    );
    assert!(
        res.curve(0, si, "test", "precision", &step, None)
            .is_empty()
    );
}

#[test]
fn a_claim_naming_a_solver_two_instances_share_is_refused_at_planning() {
    // Two OASIS runs (different budgets) share the registry name: a claim must pick one by
    // label, else its verdict would be "not comparable" at report time.
    let spec = SPEC.replace(
        "[[solvers]]\nname = \"euclidean\"",
        "[[solvers]]\nname = \"oasis\"\nlabel = \"OASIS long\"\nparams = { c = 0.1 }\n\n[[solvers]]\nname = \"euclidean\"",
    );
    let f = fixture(&spec);
    let err = f.ws.select_specs(&[]).err().map(|e| e.to_string());
    let err = match err {
        Some(e) => e,
        None => {
            let ctx = f.ws.data_context();
            f.ws.plan(&f.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
                .err()
                .unwrap()
                .to_string()
        }
    };
    assert!(
        err.contains("claims.0.solver")
            && err.contains("names 2 solvers")
            && err.contains("OASIS long"),
        "{err}"
    );
    // Named by label, the same claim plans.
    let ok = fixture(
        &spec
            .replace(
                "solver = \"oasis\"\nversus = \"euclidean\"",
                "solver = \"OASIS long\"\nversus = \"euclidean\"",
            )
            .replace(
                "dataset = \"small\"\nsolver = \"oasis\"",
                "dataset = \"small\"\nsolver = \"OASIS long\"",
            ),
    );
    let ctx = ok.ws.data_context();
    let planned = ok
        .ws
        .plan(&ok.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx);
    assert!(
        planned.is_ok(),
        "{:?}",
        planned.err().map(|e| e.to_string())
    );
}

#[test]
fn a_slope_claim_fits_over_a_solver_grid_parameter() {
    // OASIS at C = 0.01, 0.1, 1: `slope-within` over the grid's `c` fits map = a c^b through
    // the three instances' final means (the LORETA per-step cost against the rank k).
    let spec = SPEC
        .replace(
            "name = \"oasis\"\nparams = { c = 0.1 }",
            "name = \"oasis\"\ngrid = { c = [0.01, 0.1, 1.0] }",
        )
        .replace(
            "[[claims]]\nid = \"c1\"",
            "[[claims]]\nid = \"wide\"\ntext = \"flat enough\"\norigin = \"ours\"\nkind = \"slope-within\"\nmetric = \"map\"\nsolver = \"OASIS\"\nx_param = \"c\"\nrange = [-10.0, 10.0]\n\n[[claims]]\nid = \"narrow\"\ntext = \"impossible\"\norigin = \"ours\"\nkind = \"slope-within\"\nmetric = \"map\"\nsolver = \"OASIS\"\nx_param = \"c\"\nrange = [5.0, 6.0]\n\n[[claims]]\nid = \"c1\"",
        )
        .replace("solver = \"oasis\"\nversus", "solver = \"OASIS (c=0.1)\"\nversus")
        .replace(
            "dataset = \"small\"\nsolver = \"oasis\"",
            "dataset = \"small\"\nsolver = \"OASIS (c=0.1)\"",
        );
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let claim = |id: &str| judge_claim(&plans[0], &res, id);
    use dyad_harness::analysis::claims::Verdict;
    let wide = claim("wide");
    assert_eq!(wide.verdict, Verdict::Holds, "{}", wide.detail);
    // The exponent reported is the power fit of the three grid points.
    let pts: Vec<(f64, f64)> = [(0.01, "0.01"), (0.1, "0.1"), (1.0, "1.0")]
        .iter()
        .map(|&(c, label)| {
            let si = res.solvers_named(&format!("OASIS (c={label})"))[0];
            (
                c,
                res.point_at(0, si, "test", "map", None, c).unwrap().y.mean,
            )
        })
        .collect();
    let (_, b) = dyad_harness::analysis::stats::power_fit(&pts).unwrap();
    assert!(
        wide.detail.contains(&format!("fitted exponent {b:.2}")),
        "{}",
        wide.detail
    );
    assert_eq!(claim("narrow").verdict, Verdict::DoesNotHold);
}

#[test]
fn a_figure_gathers_the_panels_of_plots_of_two_specs_with_their_error_bars() {
    // Two specs of one paper; the first draws a figure of its own plot and the other spec's,
    // one panel per row. Error bars: s.e.m., SD, and with `relative_to` the solver's own SD.
    let rel = |id: &str, bars: &str| {
        format!(
            "[[plots]]\nid = \"{id}\"\ntitle = \"{id}\"\nx = \"k\"\nmetric = \"precision\"\n\
             sets = [\"test\"]\nrelative_to = \"euclidean\"\nerror_bars = \"{bars}\"\n\
             x_label = \"k\"\ny_label = \"difference\"\n\n"
        )
    };
    let plain = |id: &str, bars: &str| {
        format!(
            "[[plots]]\nid = \"{id}\"\ntitle = \"{id}\"\nx = \"k\"\nmetric = \"precision\"\n\
             sets = [\"test\"]\nerror_bars = \"{bars}\"\nx_label = \"k\"\ny_label = \"p\"\n\n"
        )
    };
    let plots = [
        rel("rel-sem", "sem"),
        rel("rel-sd", "sd"),
        rel("rel-own", "sd-method"),
        plain("own-sd", "sd"),
        // A curves plot with the paper's points beside the solvers' (each panel draws them).
        plain("with-paper", "sem")
            + "[[plots.overlays]]\nlabel = \"paper\"\npoints = [[1.0, 0.5], [5.0, 0.25]]\nsource = \"F1\"\n\n",
    ]
    .concat();
    let spec = SPEC.replace(
        "[[plots]]\nid = \"map\"",
        &format!("{plots}[[plots]]\nid = \"map\""),
    );
    let first = spec.replace(
        "[[claims]]",
        "[[figures]]\nid = \"both\"\ntitle = \"both specs\"\npanels = [\"rel-sd\", \"other/rel-sd\"]\ncolumns = 1\n\n[[claims]]",
    );
    let other = spec.replace("seed = 5 }", "seed = 6 }");
    let f = fixture(&first);
    std::fs::write(f.ws.experiments.join("demo").join("other.toml"), &other).unwrap();
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert_eq!(plans.len(), 2);
    let cache = f.ws.cache();
    let (fig, oth) = (&plans[0], &plans[1]);
    assert_eq!(
        (fig.spec.id.as_str(), oth.spec.id.as_str()),
        ("demo/fig", "demo/other")
    );
    let res = ExperimentResults::load(fig, &cache);
    let plot = |id: &str| fig.spec.spec.plots.iter().find(|p| p.id == id).unwrap();
    let series =
        |id: &str| dyad_harness::presentation::plots::drawn_series(&res, plot(id)).remove(0);
    let oasis = |v: Vec<dyad_harness::presentation::plots::DrawnSeries>| {
        v.into_iter().find(|s| s.name == "OASIS").unwrap().points
    };
    let (sem, sd, own) = (
        oasis(series("rel-sem")),
        oasis(series("rel-sd")),
        oasis(series("rel-own")),
    );
    let plain_sd = oasis(series("own-sd"));
    let paper = series("with-paper");
    let last = paper.last().unwrap();
    assert_eq!(last.name, "paper");
    assert_eq!(last.points, vec![(1.0, 0.5, 0.0), (5.0, 0.25, 0.0)]);
    assert!(paper.iter().any(|s| s.name == "OASIS"));
    assert_eq!(sem.len(), 5);
    let mut some_bar = false;
    for i in 0..sem.len() {
        // Same differences; with two repeats the SD is √2 times the s.e.m.
        assert_eq!((sem[i].0, sem[i].1), (sd[i].0, sd[i].1));
        assert!(
            (sd[i].2 - sem[i].2 * 2f64.sqrt()).abs() < 1e-12,
            "{:?} {:?}",
            sd[i],
            sem[i]
        );
        // The method's own spread beside the difference: its plain curve's SD.
        assert_eq!((own[i].0, own[i].1), (sd[i].0, sd[i].1));
        assert_eq!((own[i].0, own[i].2), (plain_sd[i].0, plain_sd[i].2));
        some_bar |= sd[i].2 > 0.0 && own[i].2 > 0.0 && sd[i].2 != own[i].2;
    }
    assert!(
        some_bar,
        "the two readings should differ somewhere: {sd:?} {own:?}"
    );
    // The figure: one panel from each spec, one to a row, written first among the figures.
    let written = f.ws.outputs(&plans).unwrap();
    let w = &written[0];
    assert!(w.figures_waiting.is_empty(), "{:?}", w.figures_waiting);
    assert!(
        w.figures[0].ends_with("demo-fig-both.svg"),
        "{:?}",
        w.figures
    );
    assert!(w.figures[1].ends_with("demo-fig-both.png"));
    let res_o = ExperimentResults::load(oth, &cache);
    let o_plot = oth
        .spec
        .spec
        .plots
        .iter()
        .find(|p| p.id == "rel-sd")
        .unwrap();
    let lay = dyad_harness::presentation::plots::figure_layout(
        "both",
        &[(&res, plot("rel-sd")), (&res_o, o_plot)],
        Some(1),
    );
    assert_eq!(lay.panels.len(), 2);
    assert!(lay.panels[1].cell.y0 >= lay.panels[0].cell.y1 - 1e-9);
    assert_eq!(lay.panels[0].cell.x0, lay.panels[1].cell.x0);
    // A source with missing cells: the figure waits, and meanwhile its complete panels (here
    // demo/fig's only) are drawn as `<stem>-partial`, removed once the figure is complete.
    cache.supersede(&oth.cells[0].key).unwrap();
    let w = f.ws.outputs(&plans).unwrap();
    assert!(
        w[0].figures_waiting[0].contains("demo/other (1 cells missing)"),
        "{:?}",
        w[0].figures_waiting
    );
    assert!(
        w[0].figures[0].ends_with("demo-fig-both-partial.svg"),
        "{:?}",
        w[0].figures
    );
    let partial = w[0].figures[0].clone();
    let (_, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok());
    let w = f.ws.outputs(&plans).unwrap();
    assert!(w[0].figures[0].ends_with("demo-fig-both.svg") && !partial.exists());
    // A figure waiting for an experiment that is not selected says so.
    let w = f.ws.outputs(&plans[..1]).unwrap();
    assert!(
        w[0].figures_waiting[0].contains("demo/other (not selected)"),
        "{:?}",
        w[0].figures_waiting
    );
    // Bad references are refused when the spec loads.
    for (bad, what) in [
        ("panels = [\"nope\"]", "no plot with id \"nope\""),
        ("panels = []", "at least one plot"),
        ("panels = [\"/x\"]", "is not \"<spec stem>/<plot id>\""),
    ] {
        let g = fixture(&first.replace("panels = [\"rel-sd\", \"other/rel-sd\"]", bad));
        let e = spec_error(&g.ws);
        assert!(e.contains(what), "{e}");
    }
    let g = fixture(&spec.replace(
        "error_bars = \"sd\"\nx_label = \"k\"\ny_label = \"p\"",
        "error_bars = \"sd-method\"\nx_label = \"k\"\ny_label = \"p\"",
    ));
    assert!(spec_error(&g.ws).contains("goes with `relative_to`"));
}

/// The error of loading or planning the workspace's specs.
fn spec_error(ws: &Workspace) -> String {
    match ws.select_specs(&[]) {
        Err(e) => e.to_string(),
        Ok(specs) => match ws.plan(&specs, Profile::Quick, &ws.data_context()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("the specs were expected to be refused"),
        },
    }
}

#[test]
fn restamp_trusts_only_code_proven_equivalent_by_an_identical_recompute() {
    use dyad_harness::engine::run::{Recompute, RunOptions};
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let cache = f.ws.cache();
    // As after a refactoring that changed every fingerprint of OASIS's cells: both read stale.
    let oasis = plans[0]
        .solvers
        .iter()
        .position(|s| s.name == "oasis")
        .unwrap();
    let keys: Vec<String> = plans[0]
        .cells
        .iter()
        .filter(|c| c.solver == oasis)
        .map(|c| c.key.clone())
        .collect();
    assert_eq!(keys.len(), 2);
    let stamp = |k: &str, code: &str| {
        let mut cell = cache.get(k).unwrap();
        cell.code.insert("solver".into(), code.into());
        cache.put(&cell).unwrap();
    };
    let current = cache.get(&keys[1]).unwrap().code["solver"].clone();
    stamp(&keys[0], "before");
    stamp(&keys[1], "before");
    // No witness yet: nothing is re-stamped.
    assert_eq!(f.ws.restamp(&plans, &cache).unwrap(), (0, 2));
    // One of them recomputed with the current code comes out identical: a witness.
    stamp(&keys[1], &current);
    let s = execute(
        &plans,
        &RunOptions {
            recompute: Recompute::Stale,
            ..opts(&f.ws, 2, false)
        },
    );
    assert_eq!(s.computed, 1);
    assert!(s.recomputed[0].comparison.as_ref().unwrap().identical());
    stamp(&keys[1], "before");
    // The other cell of the same old code is re-stamped, its values untouched.
    let before = cache.get(&keys[1]).unwrap();
    assert_eq!(f.ws.restamp(&plans, &cache).unwrap(), (1, 0));
    let after = cache.get(&keys[1]).unwrap();
    assert_eq!(after.records.len(), before.records.len());
    assert_eq!(after.code["solver"], current);
    let s = execute(
        &plans,
        &RunOptions {
            recompute: Recompute::Stale,
            ..opts(&f.ws, 2, false)
        },
    );
    assert_eq!((s.computed, s.recomputed.len()), (0, 0));
}

/// An archived cell computed by older code gives way, on export, to the cache's copy computed
/// by the current code under the same key (a `--recompute stale`); a current one stays.
#[test]
fn export_replaces_an_archived_cell_of_older_code_with_its_recompute() {
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let cache = f.ws.cache();
    let dir = tempfile::tempdir().unwrap();
    let t = f.ws.export_cells(&plans, dir.path(), false).unwrap();
    assert!(t.copied > 0 && t.present == 0);
    let archive = dyad_harness::engine::cache::Cache::at(dir.path());
    let key = plans[0].cells[0].key.clone();
    let mut old = archive.get(&key).unwrap();
    old.code.insert("solver".into(), "before".into());
    archive.put(&old).unwrap();
    let again = f.ws.export_cells(&plans, dir.path(), false).unwrap();
    assert_eq!((again.copied, again.present), (1, t.copied - 1));
    assert_eq!(
        archive.get(&key).unwrap().code,
        cache.get(&key).unwrap().code
    );
    let third = f.ws.export_cells(&plans, dir.path(), false).unwrap();
    assert_eq!((third.copied, third.present), (0, t.copied));
    // A cell of the current code timed again (the same key, code and values; another
    // timing) stays as archived, unless the export replaces.
    let mut retimed = cache.get(&key).unwrap();
    retimed.wall_seconds += 1.0;
    cache.put(&retimed).unwrap();
    let kept = f.ws.export_cells(&plans, dir.path(), false).unwrap();
    assert_eq!((kept.copied, kept.present), (0, t.copied));
    assert_ne!(
        archive.get(&key).unwrap().wall_seconds,
        retimed.wall_seconds
    );
    let replaced = f.ws.export_cells(&plans, dir.path(), true).unwrap();
    assert_eq!((replaced.copied, replaced.present), (t.copied, 0));
    assert_eq!(
        archive.get(&key).unwrap().wall_seconds,
        retimed.wall_seconds
    );
}

/// The witnesses behind re-stamps travel with an archive: a clone that imports it re-stamps
/// the archive's cells of witnessed older code as its own, with no witness of its own.
#[test]
fn an_archive_carries_its_code_witnesses_to_another_clone() {
    let f = fixture(SPEC);
    let (plans, _) = plan_and_run(&f.ws, 2);
    let key = plans[0].cells[0].key.clone();
    let now = f.ws.cache().get(&key).unwrap().code;
    let mut before = now.clone();
    before.insert("solver".into(), "before".into());
    f.ws.cache().witness_equivalent(&before, &now).unwrap();
    let dir = tempfile::tempdir().unwrap();
    f.ws.export_cells(&plans, dir.path(), false).unwrap();
    let archive = dyad_harness::engine::cache::Cache::at(dir.path());
    let mut old = archive.get(&key).unwrap();
    old.code = before;
    archive.put(&old).unwrap();

    let g = fixture(SPEC);
    assert!(g.ws.cache().equivalences().is_empty());
    assert!(g.ws.import_cells(dir.path()).unwrap().copied > 0);
    let ctx = g.ws.data_context();
    let plans =
        g.ws.plan(&g.ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
            .unwrap();
    assert_eq!(g.ws.restamp(&plans, &g.ws.cache()).unwrap(), (1, 0));
    assert_eq!(g.ws.cache().get(&key).unwrap().code, now);
}

#[test]
fn a_metric_no_cell_records_is_refused_with_its_line_at_plan_time() {
    // A model's own statistic (OASIS declares and records `symmetry_index` with
    // `model_statistics`) is a name a table may use.
    let good = SPEC.replace("k_max = 5", "k_max = 5\nmodel_statistics = true").replace(
        "[[claims]]",
        "[[tables]]\nid = \"sym\"\ntitle = \"symmetry\"\nset = \"model\"\nsolvers = [\"oasis\"]\n\
         rows = [{ metric = \"symmetry_index\" }]\n\n[[claims]]",
    );
    let f = fixture(&good);
    let (plans, _) = plan_and_run(&f.ws, 2);
    f.ws.outputs(&plans).unwrap_or_else(|e| panic!("{e}"));
    for (from, to, key) in [
        (
            "metric = \"precision\"",
            "metric = \"precison\"",
            "plots.metric",
        ),
        ("x = \"k\"", "x = \"banana\"", "plots.x"),
        (
            "{ metric = \"symmetry_index\" }",
            "{ metric = \"symetry_index\" }",
            "tables.rows.metric",
        ),
        (
            "kind = \"greater\"\nmetric = \"map\"",
            "kind = \"greater\"\nmetric = \"mapp\"",
            "claims.metric",
        ),
    ] {
        let src = good.replacen(from, to, 1);
        assert_ne!(src, good, "{from}");
        let f = fixture(&src);
        let e = plan_error(&f.ws);
        let bad = to.rsplit('"').nth(1).unwrap();
        let line = src[..src.find(to).unwrap() + to.find(bad).unwrap()]
            .matches('\n')
            .count()
            + 1;
        assert!(
            e.contains(&format!("fig.toml:{line}: key `{key}`"))
                && e.contains(&format!("names \"{bad}\"")),
            "{key}: {e}"
        );
    }
    // Without `model_statistics` no statistic is recorded, so none may be read.
    let f = fixture(&good.replace("k_max = 5\nmodel_statistics = true", "k_max = 5"));
    let e = plan_error(&f.ws);
    assert!(e.contains("names \"symmetry_index\""), "{e}");
}

#[test]
fn two_solvers_with_one_label_are_refused_at_the_second_ones_line() {
    let src = SPEC.replace(
        "[[plots]]",
        "[[solvers]]\nname = \"euclidean\"\n\n[[plots]]",
    );
    let f = fixture(&src);
    let e = plan_error(&f.ws);
    let second = src.match_indices("name = \"euclidean\"").nth(1).unwrap().0;
    let line = src[..second].matches('\n').count() + 1;
    assert!(
        e.contains(&format!(
            "fig.toml:{line}: key `solvers.name`: two solvers share the label"
        )),
        "{e}"
    );
}

/// A machine tolerance explains differences away in `dyad compare`: every solver declares one
/// that is 0 or small (at most 1e-3 on values that are mostly in [0, 1]: never one that would
/// hide a change of a result), and DR, whose candle products dispatch on the CPU, declares one.
#[test]
fn machine_tolerances_are_zero_or_small_and_dr_declares_one() {
    for s in dyad_harness::registry::SOLVERS.iter() {
        let t = s.machine_tolerance;
        assert!(t == 0.0 || (t > 0.0 && t <= 1e-3), "{}: {t}", s.name);
    }
    let dr = dyad_harness::registry::solver("dr").expect("the DR solver");
    assert!(dr.machine_tolerance > 0.0);
}

/// MNIST's four IDX files, `per_class` training and `test_per_class` test images of each
/// digit, 28 x 28 seeded noise around a per-digit pattern: real files in the real format.
fn write_mnist(dir: &Path, per_class: usize, test_per_class: usize) {
    let mnist = dir.join("mnist");
    std::fs::create_dir_all(&mnist).unwrap();
    let mut state = 12345u64;
    let mut byte = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 56) as u8
    };
    for (stem, per) in [("train", per_class), ("t10k", test_per_class)] {
        let n = 10 * per;
        let mut images = vec![0, 0, 8, 3];
        for d in [n, 28, 28] {
            images.extend((d as u32).to_be_bytes());
        }
        let mut labels = vec![0, 0, 8, 1];
        labels.extend((n as u32).to_be_bytes());
        for i in 0..n {
            let digit = (i % 10) as u8;
            labels.push(digit);
            for px in 0..784usize {
                let on = (px / 28 + px % 28 + 3 * digit as usize) % 10 < 3;
                images.push(if on { 200 } else { 0 }.max(byte() / 4));
            }
        }
        std::fs::write(mnist.join(format!("{stem}-images-idx3-ubyte")), images).unwrap();
        std::fs::write(mnist.join(format!("{stem}-labels-idx1-ubyte")), labels).unwrap();
    }
}

/// The cells of real data travel in an archive with what the data resolved to: a clone
/// without the data, having imported the archive, reports them exactly as the machine with
/// the data did (the same keys, the same report to the byte), and refuses to compute them;
/// without the records it plans the stand-in's cells instead.
#[test]
fn an_archive_reports_its_real_data_cells_where_the_data_is_not() {
    let spec = SPEC
        .replace(
            "name = \"caltech256-standin\"\nparams = { classes = 4, per_class = 12, dim = 200, seed = 5 }",
            "name = \"mnist\"\nparams = { }",
        )
        .replace("train_per_class = 7", "train_per_class = 6")
        .replace("test_per_class = 5", "test_per_class = 4");
    let data = tempfile::tempdir().unwrap();
    write_mnist(data.path(), 8, 5);
    let mut f = fixture(&spec);
    f.ws.data_dir = data.path().to_path_buf();
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert!(!plans[0].datasets[0].resolved.synthetic);
    let read = |p: &Path| std::fs::read(p).unwrap();
    let [_, md] = f.ws.report(&plans, Profile::Quick).unwrap();
    let (report, figure) = (
        read(&md),
        read(&md.with_file_name("figures").join("demo-fig-map.png")),
    );
    let archive = tempfile::tempdir().unwrap();
    f.ws.export_cells(&plans, archive.path(), false).unwrap();
    let records = dyad_harness::engine::cache::Cache::at(archive.path()).recorded_data();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].requested.as_str(), &records[0].resolved.identity),
        ("mnist", &plans[0].datasets[0].resolved.identity)
    );

    // A damaged line of the records is named on import, like a damaged cell; the others
    // are kept.
    let path = archive.path().join("real-data.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"requested\": \"mnist\"\n");
    std::fs::write(&path, text).unwrap();

    let g = fixture(&spec);
    assert!(!g.ws.data_dir.exists());
    let t = g.ws.import_cells(archive.path()).unwrap();
    assert_eq!(t.invalid.len(), 1, "{:?}", t.invalid);
    assert!(
        t.invalid[0].0 == path
            && t.invalid[0]
                .1
                .starts_with("line 2: not a data set's record"),
        "{:?}",
        t.invalid
    );
    assert_eq!(g.ws.cache().recorded_data(), records);
    let specs = g.ws.select_specs(&[]).unwrap();
    // Without the records: the stand-in, none of whose cells is cached.
    let stand_in =
        g.ws.plan(&specs, Profile::Quick, &g.ws.data_context())
            .unwrap();
    assert!(stand_in[0].datasets[0].resolved.synthetic);
    assert!(
        stand_in[0]
            .cells
            .iter()
            .all(|c| !g.ws.cache().contains(&c.key))
    );
    // With them: the real data's keys and report, byte for byte.
    let ctx = g.ws.data_context().recalling(g.ws.cache().recorded_data());
    let recalled = g.ws.plan(&specs, Profile::Quick, &ctx).unwrap();
    assert_eq!(ctx.recalled(), (1, vec!["mnist".to_string()]));
    let keys = |p: &[dyad_harness::engine::plan::Plan]| -> Vec<String> {
        p[0].cells.iter().map(|c| c.key.clone()).collect()
    };
    assert_eq!(keys(&recalled), keys(&plans));
    let [_, md] = g.ws.report(&recalled, Profile::Quick).unwrap();
    assert_eq!(String::from_utf8(read(&md)), String::from_utf8(report));
    assert!(read(&md.with_file_name("figures").join("demo-fig-map.png")) == figure);
    // Its cells can be reported, not computed: the data is not here.
    let err = match (recalled[0].datasets[0].resolved.loader)() {
        Ok(_) => panic!("a recalled data set loaded"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("this data set is not here"), "{err}");
}

/// A choice that keeps a grid edge on purpose names a solver of the spec and a parameter it
/// tunes: a typo would leave the edge undecided in the report while the spec looks decided.
#[test]
fn a_decision_on_a_grid_edge_names_a_tuned_parameter_of_the_spec() {
    let with_choice = |edges: &str| {
        let choice = format!(
            "[[choices]]\ntopic = \"grids\"\nchoice = \"kept\"\nreason = \"r\"\nedges = {edges}\n\n"
        );
        SPEC.replacen("[[datasets]]", &format!("{choice}[[datasets]]"), 1)
    };
    for (edges, what) in [
        (
            r#"[{ solver = "oasis", param = "c" }]"#,
            r#"solver "oasis" tunes no parameter "c""#,
        ),
        (
            r#"[{ solver = "oasys", param = "c" }]"#,
            r#"no solver "oasys""#,
        ),
    ] {
        let spec = with_choice(edges);
        let e = plan_error(&fixture(&spec).ws);
        assert!(e.contains(what), "{edges}: {e}");
        let line = spec.lines().position(|l| l.starts_with("edges")).unwrap() + 1;
        assert!(e.contains(&format!("fig.toml:{line}:")), "{edges}: {e}");
    }
    // An unknown key in the entry is refused too.
    let e = plan_error(&fixture(&with_choice(r#"[{ solver = "oasis", parameter = "c" }]"#)).ws);
    assert!(e.contains("parameter"), "{e}");
}
