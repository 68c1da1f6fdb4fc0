use super::standin::{IshStandinConfig, generate, has_expression};
use super::*;
use crate::go::GoData;
use crate::go::random::{RandomGoConfig, random_go};

fn small(seed: u64) -> IshStandinConfig {
    IshStandinConfig {
        genes: 200,
        height: 64,
        width: 128,
        min_category: 5,
        random_terms: 120,
        second_series: 0.1,
        seed,
        ..Default::default()
    }
}

fn rgo(cfg: &IshStandinConfig) -> GoData {
    random_go(&RandomGoConfig {
        terms: cfg.random_terms,
        genes: cfg.genes,
        seed: cfg.seed,
    })
}

fn brain(h: usize, w: usize, y: usize, x: usize) -> bool {
    let (dy, dx) = (
        (y as f64 + 0.5 - h as f64 / 2.0) / (0.46 * h as f64),
        (x as f64 + 0.5 - w as f64 / 2.0) / (0.47 * w as f64),
    );
    dy * dy + dx * dx <= 1.0
}

#[test]
fn random_dag_standin_has_the_promised_structure() {
    let cfg = small(7);
    let (set, truth) = generate(&cfg, &rgo(&cfg)).unwrap();
    let (lo, hi) = cfg.category_bounds();
    assert!(
        set.categories.len() >= 10,
        "{} categories",
        set.categories.len()
    );
    for c in &set.categories {
        assert!((lo..=hi).contains(&c.genes.len()));
        assert!(c.genes.windows(2).all(|w| w[0] < w[1]));
        // A category's genes carry its term's ancestors' categories too.
        assert!(set.ancestors[c.term as usize].contains(&c.term));
    }
    let neural = set.categories.iter().filter(|c| c.neural).count();
    assert!(
        neural > 0 && neural < set.categories.len(),
        "{neural} neural"
    );
    // Every gene has an image; about 10 % have two; blanks were filtered and counted.
    let mut per_gene = vec![0; set.genes.len()];
    for &g in &set.image_gene {
        per_gene[g as usize] += 1;
    }
    assert!(per_gene.iter().all(|&k| k == 1 || k == 2));
    let two = per_gene.iter().filter(|&&k| k == 2).count();
    assert!((5..=40).contains(&two), "{two} genes with two series");
    let n = set.n_images();
    let want = (n as f64 * 0.23 / 0.77).round() as usize;
    assert_eq!(set.discarded_no_expression, want);
    // Positive images of a category are exactly its genes' images.
    let pos = set.positive_images();
    for (c, p) in set.categories.iter().zip(&pos) {
        let k: usize = c.genes.iter().map(|&g| per_gene[g as usize]).sum();
        assert_eq!(p.len(), k);
    }
    // Relations: symmetric, never the gene itself; cell types are planted categories.
    for (_, rel) in set.relations.named() {
        for (a, r) in rel.iter().enumerate() {
            assert!(!r.contains(&(a as u32)));
            for &b in r {
                assert!(rel[b as usize].binary_search(&(a as u32)).is_ok());
            }
        }
    }
    assert_eq!(truth.cell_types.len(), 3);
    assert!(
        truth
            .cell_types
            .iter()
            .all(|&c| truth.programs[c].is_some())
    );
    assert!(set.relations.ppi.iter().map(Vec::len).sum::<usize>() > set.genes.len());
    // IC: the root 0, categories positive.
    assert_eq!(set.ic[0], 0.0);
    assert!(set.categories.iter().all(|c| set.ic[c.term as usize] > 0.0));
}

#[test]
fn images_are_masked_bounded_deterministic_and_expressed() {
    let (set, _) = generate(&small(3), &rgo(&small(3))).unwrap();
    let (again, _) = generate(&small(3), &rgo(&small(3))).unwrap();
    let (other, _) = generate(&small(4), &rgo(&small(4))).unwrap();
    for i in [0, 1, set.n_images() - 1] {
        let img = set.image(i).unwrap();
        assert_eq!(img.dim(), (64, 128));
        assert!(has_expression(&img));
        for ((y, x), &v) in img.indexed_iter() {
            assert!((0.0..=1.0).contains(&v));
            if !brain(64, 128, y, x) {
                assert_eq!(v, 0.0, "({y},{x}) outside the brain");
            }
        }
        assert_eq!(img, again.image(i).unwrap());
        assert_ne!(img, other.image(i).unwrap());
        // Masked images are mostly exactly zero (ABA's background).
        let zeros = img.iter().filter(|&&v| v == 0.0).count();
        assert!(zeros > img.len() / 4, "{zeros} zeros");
    }
}

