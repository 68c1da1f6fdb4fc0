//! The report: `REPORT.md` and the HTML pages in the report directory, one section per
//! experiment with its figures, our numbers beside the paper's, and a verdict per claim. It
//! opens with an overview generated from the specs and cells: every paper and experiment with
//! its data (real or a SYNTHETIC stand-in), its state and its claims' verdict counts, linked
//! to its section. In HTML the overview is `index.html` and each paper has a page of its own
//! ([`html_pages`]); `REPORT.md` holds everything in one file. Both are rendered from one
//! document model, so they always say the same thing.

use crate::analysis::check::check;
use crate::analysis::claims::{Verdict, judge};
use crate::analysis::results::{ExperimentResults, Stat};
use crate::engine::provenance::DYAD_VERSION;
use crate::spec::profile::Profile;
use crate::spec::{At, Origin, Selector};
use crate::tasks::Metric;
use std::path::{Path, PathBuf};

/// Where the report of a profile lives: `results/report/` for `paper`, `results/report-quick/`
/// for `quick` (so a CI-sized run never overwrites the paper-sized report).
pub fn report_dir(results: &Path, profile: Profile) -> PathBuf {
    match profile {
        Profile::Paper => results.join("report"),
        Profile::Quick => results.join("report-quick"),
    }
}

/// A block of the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Para(String),
    Image {
        src: String,
        alt: String,
    },
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    List(Vec<String>),
}

/// One experiment's outputs, as far as they exist.
pub struct Section<'a> {
    pub results: ExperimentResults<'a>,
    /// PNG figure paths relative to the report directory.
    pub figures: Vec<String>,
    /// Table paths (for the reader to find the tidy data).
    pub tables: Vec<PathBuf>,
}

/// A cell's artifact with what the report says of its origin.
pub struct CellArtifact<'r> {
    pub artifact: &'r crate::engine::cache::Artifact,
    /// `data set · solver · repeat r` (SYNTHETIC on a stand-in).
    pub context: String,
    /// File name of a picture in the report's `figures/` directory (tables: `None`).
    pub picture: Option<String>,
}

/// Every artifact of an experiment's cached cells, in plan order.
pub fn artifacts<'r>(res: &'r ExperimentResults<'_>) -> Vec<CellArtifact<'r>> {
    let plan = res.plan;
    let mut out = Vec::new();
    for (cell, r) in plan.cells.iter().zip(&res.cells) {
        let Some(r) = r else { continue };
        let d = &plan.datasets[cell.dataset];
        let sv = &plan.solvers[cell.solver];
        for a in &r.artifacts {
            let picture = matches!(a.body, crate::engine::cache::ArtifactBody::Picture { .. })
                .then(|| {
                    let slug: String =
                        format!("{}-{}-{}-r{}", plan.spec.id, a.id, d.id, cell.repeat)
                            .chars()
                            .map(|c| {
                                if c.is_ascii_alphanumeric() || c == '-' {
                                    c
                                } else {
                                    '-'
                                }
                            })
                            .collect();
                    format!("{slug}-{}.png", &cell.key[..8])
                });
            out.push(CellArtifact {
                artifact: a,
                context: format!(
                    "{}{} · {} · repeat {}",
                    d.id,
                    d.tag(),
                    sv.label,
                    cell.repeat
                ),
                picture,
            });
        }
    }
    out
}

fn fmt_value(metric: &Metric, v: f64) -> String {
    metric.format(v)
}

fn fmt_stat(metric: &Metric, s: &Stat) -> String {
    format!(
        "{} ± {} (n={})",
        fmt_value(metric, s.mean),
        fmt_value(metric, s.sd),
        s.n
    )
}

/// The paper's number as printed: value ± sd, or its text (e.g. "*").
fn paper_value(
    metric: &Metric,
    value: Option<f64>,
    sd: Option<f64>,
    text: Option<&str>,
    scale: f64,
) -> String {
    match (value, text) {
        (_, Some(t)) => t.to_string(),
        (Some(v), None) => match sd {
            Some(sd) => format!(
                "{} ± {}",
                fmt_value(metric, v * scale),
                fmt_value(metric, sd * scale)
            ),
            None => fmt_value(metric, v * scale),
        },
        (None, None) => "—".into(),
    }
}

fn verdict_mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "✅ holds",
        Verdict::DoesNotHold => "❌ does not hold",
        Verdict::NotDistinguishable => "🟰 not distinguishable",
        Verdict::NotComparable => "➖ not comparable",
    }
}

/// Verdict counts: holds, does not hold, not distinguishable, not comparable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally([usize; 4]);

impl Tally {
    fn add(&mut self, v: Verdict) {
        self.0[match v {
            Verdict::Holds => 0,
            Verdict::DoesNotHold => 1,
            Verdict::NotDistinguishable => 2,
            Verdict::NotComparable => 3,
        }] += 1;
    }

    fn total(&self) -> usize {
        self.0.iter().sum()
    }

    fn merge(&mut self, other: &Tally) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [h, n, d, c] = self.0;
        write!(
            f,
            "{h} hold, {n} do not hold, {d} not distinguishable, {c} not comparable"
        )
    }
}

/// Claim verdicts counted by whose claim it is (the paper's or our diagnostic) and by the
/// data it read (real, or a SYNTHETIC stand-in: a shape check).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    real: Tally,
    synthetic: Tally,
    ours_real: Tally,
    ours_synthetic: Tally,
}

impl Counts {
    fn add(&mut self, ours: bool, synthetic: bool, v: Verdict) {
        match (ours, synthetic) {
            (false, false) => self.real.add(v),
            (false, true) => self.synthetic.add(v),
            (true, false) => self.ours_real.add(v),
            (true, true) => self.ours_synthetic.add(v),
        }
    }

    fn merge(&mut self, o: &Counts) {
        self.real.merge(&o.real);
        self.synthetic.merge(&o.synthetic);
        self.ours_real.merge(&o.ours_real);
        self.ours_synthetic.merge(&o.ours_synthetic);
    }

    fn ours(&self) -> usize {
        self.ours_real.total() + self.ours_synthetic.total()
    }

    /// The per-paper line under a paper's heading.
    fn paper_line(&self) -> String {
        format!(
            "{PAPER_COUNTS}{}. Shape checks on SYNTHETIC data: {}. Our diagnostics (not the \
             paper's claims) on real data: {}; on SYNTHETIC data: {}.",
            self.real, self.synthetic, self.ours_real, self.ours_synthetic
        )
    }
}

/// How the per-paper count line opens.
const PAPER_COUNTS: &str = "Claims of the paper on real data: ";

/// The claims of a section, counted (see [`Counts`]).
fn tallies(res: &ExperimentResults<'_>) -> Counts {
    let mut counts = Counts::default();
    for c in &res.plan.spec.spec.claims {
        let o = judge(res, c);
        counts.add(o.origin == Origin::Ours, o.synthetic, o.verdict);
    }
    counts
}

/// The lines of an experiment's claims (see [`judged_line_with`]).
fn judged_lines<'c>(
    res: &ExperimentResults<'_>,
    claims: impl IntoIterator<Item = &'c crate::spec::Claim>,
) -> Vec<String> {
    // The experiment's grid edges and caps, counted once for all its claims.
    let edges = crate::analysis::edges::edges(res);
    let caps = crate::analysis::edges::caps(res);
    claims
        .into_iter()
        .map(|c| judged_line_with(res, c, &edges, &caps))
        .collect()
}

/// One claim's line (see [`judged_lines`]).
#[cfg(test)]
fn judged_line(res: &ExperimentResults<'_>, c: &crate::spec::Claim) -> String {
    judged_lines(res, [c]).remove(0)
}

/// A claim's line with, after its numbers, the chosen fits of its solvers (the claimed one and
/// the one it is compared with) that stopped at their iteration cap: a verdict on fits that
/// did not converge says so (issue 42 §4), and so does one resting on a choice at a grid's edge
/// (`edges`: the experiment's). A claim on a timing (seconds per step or iteration) is about
/// cost, not about where a fit ends: timing specs run a fixed budget of iterations on purpose,
/// and their lines carry no such warning, but say when their cells were timed on more than
/// one machine.
fn judged_line_with(
    res: &ExperimentResults<'_>,
    c: &crate::spec::Claim,
    edges: &[crate::analysis::edges::EdgeCount],
    caps: &[crate::analysis::edges::CapCount],
) -> String {
    let mut o = judge(res, c);
    let named = |s: &crate::engine::plan::SolverInstance| {
        [Some(&c.solver), c.versus.as_ref()]
            .into_iter()
            .flatten()
            .any(|n| s.answers_to(n))
    };
    if res.plan.metric(&c.metric).is_timing(&c.metric) {
        o.detail.push_str(&machines_note(res, c, named));
        return claim_line(&o);
    }
    let labels: Vec<&str> = res
        .plan
        .solvers
        .iter()
        .filter(|s| named(s))
        .map(|s| s.label.as_str())
        .collect();
    let capped: Vec<String> = caps
        .iter()
        .filter(|x| x.at_cap > 0 && labels.contains(&x.solver.as_str()))
        .map(|x| {
            format!(
                "{} stopped at its cap of {} iterations in {} of {} chosen fits",
                x.solver, x.cap, x.at_cap, x.fits
            )
        })
        .collect();
    if !capped.is_empty() {
        o.detail
            .push_str(&format!(" ⚠ not converged: {}", capped.join("; ")));
    }
    let edges = crate::analysis::edges::flagged_phrases(res, edges, named);
    if !edges.is_empty() {
        o.detail
            .push_str(&format!(" ⚠ tuned on a grid edge: {}", edges.join("; ")));
    }
    claim_line(&o)
}

