//! The `ish-standin` provider: the FuncISH stand-in of [`super::standin`], labelled with the
//! ontology of the `gene-ontology` provider (real when installed, else its `go-random`
//! stand-in) or always with `go-random` (`ontology = "random"`). The ontology's identity is
//! part of the stand-in's: installing GO changes the data, and its cells recompute.

use super::standin::{IshStandinConfig, OntologyChoice, STANDIN_VERSION, generate};
use crate::DataError;
use crate::go::GoData;
use crate::go::provider::{GoProvider, GoRandomProvider};
use crate::provider::{Data, DataContext, Provider, Resolved, kinds, param_err, synthetic, typed};
use serde::Serialize;

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
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
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
