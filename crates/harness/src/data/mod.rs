//! Data sets as the harness sees them: the providers of `dyad-datasets` (one folder per data
//! set, one [`Provider`] each, listed in [`PROVIDERS`]), resolved with a spec's parameters,
//! and the `dyad data list | info | verify` views of them.

pub use dyad_datasets::provider::{Data, DataContext, Provider, Resolved, Shape, kinds};
pub use dyad_datasets::registry::{PROVIDERS, provider};

use crate::engine::plan::Plan;
use dyad_datasets::DataError;
use dyad_datasets::registry::DatasetInfo;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `dyad data list` says of a real data set: present (and resolvable), absent (its
/// stand-in is used), or broken (partial or corrupt: the error, which a run would also raise).
#[derive(Debug)]
pub enum Status {
    Present(String),
    Absent(String),
    Broken(String),
}

/// Resolve a real data set with default parameters to see where it stands. Resolving a
/// present data set identifies it (reads it once; the identity is remembered).
pub fn status(p: &dyn Provider, ctx: &DataContext) -> Status {
    match p.resolve(ctx, &serde_json::json!({})) {
        Ok(r) if r.synthetic => Status::Absent(format!(
            "absent: {} is used",
            p.standin().unwrap_or("a stand-in")
        )),
        Ok(r) => Status::Present(r.note),
        // A parameter the data set needs (e.g. a Caltech subset): present or not by its
        // directory alone.
        Err(DataError::Param(_)) => match p.info() {
            Some(i) if ctx.data_dir.join(i.dir).exists() => Status::Present(format!(
                "present in {}",
                ctx.show(&ctx.data_dir.join(i.dir))
            )),
            _ => Status::Absent(format!(
                "absent: {} is used",
                p.standin().unwrap_or("a stand-in")
            )),
        },
        Err(e) => Status::Broken(e.to_string()),
    }
}

/// Check a real data set: published checksums of its files, then its decoded content (by
/// resolving and loading it) against the release's identity.
pub fn verify(info: &DatasetInfo, ctx: &DataContext) -> Result<Vec<String>, DataError> {
    let dir = ctx.data_dir.join(info.dir);
    let mut lines = Vec::new();
    for s in info.sources {
        let file = dir.join(s.file);
        match (s.sha256, file.is_file()) {
            (Some(want), true) => {
                let got = dyad_datasets::fetch::sha256_file(&file)?;
                if got != want {
                    return Err(DataError::Inconsistent {
                        path: file,
                        message: format!("sha256 {got} differs from the published {want}"),
                    });
                }
                lines.push(format!("{}: sha256 OK", s.file));
            }
            (None, true) => lines.push(format!("{}: present (no published checksum)", s.file)),
            (_, false) => lines.push(format!(
                "{}: not in {} (read in another packing, or absent)",
                s.file,
                ctx.show(&dir)
            )),
        }
    }
    let p = provider(info.name)
        .ok_or_else(|| DataError::Param(format!("no provider {}", info.name)))?;
    let r = match p.resolve(ctx, &serde_json::json!({})) {
        Ok(r) => r,
        Err(DataError::Param(m)) => {
            lines.push(format!("content: not decoded ({m})"));
            return Ok(lines);
        }
        Err(e) => return Err(e),
    };
    if r.synthetic {
        return Err(DataError::Missing {
            name: info.name.into(),
            dir: dir.clone(),
            tried: info
                .sources
                .iter()
                .map(|s| s.file)
                .collect::<Vec<_>>()
                .join(", "),
            hint: info.manual.into(),
        });
    }
    let data = (r.loader)()?;
    lines.push(format!("decoded: {}", describe(&data)));
    match info.identity {
        Some(want) if want != r.identity => {
            return Err(DataError::Inconsistent {
                path: dir,
                message: format!(
                    "content identity {} differs from the release's {want}",
                    r.identity
                ),
            });
        }
        Some(_) => lines.push(format!("content identity {} OK", r.identity)),
        None => lines.push(format!(
            "content identity {} (no published identity to compare with)",
            r.identity
        )),
    }
    Ok(lines)
}

/// The degenerate rows of a labelled data set at its default parameters (see
/// [`dyad_core::data::RowAudit`]) and what its policy dropped: from its remembered shape when
/// it has one, else by loading it (a stand-in is generated at its default size). `None` for
/// data that is not a labelled set of rows or cannot be resolved with default parameters.
pub fn rows(p: &dyn Provider, ctx: &DataContext) -> Option<String> {
    let r = p.resolve(ctx, &serde_json::json!({})).ok()?;
    if let Some(line) = r.shape.as_ref().and_then(Shape::rows_line) {
        return Some(line);
    }
    let data = (r.loader)().ok()?;
    audit(&data).map(|(what, a)| format!("{what}: {}", a.summary()))
}

/// The row audit of loaded data of any kind with rows: labelled sets, multi-label sets (by
/// leaf label), the web stand-in, ordered points (by group) and expression matrices (genes as
/// rows, unlabelled), with what a row is.
pub fn audit(data: &Data) -> Option<(&'static str, dyad_core::data::RowAudit)> {
    use dyad_core::data::RowAudit;
    // Rows with labels as a labelled set, for its audit.
    fn of(x: &sprs::CsMat<f64>, labels: &[u32]) -> RowAudit {
        let classes = labels.iter().max().map_or(0, |&m| m as usize + 1);
        dyad_core::LabeledSet::new(
            x.clone(),
            labels.to_vec(),
            (0..classes).map(|c| c.to_string()).collect(),
            None,
        )
        .map(|s| s.row_audit())
        .unwrap_or_default()
    }
    if let Some(s) = data.get::<dyad_core::LabeledSet>() {
        return Some(("examples", s.row_audit()));
    }
    if let Some(m) = data.get::<dyad_datasets::imagenet::MultiLabelSet>() {
        return Some(("images (labels: leaves)", of(&m.x, &m.leaf)));
    }
    if let Some(w) = data.get::<dyad_datasets::web::WebData>() {
        return Some(("images", w.set.row_audit()));
    }
    if let Some(o) = data.get::<dyad_datasets::pair_ranking::OrderedSet>() {
        let x = sprs::CsMat::csr_from_dense(o.x.view(), 0.0);
        return Some(("points (labels: groups)", of(&x, &o.group)));
    }
    if let Some(e) = data.get::<dyad_datasets::expression::ExpressionSet>() {
        let x = sprs::CsMat::csr_from_dense(e.values().view(), 0.0);
        return Some(("genes", of(&x, &vec![0; x.rows()])));
    }
    None
}

/// One line on loaded data.
pub fn describe(data: &Data) -> String {
    if let Some(s) = data.get::<dyad_core::LabeledSet>() {
        let parts = s.partition.as_ref().map(|p| {
            let train = p
                .iter()
                .filter(|&&x| x == dyad_core::Partition::Train)
                .count();
            format!(" ({train} in the official training part)")
        });
        return format!(
            "{} rows of {} features in {} classes{}",
            s.n(),
            s.dim(),
            s.n_classes(),
            parts.unwrap_or_default()
        );
    }
    if let Some(e) = data.get::<dyad_datasets::expression::ExpressionSet>() {
        return format!("{} genes x {} samples", e.n_genes(), e.n_samples());
    }
    if let Some(m) = data.get::<dyad_datasets::imagenet::MultiLabelSet>() {
        return format!("{} images, {} labels", m.n(), m.n_labels());
    }
    data.kind().to_string()
}

/// Where a data set would be put, for messages: `$DYAD_DATA_DIR/<dir>`.
pub fn shown_dir(info: &DatasetInfo, ctx: &DataContext) -> String {
    ctx.show(&ctx.data_dir.join(info.dir))
}

/// Whether `path` is inside the data directory (for messages).
pub fn in_data_dir(ctx: &DataContext, path: &Path) -> bool {
    path.starts_with(&ctx.data_dir)
}

/// Warnings for the real data sets of `plans` that resolved to their stand-ins here, though
/// real data was read from another data directory before (the memo of `ctx` remembers it):
/// typically `DYAD_DATA_DIR` unset for a `dyad report` of cells computed on real data, which
/// would then show the stand-in's cells (or none) instead. One warning per data set.
pub fn real_data_elsewhere(plans: &[Plan], ctx: &DataContext) -> Vec<String> {
    let mut seen: BTreeMap<&str, (Vec<String>, Vec<PathBuf>)> = BTreeMap::new();
    for p in plans {
        for d in p.datasets.iter().filter(|d| d.resolved.synthetic) {
            let Some(info) = provider(&d.requested).and_then(|pr| pr.info()) else {
                continue;
            };
            let entry = seen
                .entry(info.name)
                .or_insert_with(|| (Vec::new(), ctx.seen_elsewhere(info.name, info.dir)));
            if !entry.0.contains(&p.spec.id) {
                entry.0.push(p.spec.id.clone());
            }
        }
    }
    seen.into_iter()
        .filter(|(_, (_, dirs))| !dirs.is_empty())
        .map(|(name, (specs, dirs))| {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!(
                "warning: `{name}` is not in the data directory {}: its SYNTHETIC stand-in is \
                 used for {}. Real {name} was read from {} before, and cells computed on it are \
                 not used: set DYAD_DATA_DIR={} (or --data-dir) to use them",
                ctx.data_dir.display(),
                specs.join(", "),
                dirs.join(" and "),
                dirs[0]
            )
        })
        .collect()
}