/// A timing claim whose cells were timed on more than one machine (or partly on one not
/// recorded) says so and counts the cells of each: its ratio mixes clocks. Empty when every
/// cell it reads names one machine, or none does (cells from before machines were recorded).
fn machines_note(
    res: &ExperimentResults<'_>,
    c: &crate::spec::Claim,
    named: impl Fn(&crate::engine::plan::SolverInstance) -> bool,
) -> String {
    let plan = res.plan;
    let datasets: Vec<&String> = c.datasets.iter().chain(&c.versus_dataset).collect();
    let mut by: std::collections::BTreeMap<Option<&str>, usize> = Default::default();
    for (cell, r) in plan.cells.iter().zip(&res.cells) {
        let Some(r) = r else { continue };
        let in_claim = datasets.is_empty()
            || datasets
                .iter()
                .any(|d| **d == plan.datasets[cell.dataset].id);
        if in_claim && named(&plan.solvers[cell.solver]) {
            *by.entry(r.machine.as_deref()).or_default() += 1;
        }
    }
    if by.len() < 2 || by.keys().all(Option::is_none) {
        return String::new();
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(m, n)| format!("{} ({n} cells)", m.unwrap_or("machine not recorded")))
        .collect();
    format!(
        " ⚠ timed on more than one machine, so the ratio mixes their clocks: {}",
        parts.join("; ")
    )
}

/// One claim line: on a stand-in, a shape check marked SYNTHETIC; our diagnostic marked so;
/// a claim of the paper followed by its words and where they are (a `> ` line, drawn under
/// the verdict).
fn claim_line(o: &crate::analysis::claims::Outcome) -> String {
    format_claim(
        o.synthetic,
        o.origin,
        o.verdict,
        &o.text,
        &o.id,
        &o.detail,
        o.quote.as_deref().zip(o.section.as_deref()),
    )
}

fn format_claim(
    synthetic: bool,
    origin: Origin,
    verdict: Verdict,
    text: &str,
    id: &str,
    detail: &str,
    quote: Option<(&str, &str)>,
) -> String {
    let mut line = format!(
        "{}{}{} — {text} [{id}]: {detail}",
        if synthetic { SHAPE_CHECK } else { "" },
        if origin == Origin::Ours { OURS } else { "" },
        verdict_mark(verdict),
    );
    if let Some((q, section)) = quote {
        let q: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
        line.push_str(&format!("\n{QUOTE}“{q}” — {section}"));
    }
    line
}

