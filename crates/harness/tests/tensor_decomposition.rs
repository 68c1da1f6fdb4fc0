//! The tensor-decomposition task end to end on small planted mixtures: both decomposers,
//! the recovery measures against the optimal clustering, the reference and envelope-free
//! plots, the paired samples of a repeat, and the plan-time refusals.

use dyad_harness::analysis::claims::Verdict;
use dyad_harness::analysis::results::ExperimentResults;
use dyad_harness::spec::{At, Selector};

/// Two well-separated mixtures (K = 4 in d = 12; K = 4 in d = 3 < K) and both decomposers.
const SPEC: &str = r#"
title = "tensor demo"
paper = "demo"
figure = "F3"

[[datasets]]
id = "wide"
name = "gmm"
params = { dim = 12, samples = 20000, components = 4, variance = 0.5 }

[[datasets]]
id = "narrow"
name = "gmm"
params = { dim = 3, samples = 5000, components = 4, variance = 0.5 }

[protocol]
repeats = 2
seed = 5
checkpoints = { max = 3000, every = 6 }

[protocol.tensor_decomposition]

[[solvers]]
name = "givens-tensor"
label = "Givens"

[[solvers]]
name = "tensor-power"
label = "TPM"
params = { restarts = 10, iterations = 20 }
checkpoints = { max = 4, every = 1 }

[[plots]]
id = "nmi"
title = "NMI"
x = "param"
x_param = "dim"
metric = "nmi"
datasets = ["wide", "narrow"]
reference = { metric = "optimal_nmi", label = "optimal" }
x_label = "d"
y_label = "NMI"

[[tables]]
id = "t"
title = "wide only"
datasets = ["wide"]
rows = [{ metric = "nmi" }, { metric = "convergence_rate" }]
set = "samples"

[[claims]]
id = "close"
text = "both decomposers recover the wide mixture alike"
origin = "ours"
kind = "close"
metric = "nmi"
set = "samples"
solver = "Givens"
versus = "TPM"
tolerance = 0.05
datasets = ["wide"]
"#;

mod common;
use common::{fixture, judge_claim, plan_and_run, plan_error};

#[test]
fn mixtures_are_recovered_near_the_optimal_clustering() {
    let f = fixture(SPEC);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert_eq!(plans[0].task.name(), "tensor-decomposition");
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    let sel = |dataset: &str, solver: &str, metric: &str| {
        res.select(&Selector {
            dataset: Some(dataset.into()),
            solver: Some(solver.into()),
            metric: metric.into(),
            set: "samples".into(),
            k: None,
            coord: None,
            at: At::Last,
        })
        .unwrap_or_else(|e| panic!("{dataset} {solver} {metric}: {e}"))
    };
    for solver in ["Givens", "TPM"] {
        let nmi = sel("wide", solver, "nmi");
        let optimal = sel("wide", solver, "optimal_nmi");
        assert_eq!(nmi.len(), 2, "one value per repeat");
        for (n, o) in nmi.iter().zip(&optimal) {
            assert!(*o > 0.8 && *n > o - 0.1, "{solver}: NMI {n} vs optimal {o}");
        }
        let err = sel("wide", solver, "centre_error");
        assert!(
            err.iter().all(|e| *e < 0.2),
            "{solver}: centre error {err:?}"
        );
        let residual = sel("wide", solver, "residual");
        assert!(residual.iter().all(|r| *r < 0.2), "{solver}: {residual:?}");
        // In d = 3 < K = 4 the known variance is used and at most 3 components exist: the
        // clustering cannot reach the optimal one.
        let (n3, o3) = (
            sel("narrow", solver, "nmi"),
            sel("narrow", solver, "optimal_nmi"),
        );
        assert!(
            n3.iter().zip(&o3).all(|(n, o)| n <= &(o + 1e-9)),
            "{n3:?} {o3:?}"
        );
    }
    // Both solvers of a repeat cluster the same samples: the optimal NMI is identical.
    assert_eq!(
        sel("wide", "Givens", "optimal_nmi"),
        sel("wide", "TPM", "optimal_nmi")
    );
    // Givens records its convergence: gaps shrink and the fitted rate is below 1 per sweep.
    let rate = sel("wide", "Givens", "convergence_rate");
    assert!(rate.iter().all(|r| *r > 0.0 && *r < 1.0), "{rate:?}");
    let verdict = judge_claim(&plans[0], &res, "close");
    assert_eq!(verdict.verdict, Verdict::Holds, "{verdict:?}");
    // The plot draws the reference beside both solvers; the table holds one data set.
    let layout = dyad_harness::presentation::plots::layout(&res, &plans[0].spec.spec.plots[0]);
    let legend: Vec<String> = layout
        .legend
        .iter()
        .flat_map(|l| l.entries.iter())
        .map(|e| {
            e.lines
                .iter()
                .map(|l| l.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(legend, vec!["Givens", "TPM", "optimal"], "{legend:?}");
}

#[test]
fn impossible_moment_settings_are_refused_at_plan_time() {
    let f = fixture(&SPEC.replace(
        "[protocol.tensor_decomposition]",
        "[protocol.tensor_decomposition]\nvariance = \"estimate\"",
    ));
    let e = plan_error(&f.ws);
    assert!(e.contains("needs K <= d") && e.contains("narrow"), "{e}");
    let f = fixture(&SPEC.replace("dim = 12, samples = 20000", "dim = 12, samples = 1"));
    let e = plan_error(&f.ws);
    assert!(e.contains("samples"), "{e}");
    let f = fixture(&SPEC.replace("datasets = [\"wide\"]\nrows", "datasets = [\"wild\"]\nrows"));
    let e = match f.ws.select_specs(&[]) {
        Ok(_) => panic!("a spec error was expected"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("fig.toml:47") && e.contains("no data set with id \"wild\""),
        "{e}"
    );
}
