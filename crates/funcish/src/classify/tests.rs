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

/// The p-values added to a result fitted without permutations are the ones a fit with them
/// computes, to the bit; `permutations = 0` clears them; a category without an AUC has none.
#[test]
fn permutation_p_values_added_later_equal_those_of_the_fit() {
    let (x, mut positives) = bow_categories(200, 2, 6, 3, 4.0, 21);
    positives.push(Vec::new()); // no positives: no AUC, no p-value
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    let with = nested_cv(&data, &small_cfg(), 7).unwrap();
    let cfg0 = NestedCvConfig {
        permutations: 0,
        ..small_cfg()
    };
    let mut later = nested_cv(&data, &cfg0, 7).unwrap();
    assert!(later.categories.iter().all(|c| c.p_value.is_none()));
    permutation_p_values(&mut later, &positives, 99, 7).unwrap();
    assert_eq!(later, with);
    let defined = with
        .categories
        .iter()
        .filter(|c| c.p_value.is_some())
        .count();
    assert!(defined >= 2 && with.categories.last().unwrap().p_value.is_none());
    permutation_p_values(&mut later, &positives, 0, 7).unwrap();
    assert!(later.categories.iter().all(|c| c.p_value.is_none()));
    // the positives must be the result's categories, in range
    assert!(permutation_p_values(&mut later, &positives[1..], 99, 7).is_err());
    let mut out_of_range = positives.clone();
    out_of_range[0].push(200);
    assert!(permutation_p_values(&mut later, &out_of_range, 99, 7).is_err());
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
    assert_eq!(learner.cross_validation().map(|c| c.permutations), Some(10));
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
        let rows = nested_cv_in(&data, &cfg, 9, true, BATCH).unwrap();
        let direct = nested_cv_in(&data, &cfg, 9, false, BATCH).unwrap();
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

// ---- batched fits (`fit_logreg_batch`): the single fit's bits, for every instance ----

/// The bits of every number: equality to the bit (`==` would let 0.0 = −0.0 through).
fn bits<'a>(xs: impl IntoIterator<Item = &'a f64>) -> Vec<u64> {
    xs.into_iter().map(|v| v.to_bits()).collect()
}

/// Every field of a report, the numbers as bits.
fn report_bits(r: &FitReport) -> (usize, usize, u64, u64, u64, bool) {
    (
        r.iterations,
        r.cg_steps,
        r.objective.to_bits(),
        r.grad_norm.to_bits(),
        r.grad_norm0.to_bits(),
        r.converged,
    )
}

/// ±1 labels of `x`'s rows with a fraction `frac` of positives: the top scores of a random
/// direction plus noise (not separable).
fn balanced_labels(x: &Array2<f64>, frac: f64, seed: u64) -> Vec<f64> {
    let mut rng = seeded(seed);
    let dir: Vec<f64> = (0..x.ncols()).map(|_| rng.random::<f64>() - 0.5).collect();
    let score: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| r.iter().zip(&dir).map(|(a, b)| a * b).sum::<f64>() + rng.random::<f64>())
        .collect();
    let mut sorted = score.clone();
    sorted.sort_by(f64::total_cmp);
    let n_pos = ((frac * x.nrows() as f64).round() as usize).clamp(1, x.nrows());
    let cut = sorted[x.nrows() - n_pos];
    score
        .iter()
        .map(|&s| if s >= cut { 1.0 } else { -1.0 })
        .collect()
}

/// One instance of a batch test: labels, cost, starting point.
struct Instance {
    y: Vec<f64>,
    c: f64,
    start: Vec<f64>,
}

