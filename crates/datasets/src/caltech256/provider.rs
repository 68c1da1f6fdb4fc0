//! The `caltech256` and `caltech256-standin` providers: Caltech-256 class subsets (c10, c20,
//! c50, c249) through the OASIS image features (spec §6.1) from
//! `$DYAD_DATA_DIR/256_ObjectCategories` (or `caltech256/256_ObjectCategories`), or
//! precomputed features in svmlight format; absent, the seeded bag-of-visual-words stand-in
//! of OASIS spec §12.1.

use super::Subset;
use super::standin::CaltechStandin;
use crate::DataError;
use crate::formats::svmlight::{SvmlightOptions, read_svmlight_labeled};
use crate::pipelines::images::{CaltechFeatureConfig, caltech_features};
use crate::provider::{
    Data, DataContext, Provider, Resolved, Shape, absent, kinds, param_err, real, split_standin,
    synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use dyad_core::derive_seed;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The class count of a Caltech-256 subset name.
pub fn subset_classes(subset: &str) -> Option<usize> {
    match subset {
        "c10" => Some(10),
        "c20" => Some(20),
        "c50" => Some(50),
        "c249" => Some(249),
        _ => None,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaltechParams {
    subset: String,
    /// The OASIS feature pipeline (spec §6.1); defaults are the spec's choices.
    #[serde(default)]
    features: CaltechFeatureConfig,
    /// Seed of the palette and codebook k-means.
    #[serde(default)]
    features_seed: u64,
    /// Precomputed features in svmlight format (path under the data directory, e.g. the
    /// authors' published files); read directly instead of extracting from the images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    svmlight: Option<String>,
}

/// `256_ObjectCategories` under the data directory, if present.
pub fn caltech_root(ctx: &DataContext) -> Option<PathBuf> {
    ["caltech256/256_ObjectCategories", "256_ObjectCategories"]
        .iter()
        .map(|p| ctx.data_dir.join(p))
        .find(|p| p.is_dir())
}

/// Real Caltech-256.
pub struct CaltechProvider;

impl Provider for CaltechProvider {
    fn name(&self) -> &'static str {
        "caltech256"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "Caltech-256 class subsets c10/c20/c50/c249 (Griffin et al. 2007), OASIS image features"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("caltech256")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/caltech256/mod.rs",
            "datasets/src/caltech256/provider.rs",
            "datasets/src/pipelines/images.rs",
            "datasets/src/pipelines/kmeans.rs",
            "datasets/src/formats/svmlight.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: CaltechParams = typed(self.name(), &own)?;
        let subset = Subset::from_name(&config.subset)?;
        if let Some(rel) = &config.svmlight {
            let path = ctx.data_dir.join(rel);
            if !path.is_file() {
                return Err(DataError::Missing {
                    name: "caltech256".into(),
                    dir: ctx.data_dir.clone(),
                    tried: rel.clone(),
                    hint: "the `svmlight` parameter names a features file under the data \
                           directory"
                        .into(),
                });
            }
            let (p1, p2) = (path.clone(), path.clone());
            return real(
                self,
                ctx,
                std::slice::from_ref(&path),
                &config,
                format!(
                    "real Caltech-256 {} features read from {}",
                    config.subset,
                    ctx.show(&path)
                ),
                move || {
                    let set = read_svmlight_labeled(&p1, SvmlightOptions::default())?;
                    Ok((tree_content_id(&p1)?, Some(Shape::of_labelled(&set))))
                },
                move || {
                    let set = read_svmlight_labeled(&p2, SvmlightOptions::default())?;
                    Ok((tree_content_id(&p2)?, Data::new(kinds::LABELLED, set)))
                },
            );
        }
        let Some(root) = caltech_root(ctx) else {
            let mut t = standin.as_object().cloned().unwrap_or_default();
            t.insert("subset".into(), config.subset.clone().into());
            return absent(
                self,
                ctx,
                &ctx.data_dir.join("256_ObjectCategories"),
                &t.into(),
            );
        };
        config.features.validate()?;
        let features_cache = ctx.cache_dir.join("features");
        let (r1, r2) = (root.clone(), root.clone());
        let (cfg, seed) = (config.features.clone(), config.features_seed);
        real(
            self,
            ctx,
            std::slice::from_ref(&root),
            &config,
            format!(
                "real Caltech-256 {} images from {}, OASIS features",
                config.subset,
                ctx.show(&root)
            ),
            move || Ok((tree_content_id(&r1)?, None)),
            move || {
                let id = tree_content_id(&r2)?;
                let f = caltech_features(&r2, &subset, &cfg, seed, Some(&features_cache))?;
                Ok((id, Data::new(kinds::LABELLED, f.set)))
            },
        )
    }
}

/// The seeded Caltech-256 stand-in.
pub struct CaltechStandinProvider;

impl Provider for CaltechStandinProvider {
    fn name(&self) -> &'static str {
        "caltech256-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded synthetic bag-of-visual-words stand-in for Caltech-256 (OASIS spec §12.1)"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/caltech256/standin.rs",
            "datasets/src/caltech256/provider.rs",
            "datasets/src/pipelines/tfidf.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let mut t = params.as_object().cloned().unwrap_or_default();
        if let Some(s) = t.remove("subset") {
            let s = s
                .as_str()
                .ok_or_else(|| param_err(self.name(), "`subset` must be a string"))?
                .to_string();
            let classes = subset_classes(&s)
                .ok_or_else(|| param_err(self.name(), format!("unknown subset `{s}`")))?;
            t.entry("classes").or_insert(classes.into());
            let seed = derive_seed(0, &format!("caltech256-standin/{s}")) >> 1;
            t.entry("seed").or_insert(seed.into());
        }
        let config: CaltechStandin = typed(self.name(), &t.into())?;
        let note = format!(
            "SYNTHETIC Caltech-256 stand-in: {} classes x {} images, d = {}",
            config.classes, config.per_class, config.dim
        );
        let shape = Shape {
            rows: config.classes * config.per_class,
            dim: config.dim,
            class_sizes: Some(vec![config.per_class; config.classes]),
            train_class_sizes: None,
            test_class_sizes: None,
            ..Shape::default()
        };
        let c = config.clone();
        synthetic(self, &config, Some(shape), note, move || {
            Ok(Data::new(kinds::LABELLED, c.generate()?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::LabeledSet;

    #[test]
    fn the_standin_shape_is_what_it_generates() {
        let ctx = DataContext::new("/nonexistent".into(), std::env::temp_dir());
        let r = CaltechStandinProvider
            .resolve(
                &ctx,
                &serde_json::json!({"subset": "c10", "per_class": 4, "dim": 50}),
            )
            .unwrap();
        let data = (r.loader)().unwrap();
        // The shape known before generating it has no row audit; the generated rows have
        // none of the degenerate kinds.
        let mut generated = Shape::of_labelled(data.get::<LabeledSet>().unwrap());
        let audit = generated.audit.take().unwrap();
        assert_eq!(r.shape, Some(generated));
        assert!(audit.is_clean(), "{audit:?}");
    }

    #[test]
    fn precomputed_features_are_read_from_svmlight() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/caltech256")).unwrap();
        std::fs::write(
            dir.path().join("data/caltech256/c10.svm"),
            "1 1:0.5 3:1\n2 2:1\n1 1:1\n",
        )
        .unwrap();
        let ctx = DataContext::new(dir.path().join("data"), dir.path().join("cache"));
        let p = serde_json::json!({"subset": "c10", "svmlight": "caltech256/c10.svm"});
        let r = CaltechProvider.resolve(&ctx, &p).unwrap();
        assert!(!r.synthetic, "{}", r.note);
        assert!(
            r.note.contains("$DYAD_DATA_DIR/caltech256/c10.svm"),
            "{}",
            r.note
        );
        let data = (r.loader)().unwrap();
        let s = data.get::<LabeledSet>().unwrap();
        assert_eq!((s.n(), s.n_classes()), (3, 2));
        let p = serde_json::json!({"subset": "c10", "svmlight": "missing.svm"});
        assert!(matches!(
            CaltechProvider.resolve(&ctx, &p),
            Err(DataError::Missing { .. })
        ));
    }
}
