//! The `gmm` provider: a synthetic spherical Gaussian mixture, the data of the Givens paper's
//! tensor experiments (spec §7, §8 E3–E5: `K = 20` components, spherical variance `σ² = 2`,
//! centres from an inverse-Wishart prior, `d` and `N` per figure point).
//!
//! The data set is the mixture's **description** ([`GmmSpec`], kind [`kinds::GMM`]): the task
//! that uses it (`tensor-decomposition`) draws the mixture and its samples for each repeat
//! from the cell's seed, so every repeat is a fresh mixture while every solver of a repeat
//! sees the same samples, and the planted centres, weights and labels (the ground truth of
//! the recovery measures) are at hand where they are measured. Nothing is read from disk;
//! the content identity is that of the canonical parameters.

use crate::DataError;
use crate::provider::{Data, DataContext, Provider, Resolved, Shape, kinds, synthetic, typed};
pub use dyad_core::gmm::{GmmSpec, MixingWeights};

/// The mixture provider.
pub struct GmmProvider;

impl Provider for GmmProvider {
    fn name(&self) -> &'static str {
        "gmm"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "synthetic spherical Gaussian mixture (Givens spec §7): dim, samples, components = 20, variance = 2, inverse-Wishart centres; drawn per repeat by the task"
    }
    fn kind(&self) -> &'static str {
        kinds::GMM
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/gmm/", "core/src/gmm.rs"]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let spec: GmmSpec = typed(self.name(), params)?;
        spec.validate()
            .map_err(|e| crate::provider::param_err(self.name(), e))?;
        let note = format!(
            "SYNTHETIC spherical Gaussian mixture: K = {}, d = {}, N = {}, variance {}",
            spec.components, spec.dim, spec.samples, spec.variance
        );
        let shape = Shape {
            rows: spec.samples,
            dim: spec.dim,
            class_sizes: None,
            train_class_sizes: None,
            test_class_sizes: None,
            ..Shape::default()
        };
        let s = spec.clone();
        synthetic(self, &spec, Some(shape), note, move || {
            Ok(Data::new(kinds::GMM, s.clone()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> DataContext {
        DataContext::new(std::env::temp_dir(), std::env::temp_dir())
    }

    #[test]
    fn parameters_are_checked_and_the_description_is_the_data() {
        let p = GmmProvider;
        let r = p
            .resolve(&ctx(), &serde_json::json!({ "dim": 50, "samples": 1000 }))
            .unwrap();
        assert!(r.synthetic && r.note.starts_with("SYNTHETIC"));
        assert_eq!(r.shape.as_ref().map(|s| (s.rows, s.dim)), Some((1000, 50)));
        // Defaults are part of the canonical parameters (and so of the identity).
        assert_eq!(r.params["components"], 20);
        let data = (r.loader)().unwrap();
        assert_eq!(data.get::<GmmSpec>().unwrap(), &GmmSpec::paper(50, 1000));
        let other = p
            .resolve(&ctx(), &serde_json::json!({ "dim": 50, "samples": 2000 }))
            .unwrap();
        assert_ne!(r.identity, other.identity);
        for bad in [
            serde_json::json!({ "dim": 50 }),
            serde_json::json!({ "dim": 0, "samples": 10 }),
            serde_json::json!({ "dim": 5, "samples": 10, "variance": -1.0 }),
            serde_json::json!({ "dim": 5, "samples": 10, "colour": 1 }),
        ] {
            let e = p.resolve(&ctx(), &bad).unwrap_err().to_string();
            assert!(e.contains("parameter: gmm:"), "{bad}: {e}");
        }
    }
}
