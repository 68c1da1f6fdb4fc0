//! `dyad`: run, reproduce, report and check the experiments of the dyad papers.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use dyad_harness::profile::Profile;
use dyad_harness::results::ExperimentResults;
use dyad_harness::run::{Progress, RunOptions, execute};
use dyad_harness::{Workspace, check, data};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Worker threads (default: one per core). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run experiment specs (files, or ids like `oasis/fig5`), then write their tables and figures.
    Run {
        #[arg(required = true)]
        specs: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run a paper (`oasis`), a figure (`oasis/fig5`) or everything, then write the report.
    Reproduce {
        targets: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// List experiments and how many of their cells are cached.
    List {
        #[arg(long, default_value = "paper")]
        profile: Profile,
    },
    /// Rebuild tables, figures and the report from cached cells.
    Report {
        #[arg(long, default_value = "paper")]
        profile: Profile,
    },
    /// Compare cached results with every spec's expectation bands; non-zero exit names each
    /// metric outside its band.
    Check {
        targets: Vec<String>,
        #[arg(long, default_value = "paper")]
        profile: Profile,
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
        Command::Run { specs, run } => run_and_write(&ws, &specs, &run, false),
        Command::Reproduce { targets, run } => run_and_write(&ws, &targets, &run, true),
        Command::List { profile } => list(&ws, profile),
        Command::Report { profile } => {
            let ctx = ws.data_context();
            let plans = ws.plan(&ws.select_specs(&[])?, profile, &ctx)?;
            let [html, md] = ws.report(&plans, profile)?;
            println!("report: {} and {}", html.display(), md.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { targets, profile } => check_bands(&ws, &targets, profile),
        Command::Data { command } => data_command(&ws, command),
        Command::Peers => peers(),
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

fn run_and_write(
    ws: &Workspace,
    targets: &[String],
    args: &RunArgs,
    with_report: bool,
) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let specs = ws.select_specs(targets)?;
    let plans = ws.plan(&specs, args.profile, &ctx)?;
    for p in &plans {
        for d in &p.datasets {
            eprintln!("{} data `{}`: {}", p.spec.id, d.id, d.resolved.note);
        }
    }
    let opts = RunOptions {
        results: ws.results.clone(),
        keep_going: args.keep_going,
        threads: args.threads,
        progress: if args.quiet {
            Progress::Quiet
        } else {
            Progress::Auto
        },
    };
    let summary = execute(&plans, &opts);
    eprintln!(
        "cells: {} total, {} cached, {} computed, {} failed, {} not started; data sets loaded: {}",
        summary.total,
        summary.cached,
        summary.computed,
        summary.failed.len(),
        summary.skipped,
        summary.datasets_loaded
    );
    for w in ws.outputs(&plans)? {
        if w.missing == 0 {
            for f in w.tables.iter().chain(&w.figures) {
                eprintln!("wrote {}", f.display());
            }
        } else {
            eprintln!(
                "{}: {} cells missing; no table or figure written",
                w.experiment, w.missing
            );
        }
    }
    if with_report {
        let all = ws.plan(&ws.select_specs(&[])?, args.profile, &ctx)?;
        let [html, md] = ws.report(&all, args.profile)?;
        eprintln!("report: {} and {}", html.display(), md.display());
    }
    if !summary.failed.is_empty() {
        for f in &summary.failed {
            eprintln!("FAILED {}: {}", f.cell, f.error);
        }
        bail!("{} cell(s) failed", summary.failed.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn list(ws: &Workspace, profile: Profile) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let plans = ws.plan(&ws.select_specs(&[])?, profile, &ctx)?;
    let cache = ws.cache();
    println!(
        "{:<24} {:<16} {:>13}  title / data",
        "experiment", "figure", "cells cached"
    );
    for p in &plans {
        let res = ExperimentResults::load(p, &cache);
        println!(
            "{:<24} {:<16} {:>6}/{:<6}  {}",
            p.spec.id,
            p.spec.spec.figure,
            res.cells.len() - res.missing(),
            res.cells.len(),
            p.spec.spec.title
        );
        for d in &p.datasets {
            println!("{:<57}  {}: {}", "", d.id, d.resolved.note);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check_bands(ws: &Workspace, targets: &[String], profile: Profile) -> Result<ExitCode> {
    let ctx = ws.data_context();
    let plans = ws.plan(&ws.select_specs(targets)?, profile, &ctx)?;
    let cache = ws.cache();
    let mut failures = Vec::new();
    let mut n = 0;
    for p in &plans {
        for line in check::check(&ExperimentResults::load(p, &cache)) {
            n += 1;
            let value = line.value.map_or("—".to_string(), |v| format!("{v:.4}"));
            let status = match (line.ok, &line.skipped) {
                (_, Some(_)) => "skip",
                (true, None) => "ok  ",
                (false, None) => "FAIL",
            };
            println!(
                "{status} {:<26} {:<44} {value:>8} in [{}, {}]{}",
                line.experiment,
                line.what,
                line.min,
                line.max,
                line.skipped
                    .as_ref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            );
            if !line.ok {
                failures.push(format!(
                    "{} {}: {}",
                    line.experiment,
                    line.what,
                    line.problem.unwrap_or_default()
                ));
            }
        }
    }
    if failures.is_empty() {
        println!("all {n} expectations within their bands (profile {profile})");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{} of {n} expectations outside their bands (profile {profile}):",
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
    let ctx = ws.data_context();
    match cmd {
        DataCommand::List => {
            println!("data directory: $DYAD_DATA_DIR = {}", ws.data_dir.display());
            println!();
            println!("{:<22} {:<10} {:<30} status", "data set", "kind", "where");
            for p in data::PROVIDERS.iter().filter(|p| !p.synthetic()) {
                let info = p.info().expect("real data sets have a registry entry");
                let (tag, status) = match data::status(*p, &ctx) {
                    data::Status::Present(n) => ("real", n),
                    data::Status::Absent(n) => ("stand-in", n),
                    data::Status::Broken(e) => ("BROKEN", e),
                };
                println!(
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
                println!("{:<22} {:<10} {:<30} obtain: {how}", "", "", "");
            }
            println!();
            for p in data::PROVIDERS.iter().filter(|p| p.synthetic()) {
                println!(
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
                println!("{} — {}", p.name(), p.description());
                println!(
                    "kind:      seeded synthetic stand-in ({}), generated on demand; every table,",
                    p.kind()
                );
                println!("           figure and report line computed from it is marked SYNTHETIC");
                let real: Vec<&str> = DATASETS
                    .iter()
                    .filter(|d| d.standin == p.name())
                    .map(|d| d.name)
                    .collect();
                println!("stands in for: {}", real.join(", "));
                return Ok(ExitCode::SUCCESS);
            }
            let d = lookup(&name)?;
            println!("{} — {}", d.name, d.title);
            println!("directory: {}", data::shown_dir(d, &ctx));
            if let Some(p) = data::provider(d.name) {
                let status = match data::status(p, &ctx) {
                    data::Status::Present(n) => n,
                    data::Status::Absent(n) => n,
                    data::Status::Broken(e) => format!("BROKEN: {e}"),
                };
                println!("status:    {status}");
            }
            for s in d.sources {
                println!("file:      {}", s.file);
                println!(
                    "  source:  {}",
                    s.url.unwrap_or("(no public download address)")
                );
                if let Some(h) = s.sha256 {
                    println!("  sha256:  {h}");
                }
                if let Some(n) = s.size {
                    println!("  size:    {n} bytes");
                }
            }
            if let Some(id) = d.identity {
                println!("identity:  {id}");
            }
            println!("license:   {}", d.license);
            println!("citation:  {}", d.citation);
            println!("stand-in:  {}", d.standin);
            println!("by hand:   {}", d.manual);
            Ok(ExitCode::SUCCESS)
        }
        DataCommand::Verify { name } => {
            let d = lookup(&name)?;
            for line in data::verify(d, &ctx)? {
                println!("{line}");
            }
            println!("{name}: OK");
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
                println!("{file}: {outcome:?}");
            }
            println!("{name}: fetched into {}", ws.data_dir.join(d.dir).display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
