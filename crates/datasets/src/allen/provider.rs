//! The `allen-brain` and `allen-brain-standin` providers: the Allen Human Brain Atlas
//! microarray, one directory per donor under `$DYAD_DATA_DIR/allen-brain/` (genes x samples,
//! donors as sample groups); absent, the seeded brain-like planted-factor stand-in of Givens
//! spec §10, whose planted programs travel with the data as its truth.

use super::{EXPRESSION_FILE, ProbeCollapse, read_donors};
use crate::expression::planted::BrainStandin;
use crate::provider::{
    Data, DataContext, Provider, Resolved, Shape, absent, kinds, param_err, real, split_standin,
    synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use crate::{ContentHasher, DataError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
        .filter(|p| {
            p.join(EXPRESSION_FILE).is_file() || p.join(format!("{EXPRESSION_FILE}.gz")).is_file()
        })
        .collect();
    dirs.sort();
    dirs
}

/// The real Allen Human Brain Atlas.
pub struct AllenProvider;

impl Provider for AllenProvider {
    fn name(&self) -> &'static str {
        "allen-brain"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "Allen Human Brain Atlas microarray, six donors (per-donor CSVs), genes x samples"
    }
    fn kind(&self) -> &'static str {
        kinds::EXPRESSION
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("allen-brain")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/allen/",
            "datasets/src/formats/expr_text.rs",
            "datasets/src/expression/mod.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: AllenParams = typed(self.name(), &own)?;
        let collapse = match config.collapse.as_str() {
            "genes" => ProbeCollapse::MeanByGeneSymbol,
            "probes" => ProbeCollapse::None,
            other => {
                return Err(param_err(
                    self.name(),
                    format!("collapse must be \"genes\" or \"probes\", got \"{other}\""),
                ));
            }
        };
        let dirs = donor_dirs(ctx);
        if dirs.is_empty() {
            return absent(self, ctx, &ctx.data_dir.join("allen-brain"), &standin);
        }
        let identify = {
            let dirs = dirs.clone();
            move || {
                let mut h = ContentHasher::new("allen-brain/v1");
                for d in &dirs {
                    h.str(&tree_content_id(d)?);
                }
                Ok(h.finish().0)
            }
        };
        let load_id = identify.clone();
        let d2 = dirs.clone();
        real(
            self,
            ctx,
            &dirs,
            &config,
            format!(
                "real Allen Human Brain Atlas, {} donors from {}",
                dirs.len(),
                ctx.show(&ctx.data_dir.join("allen-brain"))
            ),
            move || Ok((identify()?, None)),
            move || {
                let a = read_donors(&d2, collapse)?;
                Ok((load_id()?, Data::new(kinds::EXPRESSION, a.data)))
            },
        )
    }
}

/// The brain-like planted-factor stand-in.
pub struct AllenStandinProvider;

impl Provider for AllenStandinProvider {
    fn name(&self) -> &'static str {
        "allen-brain-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded brain-like expression: six donors, sparse regional programs (Givens spec §10)"
    }
    fn kind(&self) -> &'static str {
        kinds::EXPRESSION
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/expression/planted.rs",
            "datasets/src/expression/mod.rs",
            "datasets/src/allen/provider.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let config: BrainStandin = typed(self.name(), params)?;
        let samples: usize = config.donor_sizes.iter().sum();
        let note = format!(
            "SYNTHETIC brain-like expression: {} genes x {samples} samples in {} donors",
            config.genes,
            config.donor_sizes.len()
        );
        let shape = Shape {
            rows: samples,
            dim: config.genes,
            ..Shape::default()
        };
        let c = config.clone();
        synthetic(self, &config, Some(shape), note, move || {
            let p = c.generate()?;
            Ok(Data::new(kinds::EXPRESSION, p.data).with_truth(p.truth))
        })
    }
}
