//! FuncISH's tasks end to end on a small stand-in (random ontology, so the test does not
//! depend on an installed Gene Ontology): the visual phase, nested cross-validation, the
//! Fig. 3 statistics, and the four similarities of Fig. 4 sharing one functional
//! representation; results identical at 1 and 2 threads. Every programme shows
//! (`penetrance = 1`): the test is about the pipeline learning, not about calibration.

use dyad_harness::Workspace;
use dyad_harness::analysis::results::ExperimentResults;
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

fn run(ws: &Workspace, threads: usize) -> Vec<dyad_harness::engine::plan::Plan> {
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
    // Fig. S2: the second series of a gene is closer than other genes' images.
    let log_p = values(&res, "FuncISH", "same_vs_different_log10_p", "test", None)[0];
    let same = values(&res, "FuncISH", "same_gene_median_similarity", "test", None)[0];
    let other = values(
        &res,
        "FuncISH",
        "different_gene_median_similarity",
        "test",
        None,
    )[0];
    assert!(log_p < -2.0 && same > other, "{log_p} {same} {other}");
    // The planted-scale check and Fig. 6's test exist and are in their domains.
    let hit = values(&res, "FuncISH", "planted_scale_match", "test", None)[0];
    assert!((0.0..=1.0).contains(&hit));
    // Its detail per scale: two distributions over the 4 scales, and a category found at its
    // planted scale counts in both at that scale, so the matches are bounded by the overlap.
    let cell = res.cells[0].as_ref().unwrap();
    let share = |set: &str| -> Vec<(f64, f64)> {
        cell.records
            .iter()
            .filter(|r| r.set == set && r.metric == "scale_share")
            .map(|r| (r.coord.as_ref().unwrap().value, r.value))
            .collect()
    };
    let (planted, weighted) = (share("planted"), share("weighted"));
    // The stand-in plants 4 scales; these features have 3.
    assert_eq!(
        planted.iter().map(|p| p.0).collect::<Vec<_>>(),
        [1.0, 2.0, 4.0, 8.0]
    );
    assert_eq!(weighted.len(), 3);
    for s in [&planted, &weighted] {
        assert!(
            (s.iter().map(|p| p.1).sum::<f64>() - 1.0).abs() < 1e-12,
            "{s:?}"
        );
    }
    let overlap: f64 = planted
        .iter()
        .zip(&weighted)
        .map(|(p, w)| p.1.min(w.1))
        .sum();
    let hit0 = cell
        .records
        .iter()
        .find(|r| r.metric == "planted_scale_match")
        .unwrap()
        .value;
    assert!(hit0 <= overlap + 1e-12, "{hit0} > {overlap}");
    let fig6 = values(&res, "FuncISH", "overlay_size_log10_p", "test", None)[0];
    assert!(fig6 <= 0.0);
    // Exhibits of repeat 0: Tables 1 and 2 and the two pictures, decodable PNGs.
    let cell = res.cells[0].as_ref().unwrap();
    let ids: Vec<&str> = cell.artifacts.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["table-1", "table-2", "fig-5", "fig-6"]);
    match &cell.artifacts[0].body {
        dyad_harness::engine::cache::ArtifactBody::Table { head, rows } => {
            assert_eq!(rows.len(), 15.min(n as usize));
            assert!(rows.iter().all(|r| r.len() == head.len()));
            // sorted by AUC, the best first
            let aucs: Vec<f64> = rows.iter().map(|r| r[3].parse().unwrap()).collect();
            assert!(aucs.windows(2).all(|w| w[0] >= w[1]), "{aucs:?}");
        }
        other => panic!("Table 1 is {other:?}"),
    }
    for a in &cell.artifacts[2..] {
        let png = a.png().expect("a picture");
        let img = image::load_from_memory(&png).unwrap();
        assert!(img.width() > 100 && img.height() > 100, "{}", a.id);
    }
    // The report shows them: tables inline, pictures as files beside the figures.
    f.ws.report(&plans, dyad_harness::spec::profile::Profile::Quick)
        .unwrap();
    let md = std::fs::read_to_string(
        dyad_harness::presentation::report::report_dir(
            &f.ws.results,
            dyad_harness::spec::profile::Profile::Quick,
        )
        .join("REPORT.md"),
    )
    .unwrap();
    assert!(md.contains("Table 1: the 15 GO categories of best held-out AUC (ish (SYNTHETIC)"));
    let fig5 = md
        .lines()
        .find(|l| l.starts_with("![Fig. 5A–D](figures/"))
        .expect("Fig. 5 picture");
    let file = fig5.split("](").nth(1).unwrap().trim_end_matches(')');
    assert!(
        dyad_harness::presentation::report::report_dir(
            &f.ws.results,
            dyad_harness::spec::profile::Profile::Quick
        )
        .join(file)
        .is_file()
    );

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
    assert_eq!(
        all_records(&f.ws, &plans, untimed),
        all_records(&g.ws, &again, untimed)
    );
}

