//! `dyad`: run, reproduce, report and check the experiments of the dyad papers.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use dyad_harness::analysis::check;
use dyad_harness::analysis::results::ExperimentResults;
use dyad_harness::engine::run::{Progress, Recompute, RunOptions, execute, human_seconds};
use dyad_harness::spec::profile::Profile;
use dyad_harness::{Workspace, data};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `println!` that ends the process quietly (exit 0) when stdout is a closed pipe
/// (`dyad list | head -1`), and with an error (exit 2) when stdout cannot be written (a full
/// disk, `> /dev/full`), instead of panicking.
macro_rules! say {
    () => { say!("") };
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            // A full disk or a closed descriptor: say so and stop (results already written
            // are complete files; what the run computed is in the cache).
            let _ = writeln!(std::io::stderr(), "error: writing to stdout: {e}");
            std::process::exit(2);
        }
    }};
}

mod compare;

#[derive(Parser)]
#[command(
    name = "dyad",
    version,
    about = "Reproduce the dyad papers' figures and tables"
)]
struct Cli {
    /// Directory of experiment specs (`<paper>/<figure>.toml`).
    #[arg(long, global = true, default_value = "experiments")]
    experiments: PathBuf,
    /// Results directory: cache, tables, figures and reports.
    #[arg(long, global = true, default_value = "results")]
    results: PathBuf,
    /// Where real data sets are looked for [default: $DYAD_DATA_DIR, else datasets/].
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// `quick` (CI-sized) or `paper` (the paper's sizes).
    #[arg(long, default_value = "paper")]
    profile: Profile,
    /// Keep running other cells after a failure (default: stop at the first).
    #[arg(long)]
    keep_going: bool,
    /// Cells computed at once, at least 1 (default: one per core). Results do not depend on it.
    /// Each cell's parallel sections get an equal share of `RAYON_NUM_THREADS` (else of the
    /// cores): single-core timings want `--threads 1` with `RAYON_NUM_THREADS=1`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
    /// Cached cells to compute again: `stale` (computed by task, solver or data-provider code
    /// that has changed since: the report's warning) or `all` (e.g. timings on a quiet
    /// machine). Each old cell is moved to `<results>/cache/superseded/` when a worker takes it
    /// up (a run stopped early leaves the others cached) and waits there until the new one is
    /// stored; each is then compared with its replacement record by record, timings aside,
    /// and deleted when the new cell reproduces all of it. With `--executor slurm` they are
    /// moved aside at submission and listed in the manifest with the missing cells.
    #[arg(long, default_value = "missing")]
    recompute: Recompute,
    /// `local` (this process) or `slurm` (a job array over the shared cache, then a dependent
    /// job that writes the tables, figures and report).
    #[arg(long, default_value = "local")]
    executor: Executor,
    /// Slurm: at most this many array tasks at once (`--array=0-N%limit`; 0: no limit).
    #[arg(long, default_value_t = 0)]
    array_limit: usize,
    /// Slurm: options for `sbatch` (after `--`: `-- --partition=cpu --time=2:00:00`).
    #[arg(last = true)]
    sbatch: Vec<String>,
    #[command(flatten)]
    only: Only,
}

/// Limits a command to some cells of the selected specs. A cell's key does not depend on
/// which cells run together, so a limited run computes exactly what a full run would.
#[derive(clap::Args, Debug, Clone, Default)]
struct Only {
    /// Only the cells of this solver (registry name or legend label: `dr` or `DR`; a label
    /// without its grid point, `"Givens m=10"`, selects every point of the grid); repeat
    /// for several. E.g. a new baseline alone, beside cached results of the others.
    #[arg(long = "solver", value_name = "NAME")]
    solvers: Vec<String>,
    /// Only the cells on this data set (the spec's id: `mnist`); repeat for several.
    #[arg(long = "dataset", value_name = "ID")]
    datasets: Vec<String>,
}

