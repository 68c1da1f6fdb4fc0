use super::*;
use dyad_kernels::fixtures::bow_categories;
use ndarray::Array2;

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

fn random_problem(n: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<f64>) {
    let mut rng = seeded(seed);
    let w: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
    let x = Array2::from_shape_fn((n, d), |_| 2.0 * rng.random::<f64>() - 1.0);
    let y = (0..n)
        .map(|i| {
            let t: f64 = x.row(i).iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + 0.3;
            // noisy labels: not separable
            if t + 0.5 * (rng.random::<f64>() - 0.5) > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    (x, y)
}

fn tight() -> LogRegConfig {
    LogRegConfig {
        tol: 1e-7,
        ..Default::default()
    }
}

#[test]
fn fitted_logreg_satisfies_the_optimality_condition() {
    for (seed, c) in [(1, 0.01), (2, 1.0), (3, 100.0)] {
        let (x, y) = random_problem(300, 12, seed);
        let cfg = tight();
        let mut w = vec![0.0; 13];
        let rep = fit_logreg(x.view(), &y, c, &cfg, &mut w, &mut Workspace::default()).unwrap();
        assert!(rep.converged, "{rep:?}");
        // independent gradient, at the solution and at 0
        let g = gradient(x.view(), &y, c, true, &w);
        let g0 = gradient(x.view(), &y, c, true, &[0.0; 13]);
        let npos = y.iter().filter(|&&v| v > 0.0).count();
        let scale = npos.min(300 - npos) as f64 / 300.0;
        // LIBLINEAR's rule with eps = 1e-7 (the machine-precision stop of the trust region,
        // |actual| and |predicted| reduction below 1e-12 |f|, may fire first; it must not
        // stop short of the rule)
        assert!(
            norm(&g) <= 1e-7 * scale * norm(&g0),
            "C={c}: |g|={} |g0|={}",
            norm(&g),
            norm(&g0)
        );
        assert!((rep.grad_norm0 - norm(&g0)).abs() <= 1e-10 * norm(&g0));
        // the loose default (LIBLINEAR's eps = 0.01) also satisfies its own rule
        let mut w2 = vec![0.0; 13];
        let rep2 = fit_logreg(
            x.view(),
            &y,
            c,
            &LogRegConfig::default(),
            &mut w2,
            &mut Workspace::default(),
        )
        .unwrap();
        let npos = y.iter().filter(|&&v| v > 0.0).count();
        let scale = npos.min(300 - npos) as f64 / 300.0;
        let g2 = gradient(x.view(), &y, c, true, &w2);
        assert!(
            norm(&g2) <= 0.01 * scale * norm(&g0) * (1.0 + 1e-9),
            "{rep2:?}"
        );
        // 1-strong convexity: |w2 - w*| <= |grad f(w2)|
        let dist = norm(&w.iter().zip(&w2).map(|(a, b)| a - b).collect::<Vec<_>>());
        assert!(dist <= norm(&g2) + norm(&g) + 1e-12);
    }
}

#[test]
fn one_dimensional_fit_matches_bisection() {
    // f'(w) = w − C Σ y_i x_i σ(−y_i w x_i), increasing in w: bisect its root.
    let xs = [0.5, -1.2, 2.0, 0.3, -0.7, 1.5, -2.2, 0.9];
    let ys = [1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0];
    let c = 3.0;
    let deriv = |w: f64| {
        w - c * xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| y * x / (1.0 + (y * w * x).exp()))
            .sum::<f64>()
    };
    let (mut lo, mut hi) = (-100.0, 100.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if deriv(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let w_star = 0.5 * (lo + hi);
    let x = Array2::from_shape_vec((8, 1), xs.to_vec()).unwrap();
    let cfg = LogRegConfig {
        tol: 1e-12,
        bias: false,
        ..Default::default()
    };
    let mut w = vec![0.0];
    fit_logreg(x.view(), &ys, c, &cfg, &mut w, &mut Workspace::default()).unwrap();
    assert!((w[0] - w_star).abs() < 1e-10, "{} vs {w_star}", w[0]);
    assert!(w_star.abs() > 0.1, "a non-trivial solution: {w_star}");
}

#[test]
fn warm_start_reaches_the_same_optimum_and_bad_inputs_are_errors() {
    let (x, y) = random_problem(200, 8, 9);
    let cfg = tight();
    let mut ws = Workspace::default();
    let mut cold = vec![0.0; 9];
    fit_logreg(x.view(), &y, 10.0, &cfg, &mut cold, &mut ws).unwrap();
    let mut warm = vec![0.0; 9];
    fit_logreg(x.view(), &y, 1.0, &cfg, &mut warm, &mut ws).unwrap();
    let rep = fit_logreg(x.view(), &y, 10.0, &cfg, &mut warm, &mut ws).unwrap();
    assert!(rep.converged);
    // 1-strong convexity: |w - w*| <= |grad f(w)|, so the two differ by at most the sum
    let bound = norm(&gradient(x.view(), &y, 10.0, true, &cold))
        + norm(&gradient(x.view(), &y, 10.0, true, &warm));
    let dist = norm(
        &cold
            .iter()
            .zip(&warm)
            .map(|(a, b)| a - b)
            .collect::<Vec<_>>(),
    );
    assert!(dist <= bound + 1e-12 && bound < 1e-4, "{dist} {bound}");
    let mut w = vec![0.0; 9];
    assert!(fit_logreg(x.view(), &y[..10], 1.0, &cfg, &mut w, &mut ws).is_err());
    assert!(fit_logreg(x.view(), &y, 0.0, &cfg, &mut w, &mut ws).is_err());
    assert!(fit_logreg(x.view(), &y, 1.0, &cfg, &mut w[..3], &mut ws).is_err());
    let bad: Vec<f64> = y.iter().map(|v| v * 2.0).collect();
    assert!(fit_logreg(x.view(), &bad, 1.0, &cfg, &mut w, &mut ws).is_err());
    assert!(fit_logreg(x.t(), &y[..8], 1.0, &cfg, &mut vec![0.0; 201], &mut ws).is_err());
}

fn small_cfg() -> NestedCvConfig {
    NestedCvConfig {
        permutations: 99,
        ..Default::default()
    }
}

#[test]
fn separable_categories_reach_auc_one() {
    let n = 150;
    let mut x = Array2::from_shape_fn((n, 8), |(i, j)| ((i * 7 + j * 3) % 5) as f64);
    let positives: Vec<usize> = (0..n).filter(|i| i % 4 == 0).collect();
    for &i in &positives {
        x[[i, 0]] += 50.0;
    }
    let data = CategoryData {
        features: x.view(),
        positives: std::slice::from_ref(&positives),
        genes: None,
    };
    let r = nested_cv(&data, &small_cfg(), 5).unwrap();
    let cat = &r.categories[0];
    assert_eq!(cat.mean_auc, Some(1.0), "{cat:?}");
    assert!(cat.fold_auc.iter().all(|a| *a == Some(1.0)));
    assert_eq!(cat.p_value, Some(1.0 / 100.0));
    assert_eq!(cat.n_positive, positives.len());
    // weights point at the signal feature
    let w = r.weights.row(0);
    assert!(w[0] > 0.0 && w.iter().skip(1).all(|v| v.abs() < w[0]));
}

/// Folds partition the images; inner folds partition the outer training set.
fn check_partitions(r: &NestedCvResult, n: usize) {
    let mut seen = vec![0; n];
    for f in &r.outer_folds {
        for &i in f {
            seen[i] += 1;
        }
    }
    assert!(seen.iter().all(|&s| s == 1));
    for (o, inner) in r.inner_folds.iter().enumerate() {
        let mut count = 0;
        for f in inner {
            count += f.len();
            assert!(f.iter().all(|i| r.outer_folds[o].binary_search(i).is_err()));
        }
        assert_eq!(count, n - r.outer_folds[o].len());
    }
}

#[test]
fn test_folds_never_touch_model_selection() {
    let (x, positives) = bow_categories(200, 2, 5, 3, 6.0, 21);
    for scaling in [Scaling::Raw, Scaling::Standardise, Scaling::L1PerLevel] {
        let cfg = NestedCvConfig {
            keep_fold_models: true,
            permutations: 0,
            scaling,
            ..Default::default()
        };
        let data = CategoryData {
            features: x.view(),
            positives: &positives,
            genes: None,
        };
        let base = nested_cv(&data, &cfg, 77).unwrap();
        check_partitions(&base, 200);
        // garbage in the features of outer test fold 2
        let g = 2;
        let mut xg = x.clone();
        for (k, &i) in base.outer_folds[g].iter().enumerate() {
            for j in 0..xg.ncols() {
                xg[[i, j]] = ((k * 31 + j * 17) % 23) as f64 * 3.0;
            }
        }
        let data_g = CategoryData {
            features: xg.view(),
            ..data
        };
        let garbled = nested_cv(&data_g, &cfg, 77).unwrap();
        assert_eq!(garbled.outer_folds, base.outer_folds);
        let (mb, mg) = (
            base.fold_models.as_ref().unwrap(),
            garbled.fold_models.as_ref().unwrap(),
        );
        for c in 0..positives.len() {
            let (cb, cg) = (&base.categories[c], &garbled.categories[c]);
            assert_eq!(cb.chosen_c[g], cg.chosen_c[g], "{scaling:?}");
            assert_eq!(cb.inner_scores[g], cg.inner_scores[g]);
            assert_eq!(
                mb[g].row(c),
                mg[g].row(c),
                "{scaling:?}: model of the garbled fold"
            );
            // the other folds trained on the garbage
            assert!(
                (0..5)
                    .filter(|&o| o != g)
                    .any(|o| mb[o].row(c) != mg[o].row(c))
            );
        }
        // only the garbled fold's predictions change
        let mut changed = 0;
        for o in 0..5 {
            for &i in &base.outer_folds[o] {
                let same = base.probabilities.row(i) == garbled.probabilities.row(i);
                if o == g {
                    changed += usize::from(!same);
                }
            }
        }
        assert!(changed > base.outer_folds[g].len() / 2, "{scaling:?}");
    }
}

#[test]
fn out_of_fold_probabilities_come_from_the_model_that_did_not_see_the_image() {
    let (x, positives) = bow_categories(180, 2, 6, 2, 5.0, 4);
    let cfg = NestedCvConfig {
        keep_fold_models: true,
        permutations: 0,
        ..Default::default()
    };
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    let r = nested_cv(&data, &cfg, 8).unwrap();
    let models = r.fold_models.as_ref().unwrap();
    let all: Vec<usize> = (0..180).collect();
    for (o, fold) in r.outer_folds.iter().enumerate() {
        let train = complement(&all, fold);
        for (c, pos) in positives.iter().enumerate() {
            // the fold model is the fit on the outer training set at the chosen C
            let xtr = x.select(ndarray::Axis(0), &train);
            let y: Vec<f64> = train
                .iter()
                .map(|i| if pos.contains(i) { 1.0 } else { -1.0 })
                .collect();
            let mut w = vec![0.0; x.ncols() + 1];
            fit_logreg(
                xtr.view(),
                &y,
                r.categories[c].chosen_c[o],
                &cfg.solver,
                &mut w,
                &mut Workspace::default(),
            )
            .unwrap();
            assert_eq!(models[o].row(c).to_vec(), w);
            let mut p = vec![0.0; fold.len()];
            predict_proba(x.select(ndarray::Axis(0), fold).view(), &w, true, &mut p);
            for (&i, &pi) in fold.iter().zip(&p) {
                assert_eq!(r.probabilities[[i, c]], pi);
            }
        }
        // the weights reported are the average of the fold models
    }
    let avg = models
        .iter()
        .fold(Array2::<f64>::zeros(models[0].dim()), |a, m| a + m)
        / 5.0;
    for c in 0..2 {
        for j in 0..x.ncols() {
            assert!((avg[[c, j]] - r.weights[[c, j]]).abs() < 1e-12);
        }
        assert!((avg[[c, x.ncols()]] - r.bias[c]).abs() < 1e-12);
    }
}

#[test]
fn signal_categories_beat_the_null_and_statistics_are_consistent() {
    let (x, positives) = bow_categories(300, 2, 8, 4, 8.0, 13);
    let (xn, pn) = bow_categories(300, 2, 8, 4, 0.0, 14);
    let cfg = small_cfg();
    let sig = nested_cv(
        &CategoryData {
            features: x.view(),
            positives: &positives,
            genes: None,
        },
        &cfg,
        1,
    )
    .unwrap();
    let null = nested_cv(
        &CategoryData {
            features: xn.view(),
            positives: &pn,
            genes: None,
        },
        &cfg,
        1,
    )
    .unwrap();
    let mean = |r: &NestedCvResult| {
        r.categories.iter().filter_map(|c| c.mean_auc).sum::<f64>() / r.categories.len() as f64
    };
    assert!(mean(&sig) > 0.8, "signal {}", mean(&sig));
    assert!((mean(&null) - 0.5).abs() < 0.15, "null {}", mean(&null));
    assert!(sig.categories.iter().all(|c| c.p_value.unwrap() <= 0.02));
    for r in [&sig, &null] {
        for c in &r.categories {
            let p = c.p_value.unwrap();
            assert!((0.01..=1.0).contains(&p));
            let defined: Vec<f64> = c.fold_auc.iter().flatten().copied().collect();
            let m = defined.iter().sum::<f64>() / defined.len() as f64;
            assert!((c.mean_auc.unwrap() - m).abs() < 1e-15);
            assert!(c.chosen_c.iter().all(|v| cfg.c_grid.contains(v)));
            // chosen C maximises the mean inner score, ties to the smaller C
            for o in 0..5 {
                let means: Vec<Option<f64>> = (0..6)
                    .map(|k| {
                        let v: Vec<f64> = c.inner_scores[o].iter().filter_map(|s| s[k]).collect();
                        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                    })
                    .collect();
                let k = cfg.c_grid.iter().position(|v| *v == c.chosen_c[o]).unwrap();
                for (j, m) in means.iter().enumerate() {
                    if let (Some(m), Some(best)) = (m, means[k]) {
                        assert!(*m < best || (*m == best && j >= k));
                    }
                }
            }
        }
        // per-fold mean AUC over categories
        for o in 0..5 {
            let v: Vec<f64> = r.categories.iter().filter_map(|c| c.fold_auc[o]).collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            assert!((r.fold_mean_auc[o].unwrap() - m).abs() < 1e-15);
        }
        // probabilities are probabilities
        assert!(r.probabilities.iter().all(|p| (0.0..=1.0).contains(p)));
    }
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let (x, positives) = bow_categories(160, 2, 5, 6, 5.0, 31);
    let cfg = NestedCvConfig {
        permutations: 50,
        scaling: Scaling::Standardise,
        ..Default::default()
    };
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                nested_cv(
                    &CategoryData {
                        features: x.view(),
                        positives: &positives,
                        genes: None,
                    },
                    &cfg,
                    3,
                )
                .unwrap()
            })
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a, b);
    // and the seed matters
    let c = nested_cv(
        &CategoryData {
            features: x.view(),
            positives: &positives,
            genes: None,
        },
        &cfg,
        4,
    )
    .unwrap();
    assert_ne!(a.outer_folds, c.outer_folds);
}