/// The supplement's variants are `funcish-lr` parameters: checked when the plan is built, and
/// hashed into the cell as the visual configuration they select.
#[test]
fn visual_variants_are_checked_solver_parameters() {
    let spec = |params: &str| {
        format!(
            r#"
title = "variants"
paper = "demo"
figure = "S3"
{DATA}
[protocol.gene_function]
{FEATURES}

[[solvers]]
name = "funcish-lr"
label = "FuncISH"
params = {{ {params} }}
"#
        )
    };
    let plan = |params: &str| {
        let f = fixture(&spec(params));
        let ctx = f.ws.data_context();
        f.ws.select_specs(&[])
            .map_err(|e| e.to_string())
            .and_then(|s| {
                f.ws.plan(&s, dyad_harness::spec::profile::Profile::Quick, &ctx)
                    .map_err(|e| e.to_string())
            })
            .map(|plans| plans[0].cells[0].canonical.clone())
    };
    let c = plan("words = 7, pyramid = { grids = [1, 2] }, permutations = 0").unwrap();
    let text = c.to_string();
    assert!(text.contains(r#""k":7"#), "{text}");
    assert!(text.contains(r#""grids":[1,2]"#), "{text}");
    let base = plan("permutations = 0").unwrap().to_string();
    assert!(
        base.contains(r#""k":20"#) && !base.contains("grids"),
        "{base}"
    );
    let e = plan("words = 1").unwrap_err();
    assert!(e.contains("words") && e.contains("at least 2"), "{e}");
    let e = plan("pyramid = { grids = [0] }").unwrap_err();
    assert!(e.contains("pyramid"), "{e}");
    let e = plan("wrods = 10").unwrap_err();
    assert!(e.contains("wrods"), "{e}");
}

/// Table S1 as a claim: `correlated` judges the Pearson r of two solvers' per-category mean
/// AUCs (computed here by hand from the records), and a claim naming a solver only the paper
/// profile has is accepted at the quick profile and not judged there.
#[test]
fn a_correlated_claim_judges_per_category_aucs_of_two_dictionaries() {
    let claims = r#"
[[claims]]
id = "r-in"
text = "per-category AUCs agree across K"
origin = "ours"
kind = "correlated"
metric = "category_auc"
over = "category"
solver = "FuncISH"
versus = "small"
range = [RANGE]

[[claims]]
id = "r-negative"
text = "per-category AUCs disagree"
origin = "ours"
kind = "correlated"
metric = "category_auc"
over = "category"
solver = "FuncISH"
versus = "small"
range = [-1.0, 0.0]

[[claims]]
id = "paper-only"
text = "K = 1,000 agrees with K = 10"
origin = "ours"
kind = "correlated"
metric = "category_auc"
over = "category"
solver = "FuncISH (words=1000)"
versus = "small"
range = [0.5, 1.0]
profile = "paper"
"#;
    let spec = |range: &str| {
        format!(
            "{}\n[[solvers]]\nname = \"funcish-lr\"\nlabel = \"small\"\nparams = {{ permutations = 0, words = 10 }}\n{}",
            function_spec().replace("permutations = 50", "permutations = 0"),
            claims.replace("RANGE", range)
        )
    };
    let f = fixture(&spec("-1.0, 1.0"));
    let plans = run(&f.ws, 2);
    let res = ExperimentResults::load(&plans[0], &f.ws.cache());
    // The same r by hand: per-category means (one repeat), paired by category.
    let per_category = |solver: &str| -> std::collections::BTreeMap<u64, f64> {
        let si = plans[0]
            .solvers
            .iter()
            .position(|s| s.label == solver)
            .unwrap();
        res.cells
            .iter()
            .zip(&plans[0].cells)
            .filter(|(_, c)| c.solver == si)
            .flat_map(|(r, _)| r.as_ref().unwrap().records.iter())
            .filter(|r| r.metric == "category_auc" && r.set == "test")
            .map(|r| (r.coord.as_ref().unwrap().value.to_bits(), r.value))
            .collect()
    };
    let (a, b) = (per_category("FuncISH"), per_category("small"));
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .filter_map(|(k, &x)| b.get(k).map(|&y| (x, y)))
        .collect();
    assert!(pairs.len() > 10, "{} categories", pairs.len());
    let n = pairs.len() as f64;
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = pairs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let vx: f64 = pairs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let vy: f64 = pairs.iter().map(|p| (p.1 - my).powi(2)).sum();
    let r = cov / (vx * vy).sqrt();
    assert!(r > 0.0 && r < 1.0, "r = {r}");
    use dyad_harness::analysis::claims::Verdict;
    let o = common::judge_claim(&plans[0], &res, "r-in");
    assert_eq!(o.verdict, Verdict::Holds, "{}", o.detail);
    assert!(
        o.detail
            .contains(&format!("r = {r:.3} over {} category", pairs.len())),
        "{} (by hand {r})",
        o.detail
    );
    assert_eq!(
        common::judge_claim(&plans[0], &res, "r-negative").verdict,
        Verdict::DoesNotHold
    );
    let o = common::judge_claim(&plans[0], &res, "paper-only");
    assert_eq!(o.verdict, Verdict::NotComparable);
    assert!(o.detail.contains("`paper` profile only"), "{}", o.detail);
    // A range just above the computed r: does not hold.
    let g = fixture(&spec(&format!("{}, 1.0", r + 1e-3)));
    let plans = run(&g.ws, 2);
    let res = ExperimentResults::load(&plans[0], &g.ws.cache());
    assert_eq!(
        common::judge_claim(&plans[0], &res, "r-in").verdict,
        Verdict::DoesNotHold
    );
    // `correlated` without `over` is a spec error naming it.
    let bad = fixture(&spec("-1.0, 1.0").replace(
        "over = \"category\"\nsolver = \"FuncISH\"\nversus = \"small\"\nrange = [-1.0, 1.0]",
        "solver = \"FuncISH\"\nversus = \"small\"\nrange = [-1.0, 1.0]",
    ));
    let err = bad.ws.select_specs(&[]).err().unwrap().to_string();
    assert!(
        err.contains("claim `r-in`") && err.contains("over"),
        "{err}"
    );
}

/// Metrics that are no wall time.
fn untimed(metric: &str) -> bool {
    !metric.ends_with("seconds")
}

/// The records of a run's cells whose metric `keep` accepts, sorted: (solver,
/// set/metric/k/coordinate, value).
fn all_records(
    ws: &Workspace,
    plans: &[dyad_harness::engine::plan::Plan],
    keep: fn(&str) -> bool,
) -> Vec<(String, String, f64)> {
    let mut v = Vec::new();
    for p in plans {
        let res = ExperimentResults::load(p, &ws.cache());
        for c in res.cells.iter().flatten() {
            for x in c.records.iter().filter(|x| keep(&x.metric)) {
                v.push((
                    c.solver.clone(),
                    format!(
                        "{}/{}/{:?}/{:?}",
                        x.set,
                        x.metric,
                        x.k,
                        x.coord.as_ref().map(|c| c.value)
                    ),
                    x.value,
                ));
            }
        }
    }
    v.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    v
}

/// The values kept in `results/cache/derived/` (features, cross-validations).
fn stored(ws: &Workspace) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(ws.results.join("cache/derived"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    v.sort();
    v
}

fn bits(v: Vec<(String, String, f64)>) -> Vec<(String, String, u64)> {
    v.into_iter().map(|(a, b, c)| (a, b, c.to_bits())).collect()
}

/// The features and the cross-validation are kept beside the cells and a later run reads
/// them back instead of computing them: the same records, down to the extraction's and the
/// fit's own seconds (`feature_seconds`, `fit_seconds`: a new computation would take another
/// time). A damaged copy is computed again and replaced.
#[test]
fn features_and_fits_are_kept_on_disk_and_read_back_to_the_bit() {
    let f = fixture(&function_spec());
    let plans = run(&f.ws, 1);
    let stored = stored(&f.ws);
    assert_eq!(
        stored.len(),
        2,
        "features and one cross-validation: {stored:?}"
    );
    // Every record but the cell's own timings: the extraction's and the fit's seconds are kept.
    fn kept(m: &str) -> bool {
        untimed(m) || m == "feature_seconds" || m == "fit_seconds"
    }
    let first = all_records(&f.ws, &plans, kept);
    let first_untimed = all_records(&f.ws, &plans, untimed);
    assert!(first.iter().any(|x| x.1.contains("/feature_seconds/")));
    assert!(first.iter().any(|x| x.1.contains("/fit_seconds/")));
    let cells = f.ws.results.join("cache/cells");
    std::fs::remove_dir_all(&cells).unwrap();
    let again = run(&f.ws, 1);
    assert_eq!(bits(first), bits(all_records(&f.ws, &again, kept)));

    // Damaged: cut short by one byte. Computed again (the same values), and stored whole.
    for path in &stored {
        let size = std::fs::metadata(path).unwrap().len();
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() - 1]).unwrap();
        std::fs::remove_dir_all(&cells).unwrap();
        let third = run(&f.ws, 1);
        assert_eq!(
            bits(first_untimed.clone()),
            bits(all_records(&f.ws, &third, untimed))
        );
        let whole = std::fs::read(path).unwrap();
        let (body, sum) = whole.split_at(whole.len() - 32);
        use sha2::Digest;
        assert_eq!(sha2::Sha256::digest(body).as_slice(), sum);
        assert!(
            whole.len() as u64 > size / 2,
            "{} of {size} bytes",
            whole.len()
        );
    }
}

/// Fig. 4's functional representation is Fig. 3's cross-validation (the same features, folds
/// and seed): run together, the two tasks fit it once; the retrieval cells computed after the
/// gene-function cell equal the ones computed alone, to the bit, and so does the
/// gene-function cell whose permutation test was added to a fit without one.
#[test]
fn the_retrieval_reads_the_gene_function_cross_validation() {
    let both = fixture(&function_spec());
    std::fs::write(
        both.ws.experiments.join("demo/retrieval.toml"),
        retrieval_spec(),
    )
    .unwrap();
    let plans = run(&both.ws, 2);
    assert_eq!(
        stored(&both.ws).len(),
        2,
        "features and one cross-validation"
    );
    let shared = all_records(&both.ws, &plans, untimed);

    // Each task alone, in a results directory of its own.
    let mut alone = Vec::new();
    for spec in [function_spec(), retrieval_spec()] {
        let f = fixture(&spec);
        alone.extend(all_records(&f.ws, &run(&f.ws, 1), untimed));
    }
    alone.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    assert!(shared.iter().any(|x| x.0 == "go-sim") && shared.iter().any(|x| x.0 == "funcish-lr"));
    assert_eq!(bits(shared), bits(alone));
}