/// Build the document from the cells in this cache: a section whose cells are not all
/// there says NOT RUN (no cell computed) or INCOMPLETE (how many cells each data set still
/// misses, which data sets are complete), and shows the PARTIAL figures of its complete
/// data sets. Nothing is carried over from an earlier report: the committed paper report is
/// `results/archive` imported into an empty cache and rendered (CI checks it byte for byte).
pub fn document(sections: &[Section<'_>], profile: Profile) -> Vec<Block> {
    let mut doc = vec![Block::Heading(
        1,
        format!("dyad reproduction report — profile `{profile}`"),
    )];
    let counts: Vec<Counts> = sections.iter().map(|s| tallies(&s.results)).collect();
    let sum = |pick: &dyn Fn(usize) -> bool| {
        let mut c = Counts::default();
        for i in (0..counts.len()).filter(|&i| pick(i)) {
            c.merge(&counts[i]);
        }
        c
    };
    let all = sum(&|_| true);
    // The recorded cell time, and its wall time one cell per core on this project's 2-core
    // machine and on a 64-core cluster (a fixed core count: the same cells, the same bytes).
    let cost = {
        let computed: Vec<&ExperimentResults<'_>> = sections.iter().map(|s| &s.results).collect();
        let cost = crate::analysis::cost::of_results(&computed);
        format!(
            "{}; by kind, {}; {}",
            crate::analysis::cost::summary_line(&cost.total),
            crate::analysis::cost::kinds_line(&cost),
            crate::analysis::cost::wall_line(&cost, 2)
        )
    };
    doc.push(Block::Para(format!(
        "{GENERATED} {DYAD_VERSION} from the cells in its cache, each of which records the code \
         that computed it. {} experiments; {cost} (`dyad plan --cost` says where it goes). \
         Claims of the papers judged on real data: {}. Shape checks of the \
         papers' claims on SYNTHETIC stand-ins or simulated data ({} claims; they check that \
         the pipeline behaves, never confirm the paper): {}. Our own diagnostics, not claims \
         of the papers ({} claims): on real data {}; on SYNTHETIC data {}. Each claim of a \
         paper is printed with the paper's words it tests. A comparison holds only when it \
         exceeds the spread over splits (paired t-test at 95 %); a number the paper states \
         holds when its 95 % interval lies within the stated tolerance of the paper's. \
         Percentages are mean ± SD over repeats; figure error bars are s.e.m. unless the \
         figure's title says otherwise.",
        sections.len(),
        all.real,
        all.synthetic.total(),
        all.synthetic,
        all.ours(),
        all.ours_real,
        all.ours_synthetic,
    )));
    let mut paper = String::new();
    // Where each section starts in `doc` (its heading), for the overview.
    let mut starts = Vec::with_capacity(sections.len());
    for s in sections {
        let plan = s.results.plan;
        let spec = &plan.spec.spec;
        if spec.paper != paper {
            paper = spec.paper.clone();
            doc.push(Block::Heading(2, paper.to_uppercase()));
            let c = sum(&|j| sections[j].results.plan.spec.spec.paper == paper);
            doc.push(Block::Para(c.paper_line()));
        }
        starts.push(doc.len());
        doc.push(Block::Heading(
            3,
            format!("{} — {}: {}", plan.spec.id, spec.figure, spec.title),
        ));
        if !spec.description.is_empty() {
            doc.push(Block::Para(spec.description.trim().to_string()));
        }
        doc.push(Block::List(
            plan.datasets
                .iter()
                .map(|d| {
                    let rows = d
                        .resolved
                        .shape
                        .as_ref()
                        .and_then(|s| s.rows_line())
                        .map(|r| format!("; rows: {r}"))
                        .unwrap_or_default();
                    format!(
                        "data `{}`: {} (content identity {}){rows}",
                        d.id,
                        d.resolved.note,
                        &d.resolved.identity[..12]
                    )
                })
                .collect(),
        ));
        let res = &s.results;
        if res.cells.iter().any(Option::is_some) {
            doc.push(Block::Para(crate::analysis::check::sanity_summary(res)));
            if let Some(line) = crate::analysis::edges::summary(res) {
                doc.push(Block::Para(line));
            }
        }
        if !res.complete() {
            // Which data sets are done and which wait, so a half-run spec says how far it got.
            let missing = res.missing_by_dataset();
            let (mut waiting, mut done) = (Vec::new(), Vec::new());
            for (d, &m) in plan.datasets.iter().zip(&missing) {
                if m > 0 {
                    waiting.push(format!("`{}` {m}", d.id));
                } else {
                    done.push(format!("`{}`", d.id));
                }
            }
            let (lead, progress) = if res.missing() == res.cells.len() {
                (NOT_RUN, String::new())
            } else {
                (
                    INCOMPLETE,
                    format!(
                        " Missing by data set: {}; complete: {} (figures, tables and claims \
                         appear when every cell is computed; until then the summary and the \
                         PARTIAL figures below show the complete data sets only).",
                        waiting.join(", "),
                        if done.is_empty() {
                            "none".to_string()
                        } else {
                            done.join(", ")
                        }
                    ),
                )
            };
            doc.push(Block::Para(format!(
                "{lead} `{profile}`: {} of {} cells are missing.{progress} Run `dyad reproduce {} --profile {profile}`.",
                res.missing(),
                res.cells.len(),
                plan.spec.id
            )));
            if !done.is_empty() {
                doc.push(summary_table(res, &|d| missing[d] == 0));
            }
            // The plots restricted to the complete data sets, titled PARTIAL.
            for f in &s.figures {
                doc.push(Block::Image {
                    src: f.clone(),
                    alt: format!("{} {} (partial)", spec.figure, spec.title),
                });
            }
            // The claims that read complete data sets only are judged already; the others
            // are listed as not run.
            let ready = spec
                .claims
                .iter()
                .filter(|c| crate::analysis::claims::ready(res, c))
                .count();
            if ready > 0 {
                doc.push(Block::Para(format!(
                    "Claims ({ready} of {} judged: the others read data sets that still miss cells):",
                    spec.claims.len()
                )));
                doc.push(Block::List(judged_lines(res, &spec.claims)));
            }
            continue;
        }
        let stale = res.stale_code();
        if !stale.is_empty() {
            doc.push(Block::Para(format!(
                "WARNING: {} of {} cells were computed by code that has changed since ({}). \
                 If the change alters results, bump that solver's, task's or data set's \
                 version to recompute exactly those cells.",
                res.stale_cells(),
                res.cells.len(),
                stale
                    .iter()
                    .map(|(what, n)| format!("{what}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for f in &s.figures {
            doc.push(Block::Image {
                src: f.clone(),
                alt: format!("{} {}", spec.figure, spec.title),
            });
        }
        for a in artifacts(res) {
            doc.push(Block::Para(format!(
                "{} ({}):",
                a.artifact.title, a.context
            )));
            match (&a.artifact.body, &a.picture) {
                (crate::engine::cache::ArtifactBody::Table { head, rows }, _) => {
                    doc.push(Block::Table {
                        head: head.clone(),
                        rows: rows.clone(),
                    });
                }
                (_, Some(p)) => doc.push(Block::Image {
                    src: format!("figures/{p}"),
                    alt: a
                        .artifact
                        .title
                        .split(':')
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                }),
                _ => {}
            }
        }
        doc.push(summary_table(res, &|_| true));
        for t in &spec.tables {
            doc.push(Block::Para(format!("{} (ours / paper):", t.title)));
            doc.extend(pivot_tables(res, t));
        }
        if !spec.references.is_empty() {
            doc.push(Block::Para("Our numbers beside the paper's:".into()));
            let rows = spec
                .references
                .iter()
                .map(|r| {
                    let ours = res
                        .select(&r.selector())
                        .ok()
                        .and_then(|v| Stat::of(&v))
                        .map(|st| fmt_stat(&plan.metric(&r.metric), &st))
                        .unwrap_or_else(|| "—".into());
                    let tag = plan
                        .datasets
                        .iter()
                        .find(|d| d.id == r.dataset)
                        .map_or("", |d| d.tag());
                    vec![
                        format!("{}{tag}", r.dataset),
                        r.solver.clone(),
                        format!("{} ({})", plan.metric_label(&r.metric, r.k), r.set),
                        ours,
                        paper_value(
                            &plan.metric(&r.metric),
                            r.value,
                            r.sd,
                            r.text.as_deref(),
                            1.0,
                        ),
                        r.source.clone(),
                    ]
                })
                .collect();
            doc.push(Block::Table {
                head: ["data", "solver", "metric", "ours", "paper", "source"]
                    .map(String::from)
                    .to_vec(),
                rows,
            });
        }
        if !spec.claims.is_empty() {
            doc.push(Block::Para("Claims:".into()));
            doc.push(Block::List(judged_lines(res, &spec.claims)));
        }
        let checks = check(res);
        if !checks.is_empty() {
            let skipped = checks.iter().filter(|c| c.skipped.is_some()).count();
            let checks: Vec<_> = checks.into_iter().filter(|c| c.skipped.is_none()).collect();
            let bad: Vec<String> = checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.what, c.problem.clone().unwrap_or_default()))
                .collect();
            let outside = if bad.is_empty() {
                String::new()
            } else {
                format!("; outside: {}", bad.join("; "))
            };
            let skipped = if skipped > 0 {
                format!("; {skipped} skipped (set for other data)")
            } else {
                String::new()
            };
            doc.push(Block::Para(format!(
                "Expectation bands ({profile}): {}/{} within band{outside}{skipped}.",
                checks.len() - bad.len(),
                checks.len(),
            )));
        }
        if !spec.choices.is_empty() {
            doc.push(Block::Para("Choices where the paper is ambiguous:".into()));
            doc.push(Block::List(
                spec.choices
                    .iter()
                    .map(|c| format!("{}: {} — {}", c.topic, c.choice, c.reason))
                    .collect(),
            ));
        }
        if !s.tables.is_empty() {
            doc.push(Block::Para(format!(
                "Tidy results: {}",
                s.tables
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let entries: Vec<Entry> = sections
        .iter()
        .zip(&starts)
        .zip(&counts)
        .map(|((s, &at), c)| {
            let spec = &s.results.plan.spec.spec;
            Entry::read(&spec.paper, &doc[at..], *c, spec.references.len())
        })
        .collect();
    // After the title and the summary paragraph.
    let rest = doc.split_off(2);
    doc.extend(overview(&entries));
    doc.extend(rest);
    doc
}

/// The heading of the report's overview: every paper and experiment with its verdict counts,
/// its data and its state, linked to its section (the HTML report's `index.html`).
pub const OVERVIEW: &str = "Overview";

/// A heading's anchor as GitHub derives it from a Markdown heading (and as [`to_html`] sets
/// it as the heading's `id`): lower case; letters, digits, `-` and `_` kept; each space a
/// `-`; everything else dropped. `oasis/fig5 — J-F5: mAP` → `oasisfig5--j-f5-map`.
pub fn anchor(heading: &str) -> String {
    let mut out = String::new();
    for c in heading.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if c == ' ' {
            out.push('-');
        }
    }
    out
}

/// The file of a paper's page in the HTML report (`oasis.html`), named by the anchor of its
/// heading.
pub fn paper_page(paper: &str) -> String {
    format!("{}.html", anchor(paper))
}

/// What the overview says of one experiment, read from its section as the document holds it.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    paper: String,
    id: String,
    figure: String,
    anchor: String,
    /// Its data sets: (id, SYNTHETIC), from the section's data list.
    data: Vec<(String, bool)>,
    state: String,
    counts: Counts,
    /// The paper's numbers the spec sets beside ours (`[[references]]`).
    numbers: usize,
}

impl Entry {
    /// `blocks`: the section from its heading on (anything after its end is ignored).
    fn read(paper: &str, blocks: &[Block], counts: Counts, numbers: usize) -> Self {
        let heading = match blocks.first() {
            Some(Block::Heading(_, t)) => t.clone(),
            _ => String::new(),
        };
        let end = blocks
            .iter()
            .skip(1)
            .position(|b| matches!(b, Block::Heading(l, _) if *l <= 3))
            .map_or(blocks.len(), |i| i + 1);
        let blocks = &blocks[..end];
        let (id, rest) = heading.split_once(" — ").unwrap_or((&heading, ""));
        let figure = rest.split_once(": ").map_or(rest, |(f, _)| f);
        let data = listed_data(blocks).collect();
        let para = |lead: &str| {
            blocks.iter().find_map(|b| match b {
                Block::Para(t) => t.strip_prefix(lead),
                _ => None,
            })
        };
        // `… `profile`: N of M cells are missing.`
        let missing = |rest: &str| {
            let (_, r) = rest.split_once("`: ")?;
            let w: Vec<&str> = r.split_whitespace().take(3).collect();
            Some(format!("{} of {} cells missing", w.first()?, w.get(2)?))
        };
        let state = if let Some(rest) = para(INCOMPLETE) {
            format!(
                "INCOMPLETE{}",
                missing(rest).map(|m| format!(": {m}")).unwrap_or_default()
            )
        } else if para(NOT_RUN).is_some() {
            "NOT RUN".into()
        } else {
            "complete".into()
        };
        Self {
            paper: paper.to_string(),
            id: id.to_string(),
            figure: figure.to_string(),
            anchor: anchor(&heading),
            data,
            state,
            counts,
            numbers,
        }
    }

    /// `real`, `SYNTHETIC`, or which data sets are which.
    fn data_line(&self) -> String {
        let ids = |synthetic: bool| {
            self.data
                .iter()
                .filter(|d| d.1 == synthetic)
                .map(|d| format!("`{}`", d.0))
                .collect::<Vec<_>>()
        };
        let (real, synthetic) = (ids(false), ids(true));
        match (real.is_empty(), synthetic.is_empty()) {
            (_, true) if real.is_empty() => "—".into(),
            (false, true) => "real".into(),
            (true, false) => "SYNTHETIC".into(),
            _ => format!(
                "real: {}; SYNTHETIC: {}",
                real.join(", "),
                synthetic.join(", ")
            ),
        }
    }
}

/// The overview: one row per experiment, paper by paper, with its data (real or a
/// SYNTHETIC stand-in), its state and its claims' verdicts. The verdict columns count the
/// paper's claims (on SYNTHETIC data: shape checks; a section on both says how many of each
/// count are); our diagnostics are counted apart.
fn overview(entries: &[Entry]) -> Vec<Block> {
    let count = |real: usize, synthetic: usize, mixed: bool| {
        if mixed && real > 0 && synthetic > 0 {
            format!("{} ({synthetic} SYNTHETIC)", real + synthetic)
        } else {
            (real + synthetic).to_string()
        }
    };
    let mut rows = Vec::new();
    let mut paper = "";
    for e in entries {
        let first = e.paper != paper;
        paper = &e.paper;
        let c = &e.counts;
        let mixed = c.real.total() > 0 && c.synthetic.total() > 0;
        let mut row = vec![
            if first {
                let heading = e.paper.to_uppercase();
                format!("[{heading}](#{})", anchor(&heading))
            } else {
                String::new()
            },
            format!("[{}](#{})", e.id, e.anchor),
            e.figure.clone(),
            e.data_line(),
            e.state.clone(),
            if e.numbers == 0 {
                "—".into()
            } else {
                e.numbers.to_string()
            },
        ];
        row.extend((0..4).map(|k| count(c.real.0[k], c.synthetic.0[k], mixed)));
        let mut ours = Tally::default();
        ours.merge(&c.ours_real);
        ours.merge(&c.ours_synthetic);
        row.push(if ours.total() == 0 {
            "—".into()
        } else {
            MARKS
                .iter()
                .zip(ours.0)
                .filter(|(_, n)| *n > 0)
                .map(|((mark, _, _), n)| format!("{n} {mark}"))
                .collect::<Vec<_>>()
                .join(" · ")
        });
        rows.push(row);
    }
    vec![
        Block::Heading(2, OVERVIEW.into()),
        Block::Para(
            "Every experiment, paper by paper: the data it ran on (real, or a SYNTHETIC \
             stand-in: its claims are shape checks, never a confirmation of the paper), \
             whether its cells are all computed, how many of the paper's numbers stand beside \
             ours in its section, and the verdicts of the paper's claims it judges: ✅ holds, \
             ❌ does not hold, 🟰 not distinguishable (within the spread over splits), ➖ not \
             comparable (our diagnostics counted apart). Each name links to its section."
                .into(),
        ),
        Block::Table {
            head: [
                "paper",
                "experiment",
                "figure",
                "data",
                "state",
                "paper's numbers",
                "✅",
                "❌",
                "🟰",
                "➖",
                "our diagnostics",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
    ]
}

/// A `[[tables]]` spec: per data set, rows = metrics, columns = solvers, each cell our mean
/// ± SD beside the paper's number.
fn pivot_tables(res: &ExperimentResults<'_>, t: &crate::spec::TableSpec) -> Vec<Block> {
    let plan = res.plan;
    let columns: Vec<usize> = if t.solvers.is_empty() {
        (0..plan.solvers.len()).collect()
    } else {
        t.solvers
            .iter()
            .flat_map(|n| res.solvers_named(n))
            .collect()
    };
    if let Some(coord) = &t.correlate {
        return correlation_tables(res, t, coord, &columns);
    }
    plan.datasets
        .iter()
        .filter(|d| t.datasets.is_empty() || t.datasets.contains(&d.id))
        .map(|d| {
            let mut head = vec![format!("{}{}", d.id, d.tag())];
            head.extend(columns.iter().map(|&c| plan.solvers[c].label.clone()));
            let rows = t
                .rows
                .iter()
                .map(|row| {
                    let scale = row.scale.unwrap_or(1.0);
                    let mut cells = vec![format!(
                        "{}{}",
                        plan.metric_label(&row.metric, row.k),
                        row.unit
                            .as_ref()
                            .map(|u| format!(" ({u})"))
                            .unwrap_or_default()
                    )];
                    for &c in &columns {
                        let sv = &plan.solvers[c];
                        let ours = res
                            .select(&Selector {
                                dataset: Some(d.id.clone()),
                                solver: Some(sv.label.clone()),
                                metric: row.metric.clone(),
                                set: t.set.clone(),
                                k: row.k,
                                coord: None,
                                at: At::Last,
                            })
                            .ok()
                            .and_then(|v| Stat::of(&v))
                            .map(|st| {
                                format!(
                                    "{} ± {}",
                                    fmt_value(&plan.metric(&row.metric), st.mean * scale),
                                    fmt_value(&plan.metric(&row.metric), st.sd * scale)
                                )
                            })
                            .unwrap_or_else(|| "—".into());
                        let paper = plan
                            .spec
                            .spec
                            .references
                            .iter()
                            .find(|r| {
                                r.dataset == d.id
                                    && r.metric == row.metric
                                    && r.k == row.k
                                    && r.set == t.set
                                    && res.solvers_named(&r.solver).contains(&c)
                            })
                            .map(|r| {
                                paper_value(
                                    &plan.metric(&row.metric),
                                    r.value,
                                    r.sd,
                                    r.text.as_deref(),
                                    scale,
                                )
                            })
                            .unwrap_or_else(|| "—".into());
                        cells.push(format!("{ours} / {paper}"));
                    }
                    cells
                })
                .collect();
            Block::Table { head, rows }
        })
        .collect()
}

/// A `correlate` table: per data set, the Pearson correlation of every two solvers'
/// per-coordinate means, with the number of coordinate values both have.
fn correlation_tables(
    res: &ExperimentResults<'_>,
    t: &crate::spec::TableSpec,
    coord: &str,
    columns: &[usize],
) -> Vec<Block> {
    let plan = res.plan;
    let Some(row) = t.rows.first() else {
        return Vec::new();
    };
    let x = crate::spec::XAxis::Named(coord.to_string());
    plan.datasets
        .iter()
        .enumerate()
        .filter(|(_, d)| t.datasets.is_empty() || t.datasets.contains(&d.id))
        .map(|(di, d)| {
            let series: Vec<_> = columns
                .iter()
                .map(|&c| res.coordinate_means(di, c, &t.set, &row.metric, &x, row.k))
                .collect();
            let mut head = vec![format!(
                "{}{}: r of {}",
                d.id,
                d.tag(),
                plan.metric_label(&row.metric, row.k)
            )];
            head.extend(columns.iter().map(|&c| plan.solvers[c].label.clone()));
            let rows = (0..columns.len())
                .map(|i| {
                    let mut cells = vec![plan.solvers[columns[i]].label.clone()];
                    for j in 0..columns.len() {
                        let (a, b) = crate::analysis::results::paired(&series[i], &series[j]);
                        let ours = dyad_core::auc::pearson(&a, &b)
                            .map_or("—".to_string(), |c| format!("{:.3} (n={})", c.r, c.n));
                        let paper = t
                            .paper_matrix
                            .as_ref()
                            .and_then(|m| m.get(i).and_then(|r| r.get(j)))
                            .map_or("—".to_string(), |v| format!("{v:.3}"));
                        cells.push(format!("{ours} / {paper}"));
                    }
                    cells
                })
                .collect();
            Block::Table { head, rows }
        })
        .collect()
}

/// Per data set and solver: the task's headline metrics on its primary set at the final
/// step, the steps run and the solver seconds, for the data sets `show` lets through. Rows
/// only for solvers run on the data set.
fn summary_table(res: &ExperimentResults<'_>, show: &dyn Fn(usize) -> bool) -> Block {
    let plan = res.plan;
    let set = plan.primary_set();
    let recorded = |metric: &str, k: Option<u32>| {
        res.cells
            .iter()
            .flatten()
            .flat_map(|c| &c.records)
            .any(|r| r.set == set && r.metric == metric && r.k == k)
    };
    let columns: Vec<(&str, Option<u32>)> = plan
        .task
        .headline()
        .iter()
        .map(|h| (h.metric, h.k))
        .filter(|&(m, k)| recorded(m, k))
        .collect();
    let mut head = vec!["data".to_string(), "solver".into()];
    head.extend(
        columns
            .iter()
            .map(|&(m, k)| format!("{} ({set})", plan.metric_label(m, k))),
    );
    head.extend(["steps".to_string(), "solver s".into()]);
    let mut rows = Vec::new();
    for (di, d) in plan.datasets.iter().enumerate().filter(|&(di, _)| show(di)) {
        for (si, sv) in plan.solvers.iter().enumerate() {
            let cells: Vec<_> = plan
                .cells
                .iter()
                .zip(&res.cells)
                .filter(|(c, _)| c.dataset == di && c.solver == si)
                .filter_map(|(_, r)| r.as_ref())
                .collect();
            if cells.is_empty() {
                continue;
            }
            let get = |metric: &str, k: Option<u32>| {
                res.select(&Selector {
                    dataset: Some(d.id.clone()),
                    solver: Some(sv.label.clone()),
                    metric: metric.into(),
                    set: set.clone(),
                    k,
                    coord: None,
                    at: At::Last,
                })
                .ok()
                .and_then(|v| Stat::of(&v))
                .map(|s| fmt_stat(&plan.metric(metric), &s))
                .unwrap_or_else(|| "—".into())
            };
            let secs = Stat::of(&cells.iter().map(|c| c.train_seconds).collect::<Vec<_>>());
            let steps: Vec<f64> = cells
                .iter()
                .filter_map(|c| {
                    c.records
                        .iter()
                        .filter(|r| r.set == set)
                        .map(|r| r.step)
                        .max()
                })
                .map(|s| s as f64)
                .collect();
            let mut row = vec![format!("{}{}", d.id, d.tag()), sv.label.clone()];
            row.extend(columns.iter().map(|&(m, k)| get(m, k)));
            row.push(Stat::of(&steps).map_or("—".into(), |s| format!("{:.0}", s.mean)));
            row.push(secs.map_or("—".into(), |s| format!("{:.3}", s.mean)));
            rows.push(row);
        }
    }
    Block::Table { head, rows }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Whether a table cell reads as a number (our "mean ± sd (n=..)", "ours / paper", 12.3%,
/// 4.5K): such columns are right-aligned.
fn is_numeric(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix(['-', '−', '+']).unwrap_or(t);
    let mut c = t.chars();
    match c.next() {
        Some(d) if d.is_ascii_digit() => true,
        Some('.') => c.next().is_some_and(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// A cell that stands for no value ("—", "*", empty): it does not decide a column's kind.
fn is_placeholder(s: &str) -> bool {
    matches!(s.trim(), "" | "—" | "-" | "*")
}

/// Per column of a table: whether its values are numbers (and so right-aligned).
fn numeric_columns(head: &[String], rows: &[Vec<String>]) -> Vec<bool> {
    (0..head.len())
        .map(|c| {
            let cells: Vec<&str> = rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(String::as_str)
                .filter(|s| !is_placeholder(s))
                .collect();
            !cells.is_empty() && cells.iter().all(|s| is_numeric(s))
        })
        .collect()
}

/// How the header paragraph opens.
const GENERATED: &str = "Generated by dyad";
/// How a never-computed section's paragraph opens (read back by the overview).
const NOT_RUN: &str = "NOT RUN for profile";
/// How a partly computed section's paragraph opens (read back by the overview).
const INCOMPLETE: &str = "INCOMPLETE for profile";

/// A claim line read back (the inverse of [`claim_line`], first line only): shape check,
/// ours, the verdict and the rest after the verdict's ` — `.
#[cfg(test)]
fn parse_claim_line(item: &str) -> Option<(bool, bool, Verdict, &str)> {
    let first = item.split('\n').next().unwrap_or_default();
    let (synthetic, rest) = match first.strip_prefix(SHAPE_CHECK) {
        Some(rest) => (true, rest),
        None => (false, first),
    };
    let (ours, rest) = match rest.strip_prefix(OURS) {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    [
        Verdict::Holds,
        Verdict::DoesNotHold,
        Verdict::NotDistinguishable,
        Verdict::NotComparable,
    ]
    .into_iter()
    .find_map(|v| {
        rest.strip_prefix(verdict_mark(v))
            .and_then(|r| r.strip_prefix(" — "))
            .map(|r| (synthetic, ours, v, r))
    })
}

/// The claim verdicts listed in a section's blocks, counted (the inverse of [`claim_line`]).
/// A report written before claims had an origin reads as the papers' claims throughout.
#[cfg(test)]
fn claim_tallies(blocks: &[Block]) -> Counts {
    let mut counts = Counts::default();
    for b in blocks {
        let Block::List(items) = b else { continue };
        for (synthetic, ours, v, _) in items.iter().filter_map(|i| parse_claim_line(i)) {
            counts.add(ours, synthetic, v);
        }
    }
    counts
}

/// The data sets a section lists (its `data `id`: note` items): id, and whether the note
/// says SYNTHETIC.
fn listed_data(blocks: &[Block]) -> impl Iterator<Item = (String, bool)> + '_ {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::List(items) => Some(items),
            _ => None,
        })
        .flatten()
        .filter_map(|i| {
            let (id, note) = i.strip_prefix("data `")?.split_once("`: ")?;
            Some((id.to_string(), note.contains("SYNTHETIC")))
        })
}

/// Blocks back from Markdown written by [`to_markdown`]: `to_markdown(&parse_markdown(md))
/// == md` for every such text (tested on the committed report). Blocks are separated by a
/// blank line; a table's cells lose nothing but line breaks, which `to_markdown` drops too.
pub fn parse_markdown(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    for chunk in md.split("\n\n").filter(|c| !c.trim().is_empty()) {
        let chunk = chunk.trim_start_matches('\n');
        let lines: Vec<&str> = chunk.lines().collect();
        let level = chunk.bytes().take_while(|&b| b == b'#').count();
        let image = (lines.len() == 1 && chunk.starts_with("![") && chunk.ends_with(')'))
            .then(|| chunk[2..chunk.len() - 1].rsplit_once("]("))
            .flatten();
        if (1..=6).contains(&level) && lines.len() == 1 && chunk[level..].starts_with(' ') {
            out.push(Block::Heading(level as u8, chunk[level + 1..].to_string()));
        } else if let Some((alt, src)) = image {
            out.push(Block::Image {
                src: src.to_string(),
                alt: alt.to_string(),
            });
        } else if lines.len() >= 2
            && lines
                .iter()
                .all(|l| l.starts_with("| ") || l.starts_with("|-"))
            && lines[1].starts_with("|-")
        {
            out.push(Block::Table {
                head: md_row(lines[0]),
                rows: lines[2..].iter().map(|l| md_row(l)).collect(),
            });
        } else if lines[0].starts_with("- ")
            && lines
                .iter()
                .all(|l| l.starts_with("- ") || l.starts_with(&format!("  {QUOTE}")))
        {
            // An item's `  > ` lines are its quotations (see `md_item`).
            let mut items: Vec<String> = Vec::new();
            for l in &lines {
                match l.strip_prefix("- ") {
                    Some(item) => items.push(item.to_string()),
                    None => {
                        let last = items.last_mut().expect("the first line is an item");
                        last.push('\n');
                        last.push_str(&l[2..]);
                    }
                }
            }
            out.push(Block::List(items));
        } else {
            out.push(Block::Para(chunk.to_string()));
        }
    }
    out
}

/// A list item's Markdown: its lines opening with `> ` (a claim's quotation) become block
/// quotes nested in the item (indented by two spaces); any other line break is a space.
fn md_item(item: &str) -> String {
    let mut parts = item.split(QUOTE_BREAK);
    let mut out = parts.next().unwrap_or_default().replace('\n', " ");
    for q in parts {
        out.push_str(&format!("\n  {QUOTE}{}", q.replace('\n', " ")));
    }
    out
}

/// The cells of a Markdown table row `| a | b\|c |` (the inverse of `md_cell`, which
/// escapes every `|` of a cell: an unescaped ` | ` is always a separator).
fn md_row(line: &str) -> Vec<String> {
    let inner = line
        .strip_prefix("| ")
        .and_then(|l| l.strip_suffix(" |"))
        .unwrap_or(line);
    inner.split(" | ").map(|c| c.replace("\\|", "|")).collect()
}

/// Markdown rendering.
pub fn to_markdown(doc: &[Block]) -> String {
    let mut out = String::new();
    for b in doc {
        match b {
            Block::Heading(l, t) => out.push_str(&format!("{} {t}\n\n", "#".repeat(*l as usize))),
            Block::Para(t) => out.push_str(&format!("{t}\n\n")),
            Block::Image { src, alt } => out.push_str(&format!("![{alt}]({src})\n\n")),
            Block::Table { head, rows } => {
                out.push_str(&format!(
                    "| {} |\n",
                    head.iter()
                        .map(|h| md_cell(h))
                        .collect::<Vec<_>>()
                        .join(" | ")
                ));
                let align: String = numeric_columns(head, rows)
                    .iter()
                    .map(|&n| if n { "---:|" } else { "---|" })
                    .collect();
                out.push_str(&format!("|{align}\n"));
                for r in rows {
                    out.push_str(&format!(
                        "| {} |\n",
                        r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
                    ));
                }
                out.push('\n');
            }
            Block::List(items) => {
                for i in items {
                    out.push_str(&format!("- {}\n", md_item(i)));
                }
                out.push('\n');
            }
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The verdict marks of the document: (mark, CSS class, symbol drawn in the badge). The
/// symbols are in DejaVu and every common sans font; the emoji need an emoji font.
const MARKS: [(char, &str, &str); 4] = [
    ('✅', "holds", "✓"),
    ('❌', "fails", "✗"),
    ('🟰', "even", "="),
    ('➖', "na", "–"),
];

/// The prefix of a claim judged on a stand-in (see `claim_line`); drawn as a tag before
/// the verdict badge.
const SHAPE_CHECK: &str = "shape check on SYNTHETIC data: ";
/// The prefix of a claim of ours, a diagnostic (after [`SHAPE_CHECK`]); drawn as a tag.
const OURS: &str = "our diagnostic, not the paper's claim: ";
/// How the line with a claim's quotation opens (a Markdown block quote under the verdict).
const QUOTE: &str = "> ";
/// A quotation line inside a list item.
const QUOTE_BREAK: &str = "\n> ";

/// Inline HTML of a text: escaped, `code spans` as `<code>`, verdict marks as symbols. A
/// backtick without a partner is shown as an entity, so the page has no literal backticks.
fn inline(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let paired = if parts.len() % 2 == 1 {
        parts.len()
    } else {
        parts.len() - 1
    };
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i >= paired {
            out.push_str("&#96;");
            out.push_str(&links(part));
        } else if i % 2 == 1 {
            out.push_str(&format!("<code>{}</code>", esc(part)));
        } else {
            out.push_str(&links(part));
        }
    }
    out
}

/// The target of a link the document writes (`[text](#anchor)`, `[text](page.html#anchor)`):
/// an anchor or a page of the report, never an address the text merely mentions.
fn link_target(href: &str) -> bool {
    let page = href.split('#').next().unwrap_or_default();
    !href.is_empty()
        && !href.contains(char::is_whitespace)
        && (page.is_empty()
            || page.strip_suffix(".html").is_some_and(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
            }))
}

/// Escaped text with its verdict marks drawn and its report links (see [`link_target`]) as
/// `<a>` elements.
fn links(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let found = rest[open + 1..].split_once("](").and_then(|(text, after)| {
            let (href, _) = after.split_once(')')?;
            (!text.contains(['[', ']']) && link_target(href)).then_some((text, href))
        });
        let Some((text, href)) = found else {
            out.push_str(&marks(&esc(&rest[..=open])));
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&marks(&esc(&rest[..open])));
        out.push_str(&format!(
            "<a href=\"{}\">{}</a>",
            esc(href),
            marks(&esc(text))
        ));
        rest = &rest[open + 1 + text.len() + 2 + href.len() + 1..];
    }
    out.push_str(&marks(&esc(rest)));
    out
}

fn marks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match MARKS.iter().find(|m| m.0 == c) {
            Some((_, class, sym)) => out.push_str(&format!(
                "<span class=\"mark {class}\" aria-hidden=\"true\">{sym}</span>"
            )),
            None => out.push(c),
        }
    }
    out
}

/// A list item; one that opens with a verdict mark ("✅ holds — text") gets a badge, a
/// shape check and our diagnostic a tag, and its `> ` lines (a claim's quotation) are drawn
/// as block quotes under it.
fn list_item(s: &str) -> String {
    let mut parts = s.split(QUOTE_BREAK);
    let mut out = item_line(parts.next().unwrap_or_default());
    for q in parts {
        out.push_str(&format!(
            "<blockquote class=\"quote\">{}</blockquote>",
            inline(q)
        ));
    }
    out
}

/// One line of a list item (see [`list_item`]).
fn item_line(s: &str) -> String {
    if let Some(rest) = s.strip_prefix(SHAPE_CHECK) {
        let item = item_line(rest);
        if item.starts_with("<span class=\"verdict ") || item.starts_with("<span class=\"tag") {
            return format!("<span class=\"tag\">shape check · SYNTHETIC</span> {item}");
        }
    }
    if let Some(rest) = s.strip_prefix(OURS) {
        let item = item_line(rest);
        if item.starts_with("<span class=\"verdict ") {
            return format!("<span class=\"tag ours\">our diagnostic</span> {item}");
        }
    }
    for (mark, class, sym) in MARKS {
        if let Some(rest) = s.strip_prefix(mark) {
            let rest = rest.trim_start();
            let (verdict, text) = rest.split_once(" — ").unwrap_or((rest, ""));
            let sep = if text.is_empty() { "" } else { " " };
            return format!(
                "<span class=\"verdict {class}\">{sym} {}</span>{sep}{}",
                esc(verdict),
                inline(text)
            );
        }
    }
    inline(s)
}

const CSS: &str = "\
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--head:#f6f8fa}\
body{font-family:'DejaVu Sans',system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;\
font-size:15px;line-height:1.5;max-width:1180px;margin:2em auto;padding:0 1em;color:var(--fg)}\
h1{font-size:1.6em}h2{font-size:1.35em;margin-top:2em}\
h3{font-size:1.12em;margin-top:2.2em;border-top:1px solid var(--line);padding-top:1em}\
code{font-family:'DejaVu Sans Mono',ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;\
font-size:.88em;background:#eff1f3;border-radius:4px;padding:.1em .35em}\
.table{overflow-x:auto;margin:.6em 0}\
table{border-collapse:collapse;font-size:.9em}\
th,td{border:1px solid var(--line);padding:.3em .65em;text-align:left;vertical-align:top}\
th{background:var(--head);font-weight:600}tr:nth-child(even) td{background:#fbfbfc}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
figure{margin:1em 0}figure img{display:block;max-width:100%;height:auto;border:1px solid var(--line)}\
li{margin:.25em 0}\
.verdict{display:inline-block;border-radius:.8em;padding:0 .6em;font-size:.85em;font-weight:600;\
white-space:nowrap;border:1px solid}\
.verdict.holds{color:#1a7f37;background:#dafbe1;border-color:#1a7f37}\
.verdict.fails{color:#cf222e;background:#ffebe9;border-color:#cf222e}\
.verdict.na{color:var(--muted);background:#eff1f3;border-color:#8c959f}\
.verdict.even{color:#9a6700;background:#fff8c5;border-color:#9a6700}\
.tag{display:inline-block;border-radius:.3em;padding:0 .4em;font-size:.8em;color:#8250df;\
border:1px dashed #8250df;margin-right:.3em;white-space:nowrap}\
.tag.ours{color:#0969da;border-color:#0969da}\
blockquote.quote{margin:.2em 0 .4em 1.2em;padding:0 .7em;border-left:3px solid var(--line);\
color:var(--muted);font-style:italic}\
.mark{font-weight:700}.mark.holds{color:#1a7f37}.mark.fails{color:#cf222e}.mark.na{color:var(--muted)}.mark.even{color:#9a6700}";

/// HTML rendering as one page (self-contained, no scripts).
pub fn to_html(doc: &[Block]) -> String {
    html_page(doc, "dyad report")
}

/// The HTML report as pages, `(file name, HTML)`: `index.html` with what precedes the first
/// paper (the title, the summary, the [`OVERVIEW`]) and one page per paper
/// ([`paper_page`]) with its sections, each opening with links to the others. A link to an
/// anchor (`#…`) points into the page that holds it.
pub fn html_pages(doc: &[Block]) -> Vec<(String, String)> {
    // (page, its blocks); a paper's page starts at its level-2 heading.
    let mut pages: Vec<(String, String, Vec<Block>)> =
        vec![("index.html".into(), "dyad report".into(), Vec::new())];
    for b in doc {
        if let Block::Heading(2, t) = b
            && t != OVERVIEW
        {
            pages.push((paper_page(t), format!("dyad report — {t}"), Vec::new()));
        }
        pages.last_mut().expect("the index").2.push(b.clone());
    }
    // The page of every heading's anchor.
    let mut home = std::collections::BTreeMap::new();
    for (name, _, blocks) in &pages {
        for b in blocks {
            if let Block::Heading(_, t) = b {
                home.entry(anchor(t)).or_insert_with(|| name.clone());
            }
        }
    }
    let nav: Vec<String> = pages
        .iter()
        .map(|(name, _, blocks)| {
            let label = match blocks.first() {
                Some(Block::Heading(2, t)) => t.clone(),
                _ => OVERVIEW.to_string(),
            };
            format!("[{label}]({name})")
        })
        .collect();
    pages
        .iter()
        .map(|(name, title, blocks)| {
            let mut blocks: Vec<Block> = blocks
                .iter()
                .map(|b| {
                    retarget(b, &|a| match home.get(a) {
                        Some(page) if page != name => format!("{page}#{a}"),
                        _ => format!("#{a}"),
                    })
                })
                .collect();
            if name != "index.html" {
                blocks.insert(0, Block::Para(nav.join(" · ")));
            }
            (name.clone(), html_page(&blocks, title))
        })
        .collect()
}

/// A block with the target of each of its `](#anchor)` links given by `to`.
fn retarget(b: &Block, to: &dyn Fn(&str) -> String) -> Block {
    let fix = |s: &String| {
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(at) = rest.find("](#") {
            out.push_str(&rest[..at + 2]);
            let after = &rest[at + 3..];
            let end = after.find(')').unwrap_or(after.len());
            out.push_str(&to(&after[..end]));
            rest = &after[end..];
        }
        out.push_str(rest);
        out
    };
    match b {
        Block::Para(t) => Block::Para(fix(t)),
        Block::List(items) => Block::List(items.iter().map(fix).collect()),
        Block::Table { head, rows } => Block::Table {
            head: head.clone(),
            rows: rows.iter().map(|r| r.iter().map(fix).collect()).collect(),
        },
        other => other.clone(),
    }
}

/// One HTML page of blocks; level-2 and level-3 headings carry their [`anchor`] as `id`.
fn html_page(doc: &[Block], title: &str) -> String {
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title>\n<style>{CSS}</style></head><body>\n",
        esc(title)
    );
    for b in doc {
        match b {
            Block::Heading(l, t) if (2..=3).contains(l) => out.push_str(&format!(
                "<h{l} id=\"{}\">{}</h{l}>\n",
                anchor(t),
                inline(t)
            )),
            Block::Heading(l, t) => out.push_str(&format!("<h{l}>{}</h{l}>\n", inline(t))),
            Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
            // Figures are PNGs at `png::PNG_SCALE` times their layout size: `srcset`
            // tells the browser so, and they shrink to the page width when wider.
            Block::Image { src, alt } => out.push_str(&format!(
                "<figure><a href=\"{0}\"><img src=\"{0}\" srcset=\"{0} {2}x\" alt=\"{1}\"></a></figure>\n",
                esc(src),
                esc(alt),
                crate::presentation::png::PNG_SCALE
            )),
            Block::Table { head, rows } => {
                let num = numeric_columns(head, rows);
                let class = |c: usize| {
                    if num.get(c).copied().unwrap_or(false) {
                        " class=\"num\""
                    } else {
                        ""
                    }
                };
                out.push_str("<div class=\"table\"><table>\n<thead><tr>");
                for (c, h) in head.iter().enumerate() {
                    out.push_str(&format!("<th{}>{}</th>", class(c), inline(h)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for (c, v) in r.iter().enumerate() {
                        out.push_str(&format!("<td{}>{}</td>", class(c), inline(v)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody></table></div>\n");
            }
            Block::List(items) => {
                out.push_str("<ul>\n");
                for i in items {
                    out.push_str(&format!("<li>{}</li>\n", list_item(i)));
                }
                out.push_str("</ul>\n");
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The claim `id` of a plan's spec.
    fn claim_of<'a>(plan: &'a crate::engine::plan::Plan, id: &str) -> &'a crate::spec::Claim {
        plan.spec
            .spec
            .claims
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id}"))
    }

    #[test]
    fn a_claim_on_fits_at_their_cap_says_so() {
        use crate::engine::cache::{Record, test_cell};
        // kr-step-rule's quick plan: TR, KR (Armijo) and KR (BB), low-rank KR capped at 200.
        let (plan, _dir) = crate::analysis::quick_plan("tensor-ranking/kr-step-rule.toml");
        let iterations = |value: f64| Record {
            set: "all".into(),
            metric: "iterations".into(),
            step: 200,
            seconds: 0.0,
            k: None,
            coord: None,
            value,
        };
        let cells = plan
            .cells
            .iter()
            .map(|c| {
                let mut r = test_cell(&c.key);
                // Every Armijo fit at the cap, every BB fit before it.
                r.records = match plan.solvers[c.solver].label.as_str() {
                    "KR" => vec![iterations(200.0)],
                    "KR (BB)" => vec![iterations(120.0)],
                    _ => Vec::new(),
                };
                Some(r)
            })
            .collect();
        let res = ExperimentResults { plan: &plan, cells };
        let claim = |id: &str| claim_of(&plan, id);
        let fits = plan
            .cells
            .iter()
            .filter(|c| plan.solvers[c.solver].label == "KR")
            .count();
        // KR (BB) against KR: the capped one is named.
        let line = judged_line(&res, claim("step-rule-close"));
        assert!(
            line.contains(&format!(
                "⚠ not converged: KR stopped at its cap of 200 iterations in {fits} of {fits} chosen fits"
            )),
            "{line}"
        );
        // KR (BB) against TR: neither stopped at a cap.
        let line = judged_line(&res, claim("kr-bb-vs-tr"));
        assert!(!line.contains("not converged"), "{line}");
        // The same comparison of KR (BB) with KR on a timing: a claim on cost, no warning.
        let mut timed = claim("step-rule-close").clone();
        timed.metric = "selection_seconds".into();
        let line = judged_line(&res, &timed);
        assert!(!line.contains("not converged"), "{line}");
    }

    #[test]
    fn a_claim_on_a_baseline_tuned_at_its_grid_edge_says_so_and_names_the_decision() {
        use crate::engine::cache::test_cell;
        // table4's quick plan: OASIS, Euclidean, MCML, LEGO (eta over the paper's grid) and
        // LMNN (omega); fig6's choice "the baselines' grids" keeps both edges on purpose.
        let (mut plan, _dir) = crate::analysis::quick_plan("oasis/table4.toml");
        let cells = |plan: &crate::engine::plan::Plan| {
            plan.cells
                .iter()
                .map(|c| {
                    let mut r = test_cell(&c.key);
                    // LEGO always at its highest eta, LMNN inside its grid.
                    r.tuned = match plan.solvers[c.solver].label.as_str() {
                        "LEGO" => Some(serde_json::json!({ "eta": 0.32 })),
                        "LMNN" => Some(serde_json::json!({ "omega": 0.25 })),
                        _ => None,
                    };
                    Some(r)
                })
                .collect::<Vec<_>>()
        };
        let lego = plan
            .cells
            .iter()
            .filter(|c| plan.solvers[c.solver].label == "LEGO")
            .count();
        let claim = |plan: &crate::engine::plan::Plan, id: &str| claim_of(plan, id).clone();
        let res = ExperimentResults {
            plan: &plan,
            cells: cells(&plan),
        };
        let line = judged_line(&res, &claim(&plan, "oasis-beats-lego"));
        assert!(
            line.contains(&format!(
                "⚠ tuned on a grid edge: LEGO eta chosen at its grid's highest in {lego} of \
                 {lego} choices (kept on purpose: see the choice \"the baselines' grids\")"
            )),
            "{line}"
        );
        let line = judged_line(&res, &claim(&plan, "oasis-beats-lmnn"));
        assert!(!line.contains("grid edge"), "{line}");
        let summary = crate::analysis::edges::summary(&res).unwrap();
        assert!(
            summary.contains("1 flagged ⚠, 1 of them kept on purpose")
                && summary.contains("(kept on purpose: \"the baselines' grids\")"),
            "{summary}"
        );
        // Without the decision the edge is flagged, and nothing says it was kept.
        for c in &mut plan.spec.spec.choices {
            c.edges.clear();
        }
        let res = ExperimentResults {
            plan: &plan,
            cells: cells(&plan),
        };
        let line = judged_line(&res, &claim(&plan, "oasis-beats-lego"));
        assert!(
            line.contains("⚠ tuned on a grid edge: LEGO eta") && !line.contains("kept"),
            "{line}"
        );
        let summary = crate::analysis::edges::summary(&res).unwrap();
        assert!(
            summary.contains("(1 flagged ⚠:") && !summary.contains("kept"),
            "{summary}"
        );
    }

    #[test]
    fn a_timing_claim_on_cells_of_two_machines_says_so() {
        use crate::engine::cache::test_cell;
        // table5's quick plan: "faster-than-lego" compares OASIS's and LEGO's training times.
        let (plan, _dir) = crate::analysis::quick_plan("oasis/table5.toml");
        let claim = claim_of(&plan, "faster-than-lego");
        let line = |machine: &dyn Fn(&str) -> Option<String>| {
            let cells = plan
                .cells
                .iter()
                .map(|c| {
                    let mut r = test_cell(&c.key);
                    r.machine = machine(plan.solvers[c.solver].label.as_str());
                    Some(r)
                })
                .collect();
            judged_line(&ExperimentResults { plan: &plan, cells }, claim)
        };
        // Cells of the claim's data sets only (OASIS also runs on c249, which it does not read).
        let n = |label: &str| {
            plan.cells
                .iter()
                .filter(|c| {
                    plan.solvers[c.solver].label == label
                        && claim.datasets.contains(&plan.datasets[c.dataset].id)
                })
                .count()
        };
        let two = line(&|l| Some(if l == "LEGO" { "B" } else { "A" }.to_string()));
        assert!(
            two.contains(&format!(
                "⚠ timed on more than one machine, so the ratio mixes their clocks: A ({} cells); \
                 B ({} cells)",
                n("OASIS"),
                n("LEGO")
            )),
            "{two}"
        );
        // Other solvers' cells (MCML, LMNN) on a third machine do not enter this claim.
        let one = line(&|l| Some(if l == "MCML" { "C" } else { "A" }.to_string()));
        assert!(!one.contains("more than one machine"), "{one}");
        // Cells from before machines were recorded: nothing to say.
        assert!(!line(&|_| None).contains("machine"));
        // Partly unrecorded: said, since the two clocks cannot be shown to be one.
        let part = line(&|l| (l == "OASIS").then(|| "A".to_string()));
        assert!(part.contains("machine not recorded"), "{part}");
    }

    #[test]
    fn markdown_reads_back_into_the_blocks_it_was_written_from() {
        let doc = vec![
            Block::Heading(1, "T".into()),
            Block::Para("line one\nline two with `code` and | pipe".into()),
            Block::Heading(3, "demo/f1 — F1: a (b) c".into()),
            Block::List(vec!["data `x`: SYNTHETIC".into(), "✅ holds — y".into()]),
            Block::Image {
                src: "figures/a.png".into(),
                alt: "F1 a (b) [c]".into(),
            },
            Block::Table {
                head: vec!["a|b".into(), "n".into(), "".into()],
                rows: vec![
                    vec!["x | y".into(), "1.5 ± 0.2 (n=5)".into(), "".into()],
                    vec!["".into(), "—".into(), "z\\".into()],
                ],
            },
        ];
        assert_eq!(parse_markdown(&to_markdown(&doc)), doc);
    }

    /// The committed paper report reads back exactly; the overview row of every complete
    /// section, and the claim line of every paper whose sections are all complete, count the
    /// verdicts listed in those sections (a partly computed section counts its claims not
    /// judged yet as not comparable without listing them).
    #[test]
    fn the_committed_report_reads_back_and_its_counts_match_its_claims() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/report/REPORT.md");
        let md = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("the committed report {}: {e}", path.display()));
        let blocks = parse_markdown(&md);
        assert_eq!(to_markdown(&blocks), md);
        // Each section's blocks, by experiment id.
        let mut sections: std::collections::BTreeMap<&str, &[Block]> =
            std::collections::BTreeMap::new();
        for (i, b) in blocks.iter().enumerate() {
            let Block::Heading(3, t) = b else { continue };
            let end = blocks[i + 1..]
                .iter()
                .position(|b| matches!(b, Block::Heading(l, _) if *l <= 3))
                .map_or(blocks.len(), |j| i + 1 + j);
            sections.insert(t.split(" — ").next().unwrap_or_default(), &blocks[i..end]);
        }
        // Every complete section's overview row is what its listed claims give.
        let Some(Block::Table { rows, .. }) =
            blocks.iter().find(|b| matches!(b, Block::Table { .. }))
        else {
            panic!("no overview table")
        };
        let mut paper = String::new();
        let mut checked = 0;
        for row in rows {
            if !row[0].is_empty() {
                paper = row[0][1..row[0].find(']').unwrap()].to_lowercase();
            }
            let id = &row[1][1..row[1].find(']').unwrap()];
            if row[4] != "complete" {
                continue;
            }
            let numbers = row[5].parse().unwrap_or(0);
            let section = sections[id];
            let e = Entry::read(&paper, section, claim_tallies(section), numbers);
            let ours = &overview(&[e])[2];
            let Block::Table { rows: mine, .. } = ours else {
                panic!("{ours:?}")
            };
            assert_eq!(mine[0][1..], row[1..], "{id}");
            checked += 1;
        }
        assert!(checked > 0, "no complete section in the committed report");
        // Each paper whose sections are all complete: its line counts their claims.
        for (i, b) in blocks.iter().enumerate() {
            let Block::Heading(2, paper) = b else {
                continue;
            };
            if paper == OVERVIEW {
                continue;
            }
            let ids: Vec<&str> = blocks[i + 1..]
                .iter()
                .take_while(|b| !matches!(b, Block::Heading(2, _)))
                .filter_map(|b| match b {
                    Block::Heading(3, t) => t.split(" — ").next(),
                    _ => None,
                })
                .collect();
            if !ids.iter().all(|id| {
                !sections[id].iter().any(|b| {
                    matches!(b, Block::Para(t) if t.starts_with(NOT_RUN) || t.starts_with(INCOMPLETE))
                })
            }) {
                continue;
            }
            let mut c = Counts::default();
            for id in &ids {
                c.merge(&claim_tallies(sections[id]));
            }
            let Some(Block::Para(line)) = blocks.get(i + 1) else {
                panic!("{paper}: no claim line")
            };
            assert!(
                line == &c.paper_line(),
                "{paper}: {line}\nexpected: {}",
                c.paper_line()
            );
        }
    }

    /// A section as `document` writes it: heading, data list, state line, claims.
    fn section(
        heading: &str,
        data: &[(&str, bool)],
        state: Option<&str>,
        claims: &[&str],
    ) -> Vec<Block> {
        let mut out = vec![Block::Heading(3, heading.into())];
        out.push(Block::List(
            data.iter()
                .map(|(id, syn)| {
                    format!(
                        "data `{id}`: {} (content identity 0123456789ab)",
                        if *syn {
                            "SYNTHETIC stand-in for x"
                        } else {
                            "real x from $DYAD_DATA_DIR/x"
                        }
                    )
                })
                .collect(),
        ));
        if let Some(s) = state {
            out.push(Block::Para(s.into()));
        }
        if !claims.is_empty() {
            out.push(Block::Para("Claims:".into()));
            out.push(Block::List(claims.iter().map(|c| c.to_string()).collect()));
        }
        out
    }

    /// The overview of a small set of sections: one row per experiment with its data, state
    /// and verdict counts, linked to the anchors its headings get; the HTML pages split by
    /// paper with the links pointing into the right page.
    #[test]
    fn the_overview_counts_each_experiments_verdicts_and_links_to_its_section() {
        let holds = |id: &str| format!("✅ holds — a [{id}]: x");
        let fails = |id: &str| format!("❌ does not hold — b [{id}]: x");
        let even = |id: &str| format!("🟰 not distinguishable — c [{id}]: x");
        let na = |id: &str| format!("➖ not comparable — d [{id}]: x");
        let syn = |c: String| format!("{SHAPE_CHECK}{c}");
        let ours = |c: String| format!("{OURS}{c}");
        let secs: Vec<(&str, Vec<Block>, usize)> = vec![
            (
                "alpha",
                section(
                    "alpha/fig1 — Fig. 1: precision at k",
                    &[("real", false)],
                    None,
                    &[&holds("c1"), &holds("c2"), &fails("c3"), &ours(even("c4"))],
                ),
                3,
            ),
            (
                "alpha",
                section(
                    "alpha/fig2 — Fig. 2: both kinds of data",
                    &[("mnist", false), ("svhn", true), ("dtd", true)],
                    None,
                    &[
                        &holds("c1"),
                        &syn(holds("c2")),
                        &syn(na("c3")),
                        &syn(ours(fails("c4"))),
                    ],
                ),
                0,
            ),
            (
                "beta-paper",
                section(
                    "beta-paper/table1 — Table 1: runtimes",
                    &[("web", true)],
                    None,
                    &[&syn(even("c1")), &syn(na("c2"))],
                ),
                2,
            ),
            (
                "beta-paper",
                section(
                    "beta-paper/fig3 — Fig. 3",
                    &[("real", false)],
                    Some(
                        "INCOMPLETE for profile `paper`: 3 of 10 cells are missing. Missing by data set: …",
                    ),
                    &[],
                ),
                0,
            ),
            (
                "beta-paper",
                section(
                    "beta-paper/fig4 — Fig. 4: never run",
                    &[("real", false)],
                    Some("NOT RUN for profile `paper`: 6 of 6 cells are missing. Run it."),
                    &[],
                ),
                0,
            ),
        ];
        let entries: Vec<Entry> = secs
            .iter()
            .map(|(paper, b, numbers)| Entry::read(paper, b, claim_tallies(b), *numbers))
            .collect();
        let blocks = overview(&entries);
        assert_eq!(blocks[0], Block::Heading(2, OVERVIEW.into()));
        let Block::Table { head, rows } = &blocks[2] else {
            panic!("{blocks:?}")
        };
        assert_eq!(head.len(), 11);
        let row = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rows,
            &vec![
                row(&[
                    "[ALPHA](#alpha)",
                    "[alpha/fig1](#alphafig1--fig-1-precision-at-k)",
                    "Fig. 1",
                    "real",
                    "complete",
                    "3",
                    "2",
                    "1",
                    "0",
                    "0",
                    "1 🟰"
                ]),
                row(&[
                    "",
                    "[alpha/fig2](#alphafig2--fig-2-both-kinds-of-data)",
                    "Fig. 2",
                    "real: `mnist`; SYNTHETIC: `svhn`, `dtd`",
                    "complete",
                    "—",
                    "2 (1 SYNTHETIC)",
                    "0",
                    "0",
                    "1",
                    "1 ❌"
                ]),
                row(&[
                    "[BETA-PAPER](#beta-paper)",
                    "[beta-paper/table1](#beta-papertable1--table-1-runtimes)",
                    "Table 1",
                    "SYNTHETIC",
                    "complete",
                    "2",
                    "0",
                    "0",
                    "1",
                    "1",
                    "—"
                ]),
                row(&[
                    "",
                    "[beta-paper/fig3](#beta-paperfig3--fig-3)",
                    "Fig. 3",
                    "real",
                    "INCOMPLETE: 3 of 10 cells missing",
                    "—",
                    "0",
                    "0",
                    "0",
                    "0",
                    "—"
                ]),
                row(&[
                    "",
                    "[beta-paper/fig4](#beta-paperfig4--fig-4-never-run)",
                    "Fig. 4",
                    "real",
                    "NOT RUN",
                    "—",
                    "0",
                    "0",
                    "0",
                    "0",
                    "—"
                ]),
            ]
        );
        // The whole document: the overview on the index page, each paper on its own page,
        // links pointing across pages, and Markdown that reads back.
        let mut doc = vec![
            Block::Heading(1, "report".into()),
            Block::Para("Generated".into()),
        ];
        doc.extend(blocks);
        let mut paper = "";
        for (p, b, _) in &secs {
            if *p != paper {
                paper = *p;
                doc.push(Block::Heading(2, p.to_uppercase()));
            }
            doc.extend(b.iter().cloned());
        }
        assert_eq!(parse_markdown(&to_markdown(&doc)), doc);
        let pages = html_pages(&doc);
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["index.html", "alpha.html", "beta-paper.html"]);
        let index = &pages[0].1;
        assert!(
            index.contains(
                "<a href=\"alpha.html#alphafig2--fig-2-both-kinds-of-data\">alpha/fig2</a>"
            ),
            "{index}"
        );
        assert!(
            index.contains("<a href=\"beta-paper.html#beta-paper\">BETA-PAPER</a>"),
            "{index}"
        );
        assert!(!index.contains("<h3"), "{index}");
        let beta = &pages[2].1;
        assert!(
            beta.contains("<h3 id=\"beta-papertable1--table-1-runtimes\">"),
            "{beta}"
        );
        assert!(
            beta.contains("<a href=\"index.html\">Overview</a>"),
            "{beta}"
        );
        assert!(!beta.contains("alphafig1"), "{beta}");
    }

    #[test]
    fn text_that_is_not_a_report_link_stays_text() {
        assert_eq!(links("a [c1]: x (y)"), "a [c1]: x (y)");
        assert_eq!(
            links("[see](https://example.org)"),
            "[see](https://example.org)"
        );
        assert_eq!(links("[x] and [y](#z)"), "[x] and <a href=\"#z\">y</a>");
        assert_eq!(
            links("[a <b>](p.html#q)"),
            "<a href=\"p.html#q\">a &lt;b&gt;</a>"
        );
    }

    #[test]
    fn both_renderings_carry_the_same_content_and_escape() {
        let doc = vec![
            Block::Heading(2, "A <b>".into()),
            Block::Table {
                head: vec!["x|y".into()],
                rows: vec![vec!["1".into()]],
            },
            Block::List(vec!["SYNTHETIC & co".into()]),
        ];
        let md = to_markdown(&doc);
        assert!(md.contains("## A <b>") && md.contains("x\\|y") && md.contains("- SYNTHETIC & co"));
        let html = to_html(&doc);
        assert!(
            html.contains("<h2 id=\"a-b\">A &lt;b&gt;</h2>")
                && html.contains("<li>SYNTHETIC &amp; co</li>")
        );
    }
}
