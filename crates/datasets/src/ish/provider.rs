//! The `ish-standin` provider: the FuncISH stand-in of [`super::standin`], labelled with the
//! ontology of the `gene-ontology` provider (real when installed, else its `go-random`
//! stand-in) or always with `go-random` (`ontology = "random"`). The ontology's identity is
//! part of the stand-in's: installing GO changes the data, and its cells recompute.

use super::standin::{IshStandinConfig, OntologyChoice, STANDIN_VERSION, generate};
use crate::go::GoData;
use crate::go::provider::{GoProvider, GoRandomProvider};
use crate::provider::{
    Data, DataContext, Provider, Resolved, absent, kinds, param_err, real, split_standin,
    synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use crate::{ContentHasher, DataError as E};
use serde::{Deserialize, Serialize};

/// The FuncISH stand-in.
pub struct IshStandinProvider;

#[derive(Serialize)]
struct Identity<'a> {
    #[serde(flatten)]
    config: &'a IshStandinConfig,
    generator: u32,
    ontology_identity: &'a str,
}

impl Provider for IshStandinProvider {
    fn name(&self) -> &'static str {
        "ish-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "FuncISH stand-in (spec §8): synthetic expression-masked ISH images of genes labelled with GO categories (the real ontology and human annotations when installed), relation sets"
    }
    fn kind(&self) -> &'static str {
        kinds::ISH
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/ish/", "datasets/src/go/"]
    }
    fn resolve(&self, ctx: &DataContext, params: &serde_json::Value) -> Result<Resolved, E> {
        let cfg: IshStandinConfig = typed(self.name(), params)?;
        cfg.validate().map_err(|e| param_err(self.name(), e))?;
        let random = serde_json::json!({
            "terms": cfg.random_terms,
            "genes": cfg.genes,
            "seed": cfg.seed,
        });
        let go = match cfg.ontology {
            OntologyChoice::Installed => {
                GoProvider.resolve(ctx, &serde_json::json!({ "standin": random }))?
            }
            OntologyChoice::Random => GoRandomProvider.resolve(ctx, &random)?,
        };
        let note = format!(
            "SYNTHETIC ISH images (stand-in, spec §8): {} genes, {} x {} images; categories from the {}",
            cfg.genes,
            cfg.height,
            cfg.width,
            go.note.trim_start_matches("SYNTHETIC ")
        );
        let identity = Identity {
            config: &cfg,
            generator: STANDIN_VERSION,
            ontology_identity: &go.identity,
        };
        let c = cfg.clone();
        synthetic(self, &identity, None, note, move || {
            let data = (go.loader)()?;
            let g: &GoData = data.get().ok_or_else(|| {
                param_err("ish-standin", "the ontology provider returned no ontology")
            })?;
            let (set, truth) = generate(&c, g)?;
            Ok(Data::new(kinds::ISH, set).with_truth(truth))
        })
    }
}

/// Parameters of the real data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllenIshParams {
    /// Smallest category (genes; 15, spec §2.5).
    #[serde(default = "min_cat")]
    min_category: usize,
    /// Largest category (genes; 500).
    #[serde(default = "max_cat")]
    max_category: usize,
}

fn min_cat() -> usize {
    15
}
fn max_cat() -> usize {
    500
}

/// The real FuncISH data ([`super::allen`]), labelled with the real Gene Ontology.
pub struct AllenIshProvider;

impl Provider for AllenIshProvider {
    fn name(&self) -> &'static str {
        "allen-ish"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "Allen Brain Atlas adult mouse ISH, expression-masked medial sagittal images (images.csv + images/), GO categories from the gene-ontology provider, optional relation files"
    }
    fn kind(&self) -> &'static str {
        kinds::ISH
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("allen-ish")
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/ish/", "datasets/src/go/"]
    }
    fn resolve(&self, ctx: &DataContext, params: &serde_json::Value) -> Result<Resolved, E> {
        let (own, standin) = split_standin(self.name(), params)?;
        let p: AllenIshParams = typed(self.name(), &own)?;
        if p.min_category < 2 || p.max_category < p.min_category {
            return Err(param_err(
                self.name(),
                format!(
                    "categories of {} to {} genes: need 2 <= min_category <= max_category",
                    p.min_category, p.max_category
                ),
            ));
        }
        let dir = ctx.data_dir.join("allen-ish");
        if !dir.join(super::allen::INDEX).is_file() {
            return absent(self, ctx, &dir, &standin);
        }
        let go = GoProvider.resolve(ctx, &serde_json::json!({}))?;
        if go.synthetic {
            return Err(E::Incomplete {
                name: self.name().into(),
                dir: dir.clone(),
                found: super::allen::INDEX.into(),
                missing: "the Gene Ontology with gene annotations (its categories)".into(),
                hint: "Put go-basic.obo and mgi.gaf.gz in $DYAD_DATA_DIR/go (`dyad data fetch gene-ontology`).".into(),
            });
        }
        let note = format!(
            "real Allen Brain Atlas ISH images from {}; categories of {} to {} genes from the {}",
            ctx.show(&dir),
            p.min_category,
            p.max_category,
            go.note
        );
        let go_identity = go.identity.clone();
        let (d1, d2) = (dir.clone(), dir.clone());
        let identity = move |d: &std::path::Path, go_id: &str| -> Result<String, E> {
            let mut h = ContentHasher::new("allen-ish/v1");
            h.str(&tree_content_id(d)?).str(go_id);
            Ok(h.finish().0)
        };
        let g2 = go_identity.clone();
        let (lo, hi) = (p.min_category, p.max_category);
        real(
            self,
            ctx,
            std::slice::from_ref(&dir),
            &p,
            note,
            move || Ok((identity(&d1, &go_identity)?, None)),
            move || {
                let data = (go.loader)()?;
                let g: &GoData = data.get().ok_or_else(|| {
                    param_err("allen-ish", "the ontology provider returned no ontology")
                })?;
                let set = super::allen::load(&d2, g, lo, hi)?;
                Ok((identity(&d2, &g2)?, Data::new(kinds::ISH, set)))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standin_resolves_loads_and_names_its_ontology() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().join("data"), dir.path().join("cache"));
        let params = serde_json::json!({
            "genes": 150, "height": 48, "width": 96, "min_category": 5,
            "random_terms": 100, "ontology": "random", "seed": 2
        });
        let r = IshStandinProvider.resolve(&ctx, &params).unwrap();
        assert!(r.synthetic);
        assert!(r.note.starts_with("SYNTHETIC ISH images"), "{}", r.note);
        assert!(r.note.contains("random ontology"), "{}", r.note);
        let data = (r.loader)().unwrap();
        let set: &super::super::IshSet = data.get().unwrap();
        assert_eq!(set.genes.len(), 150);
        assert!(data.truth::<super::super::standin::IshTruth>().is_some());
        // Another seed is another data set; unknown keys are refused.
        let other = IshStandinProvider
            .resolve(
                &ctx,
                &serde_json::json!({"genes": 150, "ontology": "random", "seed": 3}),
            )
            .unwrap();
        assert_ne!(other.identity, r.identity);
        let e = IshStandinProvider
            .resolve(&ctx, &serde_json::json!({"gens": 150}))
            .unwrap_err();
        assert!(e.to_string().contains("gens"), "{e}");
    }
}