/// Each instance fitted alone ([`FitSpace::fit`], i.e. [`fit_logreg`]) and all of them in
/// one batch ([`FitSpace::fit_batch`]): the same weights and reports, to the bit. Returns the
/// reports.
fn batch_equals_single(space: &FitSpace<'_>, inst: &[Instance], what: &str) -> Vec<FitReport> {
    let single: Vec<(Vec<f64>, FitReport)> = inst
        .iter()
        .map(|i| {
            let mut w = i.start.clone();
            let rep = space
                .fit(&i.y, i.c, &mut w, &mut Workspace::default())
                .unwrap();
            (w, rep)
        })
        .collect();
    let mut ws: Vec<Vec<f64>> = inst.iter().map(|i| i.start.clone()).collect();
    let mut wss = vec![Workspace::default(); inst.len()];
    let mut fits: Vec<BatchFit<'_>> = inst
        .iter()
        .zip(&mut ws)
        .zip(&mut wss)
        .map(|((i, w), ws)| BatchFit {
            y: &i.y,
            c: i.c,
            w,
            ws,
        })
        .collect();
    let reps = space.fit_batch(&mut fits);
    assert_eq!(reps.len(), inst.len());
    let mut out = Vec::new();
    for (k, ((w1, r1), (w2, r2))) in single.iter().zip(ws.iter().zip(reps)).enumerate() {
        let r2 = r2.unwrap();
        assert_eq!(report_bits(r1), report_bits(&r2), "{what}, instance {k}");
        assert_eq!(bits(w1), bits(w2), "{what}, instance {k}: weights");
        out.push(r2);
    }
    out
}

#[test]
fn batched_fits_equal_single_fits_to_the_bit() {
    // 50 rows of 90 counts: the row space (50 × 50) and the rows themselves (50 × 90 or 91)
    let (x, _) = bow_categories(50, 2, 44, 1, 0.0, 41);
    assert_eq!(x.ncols(), 90);
    // label balance from half to a single positive, C from 0.001 to 100: very different
    // numbers of Newton iterations
    let fracs = [0.5, 0.1, 0.3, 0.02, 0.85, 0.5];
    let cs = [100.0, 0.001, 1.0, 10.0, 0.03, 3.0];
    let mut spread = Vec::new();
    for bias in [true, false] {
        let cfg = LogRegConfig {
            bias,
            ..Default::default()
        };
        let tight = LogRegConfig {
            tol: 1e-10,
            ..cfg.clone()
        };
        for row_space in [false, true] {
            let cats = if row_space { 1000 } else { 0 };
            let space = FitSpace::new(x.view(), &cfg, cats).unwrap();
            let tight_space = FitSpace::new(x.view(), &tight, cats).unwrap();
            assert_eq!(matches!(space, FitSpace::RowSpace { .. }), row_space);
            let p = space.dim();
            for m in 1..=6 {
                let inst: Vec<Instance> = (0..m)
                    .map(|k| {
                        let y = balanced_labels(&x, fracs[k], 100 + k as u64);
                        let mut start = vec![0.0; p];
                        if k == 2 {
                            // already converged at its start: the tight optimum
                            tight_space
                                .fit(&y, cs[k], &mut start, &mut Workspace::default())
                                .unwrap();
                        } else if k == 4 {
                            // a warm start off the path
                            start.iter_mut().enumerate().for_each(|(j, v)| {
                                *v = 0.01 * ((j % 7) as f64 - 3.0);
                            });
                        }
                        Instance { y, c: cs[k], start }
                    })
                    .collect();
                let what = format!("bias {bias}, row space {row_space}, batch of {m}");
                let reps = batch_equals_single(&space, &inst, &what);
                assert!(reps.iter().all(|r| r.converged), "{what}: {reps:?}");
                if m >= 3 {
                    assert_eq!(reps[2].iterations, 0, "{what}: {:?}", reps[2]);
                }
                if m == 4 {
                    spread.push(reps.iter().map(|r| r.cg_steps).collect::<Vec<_>>());
                }
            }
        }
    }
    // the instances of a batch do finish at very different times
    for s in &spread {
        let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
        assert!(*lo == 0 && *hi >= 10, "{spread:?}");
        let mut distinct = s.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "{spread:?}");
    }
}

