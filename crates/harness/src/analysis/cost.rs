//! Where the time of a profile goes, from the cells it recorded: cell time by paper, spec and
//! solver, split by phase — training (the solver's clock on its final run), model selection
//! (early stopping and tuning runs), evaluation (off the solver's clock) and the rest of the
//! cell's wall time (loading or generating its data, building splits, storing). A cell shared
//! by several specs is counted once, under the first spec that names it; by kind, under the
//! paper's figures when any spec of the paper's figures names it, else under our checks (specs
//! with `origin = "ours"`).

use crate::analysis::results::ExperimentResults;
use crate::engine::cache::{Cache, CellResult};
use crate::engine::plan::Plan;
use crate::spec::Origin;
use std::collections::{BTreeMap, BTreeSet};

/// Seconds of cell time by phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    pub train: f64,
    pub selection: f64,
    pub eval: f64,
    /// Wall time outside the three: data, splits, storing.
    pub other: f64,
}

impl Phases {
    /// The phases of one recorded cell.
    pub fn of(c: &CellResult) -> Phases {
        let timed = c.train_seconds + c.selection_seconds + c.eval_seconds;
        Phases {
            train: c.train_seconds,
            selection: c.selection_seconds,
            eval: c.eval_seconds,
            other: (c.wall_seconds - timed).max(0.0),
        }
    }

    pub fn total(&self) -> f64 {
        self.train + self.selection + self.eval + self.other
    }

    fn add(&mut self, o: &Phases) {
        self.train += o.train;
        self.selection += o.selection;
        self.eval += o.eval;
        self.other += o.other;
    }
}

/// One line of a cost table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostRow {
    /// `paper`, `paper/spec` or `paper solver`.
    pub name: String,
    /// Distinct cells of the profile it covers.
    pub cells: usize,
    /// Of those, the cells recorded (cached).
    pub recorded: usize,
    pub phases: Phases,
}

impl CostRow {
    fn add(&mut self, recorded: Option<&Phases>) {
        self.cells += 1;
        if let Some(p) = recorded {
            self.recorded += 1;
            self.phases.add(p);
        }
    }
}

/// The two kinds of cost row: the papers' figures and tables, and our checks.
pub const PAPERS_FIGURES: &str = "the papers' figures and tables";
pub const OUR_CHECKS: &str = "our checks (specs of origin \"ours\")";

/// The recorded cost of a profile: totals, by kind, by paper, by spec and by (paper, solver),
/// each sorted by recorded time, largest first.
#[derive(Debug, Clone, Default)]
pub struct Cost {
    pub total: CostRow,
    /// The papers' figures and tables ([`PAPERS_FIGURES`]) and our checks ([`OUR_CHECKS`]):
    /// sensitivity, peer, speed and stand-in checks the papers did not run. Both rows are
    /// always there, the papers' first.
    pub kinds: Vec<CostRow>,
    pub papers: Vec<CostRow>,
    pub specs: Vec<CostRow>,
    pub solvers: Vec<CostRow>,
    /// The recorded cells' times (seconds, each distinct cell once), for [`makespan`].
    pub cells: Vec<f64>,
}

/// The wall time of running cells of these times on `cores` cores one cell per core, longest
/// first, each to the core that frees first (how `dyad run` orders what it knows, and how a
/// batch system's array of one-core tasks fills a cluster): within 4/3 of the best possible
/// order (Graham's bound), never below the longest cell or the total over the cores.
pub fn makespan(cells: &[f64], cores: usize) -> f64 {
    use std::cmp::Reverse;
    let mut sorted = cells.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut free: std::collections::BinaryHeap<Reverse<u64>> =
        (0..cores.max(1)).map(|_| Reverse(0)).collect();
    // Milliseconds as integers: a heap needs a total order.
    let mut end = 0;
    for t in sorted {
        let Reverse(at) = free.pop().expect("at least one core");
        let done = at + (t.max(0.0) * 1000.0).round() as u64;
        end = end.max(done);
        free.push(Reverse(done));
    }
    end as f64 / 1000.0
}

/// What the recorded cells would take on this machine's cores and on a 64-core cluster,
/// one cell per core ([`makespan`]); cells not recorded are not in it.
pub fn wall_line(cost: &Cost, cores: usize) -> String {
    format!(
        "wall time of the {} recorded cells, one per core, longest first: {} on {cores} cores, \
         {} on 64 (a cluster's array of one-core tasks; its longest cell {})",
        cost.cells.len(),
        hours(makespan(&cost.cells, cores)),
        hours(makespan(&cost.cells, 64)),
        hours(cost.cells.iter().copied().fold(0.0, f64::max))
    )
}

/// The cost the cells of `plans` recorded in `store`.
pub fn recorded(plans: &[Plan], store: &Cache) -> Cost {
    aggregate(plans.iter().flat_map(|p| {
        p.cells
            .iter()
            .enumerate()
            .map(move |(ci, c)| (p, ci, store.get(&c.key).map(|r| Phases::of(&r))))
    }))
}

