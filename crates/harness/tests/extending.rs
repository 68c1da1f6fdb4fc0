//! The worked examples of `docs/extending.md`, compiled and tested: a baseline
//! (`extending/cosine.rs`, as it would sit in `crates/metric-baselines/src/`), a data set
//! (`extending/wine.rs`, in `crates/datasets/src/wine/`) and a task
//! (`extending/nearest_neighbour.rs`, in `crates/harness/src/tasks/`). Each file here is the
//! example as it would sit in its crate, with that crate's paths spelled from outside
//! (`dyad_metric_baselines::`, `dyad_datasets::`, `dyad_harness::` for `crate::`; paths into
//! other crates, such as the baseline's `dyad_kernels::`, read the same in both); the first
//! test checks that the documentation shows exactly these files.

#[path = "extending/cosine.rs"]
mod cosine;
#[path = "extending/nearest_neighbour.rs"]
mod nearest_neighbour;
#[path = "extending/wine.rs"]
mod wine;

use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, Scorer, seeded};
use dyad_datasets::provider::{DataContext, Provider};
use dyad_harness::tasks::Task;
use dyad_kernels::{Checked, Ranker};
use std::path::Path;

/// Each example, with the crate it belongs in: the documentation carries it with `crate::`.
const EXAMPLES: [(&str, &str, &str); 3] = [
    (
        "extending/cosine.rs",
        "dyad_metric_baselines::",
        include_str!("extending/cosine.rs"),
    ),
    (
        "extending/wine.rs",
        "dyad_datasets::",
        include_str!("extending/wine.rs"),
    ),
    (
        "extending/nearest_neighbour.rs",
        "dyad_harness::",
        include_str!("extending/nearest_neighbour.rs"),
    ),
];

#[test]
fn the_documentation_shows_these_files() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/extending.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    for (file, krate, text) in EXAMPLES {
        let shown = format!("```rust\n{}```\n", text.replace(krate, "crate::"));
        assert!(
            doc.contains(&shown),
            "docs/extending.md does not show crates/harness/tests/{file} (with `{krate}` as \
             `crate::`): update one from the other"
        );
    }
}

/// The model a ranker reports last.
#[derive(Default)]
struct Last(Vec<f64>, u64);

impl Observer for Last {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        let set = LabeledSet::from_dense_rows(
            &[vec![3.0, 4.0], vec![6.0, 8.0], vec![4.0, -3.0]],
            vec![0, 0, 1],
            2,
        );
        self.0 = vec![0.0; 3];
        model.score(set.x.outer_view(0).unwrap(), &set.x, &mut self.0);
        self.1 = at.step;
        Control::Continue
    }
}

/// The baseline through its solver entry: parameters typed and checked (a bad value names
/// its parameter), the learner reports once, at step 0.
#[test]
fn the_cosine_baseline_builds_checks_and_scores() {
    let entry = &cosine::SOLVER;
    assert_eq!(
        (entry.name, entry.family),
        ("cosine", dyad_kernels::solver::RANKER)
    );
    let ok: toml::Value = toml::from_str("epsilon = 0.0").unwrap();
    let built = (entry.build)(ok).unwrap();
    assert!(!built.iterative);
    let learner = built.family::<dyn Ranker>().unwrap();
    let train = LabeledSet::from_dense_rows(&[vec![1.0, 0.0]], vec![0], 1);
    let mut last = Last::default();
    learner
        .fit(&train, &Schedule::new(vec![0]), &mut seeded(1), &mut last)
        .unwrap();
    assert_eq!(last.1, 0);
    assert!((last.0[0] - 1.0).abs() < 1e-15 && (last.0[1] - 1.0).abs() < 1e-15);
    assert_eq!(last.0[2], 0.0);
    let bad: toml::Value = toml::from_str("epsilon = -1.0").unwrap();
    let e = (entry.build)(bad)
        .err()
        .expect("a negative epsilon is refused");
    assert_eq!(e.param, "epsilon", "{e}");
    let unknown: toml::Value = toml::from_str("epsilom = 1.0").unwrap();
    assert!((entry.build)(unknown).is_err());
    assert!(cosine::CosineConfig::default().check().is_ok());
    // The entry is what a crate's list holds; not listed in `dyad_metric_baselines::SOLVERS`
    // here: that is the one line the documentation adds.
    static LIST: dyad_kernels::Solvers = dyad_kernels::Solvers {
        package: "dyad-metric-baselines",
        entries: &[cosine::SOLVER],
    };
    assert_eq!(LIST.entries[0].name, "cosine");
    assert!(dyad_harness::registry::solver("cosine").is_none());
}

/// The data set: real rows from a file in the data directory (identity, shape, load), a
/// malformed line named by its number, and the stand-in with its planted truth.
#[test]
fn the_wine_data_set_reads_real_rows_and_generates_its_standin() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = DataContext::new(dir.path().join("data"), dir.path().join("cache"));
    std::fs::create_dir_all(dir.path().join("data/wine")).unwrap();
    let file = dir.path().join("data/wine/wine.data");
    let mut text = String::new();
    for i in 0..9 {
        let class = 1 + i % 3;
        let row: Vec<String> = (0..13)
            .map(|j| format!("{}", (i * 13 + j) % 7 + class))
            .collect();
        text.push_str(&format!("{class},{}\n", row.join(",")));
    }
    std::fs::write(&file, &text).unwrap();
    let params = serde_json::json!({});
    let r = wine::WineProvider.resolve(&ctx, &params).unwrap();
    assert!(
        !r.synthetic && r.note.starts_with("real UCI Wine"),
        "{}",
        r.note
    );
    assert_eq!(r.shape.as_ref().map(|s| (s.rows, s.dim)), Some((9, 13)));
    let data = (r.loader)().unwrap();
    assert_eq!(data.get::<LabeledSet>().unwrap().n_classes(), 3);
    // A malformed line is an error naming it.
    std::fs::write(&file, format!("{text}4,1,2\n")).unwrap();
    let e = wine::WineProvider.resolve(&ctx, &params).unwrap_err();
    assert!(e.to_string().contains(":10: expected"), "{e}");
    // The stand-in: seeded, SYNTHETIC, its centres kept as the planted truth.
    let s = wine::WineStandinProvider
        .resolve(&ctx, &serde_json::json!({ "per_class": 5 }))
        .unwrap();
    assert!(s.synthetic && s.note.starts_with("SYNTHETIC"));
    let data = (s.loader)().unwrap();
    assert_eq!(data.get::<LabeledSet>().unwrap().n(), 15);
    assert_eq!(data.truth::<Vec<Vec<f64>>>().unwrap().len(), 3);
    let again = wine::WineStandinProvider
        .resolve(&ctx, &serde_json::json!({ "per_class": 5 }))
        .unwrap();
    assert_eq!(s.identity, again.identity);
}

/// The task declares what the harness reads of it.
#[test]
fn the_nearest_neighbour_task_declares_its_table_and_metrics() {
    let t = nearest_neighbour::NearestNeighbourTask;
    assert_eq!(
        (t.table(), t.name(), t.family()),
        ("nearest_neighbour", "nearest-neighbour", "ranker")
    );
    assert!(
        t.headline()
            .iter()
            .all(|h| t.metrics().iter().any(|m| m.name == h.metric))
    );
    // Not registered in `TASKS` here: that is the one line the documentation adds.
    assert!(dyad_harness::tasks::task("nearest_neighbour").is_none());
}