#[test]
fn folds_are_near_equal_unstratified_and_gene_grouping_keeps_genes_together() {
    let n = 103;
    let (x, positives) = bow_categories(n, 2, 3, 2, 3.0, 2);
    let genes: Vec<u64> = (0..n as u64).map(|i| i / 2).collect(); // pairs of images per gene
    let cfg = NestedCvConfig {
        permutations: 0,
        ..Default::default()
    };
    let mut data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: Some(&genes),
    };
    let r = nested_cv(&data, &cfg, 6).unwrap();
    check_partitions(&r, n);
    let sizes: Vec<usize> = r.outer_folds.iter().map(Vec::len).collect();
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
        "{sizes:?}"
    );
    // by image, some gene is split across outer folds
    let fold_of = |r: &NestedCvResult| {
        let mut f = vec![0; n];
        for (o, fold) in r.outer_folds.iter().enumerate() {
            for &i in fold {
                f[i] = o;
            }
        }
        f
    };
    let f = fold_of(&r);
    assert!((0..n - 1).step_by(2).any(|i| f[i] != f[i + 1]));
    let grouped = NestedCvConfig {
        group_by_gene: true,
        ..cfg.clone()
    };
    let r = nested_cv(&data, &grouped, 6).unwrap();
    check_partitions(&r, n);
    let f = fold_of(&r);
    assert!((0..n - 1).step_by(2).all(|i| f[i] == f[i + 1]));
    for inner in &r.inner_folds {
        for fold in inner {
            for &i in fold {
                let mate = if i % 2 == 0 { i + 1 } else { i - 1 };
                if mate < n && f[mate] == f[i] {
                    assert!(
                        fold.contains(&mate),
                        "gene of image {i} split in an inner fold"
                    );
                }
            }
        }
    }
    data.genes = None;
    assert!(nested_cv(&data, &grouped, 6).is_err());
}