/// The cost the loaded cells of some experiments recorded (the report's header).
pub fn of_results(results: &[&ExperimentResults<'_>]) -> Cost {
    aggregate(results.iter().flat_map(|r| {
        r.cells
            .iter()
            .enumerate()
            .map(move |(ci, c)| (r.plan, ci, c.as_ref().map(Phases::of)))
    }))
}

/// Sum `(plan, cell index, recorded phases)` by kind, paper, spec and solver, each distinct
/// cell once.
fn aggregate<'p>(cells: impl Iterator<Item = (&'p Plan, usize, Option<Phases>)>) -> Cost {
    let cells: Vec<_> = cells.collect();
    // A cell any spec of a paper's figure names is the paper's, whichever spec comes first.
    let papers_cells: BTreeSet<&str> = cells
        .iter()
        .filter(|(p, _, _)| p.spec.spec.origin == Origin::Paper)
        .map(|&(p, ci, _)| p.cells[ci].key.as_str())
        .collect();
    let mut kinds = [PAPERS_FIGURES, OUR_CHECKS].map(|name| CostRow {
        name: name.into(),
        ..Default::default()
    });
    let mut seen = BTreeSet::new();
    let mut total = CostRow {
        name: "total".into(),
        ..Default::default()
    };
    let (mut papers, mut specs, mut solvers) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let mut times = Vec::new();
    for (p, ci, phases) in cells {
        let c = &p.cells[ci];
        if !seen.insert(c.key.as_str()) {
            continue;
        }
        let paper = p.spec.id.split('/').next().unwrap_or_default().to_string();
        let solver = format!("{paper} {}", p.solvers[c.solver].name);
        for (map, name) in [
            (&mut papers, paper),
            (&mut specs, p.spec.id.clone()),
            (&mut solvers, solver),
        ] {
            map.entry(name.clone())
                .or_insert_with(|| CostRow {
                    name,
                    ..Default::default()
                })
                .add(phases.as_ref());
        }
        let kind = usize::from(!papers_cells.contains(c.key.as_str()));
        kinds[kind].add(phases.as_ref());
        total.add(phases.as_ref());
        times.extend(phases.map(|p| p.total()));
    }
    let sorted = |m: BTreeMap<String, CostRow>| {
        let mut v: Vec<CostRow> = m.into_values().collect();
        v.sort_by(|a, b| b.phases.total().total_cmp(&a.phases.total()));
        v
    };
    Cost {
        total,
        kinds: kinds.into(),
        papers: sorted(papers),
        specs: sorted(specs),
        solvers: sorted(solvers),
        cells: times,
    }
}

/// Seconds as hours with one decimal (`3.2 h`), minutes below an hour, seconds below a minute.
pub fn hours(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// One line: the total and its phases (the report's header, `dyad plan --cost`).
pub fn summary_line(total: &CostRow) -> String {
    let p = &total.phases;
    format!(
        "{} of cell time recorded for {} of {} cells (training {}, model selection {}, \
         evaluation {}, data and the rest {})",
        hours(p.total()),
        total.recorded,
        total.cells,
        hours(p.train),
        hours(p.selection),
        hours(p.eval),
        hours(p.other)
    )
}

/// How the recorded time splits by kind: `the papers' figures and tables 48.7 h (1928 of 1928
/// cells), our checks (specs of origin "ours") 16.5 h (264 of 264 cells)` (the report's
/// header).
pub fn kinds_line(cost: &Cost) -> String {
    cost.kinds
        .iter()
        .map(|k| {
            format!(
                "{} {} ({} of {} cells)",
                k.name,
                hours(k.phases.total()),
                k.recorded,
                k.cells
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cost table (at most `limit` rows) as aligned text.
pub fn table(title: &str, rows: &[CostRow], limit: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{title:<40} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "cells", "recorded", "total", "training", "selection", "eval", "other"
    )];
    for r in rows.iter().take(limit) {
        let p = &r.phases;
        out.push(format!(
            "{:<40} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            r.name,
            r.cells,
            r.recorded,
            hours(p.total()),
            hours(p.train),
            hours(p.selection),
            hours(p.eval),
            hours(p.other)
        ));
    }
    if rows.len() > limit {
        out.push(format!("... and {} more", rows.len() - limit));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_split_the_wall_time_and_never_go_negative() {
        let mut c: CellResult = serde_json::from_value(serde_json::json!({
            "format": 1, "key": "k", "canonical": null, "dataset": "d",
            "dataset_identity": "i", "synthetic": true, "solver": "s", "params": null,
            "repeat": 0, "seed": 0, "train_seconds": 2.0, "selection_seconds": 1.0,
            "eval_seconds": 3.0, "wall_seconds": 10.0, "selected_step": null,
            "git_commit": "", "dyad_version": "", "code": {}, "records": []
        }))
        .unwrap();
        let p = Phases::of(&c);
        assert_eq!(
            (p.train, p.selection, p.eval, p.other),
            (2.0, 1.0, 3.0, 4.0)
        );
        assert_eq!(p.total(), 10.0);
        // Clocks that overlap the wall time (a parallel evaluation) leave no negative rest.
        c.wall_seconds = 5.0;
        assert_eq!(Phases::of(&c).other, 0.0);
        assert_eq!(hours(7200.0), "2.0 h");
        assert_eq!(hours(90.0), "2 min");
        assert_eq!(hours(12.0), "12 s");
    }

    #[test]
    fn the_makespan_places_longest_first_on_the_core_that_frees_first() {
        // 2 cores: 5 | 4, then 3 -> core 2 (4 + 3 = 7), 2 -> core 1 (5 + 2 = 7), 2 -> 9.
        assert_eq!(makespan(&[2.0, 3.0, 5.0, 2.0, 4.0], 2), 9.0);
        // Never below the longest cell, nor the total over the cores; one core: the sum.
        assert_eq!(makespan(&[10.0, 1.0, 1.0], 4), 10.0);
        assert_eq!(makespan(&[1.0; 8], 4), 2.0);
        assert_eq!(makespan(&[1.5, 2.5, 3.0], 1), 7.0);
        assert_eq!(makespan(&[], 2), 0.0);
        // Graham's example: longest first is 4/3 off the best order here (best: 3+3 | 2+2+2).
        assert_eq!(makespan(&[3.0, 3.0, 2.0, 2.0, 2.0], 2), 7.0);
    }
}
