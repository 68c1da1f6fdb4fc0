//! The pair-ranking task (tensor-ranking paper) end to end: τ per labels-per-class and per
//! attribute, the hyper-parameters chosen on validation pairs, the untrained reading, claims,
//! bands, and the plan-time refusals; real MNIST when `$DYAD_DATA_DIR` holds it.

use dyad_harness::analysis::claims::Verdict;
use dyad_harness::analysis::results::ExperimentResults;
use dyad_harness::spec::{At, Selector, XAxis};

/// 400 S-CLASS points (10 classes on a Swiss roll, smooth order) in R^10.
const SPEC: &str = r#"
title = "pair ranking demo"
paper = "demo"
figure = "F2"

[[datasets]]
id = "roll"
name = "s-class"
params = { n = 400, m = 10, seed = 3 }

[protocol]
repeats = 2
seed = 5
checkpoints = { max = 500, every = 500 }

[protocol.pair_ranking]
labels_per_class = [1, 3]

[[solvers]]
name = "rank-svm"
early_stopping = false
tune = { lambda = [0.01, 100.0] }

[[solvers]]
name = "tr"
early_stopping = false
tune = { lambda = [0.01, 1.0] }

[[solvers]]
name = "lowrank-kr"
early_stopping = false
params = { lambda = 0.001, rank = 10, max_iter = 150 }

[[solvers]]
name = "dr"
params = { width = 8, epochs = 4, restarts = 2 }
checkpoints = { max = 4, every = 2 }

[[plots]]
id = "tau"
title = "tau against l"
x = "labels_per_class"
metric = "tau"
sets = ["all"]
x_label = "l"
y_label = "tau"

[[claims]]
id = "tr-beats-rs"
text = "TR outperforms RS"
origin = "ours"
kind = "greater"
metric = "tau_mean"
set = "all"
solver = "TR"
versus = "RS"

[[claims]]
id = "kr-close-to-tr-at-3"
text = "KR within 0.1 of TR at l = 3"
origin = "ours"
kind = "close"
metric = "tau"
set = "all"
coord = 3.0
tolerance = 0.1
solver = "KR"
versus = "TR"

[[expect]]
dataset = "roll"
solver = "TR"
metric = "tau_mean"
set = "all"
min = 0.8
"#;

mod common;
use common::{fixture, judge_claim, plan_and_run, plan_error, solver_keys};