#[test]
fn batched_c_paths_equal_single_c_paths_to_the_bit() {
    // the nested CV's use: warm starts along the C grid, workspaces reused; with the
    // iteration cap hit (max_iter = 2) and without
    let (x, y0) = random_problem(120, 10, 7);
    let labels: Vec<Vec<f64>> = [0.5, 0.05, 0.2, 0.7]
        .iter()
        .enumerate()
        .map(|(k, &f)| {
            if k == 0 {
                y0.clone()
            } else {
                balanced_labels(&x, f, 200 + k as u64)
            }
        })
        .collect();
    let grid = NestedCvConfig::default().c_grid;
    for (bias, max_iter) in [(true, 1000), (false, 1000), (true, 2)] {
        let cfg = LogRegConfig {
            bias,
            max_iter,
            tol: 1e-4,
        };
        let p = cfg.n_weights(10);
        let mut single = vec![vec![0.0; p]; 4];
        let mut single_ws = vec![Workspace::default(); 4];
        let mut batch = vec![vec![0.0; p]; 4];
        let mut batch_ws = vec![Workspace::default(); 4];
        let mut capped = 0;
        for &c in &grid {
            let r1: Vec<FitReport> = (0..4)
                .map(|k| {
                    fit_logreg(
                        x.view(),
                        &labels[k],
                        c,
                        &cfg,
                        &mut single[k],
                        &mut single_ws[k],
                    )
                    .unwrap()
                })
                .collect();
            let mut fits: Vec<BatchFit<'_>> = batch
                .iter_mut()
                .zip(&mut batch_ws)
                .zip(&labels)
                .map(|((w, ws), y)| BatchFit { y, c, w, ws })
                .collect();
            let r2 = fit_logreg_batch(x.view(), &cfg, &mut fits);
            for k in 0..4 {
                let r2 = r2[k].as_ref().unwrap();
                assert_eq!(report_bits(&r1[k]), report_bits(r2), "C = {c}, {k}");
                assert_eq!(bits(&single[k]), bits(&batch[k]), "C = {c}, {k}");
                capped += usize::from(!r2.converged);
            }
        }
        assert_eq!(capped > 0, max_iter == 2, "max_iter {max_iter}");
    }
}

#[test]
fn an_invalid_fit_in_a_batch_is_its_error_alone() {
    let (x, y) = random_problem(80, 6, 3);
    let cfg = LogRegConfig::default();
    let y2 = balanced_labels(&x, 0.2, 5);
    let bad = vec![2.0; 80];
    let short = &y[..10];
    let mut w = vec![vec![0.0; 7]; 5];
    let mut wss = vec![Workspace::default(); 5];
    let ys: [&[f64]; 5] = [&y, short, &y2, &bad, &y];
    let cs = [1.0, 1.0, 10.0, 1.0, 0.0];
    let mut fits: Vec<BatchFit<'_>> = w
        .iter_mut()
        .zip(&mut wss)
        .zip(ys.iter().zip(cs))
        .map(|((w, ws), (y, c))| BatchFit { y, c, w, ws })
        .collect();
    let reps = fit_logreg_batch(x.view(), &cfg, &mut fits);
    assert!(reps[1].is_err() && reps[3].is_err() && reps[4].is_err());
    for (k, yk, c) in [(0, &y, 1.0), (2, &y2, 10.0)] {
        let mut w1 = vec![0.0; 7];
        let r1 = fit_logreg(x.view(), yk, c, &cfg, &mut w1, &mut Workspace::default()).unwrap();
        assert_eq!(
            report_bits(&r1),
            report_bits(reps[k].as_ref().unwrap()),
            "{k}"
        );
        assert_eq!(bits(&w1), bits(&w[k]));
    }
    // the invalid ones are untouched
    assert!(w[1].iter().chain(&w[3]).chain(&w[4]).all(|&v| v == 0.0));
    // a batch of none is nothing
    assert!(fit_logreg_batch(x.view(), &cfg, &mut []).is_empty());
}