#[test]
fn diffuse_expression_lights_more_of_the_brain() {
    // Genes in a category with a diffuse extent show more expressed area than the others:
    // the signal the zero-descriptor counts are meant to carry.
    let (set, truth) = generate(&small(11), &rgo(&small(11))).unwrap();
    let lit = |i: usize| set.image(i).unwrap().iter().filter(|&&v| v > 0.0).count() as f64;
    let pos = set.positive_images();
    let (c, _) = truth
        .programs
        .iter()
        .enumerate()
        .filter_map(|(c, p)| p.as_ref().filter(|p| p.extent > 0.15).map(|_| (c, ())))
        .max_by_key(|(c, _)| pos[*c].len())
        .expect("a category with a diffuse extent");
    let inside: Vec<f64> = pos[c].iter().map(|&i| lit(i as usize)).collect();
    let outside: Vec<f64> = (0..set.n_images())
        .filter(|i| pos[c].binary_search(&(*i as u32)).is_err())
        .take(60)
        .map(lit)
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        mean(&inside) > 1.3 * mean(&outside),
        "{} vs {}",
        mean(&inside),
        mean(&outside)
    );
}

#[test]
fn bad_parameters_are_refused() {
    for bad in [
        IshStandinConfig {
            genes: 5,
            ..small(0)
        },
        IshStandinConfig {
            no_expression: 1.0,
            ..small(0)
        },
        IshStandinConfig {
            coverage: f64::NAN,
            ..small(0)
        },
        IshStandinConfig {
            penetrance: 1.5,
            ..small(0)
        },
        IshStandinConfig {
            max_category: Some(2),
            ..small(0)
        },
        IshStandinConfig {
            height: 8,
            ..small(0)
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
    // Categories cannot exist: a clear error.
    let cfg = IshStandinConfig {
        min_category: 1000,
        max_category: Some(1000),
        ..small(0)
    };
    let e = generate(&cfg, &rgo(&cfg)).unwrap_err();
    assert!(e.to_string().contains("no GO category"), "{e}");
}

#[test]
fn coarse_grid_by_hand() {
    let img = Array2::from_shape_fn((4, 6), |(y, x)| (y * 6 + x) as f32);
    let g = coarse_grid(&img, 2, 3);
    // Cell (0, 0): rows 0-1, cols 0-1: 0, 1, 6, 7.
    assert_eq!(g[0], 3.5);
    assert_eq!(g[5], (16.0 + 17.0 + 22.0 + 23.0) / 4.0);
}

/// With the Gene Ontology installed the categories and genes are real.
#[test]
fn real_gene_ontology_standin() {
    let data = std::env::var_os("DYAD_DATA_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "datasets".into());
    let o = crate::go::ontology_candidates(&data)
        .into_iter()
        .find(|p| p.is_file());
    let a = crate::go::annotation_candidates(&data)
        .into_iter()
        .find(|p| p.is_file());
    let (Some(o), Some(a)) = (o, a) else {
        assert!(
            !crate::testdata::required(),
            "DYAD_REQUIRE_DATA is set but GO is not installed"
        );
        eprintln!("SKIPPED: the Gene Ontology is not installed");
        return;
    };
    let onto = crate::go::read_ontology(&o).unwrap();
    let ann = crate::go::read_annotations(&a, &onto, &Default::default()).unwrap();
    let cfg = IshStandinConfig {
        genes: 600,
        height: 64,
        width: 128,
        ..small(1)
    };
    let neural_roots = crate::go::NEURAL_ROOTS
        .iter()
        .filter_map(|r| onto.find(r))
        .collect();
    let go = GoData {
        ontology: onto,
        annotations: ann.clone(),
        neural_roots,
        real: true,
    };
    let (set, _) = generate(&cfg, &go).unwrap();
    assert!(
        set.terms[set.categories[0].term as usize]
            .id
            .starts_with("GO:")
    );
    assert!(set.genes.iter().all(|g| ann.genes.binary_search(g).is_ok()));
    let neural = set.categories.iter().filter(|c| c.neural).count();
    eprintln!(
        "real-GO stand-in: {} genes, {} images, {} categories ({} neural), {}",
        set.genes.len(),
        set.n_images(),
        set.categories.len(),
        neural,
        set.ontology_note
    );
    assert!(set.categories.len() > 20);
    assert!(set.ontology_note.contains("real Gene Ontology"));
}
