//! FuncISH's tasks end to end on a small stand-in (random ontology, so the test does not
//! depend on an installed Gene Ontology): the visual phase, nested cross-validation, the
//! Fig. 3 statistics, and the four similarities of Fig. 4 sharing one functional
//! representation; results identical at 1 and 2 threads. Every programme shows
//! (`penetrance = 1`): the test is about the pipeline learning, not about calibration.

use dyad_harness::Workspace;
use dyad_harness::results::ExperimentResults;
use dyad_harness::spec::{At, Selector};

const DATA: &str = r#"
[[datasets]]
id = "ish"
name = "ish-standin"
params = { genes = 200, height = 96, width = 192, min_category = 10, random_terms = 150, ontology = "random", penetrance = 1.0, penetrance_neural = 1.0, seed = 4 }

[protocol]
repeats = 1
seed = 9
checkpoints = { max = 0, every = 1 }
"#;

const FEATURES: &str = r#"features = { dsift = { bin = 2, step = 3, levels = 3 }, dictionary = { k = 20, restarts = 1, max_iter = 10, max_samples_per_level = 5000 } }"#;

fn function_spec() -> String {
    format!(
        r#"
title = "function demo"
paper = "demo"
figure = "F3"
{DATA}
[protocol.gene_function]
{FEATURES}

[[solvers]]
name = "funcish-lr"
label = "FuncISH"
params = {{ permutations = 50 }}
"#
    )
}

fn retrieval_spec() -> String {
    format!(
        r#"
title = "retrieval demo"
paper = "demo"
figure = "F4"
{DATA}
[protocol.gene_retrieval]
{FEATURES}
classifier = {{ permutations = 0 }}
k_max = 20

[[solvers]]
name = "go-sim"
label = "GO-sim"
params = {{ categories = "all" }}

[[solvers]]
name = "flat-sim"
label = "flat-sim"

[[solvers]]
name = "bow-cosine"
label = "BoW"

[[solvers]]
name = "coarse-correlation"
label = "coarse"
"#
    )
}

mod common;
use common::{fixture, plan_and_run};

fn values(
    res: &ExperimentResults<'_>,
    solver: &str,
    metric: &str,
    set: &str,
    k: Option<u32>,
) -> Vec<f64> {
    res.select(&Selector {
        dataset: Some("ish".into()),
        solver: Some(solver.into()),
        metric: metric.into(),
        set: set.into(),
        k,
        coord: None,
        at: At::Last,
    })
    .unwrap_or_else(|e| panic!("{solver} {metric} {set}: {e}"))
}

fn run(ws: &Workspace, threads: usize) -> Vec<dyad_harness::plan::Plan> {
    let (plans, s) = plan_and_run(ws, threads);
    assert!(s.ok(), "{:?}", s.failed);
    plans
}

#[test]
fn gene_function_and_retrieval_end_to_end() {
    let f = fixture(&function_spec());
    std::fs::write(
        f.ws.experiments.join("demo/retrieval.toml"),
        retrieval_spec(),
    )
    .unwrap();
    let plans = run(&f.ws, 2);
    let function = plans
        .iter()
        .find(|p| p.task.name() == "gene-function")
        .unwrap();
    let res = ExperimentResults::load(function, &f.ws.cache());
    let mean = values(&res, "FuncISH", "mean_auc", "test", None)[0];
    assert!(mean > 0.6 && mean <= 1.0, "mean AUC {mean}");
    let n = values(&res, "FuncISH", "categories", "test", None)[0];
    // One category_auc record per category with an AUC, all in [0, 1].
    let records: Vec<_> = res
        .cells
        .iter()
        .flatten()
        .flat_map(|c| c.records.iter())
        .filter(|r| r.metric == "category_auc")
        .collect();
    assert_eq!(records.len() as f64, n);
    assert!(records.iter().all(|r| (0.0..=1.0).contains(&r.value)));
    // The AUC histograms of each group are distributions.
    for group in ["neural", "other"] {
        let total: f64 = res
            .cells
            .iter()
            .flatten()
            .flat_map(|c| c.records.iter())
            .filter(|r| r.metric == "auc_density" && r.set == group)
            .map(|r| r.value)
            .sum();
        assert!((total - 1.0).abs() < 1e-9, "{group}: {total}");
    }
    let folds = res
        .cells
        .iter()
        .flatten()
        .flat_map(|c| c.records.iter())
        .filter(|r| r.metric == "fold_mean_auc")
        .count();
    assert_eq!(folds, 5);
    let scales: Vec<f64> = res
        .cells
        .iter()
        .flatten()
        .flat_map(|c| c.records.iter())
        .filter(|r| r.metric == "scale_weight")
        .map(|r| r.coord.as_ref().unwrap().value)
        .collect();
    assert_eq!(scales, vec![1.0, 2.0, 4.0]);

    let retrieval = plans
        .iter()
        .find(|p| p.task.name() == "gene-retrieval")
        .unwrap();
    let res = ExperimentResults::load(retrieval, &f.ws.cache());
    for solver in ["GO-sim", "flat-sim", "BoW", "coarse"] {
        for set in ["cell-type", "pathway", "ppi"] {
            let q = values(&res, solver, "queries", set, None)[0];
            assert!(q > 0.0, "{solver} {set}: no query");
            for k in [1, 10, 20] {
                let p = values(&res, solver, "precision", set, Some(k))[0];
                assert!((0.0..=1.0).contains(&p), "{solver} {set} p@{k} = {p}");
            }
        }
    }
    // The functional representation carries the planted cell types above chance.
    let p10 = values(&res, "flat-sim", "precision", "cell-type", Some(10))[0];
    let related: f64 = 1.0 / 200.0;
    assert!(p10 > 5.0 * related, "flat-sim p@10 {p10}");

    // The same results at one thread, in a fresh results directory.
    let g = fixture(&function_spec());
    std::fs::write(
        g.ws.experiments.join("demo/retrieval.toml"),
        retrieval_spec(),
    )
    .unwrap();
    let again = run(&g.ws, 1);
    for (a, b) in plans.iter().zip(&again) {
        let (ra, rb) = (
            ExperimentResults::load(a, &f.ws.cache()),
            ExperimentResults::load(b, &g.ws.cache()),
        );
        let flat = |r: &ExperimentResults<'_>| -> Vec<(String, String, f64)> {
            let mut v: Vec<_> = r
                .cells
                .iter()
                .flatten()
                .flat_map(|c| {
                    c.records
                        .iter()
                        .filter(|x| !x.metric.ends_with("seconds"))
                        .map(move |x| {
                            (
                                c.solver.clone(),
                                format!(
                                    "{}/{}/{:?}/{:?}",
                                    x.set,
                                    x.metric,
                                    x.k,
                                    x.coord.as_ref().map(|c| c.value)
                                ),
                                x.value,
                            )
                        })
                })
                .collect();
            v.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
            v
        };
        assert_eq!(flat(&ra), flat(&rb));
    }
}
