//! Every registered ranker (the `ranker` family, Python peers aside), trained briefly, ranks
//! data with an empty row and duplicated rows by the documented rules of
//! `dyad_core::metrics`: duplicates score alike and their tie is scored as the mean over both
//! orders (so which of two twins comes first in the file cannot matter), and a row without a
//! feature is ranked last and left out as a query (so adding it changes no precision@k and
//! no AP of a query it is not relevant to). The 20 Newsgroups audit found distance scorers
//! (Euclidean, ITML, LEGO) ranking empty documents first; this is the test that would have
//! caught it, for every scorer the registry holds now or later. The same run checks what
//! each ranker declares for planning: the names of its model's statistics and a memory
//! estimate at least the size of the model it reports.

use dyad_core::metrics::{Retrieval, evaluate_retrieval};
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, Scorer, seeded};
use dyad_harness::registry::{RANKER, SOLVERS};
use dyad_kernels::Ranker;
use rand::Rng as _;

const D: usize = 16;

fn unit_row(rng: &mut dyad_core::Rng) -> Vec<f64> {
    let mut r: Vec<f64> = (0..D)
        .map(|_| {
            if rng.random_bool(0.6) {
                rng.random_range(0.1..1.0)
            } else {
                0.0
            }
        })
        .collect();
    if r.iter().all(|&v| v == 0.0) {
        r[0] = 1.0;
    }
    let n = r.iter().map(|v| v * v).sum::<f64>().sqrt();
    r.iter_mut().for_each(|v| *v /= n);
    r
}

/// Three classes of 10 training rows each, every row with its class's dominant feature.
fn train_set() -> LabeledSet {
    let mut rng = seeded(11);
    let mut rows = Vec::new();
    let mut labels = Vec::new();
    for c in 0..3u32 {
        for _ in 0..10 {
            let mut r = unit_row(&mut rng);
            r[c as usize] += 2.0;
            let n = r.iter().map(|v| v * v).sum::<f64>().sqrt();
            r.iter_mut().for_each(|v| *v /= n);
            rows.push(r);
            labels.push(c);
        }
    }
    LabeledSet::from_dense_rows(&rows, labels, 4)
}

/// Test rows of classes 0–2, a pair of identical rows with different labels (indices 3 and
/// 4), and, when `empty`, an all-zero row of class 3 (relevant to no other row) at index 6.
fn test_rows(swap_twins: bool, empty: bool) -> LabeledSet {
    let mut rng = seeded(12);
    let mut rows: Vec<Vec<f64>> = (0..9).map(|_| unit_row(&mut rng)).collect();
    let mut labels = vec![0, 1, 2, 0, 1, 2, 0, 1, 2];
    rows[4] = rows[3].clone();
    if swap_twins {
        labels.swap(3, 4);
    }
    if empty {
        rows.insert(6, vec![0.0; D]);
        labels.insert(6, 3);
    }
    LabeledSet::from_dense_rows(&rows, labels, 4)
}

/// Keeps the last model's evaluations on the degenerate sets.
struct Probe {
    name: &'static str,
    last: Option<(Retrieval, Retrieval, Retrieval, Vec<f64>)>,
    statistics: Vec<(&'static str, f64)>,
}

impl Observer for Probe {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        if at.last {
            let (a, swapped, without) = (
                test_rows(false, true),
                test_rows(true, true),
                test_rows(false, false),
            );
            let mut scores = vec![0.0; a.n()];
            model.score(a.x.outer_view(0).unwrap(), &a.x, &mut scores);
            self.last = Some((
                evaluate_retrieval(model, &a, &a, true, 12),
                evaluate_retrieval(model, &swapped, &swapped, true, 12),
                evaluate_retrieval(model, &without, &without, true, 12),
                scores,
            ));
            self.statistics = model.statistics();
        }
        let _ = self.name;
        Control::Continue
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn every_ranker_ties_duplicates_and_ranks_empty_rows_last() {
    let train = train_set();
    let mut checked = Vec::new();
    for entry in SOLVERS
        .iter()
        .filter(|e| e.family == RANKER && !e.name.starts_with("py:"))
    {
        // Default parameters, except where a solver has none for a parameter.
        let mut params = toml::Table::new();
        if entry.name == "oasis-parallel" {
            params.insert("rankers".into(), toml::Value::Integer(2));
        }
        let built = (entry.build)(toml::Value::Table(params))
            .unwrap_or_else(|e| panic!("{}: default parameters: {e}", entry.name));
        let ranker: &dyn Ranker = built
            .family::<dyn Ranker>()
            .unwrap_or_else(|| panic!("{} is no ranker", entry.name));
        let mut probe = Probe {
            name: entry.name,
            last: None,
            statistics: Vec::new(),
        };
        let schedule = Schedule::new(vec![0, 50]);
        ranker
            .fit(&train, &schedule, &mut seeded(3), &mut probe)
            .unwrap_or_else(|e| panic!("{}: fit: {e}", entry.name));
        let (a, swapped, without, scores) = probe
            .last
            .unwrap_or_else(|| panic!("{}: no final model reported", entry.name));
        let n = entry.name;
        // Twins score alike for a query, so only the tie rule decides between them.
        assert_eq!(
            scores[3].to_bits(),
            scores[4].to_bits(),
            "{n}: twins differ"
        );
        // The file order of two twins with different labels does not matter.
        assert!(
            close(a.map, swapped.map),
            "{n}: mAP {} vs {}",
            a.map,
            swapped.map
        );
        for (k, (x, y)) in a.precision.iter().zip(&swapped.precision).enumerate() {
            assert!(close(*x, *y), "{n}: precision@{} {x} vs {y}", k + 1);
        }
        // The empty row is left out as a query and ranked last as a candidate.
        assert_eq!(a.empty_queries, 1, "{n}");
        assert_eq!(a.queries, without.queries, "{n}");
        assert!(
            close(a.map, without.map),
            "{n}: mAP {} vs {} without the empty row",
            a.map,
            without.map
        );
        for (k, (x, y)) in a.precision.iter().zip(&without.precision).enumerate() {
            assert!(
                close(*x, *y),
                "{n}: precision@{} {x} vs {y} without the empty row",
                k + 1
            );
        }
        // Its model's statistics are among those it declares (what a spec may name at plan
        // time), and its memory estimate, a lower bound, holds at least the model it reports.
        for (stat, _) in &probe.statistics {
            assert!(
                ranker.statistics().contains(stat),
                "{n}: statistic `{stat}` not declared in {:?}",
                ranker.statistics()
            );
        }
        if let Some(&(_, bytes)) = probe.statistics.iter().find(|(s, _)| *s == "model_bytes") {
            let estimate = ranker.memory(train.n(), train.dim());
            assert!(
                estimate.is_some_and(|e| e as f64 >= bytes),
                "{n}: estimate {estimate:?} below the model's {bytes} bytes"
            );
        }
        checked.push(n);
    }
    // The registry's distance scorers and learners are all covered.
    for must in [
        "euclidean",
        "oasis",
        "itml",
        "lego",
        "loreta",
        "d-aroma",
        "f-aroma",
        "lmnn",
    ] {
        assert!(checked.contains(&must), "{must} not checked: {checked:?}");
    }
}
