//! The `gene-ontology` provider (the Gene Ontology with gene annotations, real when installed)
//! and its stand-in `go-random` (the random DAG of funcish.md §8 item 1).
//!
//! Files are looked for as [`super::ontology_candidates`] and [`super::annotation_candidates`]
//! list them: `$DYAD_DATA_DIR/go/` first (go-basic.obo or GO.sqlite; a GAF or
//! org.Hs.eg.sqlite), then the Debian packages `r-bioc-go.db` and `r-bioc-org.hs.eg.db`.
//! An ontology without annotations (or the reverse) is an incomplete data set: an error, not
//! a silent stand-in. The identity is the SHA-256 of both files, remembered by their stamp.

use super::random::{RandomGoConfig, random_go};
use super::{AnnotationFilter, GoData, Namespace};
use crate::provider::{
    Data, DataContext, Provider, Resolved, absent, kinds, param_err, real, split_standin,
    synthetic, typed,
};
use crate::registry::DatasetInfo;
use crate::{ContentHasher, DataError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GoParams {
    /// Keep only these evidence codes (empty: all, the spec's default).
    #[serde(default)]
    keep_evidence: Vec<String>,
    /// Drop these evidence codes (e.g. `["IEA"]`).
    #[serde(default)]
    drop_evidence: Vec<String>,
}

/// The ontology and annotation files in use, if both are there.
pub fn locate(data_dir: &Path) -> Result<Option<(PathBuf, PathBuf)>, DataError> {
    let o = super::ontology_candidates(data_dir)
        .into_iter()
        .find(|p| p.is_file());
    let a = super::annotation_candidates(data_dir)
        .into_iter()
        .find(|p| p.is_file());
    match (o, a) {
        (Some(o), Some(a)) => Ok(Some((o, a))),
        (None, None) => Ok(None),
        (o, a) => Err(DataError::Incomplete {
            name: "gene-ontology".into(),
            dir: data_dir.join("go"),
            found: o.or(a).map(|p| p.display().to_string()).unwrap_or_default(),
            missing: if o_missing(data_dir) {
                "the ontology (go-basic.obo or GO.sqlite)".into()
            } else {
                "gene annotations (a GAF file, or org.Hs.eg.sqlite)".into()
            },
            hint: "Install both Debian packages (apt install r-bioc-go.db r-bioc-org.hs.eg.db) or put both files in $DYAD_DATA_DIR/go.".into(),
        }),
    }
}

fn o_missing(data_dir: &Path) -> bool {
    !super::ontology_candidates(data_dir)
        .iter()
        .any(|p| p.is_file())
}

fn load(onto: &Path, ann: &Path, filter: &AnnotationFilter) -> Result<GoData, DataError> {
    let ontology = super::read_ontology(onto)?;
    let annotations = super::read_annotations(ann, &ontology, filter)?;
    let neural_roots = super::NEURAL_ROOTS
        .iter()
        .filter_map(|r| ontology.find(r))
        .collect();
    Ok(GoData {
        ontology,
        annotations,
        neural_roots,
        real: true,
    })
}

/// A file as notes show it: under `$DYAD_DATA_DIR`, or the Debian package it came from.
fn shown(ctx: &DataContext, p: &Path) -> String {
    if p == Path::new(super::DEBIAN_GO_SQLITE) {
        "the Debian package r-bioc-go.db (GO.sqlite)".into()
    } else if p == Path::new(super::DEBIAN_ORG_HS_SQLITE) {
        "the Debian package r-bioc-org.hs.eg.db (org.Hs.eg.sqlite, human)".into()
    } else {
        ctx.show(p)
    }
}

fn identity(files: &[&Path]) -> Result<String, DataError> {
    let mut h = ContentHasher::new("gene-ontology/v1");
    for f in files {
        h.str(&crate::fetch::sha256_file(f)?);
    }
    Ok(h.finish().0)
}

/// The real Gene Ontology with gene annotations.
pub struct GoProvider;

impl Provider for GoProvider {
    fn name(&self) -> &'static str {
        "gene-ontology"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "the Gene Ontology (go-basic.obo or Bioconductor GO.db) with gene annotations (GAF or org.Hs.eg.db), biological process"
    }
    fn kind(&self) -> &'static str {
        kinds::GO
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("gene-ontology")
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/go/"]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let p: GoParams = typed(self.name(), &own)?;
        let Some((onto, ann)) = locate(&ctx.data_dir)? else {
            return absent(self, ctx, &ctx.data_dir.join("go"), &standin);
        };
        let filter = AnnotationFilter {
            namespace: Namespace::BiologicalProcess,
            keep_evidence: p.keep_evidence.clone(),
            drop_evidence: p.drop_evidence.clone(),
        };
        let note = format!(
            "real Gene Ontology from {} with annotations from {}",
            shown(ctx, &onto),
            shown(ctx, &ann)
        );
        let (o2, a2) = (onto.clone(), ann.clone());
        real(
            self,
            ctx,
            &[onto.clone(), ann.clone()],
            &p,
            note,
            move || Ok((identity(&[&onto, &ann])?, None)),
            move || {
                let data = load(&o2, &a2, &filter)?;
                Ok((identity(&[&o2, &a2])?, Data::new(kinds::GO, data)))
            },
        )
    }
}

/// The random ontology with random annotations (funcish.md §8 item 1).
pub struct GoRandomProvider;

impl Provider for GoRandomProvider {
    fn name(&self) -> &'static str {
        "go-random"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "random GO-like DAG (7 levels, 1-3 is_a parents, an ~8 % neural subtree) with random Zipf-popular gene annotations"
    }
    fn kind(&self) -> &'static str {
        kinds::GO
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/go/"]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let cfg: RandomGoConfig = typed(self.name(), params)?;
        cfg.validate().map_err(|e| param_err(self.name(), e))?;
        let note = format!(
            "SYNTHETIC random ontology of {} terms with random annotations of {} genes",
            cfg.terms, cfg.genes
        );
        let c = cfg.clone();
        synthetic(self, &cfg, None, note, move || {
            Ok(Data::new(kinds::GO, random_go(&c)))
        })
    }
}