/// Every number of a nested CV result as bits, and the rest compared with `==`.
fn assert_same_bits(a: &NestedCvResult, b: &NestedCvResult, what: &str) {
    assert_eq!(a, b, "{what}");
    assert_eq!(bits(&a.probabilities), bits(&b.probabilities), "{what}");
    assert_eq!(bits(&a.weights), bits(&b.weights), "{what}");
    assert_eq!(bits(&a.bias), bits(&b.bias), "{what}");
    let opt =
        |v: &[Option<f64>]| -> Vec<Option<u64>> { v.iter().map(|x| x.map(f64::to_bits)).collect() };
    assert_eq!(opt(&a.fold_mean_auc), opt(&b.fold_mean_auc), "{what}");
    for (ca, cb) in a.categories.iter().zip(&b.categories) {
        assert_eq!(opt(&ca.fold_auc), opt(&cb.fold_auc), "{what}");
        assert_eq!(
            ca.mean_auc.map(f64::to_bits),
            cb.mean_auc.map(f64::to_bits),
            "{what}"
        );
        assert_eq!(
            ca.p_value.map(f64::to_bits),
            cb.p_value.map(f64::to_bits),
            "{what}"
        );
        assert_eq!(bits(&ca.chosen_c), bits(&cb.chosen_c), "{what}");
        for (sa, sb) in ca
            .inner_scores
            .iter()
            .flatten()
            .zip(cb.inner_scores.iter().flatten())
        {
            assert_eq!(opt(sa), opt(sb), "{what}");
        }
    }
    match (&a.fold_models, &b.fold_models) {
        (Some(ma), Some(mb)) => {
            for (u, v) in ma.iter().zip(mb) {
                assert_eq!(bits(u), bits(v), "{what}");
            }
        }
        (None, None) => {}
        _ => panic!("{what}: fold models on one side only"),
    }
}

#[test]
fn batched_nested_cv_equals_the_unbatched_to_the_bit() {
    // 7 categories: chunks of 4 and 3 (and 3, 3, 1); 100 images of 164 counts run in the
    // row space, 100 images of 2 × 6 counts on the rows
    let wide = bow_categories(100, 4, 40, 7, 8.0, 17);
    let narrow = bow_categories(100, 2, 5, 7, 4.0, 19);
    for (name, (x, positives)) in [("row space", &wide), ("rows", &narrow)] {
        let data = CategoryData {
            features: x.view(),
            positives,
            genes: None,
        };
        for (scaling, selection, bias) in [
            (Scaling::Raw, SelectionMetric::Auc, true),
            (Scaling::Standardise, SelectionMetric::LogLoss, false),
        ] {
            let cfg = NestedCvConfig {
                permutations: 20,
                scaling,
                selection,
                keep_fold_models: true,
                solver: LogRegConfig {
                    bias,
                    ..Default::default()
                },
                ..Default::default()
            };
            let alone = nested_cv_in(&data, &cfg, 5, true, 1).unwrap();
            for batch in [3, BATCH, 8] {
                let batched = nested_cv_in(&data, &cfg, 5, true, batch).unwrap();
                assert_same_bits(
                    &alone,
                    &batched,
                    &format!("{name}, {scaling:?}, batch {batch}"),
                );
            }
            // a real problem, not zeros everywhere
            assert!(
                alone.categories.iter().all(|c| c.mean_auc.unwrap() > 0.6),
                "{name}"
            );
        }
    }
}

#[test]
fn batched_fits_are_the_same_bits_at_every_vector_width() {
    use dyad_kernels::simd::Isa;
    // d = 45 (not a multiple of any chunk), 37 rows (not a multiple of the row block)
    let (x, y0) = random_problem(37, 45, 11);
    let labels = [
        y0,
        balanced_labels(&x, 0.2, 12),
        balanced_labels(&x, 0.6, 13),
        balanced_labels(&x, 0.05, 14),
        balanced_labels(&x, 0.4, 15),
    ];
    for bias in [true, false] {
        let cfg = LogRegConfig {
            bias,
            tol: 1e-6,
            ..Default::default()
        };
        let p = cfg.n_weights(45);
        for m in [1, 2, 3, 5] {
            let run = |isa: Isa| {
                let mut w = vec![vec![0.0; p]; m];
                let mut wss = vec![Workspace::default(); m];
                let mut fits: Vec<BatchFit<'_>> = w
                    .iter_mut()
                    .zip(&mut wss)
                    .zip(&labels)
                    .map(|((w, ws), y)| BatchFit { y, c: 3.0, w, ws })
                    .collect();
                let reps: Vec<_> = logreg::fit_batch_on(isa, x.view(), &cfg, &mut fits)
                    .into_iter()
                    .map(|r| report_bits(&r.unwrap()))
                    .collect();
                (w.iter().map(bits).collect::<Vec<_>>(), reps)
            };
            let base = run(Isa::Baseline);
            assert!(base.1.iter().all(|r| r.0 > 0), "{:?}", base.1);
            for isa in Isa::available() {
                assert_eq!(run(isa), base, "{isa:?}, bias {bias}, batch of {m}");
            }
        }
    }
}

