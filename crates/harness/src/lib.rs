//! dyad-harness: declarative experiments from spec to report.
//!
//! The harness is arranged in four layers; each depends only on the layers below it
//! (presentation → analysis → engine → spec), never the other way round:
//!
//! 1. [`spec`]: parse `experiments/<paper>/<figure>.toml` strictly ([`spec::profile`]: the
//!    quick and paper profiles; [`spec::quotes`]: claims' quotes against the papers' texts);
//! 2. [`engine`]: expand a spec for a profile into cells with content-hashed keys
//!    ([`engine::plan`]), compute the missing ones in parallel ([`engine::run`], or across
//!    machines, [`engine::cluster`]), each stored atomically in [`engine::cache`];
//! 3. [`analysis`]: one tidy table per experiment ([`analysis::results`]; Parquet and CSV by
//!    [`analysis::tidy`]), the statistics behind figures and verdicts ([`analysis::stats`]), verdicts on the
//!    papers' claims ([`analysis::claims`]), expectation bands and sanity checks for CI
//!    ([`analysis::check`]);
//! 4. [`presentation`]: SVG/PNG figures ([`presentation::plots`], laid out by
//!    [`presentation::layout`] with [`presentation::font`]'s metrics, rasterised by
//!    [`presentation::png`]) and `REPORT.md` with `index.html` (an overview of every paper and
//!    figure) and one HTML page per paper, with our numbers beside the paper's and a verdict
//!    per claim ([`presentation::report`]).
//!
//! The plug-ins belong to the engine layer: [`tasks`] (what a cell does and records),
//! [`data`] (data providers), [`peers`] (Python solvers) and [`funcish_lr`] (a solver whose
//! parameters include a data pipeline's), composed with the solver crates' lists by
//! [`registry`]. They use the spec and engine types and are called by plan and run;
//! they never reach into analysis or presentation. [`Workspace`] ties the layers together.

pub mod analysis;
pub mod data;
pub mod engine;
pub mod funcish_lr;
pub mod peers;
pub mod presentation;
pub mod registry;
pub mod spec;
pub mod tasks;

// The paths the task files name. A task's source files are fingerprinted token by token into
// the provenance of every cell it ran (`Task::sources`): these aliases keep their text, so
// arranging the engine in its layer left no cell stale. New code names the layered paths.
pub(crate) use engine::{cache, plan};
pub(crate) use spec::profile;

use analysis::results::ExperimentResults;
use data::DataContext;
use engine::cache::Cache;
use engine::plan::Plan;
use presentation::{plots, report};
use spec::profile::Profile;
use spec::{LoadedSpec, SpecError};
use std::path::{Path, PathBuf};

/// Errors of the harness, each naming what failed.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Specs(Vec<SpecError>),
    #[error("{0}")]
    Other(String),
}

/// The places an invocation works with.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// `experiments/`: one directory per paper.
    pub experiments: PathBuf,
    /// `results/`: cache, tables, reports.
    pub results: PathBuf,
    /// Where real data is looked for.
    pub data_dir: PathBuf,
}

/// What `outputs` wrote for one experiment.
#[derive(Debug, Clone)]
pub struct Written {
    pub experiment: String,
    pub tables: Vec<PathBuf>,
    /// The tables were left as they were: their stamp said they hold these cells already.
    pub tables_kept: bool,
    pub figures: Vec<PathBuf>,
    /// Cells' pictures (see [`engine::cache::Artifact`]).
    pub pictures: Vec<PathBuf>,
    /// Cells still missing (nothing is written for an incomplete experiment).
    pub missing: usize,
    /// Composite figures (`[[figures]]`) not drawn, and what each waits for.
    pub figures_waiting: Vec<String>,
    /// Cached cells computed by code that has changed since
    /// ([`ExperimentResults::stale_cells`]).
    pub stale: usize,
}

/// Cached cells of one kind that no spec refers to (see [`Workspace::orphans`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Orphans {
    /// `task / data provider / solver`.
    pub what: String,
    pub keys: Vec<String>,
    pub bytes: u64,
    /// How many of them were computed on real data (not a stand-in).
    pub real: usize,
}

