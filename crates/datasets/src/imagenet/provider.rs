//! The `imagenet-sbow` and `imagenet-standin` providers: ImageNet LSVRC-2010 SBOW features of
//! the training images with WordNet ancestor labels (LORETA spec §5.2), from
//! `$DYAD_DATA_DIR/imagenet/meta.mat` (the development kit's synsets) and
//! `$DYAD_DATA_DIR/imagenet/sbow/<WNID>.sbow.mat`; absent, SYN-ImageNet (spec §10.2).

use super::standin::ImagenetStandin;
use super::{MAX_LABEL_FRACTION, MultiLabelSet, VOCAB, load_sbow_dir, read_meta};
use crate::provider::{
    Data, DataContext, Presence, Provider, Resolved, Shape, absent, kinds, real, split_standin,
    synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use crate::{ContentHasher, DataError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImagenetParams {
    /// Ancestor labels covering more than this fraction of the images are dropped (§5.2).
    #[serde(default = "ten_percent")]
    max_label_fraction: f64,
}

fn ten_percent() -> f64 {
    MAX_LABEL_FRACTION
}

/// Real ImageNet SBOW.
pub struct ImagenetProvider;

impl Provider for ImagenetProvider {
    fn name(&self) -> &'static str {
        "imagenet-sbow"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "ImageNet LSVRC-2010 SBOW features with WordNet ancestor labels (LORETA spec §5.2)"
    }
    fn kind(&self) -> &'static str {
        kinds::MULTI_LABEL
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("imagenet-sbow")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/imagenet/mod.rs",
            "datasets/src/imagenet/provider.rs",
            "datasets/src/formats/mat.rs",
            "datasets/src/pipelines/tfidf.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: ImagenetParams = typed(self.name(), &own)?;
        let dir = ctx.data_dir.join("imagenet");
        let (meta, sbow) = (dir.join("meta.mat"), dir.join("sbow"));
        let presence = match (meta.is_file(), sbow.is_dir()) {
            (true, true) => Presence::Complete(vec![meta, sbow]),
            (false, false) => Presence::Absent,
            (has_meta, _) => {
                return Err(DataError::Incomplete {
                    name: self.name().into(),
                    dir: dir.clone(),
                    found: if has_meta { "meta.mat" } else { "sbow/" }.into(),
                    missing: if has_meta { "sbow/" } else { "meta.mat" }.into(),
                    hint: self.info().map(|i| i.manual).unwrap_or_default().into(),
                });
            }
        };
        let files = match presence {
            Presence::Complete(f) => f,
            Presence::Absent => {
                let mut t = standin.as_object().cloned().unwrap_or_default();
                t.insert(
                    "max_label_fraction".into(),
                    config.max_label_fraction.into(),
                );
                return absent(self, ctx, &dir, &t.into());
            }
        };
        let identify = {
            let files = files.clone();
            move || {
                let mut h = ContentHasher::new("imagenet-sbow/v1");
                for f in &files {
                    h.str(&tree_content_id(f)?);
                }
                Ok(h.finish().0)
            }
        };
        let load_id = identify.clone();
        let (d1, fraction) = (dir.clone(), config.max_label_fraction);
        real(
            self,
            ctx,
            &files,
            &config,
            format!("real ImageNet LSVRC-2010 SBOW from {}", ctx.show(&dir)),
            move || Ok((identify()?, None)),
            move || {
                let h = read_meta(&d1.join("meta.mat"))?;
                let data = load_sbow_dir(&d1.join("sbow"), &h, VOCAB)?;
                let (set, _) = MultiLabelSet::from_counts(&h, &data.counts, data.leaf, fraction)?;
                Ok((load_id()?, Data::new(kinds::MULTI_LABEL, set)))
            },
        )
    }
}

/// SYN-ImageNet.
pub struct ImagenetStandinProvider;

impl Provider for ImagenetStandinProvider {
    fn name(&self) -> &'static str {
        "imagenet-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded SYN-ImageNet: 1000-leaf tree, hierarchical visual words (LORETA spec §10.2)"
    }
    fn kind(&self) -> &'static str {
        kinds::MULTI_LABEL
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/imagenet/standin.rs",
            "datasets/src/imagenet/mod.rs",
            "datasets/src/imagenet/provider.rs",
            "datasets/src/pipelines/tfidf.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let config: ImagenetStandin = typed(self.name(), params)?;
        let note = format!(
            "SYNTHETIC ImageNet stand-in: {} leaves x {} images, d = {}",
            config.leaves, config.per_leaf, config.dim
        );
        let shape = Shape {
            rows: config.leaves * config.per_leaf,
            dim: config.dim,
            class_sizes: Some(vec![config.per_leaf; config.leaves]),
            train_class_sizes: None,
            test_class_sizes: None,

            ..Shape::default()
        };
        let c = config.clone();
        synthetic(self, &config, Some(shape), note, move || {
            Ok(Data::new(kinds::MULTI_LABEL, c.generate()?))
        })
    }
}