/// `(f(w), ‖∇f(w)‖)` row by row, in the original order of operations (one dot and one axpy
/// per row, the loss terms summed in row order).
fn row_by_row(x: &Array2<f64>, y: &[f64], c: f64, bias: bool, w: &[f64]) -> (f64, f64) {
    use dyad_kernels::linalg::dot;
    let d = x.ncols();
    let mut g = w.to_vec();
    let mut loss = 0.0;
    for (row, &yi) in x.rows().into_iter().zip(y) {
        let row = row.to_slice().unwrap();
        let mut t = dot(row, &w[..d]);
        if bias {
            t += w[d];
        }
        let zi = yi * t;
        let e = (-zi.abs()).exp();
        let (l, s) = if zi >= 0.0 {
            (e.ln_1p(), 1.0 / (1.0 + e))
        } else {
            (-zi + e.ln_1p(), e / (1.0 + e))
        };
        loss += l;
        let a = c * (s - 1.0) * yi;
        for (gj, xj) in g[..d].iter_mut().zip(row) {
            *gj += a * xj;
        }
        if bias {
            g[d] += a;
        }
    }
    (0.5 * dot(w, w) + c * loss, dot(&g, &g).sqrt())
}

#[test]
fn the_blocked_pass_is_the_row_by_row_arithmetic() {
    use dyad_kernels::simd::Isa;
    // rows not a multiple of the row block, columns over several tiles and not a multiple
    // of any chunk
    let (x, y0) = random_problem(61, 301, 21);
    let labels = [
        y0,
        balanced_labels(&x, 0.3, 22),
        balanced_labels(&x, 0.1, 23),
        balanced_labels(&x, 0.5, 24),
    ];
    for bias in [true, false] {
        let cfg = LogRegConfig {
            bias,
            ..Default::default()
        };
        let p = cfg.n_weights(301);
        for isa in Isa::available() {
            let mut w = vec![vec![0.0; p]; 4];
            let mut wss = vec![Workspace::default(); 4];
            let cs = [0.5, 2.0, 0.01, 30.0];
            let mut fits: Vec<BatchFit<'_>> = w
                .iter_mut()
                .zip(&mut wss)
                .zip(&labels)
                .zip(cs)
                .map(|(((w, ws), y), c)| BatchFit { y, c, w, ws })
                .collect();
            let reps = logreg::fit_batch_on(isa, x.view(), &cfg, &mut fits);
            for k in 0..4 {
                let r = reps[k].as_ref().unwrap();
                assert!(r.iterations > 0);
                let (f, gnorm) = row_by_row(&x, &labels[k], cs[k], bias, &w[k]);
                assert_eq!(r.objective.to_bits(), f.to_bits(), "{isa:?} {k}");
                assert_eq!(r.grad_norm.to_bits(), gnorm.to_bits(), "{isa:?} {k}");
                // ‖∇f(0)‖ = (C/2) ‖Σ y_i x̃_i‖, Σ y_i x̃_i summed in row order
                let mut ys = vec![0.0; p];
                for (row, &yi) in x.rows().into_iter().zip(&labels[k]) {
                    for (s, xj) in ys.iter_mut().zip(row) {
                        *s += yi * xj;
                    }
                    if bias {
                        ys[301] += yi;
                    }
                }
                let g0 = 0.5 * cs[k] * dyad_kernels::linalg::dot(&ys, &ys).sqrt();
                assert_eq!(r.grad_norm0.to_bits(), g0.to_bits(), "{isa:?} {k}");
            }
        }
    }
}
