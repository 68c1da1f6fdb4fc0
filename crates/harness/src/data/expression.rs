//! Expression data: the Singh 2002 prostate set and the Allen Human Brain Atlas (real, or
//! their planted-factor stand-ins), genes x samples.

use super::{
    Data, DataContext, Resolved, param_err, real, split_standin, synthetic, tree_content_id, typed,
};
use dyad_datasets::DataError;
use dyad_datasets::formats::allen::{self, ProbeCollapse};
use dyad_datasets::prostate::{self, Prostate};
use dyad_datasets::synthetic::expression::{BrainStandin, ProstateStandin};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Part {
    Train,
    Test,
    Both,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProstateParams {
    /// Which file: the 102-sample training file the Givens experiments use (default), the
    /// 34-sample test file (on a ~12x larger scale), or both (grouped `train`/`test`).
    #[serde(default = "train")]
    part: Part,
}

fn train() -> Part {
    Part::Train
}

pub(super) fn prostate(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("prostate", params)?;
    let config: ProstateParams = typed("prostate", own)?;
    let dir = ctx.data_dir.join("prostate");
    let files = match prostate::locate(&dir) {
        Ok(f) => f,
        Err(DataError::Missing { .. }) => {
            let mut r = prostate_standin(ctx, &standin)?;
            r.note = format!(
                "SYNTHETIC stand-in for the prostate data (not found in {})",
                dir.display()
            );
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    let (d1, d2, part) = (dir.clone(), dir.clone(), config.part);
    real(
        ctx,
        "prostate",
        &files,
        &config,
        format!("real Singh 2002 prostate expression from {}", dir.display()),
        move || Ok(Prostate::load(&d1)?.content_id().0),
        move || {
            let p = Prostate::load(&d2)?;
            let set = match part {
                Part::Train => p.train.clone(),
                Part::Test => p.test.clone(),
                Part::Both => p.combined(),
            };
            Ok((p.content_id().0, Data::Expression(set)))
        },
    )
}

pub(super) fn prostate_standin(
    _: &DataContext,
    params: &toml::Table,
) -> Result<Resolved, DataError> {
    let config: ProstateStandin = typed("prostate-standin", params.clone())?;
    let note = format!(
        "SYNTHETIC prostate-like expression: {} genes x {} + {} samples",
        config.genes, config.tumor, config.normal
    );
    let c = config.clone();
    synthetic("prostate-standin", &config, note, move || {
        Ok(Data::Expression(c.generate()?.data))
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllenParams {
    /// `"genes"`: average the probes of each gene symbol (default); `"probes"`: keep probes.
    #[serde(default = "genes")]
    collapse: String,
}

fn genes() -> String {
    "genes".into()
}

/// Donor directories under `<data dir>/allen-brain/` (those holding the expression CSV).
fn donor_dirs(ctx: &DataContext) -> Vec<PathBuf> {
    let root = ctx.data_dir.join("allen-brain");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(allen::EXPRESSION_FILE).is_file())
        .collect();
    dirs.sort();
    dirs
}

pub(super) fn allen(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("allen-brain", params)?;
    let config: AllenParams = typed("allen-brain", own)?;
    let collapse = match config.collapse.as_str() {
        "genes" => ProbeCollapse::MeanByGeneSymbol,
        "probes" => ProbeCollapse::None,
        other => {
            return Err(param_err(
                "allen-brain",
                format!("collapse must be \"genes\" or \"probes\", got \"{other}\""),
            ));
        }
    };
    let dirs = donor_dirs(ctx);
    if dirs.is_empty() {
        let mut r = allen_standin(ctx, &standin)?;
        r.note = format!(
            "SYNTHETIC stand-in for the Allen Human Brain Atlas (no donor directories in {})",
            ctx.data_dir.join("allen-brain").display()
        );
        return Ok(r);
    }
    let identify = {
        let dirs = dirs.clone();
        move || {
            let mut h = dyad_datasets::ContentHasher::new("allen-brain/v1");
            for d in &dirs {
                h.str(&tree_content_id(d)?);
            }
            Ok(h.finish().0)
        }
    };
    let load_id = identify.clone();
    let d2 = dirs.clone();
    real(
        ctx,
        "allen-brain",
        &dirs,
        &config,
        format!("real Allen Human Brain Atlas, {} donors", dirs.len()),
        identify,
        move || {
            let a = allen::read_donors(&d2, collapse)?;
            Ok((load_id()?, Data::Expression(a.data)))
        },
    )
}

pub(super) fn allen_standin(_: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let config: BrainStandin = typed("allen-brain-standin", params.clone())?;
    let note = format!(
        "SYNTHETIC brain-like expression: {} genes x {} samples in {} donors",
        config.genes,
        config.donor_sizes.iter().sum::<usize>(),
        config.donor_sizes.len()
    );
    let c = config.clone();
    synthetic("allen-brain-standin", &config, note, move || {
        Ok(Data::Expression(c.generate()?.data))
    })
}
