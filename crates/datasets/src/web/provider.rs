//! The `web-standin` provider: the seeded synthetic stand-in for the OASIS web-scale images
//! (spec §12.2): d = 10,000, ~70 non-zeros, shared-query relevance, the official partition,
//! nested sizes. Its data is the whole [`WebData`] (images plus the clicks and latent concepts
//! only a generator knows), kind [`kinds::WEB`].

use super::WebStandin;
use crate::DataError;
use crate::provider::{Data, DataContext, Provider, Resolved, kinds, synthetic, typed};

/// The web-scale stand-in.
pub struct WebStandinProvider;

impl Provider for WebStandinProvider {
    fn name(&self) -> &'static str {
        "web-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded synthetic stand-in for the OASIS web-scale images (spec §12.2): d = 10,000, ~70 non-zeros, shared-query relevance, official partition, nested sizes"
    }
    fn kind(&self) -> &'static str {
        kinds::WEB
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/web/"]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let config: WebStandin = typed(self.name(), params)?;
        let note = format!(
            "SYNTHETIC web-scale stand-in: {} images (d = {}), relevance = a shared query",
            config.images, config.dim
        );
        let c = config.clone();
        synthetic(self, &config, None, note, move || {
            Ok(Data::new(kinds::WEB, c.generate()?))
        })
    }
}