impl Only {
    fn filter(&self) -> dyad_harness::engine::plan::CellFilter {
        dyad_harness::engine::plan::CellFilter {
            solvers: self.solvers.clone(),
            datasets: self.datasets.clone(),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run experiment specs (files, or ids like `oasis/fig5`), then write their tables and figures.
    /// With `--executor slurm`, submit their missing cells as a Slurm job array instead.
    Run {
        #[arg(required = true)]
        specs: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run a paper (`oasis`), a figure (`oasis/fig5`) or everything, then write the report.
    /// With `--executor slurm`, submit the missing cells as a Slurm job array instead (options
    /// after `--` go to every `sbatch`: `-- --partition=cpu --time=2:00:00`).
    Reproduce {
        targets: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// The cells a reproduction would compute and an estimate of their CPU time from the
    /// cached timings of similar cells.
    Plan {
        targets: Vec<String>,
        #[arg(long, default_value = "paper")]
        profile: Profile,
        /// List every missing cell.
        #[arg(long)]
        cells: bool,
        /// Also write the missing cells as a manifest here, for `dyad cell <manifest> <i>`
        /// under any scheduler (or `dyad cell <manifest> --all` locally).
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// With `--manifest`: also move these cached cells aside (`stale` or `all`, as for
        /// `run`) and put them in the manifest; the task that computes one compares it with
        /// the old cell.
        #[arg(long, default_value = "missing", requires = "manifest")]
        recompute: Recompute,
        /// Also say where the recorded time goes: cell time by paper, spec and solver, split
        /// into training, model selection, evaluation and the rest, from the cells in
        /// `--from` (the results' cache by default; e.g. `results/archive`).
        #[arg(long)]
        cost: bool,
        /// With `--cost`: read the recorded cells from this cell archive.
        #[arg(long, requires = "cost")]
        from: Option<PathBuf>,
        #[command(flatten)]
        only: Only,
    },
    /// Compute cell `index` of a manifest (what one Slurm array task runs), or with `--all`
    /// every cell of it here.
    Cell {
        manifest: PathBuf,
        #[arg(required_unless_present = "all")]
        index: Option<usize>,
        #[arg(long)]
        all: bool,
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        threads: Option<u32>,
    },
    /// Done / running / queued / failed / missing cells of a manifest (default: the latest
    /// submission under `<results>/slurm/`), from the shared cache and Slurm's queue; exits 1
    /// when a cell failed.
    Status { manifest: Option<PathBuf> },
    /// List experiments and how many of their cells are cached (quick and paper profiles).
    List,
    /// Cached cells that no spec refers to any more at either profile (their parameters,
    /// data, versions or spec changed): listed by kind, or deleted with `--delete`. Run it
    /// with the data directory the cells were computed with; it refuses when a real data set
    /// read before resolves to its stand-in (its cells would look orphaned). `--in DIR`
    /// prunes a cell archive the same way: what no table, figure or claim of a report reads.
    Prune {
        /// Delete them (default: only list them).
        #[arg(long)]
        delete: bool,
        /// Prune this cell archive (e.g. `results/archive`) instead of the cache. Real data
        /// absent here is keyed as the archive records its cells were computed.
        #[arg(long = "in")]
        archive: Option<PathBuf>,
    },
    /// Cell archives: carry computed cells to another clone or machine. A cell's key hashes
    /// its task, data identity, solver, parameters and code versions, so an imported cell is
    /// used exactly where this clone would compute the same cell.
    Archive {
        #[command(subcommand)]
        command: ArchiveCommand,
    },
    /// Rebuild tables, figures and the report from cached cells.
    Report {
        /// Default: the profile of the last `run`/`reproduce` on these results, else `paper`.
        #[arg(long)]
        profile: Option<Profile>,
    },
    /// Compare cached results with every spec's expectation bands; non-zero exit names each
    /// metric outside its band.
    Check {
        targets: Vec<String>,
        /// Default: the profile of the last `run`/`reproduce` on these results, else `paper`.
        #[arg(long)]
        profile: Option<Profile>,
    },
    /// Compare two runs: A and B are results directories or cell archives (e.g. the committed
    /// quick reference `results/references/quick` and `results` after a quick run). Cells of the
    /// selected specs are paired by their identity without versions; per pair whether values
    /// are identical (timings aside) and, where not, what explains it (a version bump, other
    /// data, or nothing: unexplained); cells on one side only; headline metrics' paired
    /// differences; claims' verdicts on each side. Exits 1 when a value changed without a
    /// version bump (a changed code fingerprint alone does not explain it).
    Compare {
        /// The reference side: a results directory or a cell archive.
        a: PathBuf,
        /// The side compared with it: a results directory or a cell archive.
        b: PathBuf,
        /// Specs to compare (`oasis`, `oasis/fig5`; default: all).
        targets: Vec<String>,
        /// Default: the profile of the last `run`/`reproduce` on `--results`, else `paper`.
        #[arg(long)]
        profile: Option<Profile>,
        /// The whole comparison as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Afterwards make A (a cell archive, created if absent) hold B's cells of the selected
        /// specs: refreshes a reference after an intended change. Exits 0 when it succeeded.
        #[arg(long)]
        bless: bool,
        /// Compare two settings: pair cells that differ in this canonical path as well (e.g.
        /// `task.protocol.warm_start`, `solver.params.max_iter`; repeatable); a difference it
        /// explains is not a failure.
        #[arg(long, value_name = "PATH", conflicts_with = "bless")]
        ignore: Vec<String>,
    },
    /// Create (or update) the Python peers' virtual environment from peers/requirements.txt
    /// [default place: .venv-peers/, or $DYAD_PEERS_VENV].
    Peers,
    /// Data sets: what is present, and verification of real files.
    Data {
        #[command(subcommand)]
        command: DataCommand,
    },
}

#[derive(Subcommand)]
enum ArchiveCommand {
    /// Copy the cached cells of specs (all when none is named) at a profile into a directory
    /// (the cache's layout, `DIR/cells/`), keeping the cells it holds already.
    Export {
        targets: Vec<String>,
        #[arg(long, default_value = "paper")]
        profile: Profile,
        /// The archive directory (created if needed).
        #[arg(long)]
        to: PathBuf,
        /// Overwrite the archive's copies of these cells with the cache's, e.g. after timing
        /// cells again on an idle machine (`dyad run --recompute all` keeps keys and values;
        /// without this flag an archived cell of the current code stays as it is).
        #[arg(long)]
        replace: bool,
    },
    /// Copy the valid cells of an archive that this cache lacks (files whose SHA-256 does not
    /// match are listed and skipped; exits 1 when there were any).
    Import { from: PathBuf },
    /// Re-stamp cells that are stale only by code proven equivalent: cells whose every changed
    /// code fingerprint matches a witness, i.e. a cell of the same old code that `dyad run
    /// --recompute stale|all` computed again with the current code and found identical. Keys
    /// and values stay; only the fingerprints kept beside the cells change. E.g. after a
    /// refactoring: recompute a sample of each solver's cells, then re-stamp the rest.
    Restamp {
        targets: Vec<String>,
        #[arg(long, default_value = "paper")]
        profile: Profile,
        /// Re-stamp the cells of this archive directory instead of the cache's.
        #[arg(long = "in")]
        archive: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Executor {
    Local,
    Slurm,
}

#[derive(Subcommand)]
enum DataCommand {
    /// Every registered data set: real ones (present or not) and the stand-ins.
    List,
    /// Where a data set comes from, its files, license and citation.
    Info { name: String },
    /// Check a real data set's files (published checksums) and decoded content identity.
    Verify { name: String },
    /// Download a data set from its canonical source (resumable, checksummed).
    Fetch { name: String },
}

fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no other thread exists yet.
    unsafe { dyad_tensor_rank::deep::sequential_candle_products() };
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    let cli = Cli::parse();
    let ws = Workspace {
        experiments: cli.experiments.clone(),
        results: cli.results.clone(),
        data_dir: cli
            .data_dir
            .clone()
            .unwrap_or_else(data::DataContext::default_data_dir),
    };
    match cli.command {
        Command::Run { specs, run }
        | Command::Reproduce {
            targets: specs,
            run,
        } if run.executor == Executor::Slurm => slurm_submit(&ws, &specs, &run),
        Command::Run { specs, run } => run_and_write(&ws, &specs, &run, false),
        Command::Reproduce { targets, run } => run_and_write(&ws, &targets, &run, true),
        Command::Plan {
            targets,
            profile,
            cost: true,
            from,
            only,
            ..
        } => recorded_cost(&ws, &targets, profile, from.as_deref(), &only),
        Command::Plan {
            targets,
            profile,
            cells,
            manifest,
            recompute,
            only,
            ..
        } => plan_cost(
            &ws,
            &targets,
            profile,
            cells,
            manifest.as_deref(),
            recompute,
            &only,
        ),
        Command::Cell {
            manifest,
            all: true,
            threads,
            ..
        } => {
            let s = dyad_harness::engine::cluster::run_all(&manifest, threads.map(|t| t as usize))
                .map_err(anyhow::Error::msg)?;
            report_recomputed(&s.recomputed);
            eprintln!(
                "cells: {} computed, {} by another run, {} failed",
                s.computed,
                s.by_others,
                s.failed.len()
            );
            Ok(if s.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Cell {
            manifest,
            index,
            threads,
            ..
        } => {
            let index = index.unwrap_or_default();
            let s = dyad_harness::engine::cluster::run_cell(
                &manifest,
                index,
                threads.map(|t| t as usize),
            )
            .map_err(anyhow::Error::msg)?;
            report_recomputed(&s.recomputed);
            eprintln!(
                "cell {index}: {}",
                if s.computed > 0 {
                    "computed"
                } else if s.by_others > 0 {
                    "computed by another run"
                } else {
                    "already cached"
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { manifest } => slurm_status(&ws, manifest),
        Command::List => list(&ws),
        Command::Prune { delete, archive } => prune(&ws, delete, archive.as_deref()),
        Command::Archive { command } => archive(&ws, command),
        Command::Report { profile } => {
            let profile = profile.unwrap_or_else(|| last_profile(&ws));
            // Real data absent here is keyed as the machine that computed its cells resolved
            // it (an imported archive's records), so that its cells are reported.
            let ctx = ws.data_context().recalling(ws.cache().recorded_data());
            let plans = plan_warn(&ws, &ws.select_specs(&[])?, profile, &ctx)?;
            let (n, names) = ctx.recalled();
            if n > 0 {
                eprintln!(
                    "{n} data set resolutions are absent here and taken from the cache's records \
                     of where their cells were computed ({}): their cells are reported, not \
                     computed",
                    names.join(", ")
                );
            }
            let [html, md] = ws.report(&plans, profile)?;
            say!("report: {} and {}", html.display(), md.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { targets, profile } => {
            check_bands(&ws, &targets, profile.unwrap_or_else(|| last_profile(&ws)))
        }
        Command::Data { command } => data_command(&ws, command),
        Command::Peers => peers(),
        Command::Compare {
            a,
            b,
            targets,
            profile,
            json,
            bless,
            ignore,
        } => {
            let profile = profile.unwrap_or_else(|| last_profile(&ws));
            let options = compare::Options {
                json,
                bless,
                ignore,
            };
            compare::run(&ws, &a, &b, &targets, profile, &options)
        }
    }
}

fn peers() -> Result<ExitCode> {
    let env = dyad_harness::peers::PeerEnv::locate();
    let python = env.ensure().map_err(anyhow::Error::msg)?;
    println!(
        "Python peers: scripts in {}, environment {} ({})",
        env.root.display(),
        env.venv.display(),
        python.display()
    );
    for s in dyad_harness::registry::SOLVERS
        .iter()
        .filter(|s| s.name.starts_with("py:"))
    {
        println!("  {:<24} {}", s.name, s.description);
    }
    Ok(ExitCode::SUCCESS)
}

/// The plans of `specs`, after warning of real data sets that resolve to their stand-ins here
/// though real data was read from another data directory before.
fn plan_warn(
    ws: &Workspace,
    specs: &[dyad_harness::spec::LoadedSpec],
    profile: Profile,
    ctx: &dyad_harness::data::DataContext,
) -> Result<Vec<dyad_harness::engine::plan::Plan>> {
    let plans = ws.plan(specs, profile, ctx)?;
    for w in dyad_harness::data::real_data_elsewhere(&plans, ctx) {
        eprintln!("{w}");
    }
    let archived = ws.archived_missing(&plans);
    if archived > 0 {
        eprintln!(
            "note: {} holds {archived} computed cells these specs lack here; `dyad archive \
             import {}` copies them into the cache (nothing reads the archive by itself)",
            ws.archive_dir().display(),
            ws.archive_dir().display()
        );
    }
    Ok(plans)
}

fn run_and_write(
    ws: &Workspace,
    targets: &[String],
    args: &RunArgs,
    with_report: bool,
) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let specs = ws.select_specs(targets)?;
    let plans = plan_warn(ws, &specs, args.profile, &ctx)?;
    for p in &plans {
        for d in &p.datasets {
            eprintln!("{} data `{}`: {}", p.spec.id, d.id, d.resolved.note);
        }
    }
    let opts = RunOptions {
        results: ws.results.clone(),
        keep_going: args.keep_going,
        threads: args.threads.map(|n| n as usize),
        progress: if args.quiet {
            Progress::Quiet
        } else {
            Progress::Auto
        },
        recompute: args.recompute,
    };
    let keys = args
        .only
        .filter()
        .keys(&plans)
        .map_err(anyhow::Error::msg)?;
    let summary = match &keys {
        Some(keys) => dyad_harness::engine::run::execute_only(&plans, &opts, keys),
        None => execute(&plans, &opts),
    };
    report_recomputed(&summary.recomputed);
    if summary.carried > 0 {
        eprintln!(
            "carried {} cached cells of an earlier task version to the current one (their \
             records provably unchanged; the cell file names the key it came from)",
            summary.carried
        );
    }
    let _ = std::fs::create_dir_all(&ws.results);
    let _ = std::fs::write(ws.results.join("last-profile"), args.profile.as_str());
    eprintln!(
        "cells: {} total, {} cached, {} computed, {} failed, {} not started, {} computed by another run; data sets loaded: {}",
        summary.total,
        summary.cached,
        summary.computed,
        summary.failed.len(),
        summary.skipped,
        summary.by_others,
        summary.datasets_loaded
    );
    // The tables and figures of the selected experiments; with the report, those it writes
    // for every experiment (each cell read once).
    let (report, written) = if with_report {
        let all = ws.plan(&ws.select_specs(&[])?, args.profile, &ctx)?;
        let (paths, mut all_written) = ws.report_written(&all, args.profile)?;
        let selected: std::collections::HashSet<&str> =
            plans.iter().map(|p| p.spec.id.as_str()).collect();
        all_written.retain(|w| selected.contains(w.experiment.as_str()));
        (Some(paths), all_written)
    } else {
        (None, ws.outputs(&plans)?)
    };
    // Cached cells reused although the code that computed them has changed since (the
    // report warns of them too): say how many, and how to check them.
    let stale: usize = written.iter().map(|w| w.stale).sum();
    if stale > 0 {
        eprintln!(
            "{stale} cached cells were computed by code that has changed since: `dyad run \
             <targets> --recompute stale` computes them again and compares (`dyad plan` lists \
             them per experiment)"
        );
    }
    // Missing among the requested cells: a limited run leaves the others missing on purpose.
    let missing: usize = match &keys {
        Some(keys) => {
            let cache = ws.cache();
            keys.iter().filter(|k| !cache.contains(k)).count()
        }
        None => written.iter().map(|w| w.missing).sum(),
    };
    let mut kept = 0;
    for w in written {
        if w.missing == 0 {
            if w.tables_kept {
                kept += w.tables.len();
            }
            let tables = w.tables.iter().filter(|_| !w.tables_kept);
            for f in tables.chain(&w.figures) {
                eprintln!("wrote {}", f.display());
            }
            for f in &w.figures_waiting {
                eprintln!("{}: figure {f}", w.experiment);
            }
        } else {
            eprintln!(
                "{}: {} cells missing; no table or figure written{}",
                w.experiment,
                w.missing,
                if w.figures.is_empty() {
                    String::new()
                } else {
                    format!(
                        " but the PARTIAL figures of its complete data sets ({})",
                        w.figures.len() / 2
                    )
                }
            );
        }
    }
    if kept > 0 {
        eprintln!("kept {kept} tables: their stamps say they hold these cells already");
    }
    if let Some([html, md]) = report {
        eprintln!("report: {} and {}", html.display(), md.display());
    }
    if !summary.failed.is_empty() {
        for f in &summary.failed {
            eprintln!("FAILED {}: {}", f.cell, f.error);
        }
        bail!("{} cell(s) failed", summary.failed.len());
    }
    if missing > 0 || summary.skipped > 0 {
        bail!(
            "{} requested cell(s) neither cached nor computed ({} not started)",
            missing.max(summary.skipped),
            summary.skipped
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per cell computed again that did not come out identical, and a count of those
/// that did.
fn report_recomputed(again: &[dyad_harness::engine::run::Recomputed]) {
    if again.is_empty() {
        return;
    }
    let identical = again
        .iter()
        .filter(|r| r.comparison.as_ref().is_some_and(|c| c.identical()))
        .count();
    let elsewhere = again.iter().filter(|r| r.compared_elsewhere).count();
    eprintln!(
        "recomputed {} cached cells: {identical} identical to the old ones (timings aside){}",
        again.len(),
        if elsewhere > 0 {
            format!(
                "; {elsewhere} computed by another run, which found them identical (it deletes \
                 the old version only then)"
            )
        } else {
            String::new()
        }
    );
    for r in again {
        let kept = r
            .kept
            .as_ref()
            .map(|p| format!("; old cell kept in {}", p.display()))
            .unwrap_or_default();
        match &r.comparison {
            Some(c) if c.identical() => {}
            Some(c) => eprintln!("  {}: {c}{kept}", r.cell),
            None if r.compared_elsewhere => {}
            None => eprintln!(
                "  {}: not compared (the new cell was not computed, or the old file is unreadable){kept}",
                r.cell
            ),
        }
    }
}

fn plan_cost(
    ws: &Workspace,
    targets: &[String],
    profile: Profile,
    cells: bool,
    manifest: Option<&std::path::Path>,
    recompute: Recompute,
    only: &Only,
) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let specs = ws.select_specs(targets)?;
    let mut plans = plan_warn(ws, &specs, profile, &ctx)?;
    // Timings are learned from every cell of the specs, also when only some are listed.
    let all = if only.filter().is_empty() {
        Vec::new()
    } else {
        ws.plan(&specs, profile, &ctx)?
    };
    only.filter()
        .narrow(&mut plans)
        .map_err(anyhow::Error::msg)?;
    if let Some(path) = manifest {
        set_aside(ws, &plans, recompute)?;
        let m = dyad_harness::engine::cluster::Manifest::missing(ws, targets, profile, &plans);
        m.write(path).map_err(anyhow::Error::msg)?;
        eprintln!("wrote {} ({} cells)", path.display(), m.cells.len());
    }
    let learn = if all.is_empty() { &plans } else { &all };
    let est = dyad_harness::engine::cluster::estimate(ws, learn, &plans);
    let cache = ws.cache();
    let (mut missing, mut seconds, mut unknown, mut stale) = (0, 0.0, 0, 0);
    say!(
        "{:<30} {:>8} {:>8} {:>6} {:>12}  cells without a timing to go by",
        "experiment",
        "cells",
        "missing",
        "stale",
        "CPU (est.)"
    );
    for (p, (id, e)) in plans.iter().zip(&est) {
        let stale_here = ExperimentResults::load(p, &cache).stale_cells();
        missing += e.missing;
        seconds += e.seconds;
        unknown += e.unknown;
        stale += stale_here;
        say!(
            "{:<30} {:>8} {:>8} {:>6} {:>12}  {}",
            id,
            p.cells.len(),
            e.missing,
            stale_here,
            if e.missing == 0 {
                "—".to_string()
            } else {
                human_seconds(e.seconds)
            },
            if e.unknown > 0 {
                e.unknown.to_string()
            } else {
                String::new()
            }
        );
        if cells {
            for (ci, c) in p.cells.iter().enumerate() {
                if !cache.contains(&c.key) {
                    say!("    {}", dyad_harness::engine::run::describe(p, ci));
                }
            }
        }
    }
    say!(
        "profile `{profile}`: {missing} cells to compute, about {} of CPU for the {} with a cached \
         similar cell (same experiment, data set and solver; else the same cell on another \
         tuning grid or version, its model selection scaled to this grid's size; else same data \
         set and solver){}",
        human_seconds(seconds),
        missing - unknown,
        if unknown > 0 {
            format!(", plus {unknown} with no timing to go by")
        } else {
            String::new()
        }
    );
    if stale > 0 {
        say!(
            "{stale} cached cells were computed by code that has changed since: \
             `dyad run <targets> --recompute stale` computes them again and compares"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `dyad plan --cost`: where the recorded time of a profile goes.
fn recorded_cost(
    ws: &Workspace,
    targets: &[String],
    profile: Profile,
    from: Option<&std::path::Path>,
    only: &Only,
) -> Result<ExitCode> {
    use dyad_harness::analysis::cost;
    let ctx = ws.data_context();
    let mut plans = plan_warn(ws, &ws.select_specs(targets)?, profile, &ctx)?;
    only.filter()
        .narrow(&mut plans)
        .map_err(anyhow::Error::msg)?;
    let store = match from {
        Some(dir) => dyad_harness::engine::cache::Cache::at(dir),
        None => ws.cache(),
    };
    let c = cost::recorded(&plans, &store);
    say!(
        "profile `{profile}` ({}): {}",
        store.root().display(),
        cost::summary_line(&c.total)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    say!("{}", cost::wall_line(&c, cores));
    for (title, rows, limit) in [
        ("by kind", &c.kinds, usize::MAX),
        ("by paper", &c.papers, usize::MAX),
        ("by spec (largest first)", &c.specs, 15),
        ("by paper and solver (largest first)", &c.solvers, 15),
    ] {
        say!();
        for line in cost::table(title, rows, limit) {
            say!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Before a manifest is written: moves the cached cells `recompute` asks for aside, so that
/// the manifest lists them with the missing ones (see [`dyad_harness::engine::run::set_aside`]).
fn set_aside(
    ws: &Workspace,
    plans: &[dyad_harness::engine::plan::Plan],
    recompute: Recompute,
) -> Result<()> {
    if recompute == Recompute::Missing {
        return Ok(());
    }
    let (moved, failed) = dyad_harness::engine::run::set_aside(plans, &ws.cache(), recompute);
    eprintln!(
        "moved {moved} cached cells aside to {} to compute them again: each task compares its \
         cell with the old one (in its log), and any later `dyad run` compares what is left",
        ws.cache().root().join("superseded").display()
    );
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("FAILED {}: {}", f.cell, f.error);
        }
        bail!("{} cached cell(s) could not be moved aside", failed.len());
    }
    Ok(())
}

/// `sbatch --parsable` and its job id.
fn sbatch(args: &[String]) -> Result<String> {
    let out = std::process::Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .output()
        .context(
            "running sbatch (is Slurm installed? `just slurm-up` starts a one-node cluster)",
        )?;
    if !out.status.success() {
        bail!(
            "sbatch {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string())
}

fn slurm_submit(ws: &Workspace, targets: &[String], run: &RunArgs) -> Result<ExitCode> {
    let (limit, extra) = (run.array_limit, &run.sbatch);
    use dyad_harness::engine::cluster::{Manifest, slurm_scripts};
    let profile = run.profile;
    let ctx = ws.data_context();
    let mut plans = plan_warn(ws, &ws.select_specs(targets)?, profile, &ctx)?;
    run.only
        .filter()
        .narrow(&mut plans)
        .map_err(anyhow::Error::msg)?;
    set_aside(ws, &plans, run.recompute)?;
    let m = Manifest::missing(ws, targets, profile, &plans);
    let _ = std::fs::create_dir_all(&ws.results);
    let _ = std::fs::write(ws.results.join("last-profile"), profile.as_str());
    if m.cells.is_empty() {
        eprintln!("every cell is cached: writing the report here");
        let all = ws.plan(&ws.select_specs(&[])?, profile, &ctx)?;
        let [html, md] = ws.report(&all, profile)?;
        eprintln!("report: {} and {}", html.display(), md.display());
        return Ok(ExitCode::SUCCESS);
    }
    let dir = std::path::absolute(ws.results.join("slurm"))?.join(format!(
        "{}-{}",
        m.created,
        profile.as_str()
    ));
    std::fs::create_dir_all(dir.join("logs"))?;
    let manifest = dir.join("manifest.json");
    m.write(&manifest).map_err(anyhow::Error::msg)?;
    let dyad = std::env::current_exe().context("locating the dyad binary")?;
    let (array, report) = slurm_scripts(&dyad, &manifest, &m);
    std::fs::write(dir.join("array.sh"), array)?;
    std::fs::write(dir.join("report.sh"), report)?;
    let n = m.cells.len();
    let range = if limit > 0 {
        format!("0-{}%{limit}", n - 1)
    } else {
        format!("0-{}", n - 1)
    };
    let mut args = vec![format!("--array={range}")];
    args.extend(extra.iter().cloned());
    args.push(dir.join("array.sh").display().to_string());
    let array_id = sbatch(&args)?;
    let mut args = vec![format!("--dependency=afterany:{array_id}")];
    args.extend(extra.iter().cloned());
    args.push(dir.join("report.sh").display().to_string());
    let report_id = sbatch(&args)?;
    std::fs::write(dir.join("jobs"), format!("{array_id}\n{report_id}\n"))?;
    say!("{}", manifest.display());
    eprintln!(
        "submitted {n} cells as Slurm array job {array_id} and the report as job {report_id} \
         (after the array); `dyad status` shows progress, resubmitting computes only what is missing"
    );
    Ok(ExitCode::SUCCESS)
}

fn slurm_status(ws: &Workspace, manifest: Option<PathBuf>) -> Result<ExitCode> {
    use dyad_harness::engine::cluster::CellStatus;
    let manifest = match manifest {
        Some(m) => m,
        None => {
            let dir = ws.results.join("slurm");
            let mut subs: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("{}: no submissions", dir.display()))?
                .flatten()
                .map(|e| e.path().join("manifest.json"))
                .filter(|p| p.is_file())
                .collect();
            subs.sort();
            subs.pop()
                .with_context(|| format!("{}: no manifest", dir.display()))?
        }
    };
    let jobs = dyad_harness::engine::cluster::submission_jobs(&manifest);
    let queue = if jobs.is_empty() {
        None
    } else {
        match dyad_harness::engine::cluster::Queue::ask(&jobs) {
            Ok(q) => Some(q),
            Err(e) => {
                eprintln!(
                    "warning: cannot ask Slurm about jobs {} ({e}): cache only",
                    jobs.join(", ")
                );
                None
            }
        }
    };
    let (m, st) = dyad_harness::engine::cluster::status(&manifest, queue.as_ref())
        .map_err(anyhow::Error::msg)?;
    // done, running, queued, failed, missing
    let mut counts = [0usize; 5];
    for (c, s) in m.cells.iter().zip(&st) {
        let (i, word, detail) = match s {
            CellStatus::Done => (0, "done", String::new()),
            CellStatus::Running(h) => (1, "running", format!(" (on {h})")),
            CellStatus::Queued(q) => (2, "queued", format!(" ({q})")),
            CellStatus::Failed(e) => (3, "FAILED", format!(" ({e})")),
            CellStatus::Missing => (4, "missing", String::new()),
        };
        counts[i] += 1;
        say!("{word:<9} {}{detail}", c.what);
    }
    if let (Some(q), Some(report)) = (&queue, jobs.get(1)) {
        say!(
            "report job {report}: {}",
            q.jobs
                .get(report)
                .map_or("not queued (ended)", String::as_str)
        );
    }
    say!(
        "{}: {} done, {} running, {} queued, {} failed, {} missing (of {}){}",
        manifest.display(),
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        counts[4],
        m.cells.len(),
        if counts[3] + counts[4] > 0 && counts[1] + counts[2] == 0 {
            "; resubmitting computes the failed and missing cells"
        } else {
            ""
        }
    );
    Ok(if counts[3] > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The profile of the last `run`/`reproduce` on these results (`results/last-profile`), else
/// `paper`.
fn last_profile(ws: &Workspace) -> Profile {
    std::fs::read_to_string(ws.results.join("last-profile"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(Profile::Paper)
}

fn list(ws: &Workspace) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let specs = ws.select_specs(&[])?;
    let quick = ws.plan(&specs, Profile::Quick, &ctx)?;
    let paper = ws.plan(&specs, Profile::Paper, &ctx)?;
    let cache = ws.cache();
    say!(
        "{:<26} {:<20} {:>11} {:>11}  title / data",
        "experiment",
        "figure",
        "quick",
        "paper"
    );
    for (q, p) in quick.iter().zip(&paper) {
        let count = |plan| {
            let res = ExperimentResults::load(plan, &cache);
            format!("{}/{}", res.cells.len() - res.missing(), res.cells.len())
        };
        say!(
            "{:<26} {:<20} {:>11} {:>11}  {}",
            p.spec.id,
            p.spec.spec.figure,
            count(q),
            count(p),
            p.spec.spec.title
        );
        for d in &p.datasets {
            say!("{:<72}  {}: {}", "", d.id, d.resolved.note);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn prune(ws: &Workspace, delete: bool, archive: Option<&Path>) -> Result<ExitCode> {
    let cache = match archive {
        Some(dir) => {
            let store = dyad_harness::engine::cache::Cache::at(dir);
            if !store.root().join("cells").is_dir() {
                bail!(
                    "{} holds no cell archive (no cells/ directory)",
                    dir.display()
                );
            }
            store
        }
        None => ws.cache(),
    };
    let ctx = match archive {
        // An archive says where its real-data cells were computed (its real-data.jsonl).
        Some(_) => ws.data_context().recalling(cache.recorded_data()),
        None => ws.data_context(),
    };
    let specs = ws.select_specs(&[])?;
    let mut plans = ws.plan(&specs, Profile::Quick, &ctx)?;
    plans.extend(ws.plan(&specs, Profile::Paper, &ctx)?);
    let orphans = Workspace::orphans_in(&cache, &plans);
    let elsewhere = dyad_harness::data::real_data_elsewhere(&plans, &ctx);
    // The cache remembers where its real data was read; an archive records its real-data
    // cells' resolutions, so only its real-data orphans can be cells this clone cannot key.
    let unsure = archive.is_none() || orphans.iter().any(|o| o.real > 0);
    if !elsewhere.is_empty() && unsure {
        for w in &elsewhere {
            eprintln!("{w}");
        }
        bail!(
            "not pruning: cells computed on real data would count as orphans here. Point \
             DYAD_DATA_DIR (or --data-dir) at the data first"
        );
    }
    let place = archive.map_or_else(
        || "cached".to_string(),
        |d| format!("archived ({})", d.display()),
    );
    let (mut cells, mut bytes) = (0usize, 0u64);
    for o in &orphans {
        say!(
            "{:>6} cells {:>9.1} MB  {}",
            o.keys.len(),
            o.bytes as f64 / 1e6,
            o.what
        );
        cells += o.keys.len();
        bytes += o.bytes;
    }
    let total = cache.len();
    if !delete {
        say!(
            "{cells} of {total} {place} cells ({:.1} MB) belong to no spec of {}; `dyad prune{} --delete` deletes them",
            bytes as f64 / 1e6,
            ws.experiments.display(),
            archive.map_or_else(String::new, |d| format!(" --in {}", d.display()))
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut freed = 0;
    for key in orphans.iter().flat_map(|o| &o.keys) {
        freed += cache
            .remove(key)
            .with_context(|| format!("deleting cell {key}"))?;
    }
    say!(
        "deleted {cells} of {total} {place} cells ({:.1} MB)",
        freed as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

fn archive(ws: &Workspace, command: ArchiveCommand) -> Result<ExitCode> {
    match command {
        ArchiveCommand::Export {
            targets,
            profile,
            to,
            replace,
        } => {
            let ctx = ws.data_context();
            let plans = plan_warn(ws, &ws.select_specs(&targets)?, profile, &ctx)?;
            let t = ws
                .export_cells(&plans, &to, replace)
                .with_context(|| format!("writing the archive {}", to.display()))?;
            say!(
                "archived {} cells ({:.1} MB) in {}; {} were there already, {} not computed yet",
                t.copied,
                t.bytes as f64 / 1e6,
                to.display(),
                t.present,
                t.absent
            );
            Ok(ExitCode::SUCCESS)
        }
        ArchiveCommand::Restamp {
            targets,
            profile,
            archive,
        } => {
            let ctx = ws.data_context();
            let plans = plan_warn(ws, &ws.select_specs(&targets)?, profile, &ctx)?;
            let store = match &archive {
                Some(dir) => dyad_harness::engine::cache::Cache::at(dir),
                None => ws.cache(),
            };
            let (done, unproven) = ws.restamp(&plans, &store)?;
            say!(
                "re-stamped {done} cells; {unproven} stale cells have no witness of equivalent \
                 code (`dyad run <targets> --recompute stale` on one of them makes one)"
            );
            Ok(ExitCode::SUCCESS)
        }
        ArchiveCommand::Import { from } => {
            let t = ws.import_cells(&from)?;
            for (path, why) in &t.invalid {
                eprintln!("skipped {}: {why}", path.display());
            }
            say!(
                "imported {} cells ({:.1} MB) from {}; {} were cached already, {} invalid",
                t.copied,
                t.bytes as f64 / 1e6,
                from.display(),
                t.present,
                t.invalid.len()
            );
            Ok(if t.invalid.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

fn check_bands(ws: &Workspace, targets: &[String], profile: Profile) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let plans = plan_warn(ws, &ws.select_specs(targets)?, profile, &ctx)?;
    let cache = ws.cache();
    let mut failures = Vec::new();
    let (mut n, mut within, mut skipped) = (0, 0, 0);
    let (mut sane, mut sanity_n) = (0, 0);
    let mut undecided = 0;
    for p in &plans {
        let res = ExperimentResults::load(p, &cache);
        // Grid edges no choice keeps on purpose: not a failure (the report flags them beside
        // every verdict resting on them), but each is a decision still to make. At the paper
        // profile only: the quick profile's grids are CI-sized on purpose.
        let edges = if profile == Profile::Paper {
            dyad_harness::analysis::edges::edges(&res)
        } else {
            Vec::new()
        };
        for e in edges {
            if e.flagged() && dyad_harness::analysis::edges::decision(&res, &e).is_none() {
                undecided += 1;
                say!(
                    "{:<6} {:<26} grid edge: {} {} at its {} in {} of {} choices (extend the \
                     grid, or keep it with a reason: a [[choices]] entry with `edges`)",
                    "note",
                    p.spec.id,
                    e.solver,
                    e.param,
                    if e.high >= e.low { "highest" } else { "lowest" },
                    e.low.max(e.high),
                    e.choices
                );
            }
        }
        for line in check::sanity(&res) {
            sanity_n += 1;
            say!(
                "{:<6} {:<26} sanity: {} ({})",
                if line.ok { "ok" } else { "FAIL" },
                line.experiment,
                line.what,
                line.detail
            );
            if line.ok {
                sane += 1;
            } else {
                failures.push(format!(
                    "{} sanity: {}: {}",
                    line.experiment, line.what, line.detail
                ));
            }
        }
        for line in check::check(&res) {
            n += 1;
            let value = line.value.map_or("—".to_string(), |v| format!("{v:.4}"));
            let status = match (line.ok, &line.skipped, &line.defect) {
                (_, Some(_), _) => "skip",
                (_, None, Some(_)) => "DEFECT",
                (true, None, None) => "ok  ",
                (false, None, None) => "FAIL",
            };
            match (&line.skipped, line.ok) {
                (Some(_), _) => skipped += 1,
                (None, true) => within += 1,
                _ => {}
            }
            say!(
                "{status:<6} {:<26} {:<44} {value:>8} in [{}, {}]{}",
                line.experiment,
                line.what,
                line.min,
                line.max,
                line.skipped
                    .as_ref()
                    .or(line.defect.as_ref())
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            );
            if !line.ok {
                failures.push(format!(
                    "{} {}: {}",
                    line.experiment,
                    line.what,
                    line.defect.or(line.problem).unwrap_or_default()
                ));
            }
        }
    }
    let skipped_note = if skipped > 0 {
        format!("; {skipped} skipped (set for the other kind of data: real or stand-in)")
    } else {
        String::new()
    };
    say!("{sane} of {sanity_n} sanity checks hold (profile {profile})");
    if undecided > 0 {
        say!(
            "{undecided} tuned parameters chosen on a grid edge in most cells with no recorded \
             decision (profile {profile}; notes above)"
        );
    }
    if failures.is_empty() {
        say!("{within} of {n} expectations within their bands (profile {profile}){skipped_note}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{} failures among {n} expectations and {sanity_n} sanity checks (outside their bands, unable to fail, or a sanity check that does not hold; profile {profile}){skipped_note}:",
            failures.len()
        );
        for f in &failures {
            eprintln!("  {f}");
        }
        Ok(ExitCode::from(1))
    }
}

fn data_command(ws: &Workspace, cmd: DataCommand) -> Result<ExitCode> {
    use dyad_datasets::registry::{DATASETS, dataset};
    let lookup = |name: &str| {
        dataset(name).with_context(|| {
            format!(
                "unknown data set `{name}` (real data sets: {}; stand-ins: {})",
                DATASETS
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", "),
                data::PROVIDERS
                    .iter()
                    .filter(|p| p.synthetic())
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    };
    // These commands read the data; they write nothing under the results directory.
    let ctx = ws.data_context().read_only();
    match cmd {
        DataCommand::List => {
            say!("data directory: $DYAD_DATA_DIR = {}", ws.data_dir.display());
            say!();
            say!("{:<22} {:<10} {:<30} status", "data set", "kind", "where");
            for p in data::PROVIDERS.iter().filter(|p| !p.synthetic()) {
                let info = p.info().expect("real data sets have a registry entry");
                let (tag, status) = match data::status(*p, &ctx) {
                    data::Status::Present(n) => ("real", n),
                    data::Status::Absent(n) => ("stand-in", n),
                    data::Status::Broken(e) => ("BROKEN", e),
                };
                say!(
                    "{:<22} {:<10} {:<30} {status}",
                    p.name(),
                    tag,
                    data::shown_dir(info, &ctx),
                );
                let how = if info.sources.iter().any(|s| s.url.is_some()) {
                    format!("`dyad data fetch {}`", p.name())
                } else {
                    info.manual.to_string()
                };
                say!("{:<22} {:<10} {:<30} obtain: {how}", "", "", "");
            }
            say!();
            for p in data::PROVIDERS.iter().filter(|p| p.synthetic()) {
                say!(
                    "{:<22} {:<10} {:<30} {}",
                    p.name(),
                    "stand-in",
                    "(generated on demand)",
                    p.description()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        DataCommand::Info { name } => {
            if let Some(p) = data::provider(&name).filter(|p| p.synthetic()) {
                say!("{} — {}", p.name(), p.description());
                say!(
                    "kind:      seeded synthetic stand-in ({}), generated on demand; every table,",
                    p.kind()
                );
                say!("           figure and report line computed from it is marked SYNTHETIC");
                let real: Vec<&str> = DATASETS
                    .iter()
                    .filter(|d| d.standin == p.name())
                    .map(|d| d.name)
                    .collect();
                say!("stands in for: {}", real.join(", "));
                if let Some(rows) = data::rows(p, &ctx) {
                    say!("rows:      {rows} (default parameters)");
                }
                return Ok(ExitCode::SUCCESS);
            }
            let d = lookup(&name)?;
            say!("{} — {}", d.name, d.title);
            say!("directory: {}", data::shown_dir(d, &ctx));
            if let Some(p) = data::provider(d.name) {
                let status = match data::status(p, &ctx) {
                    data::Status::Present(n) => n,
                    data::Status::Absent(n) => n,
                    data::Status::Broken(e) => format!("BROKEN: {e}"),
                };
                say!("status:    {status}");
                if let Some(rows) = data::rows(p, &ctx) {
                    say!("rows:      {rows} (default parameters)");
                }
            }
            for s in d.sources {
                say!("file:      {}", s.file);
                say!(
                    "  source:  {}",
                    s.url.unwrap_or("(no public download address)")
                );
                if let Some(h) = s.sha256 {
                    say!("  sha256:  {h}");
                }
                if let Some(n) = s.size {
                    say!("  size:    {n} bytes");
                }
            }
            if let Some(id) = d.identity {
                say!("identity:  {id}");
            }
            say!("license:   {}", d.license);
            say!("citation:  {}", d.citation);
            say!("stand-in:  {}", d.standin);
            say!("by hand:   {}", d.manual);
            Ok(ExitCode::SUCCESS)
        }
        DataCommand::Verify { name } => {
            let d = lookup(&name)?;
            for line in data::verify(d, &ctx)? {
                say!("{line}");
            }
            say!("{name}: OK");
            Ok(ExitCode::SUCCESS)
        }
        DataCommand::Fetch { name } => {
            let d = lookup(&name)?;
            let bar = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
            let mut current: Option<(String, indicatif::ProgressBar)> = None;
            let outcomes = dyad_datasets::fetch::fetch(
                d,
                &ws.data_dir,
                &dyad_datasets::fetch::FetchOptions::default(),
                &mut |source, p| {
                    if !bar {
                        return;
                    }
                    if current.as_ref().is_none_or(|(f, _)| f != source.file) {
                        let b = indicatif::ProgressBar::new(p.total.unwrap_or(0));
                        b.set_style(
                            indicatif::ProgressStyle::with_template(
                                "{msg} {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
                            )
                            .expect("valid template"),
                        );
                        b.set_message(source.file);
                        current = Some((source.file.to_string(), b));
                    }
                    if let Some((_, b)) = &current {
                        b.set_position(p.done);
                    }
                },
            )?;
            if let Some((_, b)) = current {
                b.finish_and_clear();
            }
            for (file, outcome) in outcomes {
                say!("{file}: {outcome:?}");
            }
            say!("{name}: fetched into {}", ws.data_dir.join(d.dir).display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