#[test]
fn undefined_folds_are_counted_and_skipped() {
    let (x, _) = bow_categories(100, 2, 3, 1, 0.0, 5);
    // two positives: at least three of five outer folds have none
    let positives = vec![vec![3, 50]];
    let cfg = NestedCvConfig {
        permutations: 20,
        ..Default::default()
    };
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    let r = nested_cv(&data, &cfg, 1).unwrap();
    let c = &r.categories[0];
    assert!(c.folds_skipped >= 3);
    assert_eq!(
        c.fold_auc.iter().filter(|a| a.is_none()).count(),
        c.folds_skipped
    );
    assert!(c.inner_skipped > 0);
    // no positive at all: nothing defined, no p-value, no panic
    let none = vec![vec![]];
    let r = nested_cv(
        &CategoryData {
            positives: &none,
            ..data
        },
        &cfg,
        1,
    )
    .unwrap();
    assert_eq!(r.categories[0].mean_auc, None);
    assert_eq!(r.categories[0].p_value, None);
    assert_eq!(r.categories[0].chosen_c, vec![0.001; 5]);
    assert_eq!(r.fold_mean_auc, vec![None; 5]);
}

#[test]
fn scalings_transform_as_documented() {
    let x = ndarray::arr2(&[[1.0, 3.0, 0.0, 2.0, 2.0, 4.0]]); // 2 levels of K = 2 words + 2 zero counts
    let l1 = row_scaled(x.view(), Scaling::L1PerLevel, 2).unwrap();
    // level 0: words 1, 3 and zero count 2 (sum 6); level 1: words 0, 2, zero count 4 (sum 6)
    let want = [1.0 / 6.0, 3.0 / 6.0, 0.0, 2.0 / 6.0, 2.0 / 6.0, 4.0 / 6.0];
    for (a, b) in l1.iter().zip(want) {
        assert!((a - b).abs() < 1e-15);
    }
    assert!(row_scaled(x.view(), Scaling::L1PerLevel, 4).is_err());
    let lg = row_scaled(x.view(), Scaling::Log1p, 4).unwrap();
    assert!((lg[[0, 1]] - 4f64.ln()).abs() < 1e-15);
    let xs = ndarray::arr2(&[[1.0, 5.0], [3.0, 5.0], [100.0, 5.0]]);
    let t = Transform::fit(&xs, &[0, 1], Scaling::Standardise).unwrap();
    let g = gather(&xs, &[0, 1, 2], Some(&t));
    assert_eq!(g.column(0).to_vec(), vec![-1.0, 1.0, 98.0]);
    assert_eq!(g.column(1).to_vec(), vec![0.0, 0.0, 0.0]);
}

