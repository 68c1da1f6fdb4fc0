//! `dyad compare A B`: see [`dyad_harness::analysis::compare`].

use anyhow::{Context, Result};
use dyad_harness::Workspace;
use dyad_harness::analysis::compare::{self, Side};
use dyad_harness::spec::profile::Profile;
use std::path::Path;
use std::process::ExitCode;

/// `--json`, `--bless`, `--ignore PATH...`.
pub struct Options {
    pub json: bool,
    pub bless: bool,
    pub ignore: Vec<String>,
}

pub fn run(
    ws: &Workspace,
    a: &Path,
    b: &Path,
    targets: &[String],
    profile: Profile,
    options: &Options,
) -> Result<ExitCode> {
    let Options {
        json,
        bless,
        ref ignore,
    } = *options;
    let started = std::time::Instant::now();
    let ctx = ws.data_context();
    let plans = ws.plan(&ws.select_specs(targets)?, profile, &ctx)?;
    for w in dyad_harness::data::real_data_elsewhere(&plans, &ctx) {
        eprintln!("{w}");
    }
    for path in ignore {
        let cells = plans.iter().flat_map(|p| &p.cells);
        if cells
            .clone()
            .all(|c| compare::setting(&c.canonical, path).is_null())
        {
            eprintln!(
                "warning: --ignore {path}: no cell of the selected specs has this path (a key \
                 at its default may be left out of the description; a cell file's `canonical` \
                 shows the paths)"
            );
        }
    }
    let mut side_a = if bless && !a.exists() {
        Side::new_archive(a).with_context(|| format!("creating {}", a.display()))?
    } else {
        Side::open(a)?.ignoring(ignore)
    };
    let mut side_b = Side::open(b)?.ignoring(ignore);
    let all_specs = targets.is_empty();
    // The specs not selected: an archive cell that pairs with one of theirs is not a leftover.
    let others = if all_specs {
        Vec::new()
    } else {
        let chosen: Vec<&str> = plans.iter().map(|p| p.spec.id.as_str()).collect();
        let rest: Vec<_> = ws
            .select_specs(&[])?
            .into_iter()
            .filter(|s| !chosen.contains(&s.id.as_str()))
            .collect();
        ws.plan(&rest, profile, &ctx)?
    };
    let report = compare::compare(&plans, &others, &mut side_a, &mut side_b, all_specs);
    if json {
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        say!("{}", compare::render(&report).trim_end());
    }
    eprintln!("compared in {:.1} s", started.elapsed().as_secs_f64());
    if bless {
        let done = compare::bless(&report, &mut side_a, &side_b, all_specs)?;
        eprintln!(
            "blessed {}: {} cells written from {}, {} kept (identical), {} removed",
            a.display(),
            done.written,
            b.display(),
            done.kept,
            done.removed
        );
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