/// What [`Workspace::export_cells`] or [`Workspace::import_cells`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Transfer {
    /// Cells copied.
    pub copied: usize,
    /// Bytes of the copied cells' files.
    pub bytes: u64,
    /// Valid cells the destination held already (left as they were).
    pub present: usize,
    /// Cells of the plans not computed yet (export).
    pub absent: usize,
    /// Files of the source that are no valid cell, and why (import; none is copied).
    pub invalid: Vec<(PathBuf, String)>,
}

impl Workspace {
    pub fn data_context(&self) -> DataContext {
        DataContext::new(self.data_dir.clone(), self.results.join("cache"))
    }

    pub fn cache(&self) -> Cache {
        Cache::new(&self.results)
    }

    /// Specs matching `targets`: empty = all; `paper`; `paper/name`; or a path to a file.
    pub fn select_specs(&self, targets: &[String]) -> Result<Vec<LoadedSpec>, HarnessError> {
        let all = spec::discover(&self.experiments).map_err(|e| {
            HarnessError::Other(format!(
                "{}: {e} (run from the workspace root or pass --experiments)",
                self.experiments.display()
            ))
        })?;
        let mut chosen: Vec<PathBuf> = Vec::new();
        if targets.is_empty() {
            chosen = all;
        } else {
            for t in targets {
                let as_path = Path::new(t);
                let hits: Vec<PathBuf> = if t.ends_with(".toml") {
                    vec![as_path.to_path_buf()]
                } else {
                    all.iter()
                        .filter(|p| {
                            let id = spec_id_of(p);
                            id == *t || id.split('/').next() == Some(t.as_str())
                        })
                        .cloned()
                        .collect()
                };
                if hits.is_empty() {
                    let known: Vec<String> = all.iter().map(|p| spec_id_of(p)).collect();
                    return Err(HarnessError::Other(format!(
                        "no experiment matches `{t}` (known: {})",
                        known.join(", ")
                    )));
                }
                for h in hits {
                    if !chosen.contains(&h) {
                        chosen.push(h);
                    }
                }
            }
        }
        let mut specs = Vec::new();
        let mut errors = Vec::new();
        for p in chosen {
            // One validation pass: the spec's own, then what its claims' and plots' kinds need.
            let checked = LoadedSpec::load(&p).and_then(|s| {
                analysis::claims::validate(&s)?;
                presentation::plots::kinds::validate(&s)?;
                Ok(s)
            });
            match checked {
                Ok(s) => specs.push(s),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(specs)
        } else {
            Err(HarnessError::Specs(errors))
        }
    }

    /// Expand specs for a profile; every spec error is reported, not only the first.
    pub fn plan(
        &self,
        specs: &[LoadedSpec],
        profile: Profile,
        ctx: &DataContext,
    ) -> Result<Vec<Plan>, HarnessError> {
        // A bad `DYAD_MEMORY` is one error, not one per spec.
        engine::plan::memory_limit().map_err(HarnessError::Other)?;
        let mut plans = Vec::new();
        let mut errors = Vec::new();
        for s in specs {
            match engine::plan::plan(s, profile, ctx) {
                Ok(p) => plans.push(p),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(plans)
        } else {
            Err(HarnessError::Specs(errors))
        }
    }

    /// The cached cells that no cell of `plans` (every spec, both profiles) has as its key:
    /// cells whose spec, parameters, data or versions have changed since, or whose spec is
    /// gone. Grouped by what they were (`task / data / solver`), with their count and bytes.
    /// Plan with the data directory the cells were computed with: a real data set resolved
    /// to its stand-in changes its cells' keys (see [`data::real_data_elsewhere`]).
    pub fn orphans(&self, plans: &[Plan]) -> Vec<Orphans> {
        Self::orphans_in(&self.cache(), plans)
    }

    /// [`Self::orphans`] of another store of cells (a cell archive, `Cache::at(dir)`).
    pub fn orphans_in(cache: &Cache, plans: &[Plan]) -> Vec<Orphans> {
        let wanted: std::collections::HashSet<&str> = plan_keys(plans).into_iter().collect();
        let mut groups: std::collections::BTreeMap<String, Orphans> = Default::default();
        for key in cache.keys() {
            if wanted.contains(key.as_str()) {
                continue;
            }
            let (what, real) = match cache.check(&key) {
                Ok(Some(c)) => (
                    format!(
                        "{} / {} / {}",
                        c.canonical["task"]["name"].as_str().unwrap_or("?"),
                        c.canonical["data"]["name"].as_str().unwrap_or(&c.dataset),
                        c.solver
                    ),
                    !c.synthetic,
                ),
                _ => ("unreadable or invalid cell files".to_string(), false),
            };
            let g = groups.entry(what.clone()).or_insert_with(|| Orphans {
                what,
                keys: Vec::new(),
                bytes: 0,
                real: 0,
            });
            g.real += usize::from(real);
            g.bytes += cache.bytes(&key);
            g.keys.push(key);
        }
        groups.into_values().collect()
    }

    /// The cell archive kept with the results, `<results>/archive` (this repository's
    /// `results/archive/`): read only by `dyad archive import`.
    pub fn archive_dir(&self) -> PathBuf {
        self.results.join("archive")
    }

    /// How many cells of `plans` are missing from the cache but held by
    /// [`Self::archive_dir`] (file present; validity is checked on import).
    pub fn archived_missing(&self, plans: &[Plan]) -> usize {
        let (cache, archive) = (self.cache(), Cache::at(&self.archive_dir()));
        if !archive.root().is_dir() {
            return 0;
        }
        plan_keys(plans)
            .into_iter()
            .filter(|k| archive.path(k).is_file() && !cache.contains(k))
            .count()
    }

    /// Copies the cached cells of `plans` into the cell archive `to` (created if needed; the
    /// cache's own layout, `to/cells/<2 hex>/<key>.json`), leaving the cells it holds already.
    /// A cell's key hashes its task, data identity, solver, parameters and code versions, so an
    /// archive carries computed cells to another clone or machine: [`Self::import_cells`]
    /// there, and exactly the cells it would compute the same way are reused. With `replace`,
    /// every cached cell of `plans` overwrites the archive's copy: after timing cells again on
    /// an idle machine (`--recompute all` keeps their keys and values, only timings move).
    pub fn export_cells(
        &self,
        plans: &[Plan],
        to: &Path,
        replace: bool,
    ) -> std::io::Result<Transfer> {
        let (cache, archive) = (self.cache(), Cache::at(to));
        let mut t = Transfer::default();
        let mut seen = std::collections::BTreeSet::new();
        for cell in plans.iter().flat_map(|p| &p.cells) {
            let key = cell.key.as_str();
            if !seen.insert(key) {
                continue;
            }
            // An archived copy computed by older code gives way to the cache's cell when
            // that one was computed (or re-stamped) by the current code: a `--recompute
            // stale` keeps the key, so skipping every key held would keep the stale copy.
            let stale_there = |c: &engine::cache::CellResult| {
                c.code == cell.code && archive.get(key).is_some_and(|a| a.code != cell.code)
            };
            match cache.get(key) {
                None => t.absent += 1,
                Some(c) if !replace && archive.contains(key) && !stale_there(&c) => t.present += 1,
                Some(cell) => {
                    archive.put(&cell)?;
                    t.copied += 1;
                    t.bytes += archive.bytes(key);
                }
            }
        }
        // The evidence behind re-stamped cells travels with them, and so does what their
        // real data sets resolved to (a clone without the data reports them).
        archive.merge_witnesses(&cache)?;
        archive.record_data(&real_data(plans))?;
        Ok(t)
    }

    /// Re-stamps the cells of `plans` held in `store` (the cache, or an archive directory) that
    /// are stale only by code proven equivalent: every changed part of their code fingerprints
    /// (old → current) has a witness in the cache ([`Cache::equivalences`]: a cell of that old
    /// code recomputed by the current one came out identical). Their values and keys stay; only
    /// the fingerprints kept beside them change. Returns (re-stamped, stale without a witness).
    pub fn restamp(&self, plans: &[Plan], store: &Cache) -> std::io::Result<(usize, usize)> {
        let proven = self.cache().equivalences();
        let (mut done, mut unproven) = (0, 0);
        let mut seen = std::collections::BTreeSet::new();
        for plan in plans {
            for cell in &plan.cells {
                if !seen.insert(cell.key.clone()) {
                    continue;
                }
                let Some(mut old) = store.get(&cell.key) else {
                    continue;
                };
                let changed: Vec<String> = engine::cache::changed_parts(&cell.code, &old.code)
                    .map(str::to_string)
                    .collect();
                if changed.is_empty() {
                    continue;
                }
                let all = changed.iter().all(|part| {
                    proven.contains(&(
                        part.clone(),
                        old.code[part].clone(),
                        cell.code[part].clone(),
                    ))
                });
                if all {
                    for part in changed {
                        let now = cell.code[&part].clone();
                        old.code.insert(part, now);
                    }
                    store.put(&old)?;
                    done += 1;
                } else {
                    unproven += 1;
                }
            }
        }
        Ok((done, unproven))
    }

    /// Copies every valid cell of the archive `from` (see [`Self::export_cells`]) that this
    /// cache lacks, and the archive's code-equivalence witnesses; files that are no valid cell
    /// (truncated, edited: their SHA-256 does not match) are listed in [`Transfer::invalid`]
    /// and not copied.
    pub fn import_cells(&self, from: &Path) -> Result<Transfer, HarnessError> {
        let (archive, cache) = (Cache::at(from), self.cache());
        if !from.join("cells").is_dir() {
            return Err(HarnessError::Other(format!(
                "{} is no cell archive: it has no cells/ directory (`dyad archive export` \
                 writes one)",
                from.display()
            )));
        }
        let mut t = Transfer::default();
        for key in archive.keys() {
            match archive.check(&key) {
                Ok(Some(_)) if cache.contains(&key) => t.present += 1,
                Ok(Some(cell)) => {
                    cache.put(&cell).map_err(|e| {
                        HarnessError::Other(format!("writing cell {key} into the cache: {e}"))
                    })?;
                    t.copied += 1;
                    t.bytes += cache.bytes(&key);
                }
                Ok(None) => {}
                Err(e) => t.invalid.push((archive.path(&key), e.to_string())),
            }
        }
        cache.merge_witnesses(&archive).map_err(|e| {
            HarnessError::Other(format!("merging the archive's code witnesses: {e}"))
        })?;
        // What the archive's real data sets resolved to; a damaged line is listed like a
        // damaged cell (without it, a clone lacking that data reports its cells NOT RUN).
        let (records, damaged) = archive.recorded_data_checked();
        for (line, e) in damaged {
            t.invalid.push((
                archive.recorded_data_path(),
                format!("line {line}: not a data set's record: {e}"),
            ));
        }
        cache
            .record_data(&records)
            .map_err(|e| HarnessError::Other(format!("keeping the archive's data records: {e}")))?;
        Ok(t)
    }

    /// Tables (for every complete experiment) and figures into the profile's report directory.
    pub fn outputs(&self, plans: &[Plan]) -> Result<Vec<Written>, HarnessError> {
        self.outputs_of(&Self::load_digested(plans, &self.cache()))
    }

    /// Every plan's results with its cells' content digests, read once for all outputs.
    fn load_digested<'p>(
        plans: &'p [Plan],
        cache: &Cache,
    ) -> Vec<(ExperimentResults<'p>, Vec<Option<String>>)> {
        plans
            .iter()
            .map(|p| ExperimentResults::load_digested(p, cache))
            .collect()
    }

    /// [`Workspace::outputs`] of results already read.
    fn outputs_of(
        &self,
        loaded: &[(ExperimentResults<'_>, Vec<Option<String>>)],
    ) -> Result<Vec<Written>, HarnessError> {
        let mut out = Vec::new();
        for (res, digests) in loaded {
            let p = res.plan;
            let mut w = Written {
                experiment: p.spec.id.clone(),
                tables: Vec::new(),
                tables_kept: false,
                figures: Vec::new(),
                pictures: Vec::new(),
                missing: res.missing(),
                figures_waiting: Vec::new(),
                stale: res.stale_cells(),
            };
            if res.complete() {
                analysis::names::check(res).map_err(|e| HarnessError::Specs(vec![e]))?;
                let tables = self.results.join("tables").join(p.profile.as_str());
                // What a run killed while writing tables or figures left behind.
                engine::cache::remove_dead_temps(&tables);
                engine::cache::remove_dead_temps(
                    &report::report_dir(&self.results, p.profile).join("figures"),
                );
                let (paths, kept) = res
                    .write_tables(&tables, digests)
                    .map_err(HarnessError::Other)?;
                w.tables = paths.to_vec();
                w.tables_kept = kept;
                let figs = report::report_dir(&self.results, p.profile).join("figures");
                for plot in &p.spec.spec.plots {
                    let stem = format!("{}-{}", p.spec.id.replace('/', "-"), plot.id);
                    remove_partial(&figs, &stem);
                    let paths = plots::render(res, plot, &figs, &stem).map_err(|e| {
                        HarnessError::Other(format!("{}: plot `{}`: {e}", p.spec.id, plot.id))
                    })?;
                    w.figures.extend(paths);
                }
                for a in report::artifacts(res) {
                    let (Some(name), Some(png)) = (&a.picture, a.artifact.png()) else {
                        continue;
                    };
                    let path = figs.join(name);
                    engine::cache::write_atomic(&path, &png)
                        .map_err(|e| HarnessError::Other(format!("{}: {e}", path.display())))?;
                    w.pictures.push(path);
                }
            } else {
                w.figures = self.partial_figures(res)?;
            }
            out.push(w);
        }
        self.composite_figures(loaded, &mut out)?;
        Ok(out)
    }

    /// The plots of a partly computed experiment restricted to its complete data sets (every
    /// cell cached), as `<stem>-partial` files titled so: a long run's finished panels (the
    /// real-data one, say) can be looked at before the rest is done. None when no data set
    /// is complete or no plot draws one.
    fn partial_figures(&self, res: &ExperimentResults<'_>) -> Result<Vec<PathBuf>, HarnessError> {
        let p = res.plan;
        let mut paths = Vec::new();
        let figs = report::report_dir(&self.results, p.profile).join("figures");
        for plot in &p.spec.spec.plots {
            let Some(mut part) = complete_part(res, plot) else {
                continue;
            };
            part.title = format!(
                "{} [PARTIAL: complete data sets only ({}); other cells still missing]",
                plot.title,
                part.datasets.join(", ")
            );
            let stem = format!("{}-{}-partial", p.spec.id.replace('/', "-"), plot.id);
            let drawn = plots::render(res, &part, &figs, &stem).map_err(|e| {
                HarnessError::Other(format!("{}: plot `{}` (partial): {e}", p.spec.id, plot.id))
            })?;
            paths.extend(drawn);
        }
        Ok(paths)
    }

    /// The `[[figures]]` of every experiment whose sources (plots of it or of other specs of
    /// the same paper among `plans`) are complete. A figure whose sources miss cells waits
    /// (its experiment's `figures_waiting` says for what) and is drawn meanwhile from the
    /// panels of their complete data sets as `<stem>-partial`, titled PARTIAL; one whose
    /// source spec is not selected is not drawn.
    fn composite_figures(
        &self,
        loaded: &[(ExperimentResults<'_>, Vec<Option<String>>)],
        out: &mut [Written],
    ) -> Result<(), HarnessError> {
        let plans: Vec<&Plan> = loaded.iter().map(|(r, _)| r.plan).collect();
        for (pi, p) in plans.iter().enumerate() {
            if p.spec.spec.figures.is_empty() {
                continue;
            }
            // Composite figures go first in the experiment's list: they are the paper's
            // figure, the plots they are made of its parts.
            let mut at = 0;
            let paper_dir = p.spec.id.split_once('/').map_or("", |(d, _)| d);
            let figs = report::report_dir(&self.results, p.profile).join("figures");
            for fig in &p.spec.spec.figures {
                // (plan index, plot) of every source, or what is not there.
                let mut sources: Vec<(usize, &spec::PlotSpec)> = Vec::new();
                let mut waiting: Vec<String> = Vec::new();
                let mut unselected = false;
                for (stem, plot_id) in fig.sources() {
                    let id = match stem {
                        None => p.spec.id.clone(),
                        Some(stem) => format!("{paper_dir}/{stem}"),
                    };
                    let Some(qi) = plans.iter().position(|q| q.spec.id == id) else {
                        waiting.push(format!("{id} (not selected)"));
                        unselected = true;
                        continue;
                    };
                    if out[qi].missing > 0 {
                        waiting.push(format!("{id} ({} cells missing)", out[qi].missing));
                    }
                    let Some(plot) = plans[qi].spec.spec.plots.iter().find(|x| x.id == plot_id)
                    else {
                        return Err(HarnessError::Other(format!(
                            "{}: figure `{}`: {id} has no plot `{plot_id}`",
                            p.spec.id, fig.id
                        )));
                    };
                    sources.push((qi, plot));
                }
                let stem = format!("{}-{}", p.spec.id.replace('/', "-"), fig.id);
                if !waiting.is_empty() {
                    out[pi].figures_waiting.push(format!(
                        "{}: waits for {}",
                        fig.id,
                        waiting.join(", ")
                    ));
                }
                let results: Vec<&ExperimentResults<'_>> =
                    sources.iter().map(|&(qi, _)| &loaded[qi].0).collect();
                // (source index, plot as drawn): every panel, or while cells are missing the
                // panels of the complete data sets, titled PARTIAL.
                let (title, stem, parts): (String, String, Vec<(usize, spec::PlotSpec)>) =
                    if waiting.is_empty() {
                        remove_partial(&figs, &stem);
                        let all = sources.iter().map(|&(_, plot)| plot.clone()).enumerate();
                        (fig.title.clone(), stem, all.collect())
                    } else if unselected {
                        continue;
                    } else {
                        let parts: Vec<(usize, spec::PlotSpec)> = sources
                            .iter()
                            .enumerate()
                            .filter_map(|(i, &(_, plot))| {
                                complete_part(results[i], plot).map(|p| (i, p))
                            })
                            .collect();
                        if parts.is_empty() {
                            continue;
                        }
                        let title = format!(
                            "{} [PARTIAL: the panels of complete data sets only; other cells still missing]",
                            fig.title
                        );
                        (title, format!("{stem}-partial"), parts)
                    };
                let pairs: Vec<(&ExperimentResults<'_>, &spec::PlotSpec)> =
                    parts.iter().map(|(i, plot)| (results[*i], plot)).collect();
                let paths = plots::render_figure(&title, &pairs, fig.columns, &figs, &stem)
                    .map_err(|e| {
                        HarnessError::Other(format!("{}: figure `{}`: {e}", p.spec.id, fig.id))
                    })?;
                for path in paths {
                    out[pi].figures.insert(at, path);
                    at += 1;
                }
            }
        }
        Ok(())
    }

    /// Write the report of `plans` (figures and tables are rewritten first); returns the
    /// paths of `index.html` and `REPORT.md`.
    pub fn report(&self, plans: &[Plan], profile: Profile) -> Result<[PathBuf; 2], HarnessError> {
        Ok(self.report_written(plans, profile)?.0)
    }

    /// [`Workspace::report`], with what [`Workspace::outputs`] wrote on the way (every cell
    /// is read once for both).
    pub fn report_written(
        &self,
        plans: &[Plan],
        profile: Profile,
    ) -> Result<([PathBuf; 2], Vec<Written>), HarnessError> {
        let loaded = Self::load_digested(plans, &self.cache());
        let written = self.outputs_of(&loaded)?;
        // The figures directory holds this report's figures and nothing else: one an earlier
        // report drew (a section that has lost cells since, a plot renamed or removed) would
        // stay beside them, and the report would not be what its cells make of it.
        let figs = report::report_dir(&self.results, profile).join("figures");
        remove_other_files(
            &figs,
            written
                .iter()
                .flat_map(|w| w.figures.iter().chain(&w.pictures)),
        )?;
        let sections: Vec<report::Section<'_>> = loaded
            .into_iter()
            .zip(&written)
            .map(|((results, _), w)| report::Section {
                results,
                figures: w
                    .figures
                    .iter()
                    .filter(|f| f.extension().is_some_and(|x| x == "png"))
                    .filter_map(|f| f.file_name())
                    .map(|n| format!("figures/{}", n.to_string_lossy()))
                    .collect(),
                // Relative to the report directory, never the machine's absolute paths.
                tables: w
                    .tables
                    .iter()
                    .map(|t| {
                        t.strip_prefix(&self.results)
                            .map(|r| Path::new("..").join(r))
                            .unwrap_or_else(|_| t.clone())
                    })
                    .collect(),
            })
            .collect();
        let dir = report::report_dir(&self.results, profile);
        let html = dir.join("index.html");
        let md = dir.join("REPORT.md");
        let doc = report::document(&sections, profile);
        let io = |p: &Path, e: std::io::Error| HarnessError::Other(format!("{}: {e}", p.display()));
        // `index.html` (the overview) and one page per paper.
        for (name, page) in report::html_pages(&doc) {
            let path = dir.join(name);
            engine::cache::write_atomic(&path, page.as_bytes()).map_err(|e| io(&path, e))?;
        }
        engine::cache::write_atomic(&md, report::to_markdown(&doc).as_bytes())
            .map_err(|e| io(&md, e))?;
        Ok(([html, md], written))
    }
}

/// What the real data sets of `plans` resolved to here (those present: a stand-in is not
/// recorded), for [`engine::cache::Cache::record_data`].
fn real_data(plans: &[Plan]) -> Vec<dyad_datasets::provider::RecordedEntry> {
    plans
        .iter()
        .flat_map(|p| &p.datasets)
        .filter(|d| d.resolved.name == d.requested && !d.resolved.synthetic)
        .filter_map(|d| {
            Some(dyad_datasets::provider::RecordedEntry {
                requested: d.requested.clone(),
                params: serde_json::to_value(&d.spec_params).ok()?,
                resolved: dyad_datasets::provider::Recorded::of(&d.resolved),
            })
        })
        .collect()
}

/// The distinct cell keys of `plans`, sorted (specs can share cells).
fn plan_keys(plans: &[Plan]) -> Vec<&str> {
    let mut keys: Vec<&str> = plans
        .iter()
        .flat_map(|p| p.cells.iter().map(|c| c.key.as_str()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Delete every file of `dir` that is not one of `keep` (by file name; sub-directories are
/// left alone).
fn remove_other_files<'a>(
    dir: &Path,
    keep: impl Iterator<Item = &'a PathBuf>,
) -> Result<(), HarnessError> {
    let keep: std::collections::BTreeSet<&std::ffi::OsStr> =
        keep.filter_map(|p| p.file_name()).collect();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_file() && !keep.contains(e.file_name().as_os_str()) {
            std::fs::remove_file(&path)
                .map_err(|err| HarnessError::Other(format!("{}: {err}", path.display())))?;
        }
    }
    Ok(())
}

/// Deletes the PARTIAL version of figure `stem`, which its complete version supersedes.
fn remove_partial(figs: &Path, stem: &str) {
    for ext in ["svg", "png"] {
        let _ = std::fs::remove_file(figs.join(format!("{stem}-partial.{ext}")));
    }
}

/// `plot` restricted to the data sets of `res` whose cells are all cached (among those it
/// draws); `None` when it would draw none.
fn complete_part(res: &ExperimentResults<'_>, plot: &spec::PlotSpec) -> Option<spec::PlotSpec> {
    let missing = res.missing_by_dataset();
    let mut part = plot.clone();
    part.datasets = res
        .plan
        .datasets
        .iter()
        .zip(&missing)
        .filter(|&(d, &m)| m == 0 && (plot.datasets.is_empty() || plot.datasets.contains(&d.id)))
        .map(|(d, _)| d.id.clone())
        .collect();
    (!part.datasets.is_empty()).then_some(part)
}

/// `<paper>/<stem>` of a spec path.
pub fn spec_id_of(p: &Path) -> String {
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = p
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|s| s.to_str())
        .unwrap_or("");
    format!("{dir}/{stem}")
}