#[test]
fn config_defaults_serde_and_validation() {
    let cfg: NestedCvConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(cfg, NestedCvConfig::default());
    assert_eq!(cfg.c_grid, vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0]);
    assert_eq!(
        (cfg.outer_folds, cfg.inner_folds, cfg.permutations),
        (5, 5, 1000)
    );
    assert_eq!(
        (cfg.scaling, cfg.selection),
        (Scaling::Raw, SelectionMetric::Auc)
    );
    assert_eq!(cfg.solver.tol, 0.01);
    cfg.check().unwrap();
    let c: NestedCvConfig = serde_json::from_str(
        r#"{"scaling": "l1_per_level", "selection": "log_loss", "solver": {"tol": 0.001}}"#,
    )
    .unwrap();
    assert_eq!(c.scaling, Scaling::L1PerLevel);
    assert_eq!(c.solver.tol, 0.001);
    assert!(serde_json::from_str::<NestedCvConfig>(r#"{"folds": 3}"#).is_err());
    let bad = |f: &dyn Fn(&mut NestedCvConfig)| {
        let mut c = NestedCvConfig::default();
        f(&mut c);
        c.check().unwrap_err().param
    };
    assert_eq!(bad(&|c| c.outer_folds = 1), "outer_folds");
    assert_eq!(bad(&|c| c.inner_folds = 0), "inner_folds");
    assert_eq!(bad(&|c| c.c_grid = vec![]), "c_grid");
    assert_eq!(bad(&|c| c.c_grid = vec![1.0, 0.1]), "c_grid");
    assert_eq!(bad(&|c| c.c_grid = vec![0.0, 1.0]), "c_grid");
    assert_eq!(bad(&|c| c.c_grid = vec![f64::NAN]), "c_grid");
    assert_eq!(bad(&|c| c.levels = 0), "levels");
    assert_eq!(bad(&|c| c.solver.tol = -1.0), "solver.tol");
    assert_eq!(bad(&|c| c.solver.max_iter = 0), "solver.max_iter");
    use dyad_kernels::Checked;
    assert!(NestedCvConfig::default().check().is_ok());
}

#[test]
fn log_loss_selection_and_bad_data() {
    let (x, positives) = bow_categories(120, 2, 4, 2, 6.0, 8);
    let cfg = NestedCvConfig {
        selection: SelectionMetric::LogLoss,
        permutations: 0,
        ..Default::default()
    };
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    let r = nested_cv(&data, &cfg, 2).unwrap();
    assert!(r.categories.iter().all(|c| c.mean_auc.unwrap() > 0.6));
    assert!(
        r.categories[0]
            .inner_scores
            .iter()
            .flatten()
            .flatten()
            .all(|s| s.unwrap() < 0.0)
    );
    let out_of_range = vec![vec![500]];
    assert!(
        nested_cv(
            &CategoryData {
                positives: &out_of_range,
                ..data
            },
            &cfg,
            2
        )
        .is_err()
    );
    let mut xn = x.clone();
    xn[[0, 0]] = f64::NAN;
    assert!(
        nested_cv(
            &CategoryData {
                features: xn.view(),
                ..data
            },
            &cfg,
            2
        )
        .is_err()
    );
    let tiny = x.slice(ndarray::s![..20, ..]);
    assert!(
        nested_cv(
            &CategoryData {
                features: tiny,
                ..data
            },
            &cfg,
            2
        )
        .is_err()
    );
}

#[test]
fn the_family_trait_reports_once_and_is_object_safe() {
    use dyad_kernels::fixtures::Models;
    let (x, positives) = bow_categories(100, 2, 3, 2, 5.0, 3);
    let learner: Box<dyn CategoryClassifier> = Box::new(NestedCvConfig {
        permutations: 10,
        ..Default::default()
    });
    assert!(!learner.is_iterative());
    let mut obs = Models::<NestedCvResult>::default();
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    learner
        .fit(&data, &Schedule::last_only(0), &mut seeded(1), &mut obs)
        .unwrap();
    assert_eq!(obs.seen.len(), 1);
    assert!(obs.seen[0].0.last && obs.seen[0].0.step == 0);
    let mut rng = seeded(1);
    let seed: u64 = rng.random();
    assert_eq!(
        obs.seen[0].1,
        nested_cv(
            &data,
            &NestedCvConfig {
                permutations: 10,
                ..Default::default()
            },
            seed
        )
        .unwrap()
    );
}

#[test]
fn fewer_images_than_weights_fit_in_the_row_space_to_the_same_results() {
    // 100 images of 4 × (40 + 1) = 164 counts: inner training sets of 64 rows and outer ones
    // of 80 against 165 weights, 8 categories: every fit runs in the row space (`rowspace`)
    let (x, positives) = bow_categories(100, 4, 40, 8, 8.0, 17);
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    for scaling in [Scaling::Raw, Scaling::Standardise] {
        let cfg = NestedCvConfig {
            permutations: 0,
            scaling,
            // the stopping rule bounds ‖w − w*‖ by ε‖∇f(0)‖, large with raw counts: fit
            // tightly to compare the two paths to the optimum
            solver: LogRegConfig {
                tol: 1e-10,
                ..Default::default()
            },
            ..Default::default()
        };
        let rows = nested_cv_in(&data, &cfg, 9, true).unwrap();
        let direct = nested_cv_in(&data, &cfg, 9, false).unwrap();
        assert_eq!(rows.outer_folds, direct.outer_folds);
        for (a, b) in rows.categories.iter().zip(&direct.categories) {
            assert_eq!(a.chosen_c, b.chosen_c, "{scaling:?}");
            for (sa, sb) in a
                .inner_scores
                .iter()
                .flatten()
                .zip(b.inner_scores.iter().flatten())
            {
                for (u, v) in sa.iter().zip(sb) {
                    // AUCs of validation folds: equal up to ties broken by 1e-9 differences
                    let same = match (u, v) {
                        (Some(u), Some(v)) => (u - v).abs() < 1e-9,
                        (u, v) => u == v,
                    };
                    assert!(same, "{scaling:?}: {u:?} {v:?}");
                }
            }
        }
        let close = |a: &Array2<f64>, b: &Array2<f64>, tol: f64| {
            a.iter()
                .zip(b)
                .all(|(u, v)| (u - v).abs() <= tol * (1.0 + v.abs()))
        };
        assert!(close(&rows.probabilities, &direct.probabilities, 1e-6));
        assert!(close(&rows.weights, &direct.weights, 1e-6));
        assert!(
            rows.bias
                .iter()
                .zip(&direct.bias)
                .all(|(u, v)| (u - v).abs() < 1e-6)
        );
        // a real signal was learned, not zeros on both sides
        assert!(rows.categories.iter().all(|c| c.mean_auc.unwrap() > 0.7));
        assert!(rows.weights.iter().any(|w| w.abs() > 1e-3));
    }
}