fn select(
    res: &ExperimentResults<'_>,
    solver: &str,
    metric: &str,
    set: &str,
    coord: Option<f64>,
    at: At,
) -> Vec<f64> {
    let v = res
        .select(&Selector {
            dataset: None,
            solver: Some(solver.into()),
            metric: metric.into(),
            set: set.into(),
            k: None,
            coord,
            at,
        })
        .unwrap_or_else(|e| panic!("{solver} {metric} {set} {coord:?}: {e}"));
    assert_eq!(v.len(), 2, "one value per repeat");
    v
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn class_order_cells_record_tau_per_l_and_the_chosen_hyper_parameters() {
    let f = fixture(SPEC);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert_eq!(plans[0].task.name(), "pair-ranking");
    assert_eq!(plans[0].cells.len(), 8, "4 solvers x 2 repeats");
    assert!(plans[0].datasets[0].resolved.synthetic);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    // Fig. 2's y axis: the difference to RS at each l, paired repeat by repeat.
    let at = |label: &str| {
        plans[0]
            .solvers
            .iter()
            .position(|s| s.label == label)
            .unwrap()
    };
    let x = XAxis::Named("labels_per_class".into());
    let diff = res.difference_curve(0, at("TR"), at("RS"), "all", "tau", &x, None);
    assert_eq!(diff.len(), 2, "{diff:?}");
    for (p, l) in diff.iter().zip([1.0, 3.0]) {
        let (t, r) = (
            select(&res, "TR", "tau", "all", Some(l), At::Last),
            select(&res, "RS", "tau", "all", Some(l), At::Last),
        );
        let d: Vec<f64> = (0..2).map(|i| t[i] - r[i]).collect();
        assert_eq!((p.x, p.y.n), (l, 2));
        assert!((p.y.mean - mean(&d)).abs() < 1e-12, "{p:?} vs {d:?}");
        assert!((p.y.sd - (d[0] - d[1]).abs() / 2f64.sqrt()).abs() < 1e-12);
    }
    for solver in ["RS", "TR", "KR", "DR"] {
        let mut per_l = Vec::new();
        for l in [1.0, 3.0] {
            let all = select(&res, solver, "tau", "all", Some(l), At::Last);
            let unl = select(&res, solver, "tau", "unlabelled", Some(l), At::Last);
            assert!(all.iter().chain(&unl).all(|t| (-1.0..=1.0).contains(t)));
            per_l.push(all);
        }
        // tau_mean is the mean of tau over the l grid, repeat by repeat.
        let tm = select(&res, solver, "tau_mean", "all", None, At::Last);
        for r in 0..2 {
            assert!((tm[r] - (per_l[0][r] + per_l[1][r]) / 2.0).abs() < 1e-12);
        }
    }
    // The graph methods order the roll's classes almost perfectly; a linear f cannot (the
    // order runs along the roll, not along a direction of R^10).
    let tr = mean(&select(&res, "TR", "tau_mean", "all", None, At::Last));
    let kr = mean(&select(&res, "KR", "tau_mean", "all", None, At::Last));
    let rs = mean(&select(&res, "RS", "tau_mean", "all", None, At::Last));
    assert!(tr > 0.85 && kr > 0.8, "TR {tr}, KR {kr}");
    assert!(rs < tr - 0.2, "RS {rs} vs TR {tr}");
    // The untrained models (w = 0, f = 0, B = ones) score tau = 0 at step 0.
    for solver in ["RS", "TR", "KR"] {
        let t0 = select(&res, solver, "tau_mean", "all", None, At::Step(0));
        assert_eq!(t0, vec![0.0, 0.0], "{solver}");
    }
    // DR's untrained networks (step 0) are read too, but never chosen (below): every cell
    // records their tau_mean, which a CI band must exclude.
    let t0 = select(&res, "DR", "tau_mean", "all", None, At::Step(0));
    assert_eq!(t0.len(), 2, "{t0:?}");
    // The chosen lambda is one of the grid's, per l; DR's chosen step is a checkpoint after
    // set-up (the untrained network is not in the epoch grid).
    for l in [1.0, 3.0] {
        let lam = select(&res, "RS", "chosen_lambda", "validation", Some(l), At::Last);
        assert!(lam.iter().all(|v| *v == 0.01 || *v == 100.0), "{lam:?}");
        let lam = select(&res, "TR", "chosen_lambda", "validation", Some(l), At::Last);
        assert!(lam.iter().all(|v| *v == 0.01 || *v == 1.0), "{lam:?}");
        let step = select(&res, "DR", "chosen_step", "validation", Some(l), At::Last);
        assert!(step.iter().all(|s| [2.0, 4.0].contains(s)), "{step:?}");
        // The chosen model's validation tau is what selected it: at least as good as chance.
        let v = select(
            &res,
            "TR",
            "validation_tau",
            "validation",
            Some(l),
            At::Last,
        );
        assert!(v.iter().all(|t| *t > 0.5), "{v:?}");
        // Low-rank KR reports its gradient iterations and their cost.
        let s = select(
            &res,
            "KR",
            "seconds_per_iteration",
            "all",
            Some(l),
            At::Last,
        );
        let it = select(&res, "KR", "iterations", "all", Some(l), At::Last);
        assert!(s.iter().all(|v| *v > 0.0) && it.iter().all(|v| (1.0..=150.0).contains(v)));
        // KR also reads the order off sign(K_ij); the others have no kernel.
        let ts = select(&res, "KR", "tau_sign", "all", Some(l), At::Last);
        assert!(ts.iter().all(|v| *v > 0.5), "{ts:?}");
    }
    assert!(
        res.select(&Selector {
            dataset: None,
            solver: Some("RS".into()),
            metric: "tau_sign".into(),
            set: "all".into(),
            k: None,
            coord: None,
            at: At::Last,
        })
        .is_err()
    );
    // Cells keep the tuned candidate (the one chosen most often).
    let c = res.cells[plans[0]
        .cells
        .iter()
        .position(|c| plans[0].solvers[c.solver].label == "TR")
        .unwrap()]
    .as_ref()
    .unwrap();
    assert!(c.tuned.is_some(), "{c:?}");
    // Curves against the coordinate: one point per l.
    let ti = plans[0]
        .solvers
        .iter()
        .position(|s| s.label == "TR")
        .unwrap();
    let curve = res.curve(
        0,
        ti,
        "all",
        "tau",
        &XAxis::Named("labels_per_class".into()),
        None,
    );
    assert_eq!(
        curve.iter().map(|p| p.x).collect::<Vec<_>>(),
        vec![1.0, 3.0]
    );
    // Claims and bands are judged on these records.
    let verdict = |id: &str| judge_claim(&plans[0], &res, id).verdict;
    assert_eq!(verdict("tr-beats-rs"), Verdict::Holds);
    assert_ne!(verdict("kr-close-to-tr-at-3"), Verdict::NotComparable);
    let lines = dyad_harness::analysis::check::check(&res);
    assert!(
        lines.iter().all(|l| l.ok && l.defect.is_none()),
        "{lines:?}"
    );
    let written = f.ws.outputs(&plans).unwrap();
    assert_eq!(written[0].figures.len(), 2, "one plot, svg and png");
}

#[test]
fn dr_never_chooses_its_untrained_network() {
    // A learning rate of 1e-12 leaves the networks as they were drawn: every checkpoint ties
    // with the untrained one on the validation pairs, and ties go to the earliest candidate.
    // The epoch grid is the checkpoints after set-up, so the earliest is step 2, not 0.
    let dr_only = SPEC.split("[[solvers]]").next().unwrap().to_string()
        + r#"
[[solvers]]
name = "dr"
params = { width = 8, epochs = 4, restarts = 1, learning_rate = 1e-12 }
checkpoints = { max = 4, every = 2 }
"#;
    let f = fixture(&dr_only);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    for l in [1.0, 3.0] {
        let step = select(&res, "DR", "chosen_step", "validation", Some(l), At::Last);
        assert_eq!(step, vec![2.0, 2.0], "l = {l}");
        // The untrained networks' tau is still read: what CI bands exclude.
        let t0 = select(&res, "DR", "tau", "all", Some(l), At::Step(0));
        let t2 = select(&res, "DR", "tau", "all", Some(l), At::Step(2));
        for (a, b) in t0.iter().zip(&t2) {
            assert!((a - b).abs() < 1e-3, "step 0 {a} vs step 2 {b}");
        }
    }
}

#[test]
fn attribute_cells_rank_each_attribute() {
    let spec = SPEC
        .replace(
            "name = \"s-class\"\nparams = { n = 400, m = 10, seed = 3 }",
            "name = \"s-attr\"\nparams = { n = 240, categories = 4, attributes = 3, m = 16, seed = 4 }",
        )
        .replace(
            "labels_per_class = [1, 3]",
            "train_per_category = 4\nattributes = [1, 3]",
        )
        .replace("x = \"labels_per_class\"", "x = \"attribute\"")
        .replace("coord = 3.0", "coord = 1.0");
    let f = fixture(&spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    for solver in ["RS", "TR", "KR", "DR"] {
        for a in [1.0, 3.0] {
            let t = select(&res, solver, "tau", "all", Some(a), At::Last);
            assert!(t.iter().all(|v| *v > 0.3), "{solver} attribute {a}: {t:?}");
            select(&res, solver, "tau", "unlabelled", Some(a), At::Last);
        }
        // Attribute 2 was not asked for.
        assert!(
            res.select(&Selector {
                dataset: None,
                solver: Some(solver.into()),
                metric: "tau".into(),
                set: "all".into(),
                k: None,
                coord: Some(2.0),
                at: At::Last,
            })
            .is_err()
        );
    }
}

#[test]
fn bad_protocols_and_solvers_are_refused_at_plan_time() {
    let f = fixture(&SPEC.replace("labels_per_class = [1, 3]", "labels_per_class = [0, 3]"));
    assert!(plan_error(&f.ws).contains("each at least 1"));
    let f = fixture(&SPEC.replace(
        "labels_per_class = [1, 3]",
        "labels_per_class = [1]\nattributes = [0]",
    ));
    assert!(plan_error(&f.ws).contains("numbered from 1"));
    let f = fixture(&SPEC.replace("labels_per_class = [1, 3]", "label_per_class = [1]"));
    assert!(plan_error(&f.ws).contains("unknown field `label_per_class`"));
    // Solver parameters are validated before any data is read.
    let f = fixture(&SPEC.replace("rank = 10, max_iter = 150", "rank = 0"));
    let e = plan_error(&f.ws);
    assert!(e.contains("rank"), "{e}");
    let f = fixture(&SPEC.replace(
        "tune = { lambda = [0.01, 100.0] }",
        "tune = { lambda = [0.01, -1.0] }",
    ));
    assert!(plan_error(&f.ws).contains("lambda"));
    // A ranker of another family cannot run this task.
    let f = fixture(&SPEC.replace(
        "name = \"rank-svm\"\nearly_stopping = false\ntune = { lambda = [0.01, 100.0] }",
        "name = \"oasis\"",
    ));
    let e = plan_error(&f.ws);
    assert!(e.contains("oasis") || e.contains("family"), "{e}");
    // Labelled rows with too few members per class for l labels: refused from the shape.
    let f = fixture(
        &SPEC
            .replace(
                "name = \"s-class\"\nparams = { n = 400, m = 10, seed = 3 }",
                "name = \"mnist\"\nparams = { standin = { train = 20, test = 10 } }",
            )
            .replace("labels_per_class = [1, 3]", "labels_per_class = [10]"),
    );
    assert!(plan_error(&f.ws).contains("too few for 10 training and 10 validation"));
    // Full KR's n x n kernel on 2,000,000 examples (with its own guard raised): refused from
    // the data set's shape, at the solver's line, before anything is drawn.
    let src = SPEC
        .replace(
            "params = { n = 400, m = 10, seed = 3 }",
            "params = { n = 2000000, m = 10, seed = 3 }",
        )
        .replace(
            "name = \"rank-svm\"\nearly_stopping = false\ntune = { lambda = [0.01, 100.0] }",
            "name = \"kr\"\nearly_stopping = false\nparams = { max_n = 3000000 }",
        );
    let e = plan_error(&fixture(&src).ws);
    let line = src.lines().position(|l| l == "name = \"kr\"").unwrap() + 1;
    assert!(
        e.contains(&format!("fig.toml:{line}:"))
            && e.contains("one cell needs at least 64 TB (the ranker on 2000000 examples of 10 features: 64 TB)"),
        "{e}"
    );
}

#[test]
fn real_mnist_orders_digits_by_label() {
    let Some(dir) = dyad_datasets::testdata::real_dir("mnist", "MNIST", |d| {
        d.join("train-images-idx3-ubyte.gz").is_file()
    }) else {
        return;
    };
    let spec = SPEC
        .replace(
            "name = \"s-class\"\nparams = { n = 400, m = 10, seed = 3 }",
            "name = \"mnist\"\nparams = { l2_normalize = false, test_images = 0 }",
        )
        .replace(
            "labels_per_class = [1, 3]",
            "labels_per_class = [3, 10]\nmax_points = 600",
        )
        .replace("min = 0.8", "min = 0.4")
        .replace("id = \"roll\"", "id = \"mnist\"")
        .replace("dataset = \"roll\"", "dataset = \"mnist\"");
    let mut f = fixture(&spec);
    f.ws.data_dir = dir.parent().unwrap().to_path_buf();
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    assert!(!plans[0].datasets[0].resolved.synthetic);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    // Graph methods order 600 real digits well above chance; RS less so.
    let tr = mean(&select(&res, "TR", "tau_mean", "all", None, At::Last));
    let rs = mean(&select(&res, "RS", "tau_mean", "all", None, At::Last));
    assert!(tr > 0.4 && rs > 0.2 && tr > rs, "TR {tr}, RS {rs}");
    let kr = mean(&select(&res, "KR", "tau_mean", "all", None, At::Last));
    assert!(kr > 0.3, "KR {kr}");
}

/// Compute `spec`'s cells, store each under its version-2 key as version 2 would have
/// written it (τ = 0 where version 3 writes nothing), drop the version-3 cells and run again:
/// returns (cells, carried, computed) of the second run.
fn rerun_from_version_2(spec: &str) -> (usize, usize, usize) {
    use dyad_harness::engine::cache::Cache;
    let f = fixture(spec);
    let (plans, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    let cache: Cache = f.ws.cache();
    let plan = &plans[0];
    for cell in &plan.cells {
        let mut r = cache.get(&cell.key).expect("computed");
        let undefined: Vec<_> = r
            .records
            .iter()
            .filter(|x| x.set == "all" && x.metric == "tau" && x.coord.is_some())
            .filter(|x| {
                !r.records.iter().any(|u| {
                    u.set == "unlabelled"
                        && u.metric == "tau"
                        && u.step == x.step
                        && u.coord == x.coord
                })
            })
            .cloned()
            .collect();
        for mut zero in undefined {
            zero.set = "unlabelled".into();
            zero.value = 0.0;
            r.records.push(zero);
        }
        r.records.retain(|x| x.metric != "tau_undefined");
        let mut canonical = cell.canonical.clone();
        canonical["task"]["version"] = serde_json::json!(2);
        r.key = dyad_harness::engine::plan::cell_key(&canonical);
        r.canonical = canonical;
        cache.put(&r).unwrap();
        cache.remove(&cell.key).unwrap();
    }
    let (_, s) = plan_and_run(&f.ws, 2);
    assert!(s.ok(), "{:?}", s.failed);
    for cell in &plan.cells {
        let r = cache.get(&cell.key).expect("present again");
        if let Some(from) = &r.carried_from {
            assert!(from.contains("version 2"), "{from}");
        }
        // No τ = 0 stands for an empty set: undefined values are counted instead.
        let undefined = r.records.iter().any(|x| x.metric == "tau_undefined");
        assert!(!(undefined && r.carried_from.is_some()));
    }
    (plan.cells.len(), s.carried, s.computed)
}

#[test]
fn cells_of_version_2_are_carried_when_no_unlabelled_set_was_empty() {
    // 400 points: every l leaves unlabelled points, so every cell is carried as it was.
    let (cells, carried, computed) = rerun_from_version_2(SPEC);
    assert_eq!((carried, computed), (cells, 0));
    // 60 points, 6 a class: at l = 3 every point is labelled (3 training, 3 validation), so
    // version 2's τ = 0 there was a made-up value: every cell is computed again.
    let small = SPEC.replace("n = 400, m = 10", "n = 60, m = 10");
    let (cells, carried, computed) = rerun_from_version_2(&small);
    assert_eq!((carried, computed), (0, cells));
}

/// `warm_start = true` fits TR's candidates along each k's λ path (largest λ first, each from
/// the previous solution): the same choices and τ as cold starts to rounding, the untrained
/// reading still the cold start's (τ = 0 exactly), no more Newton iterations in the chosen runs; only TR's
/// keys change (RS cannot start warm, and `warm_start = false` is the default's key).
#[test]
fn warm_starts_along_the_lambda_path_change_nothing_but_the_work() {
    // RS and TR of SPEC, TR over two k and five λ.
    let base = SPEC
        .split("[[solvers]]")
        .take(3)
        .collect::<Vec<_>>()
        .join("[[solvers]]")
        .replace(
            "tune = { lambda = [0.01, 1.0] }",
            "tune = { lambda = [0.001, 0.01, 0.1, 1.0, 10.0], k = [4, 8] }",
        );
    assert!(base.contains("k = [4, 8]") && !base.contains("lowrank-kr"));
    let with = |flag: &str| {
        base.replace(
            "[protocol.pair_ranking]\n",
            &format!("[protocol.pair_ranking]\n{flag}"),
        )
    };
    let keys = |spec: &str| solver_keys(&fixture(spec).ws);
    let (cold_keys, off_keys, warm_keys) = (
        keys(&base),
        keys(&with("warm_start = false\n")),
        keys(&with("warm_start = true\n")),
    );
    assert_eq!(cold_keys, off_keys, "false is the default's key");
    for (c, w) in cold_keys.iter().zip(&warm_keys) {
        assert_eq!(c.0, w.0);
        assert_eq!(c.1 != w.1, c.0 == "tr", "{}", c.0);
    }

    let run = |spec: &str| {
        let f = fixture(spec);
        let (plans, s) = plan_and_run(&f.ws, 2);
        assert!(s.ok(), "{:?}", s.failed);
        (f, plans)
    };
    let ((fc, pc), (fw, pw)) = (run(&base), run(&with("warm_start = true\n")));
    let (cold, warm) = (
        ExperimentResults::load(&pc[0], &fc.ws.cache()),
        ExperimentResults::load(&pw[0], &fw.ws.cache()),
    );
    let mut iterations = (0.0, 0.0);
    for l in [1.0, 3.0] {
        for (metric, set) in [
            ("chosen_lambda", "validation"),
            ("chosen_k", "validation"),
            ("validation_tau", "validation"),
        ] {
            let (c, w) = (
                select(&cold, "TR", metric, set, Some(l), At::Last),
                select(&warm, "TR", metric, set, Some(l), At::Last),
            );
            assert_eq!(c, w, "{metric} at l = {l}");
        }
        for set in ["all", "unlabelled"] {
            let (c, w) = (
                select(&cold, "TR", "tau", set, Some(l), At::Last),
                select(&warm, "TR", "tau", set, Some(l), At::Last),
            );
            for (a, b) in c.iter().zip(&w) {
                assert!((a - b).abs() < 1e-9, "tau {set} at l = {l}: {a} vs {b}");
            }
            let t0 = select(&warm, "TR", "tau", set, Some(l), At::Step(0));
            assert_eq!(t0, vec![0.0, 0.0], "the untrained reading at l = {l}");
        }
        let its = |r: &ExperimentResults<'_>| {
            mean(&select(r, "TR", "iterations", "all", Some(l), At::Last))
        };
        iterations.0 += its(&cold);
        iterations.1 += its(&warm);
    }
    assert!(
        iterations.1 <= iterations.0,
        "the chosen runs' Newton iterations: warm {} vs cold {}",
        iterations.1,
        iterations.0
    );
}
