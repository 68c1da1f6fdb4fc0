//! Image data: Caltech-256 (real images through the OASIS feature pipeline, or the stand-in)
//! and ImageNet LSVRC-2010 SBOW features (real, or SYN-ImageNet).

use super::{
    Data, DataContext, Resolved, param_err, real, split_standin, synthetic, tree_content_id, typed,
};
use dyad_core::derive_seed;
use dyad_datasets::DataError;
use dyad_datasets::caltech::Subset;
use dyad_datasets::imagenet::{self, MultiLabelSet};
use dyad_datasets::pipelines::images::{CaltechFeatureConfig, caltech_features};
use dyad_datasets::synthetic::caltech::CaltechStandin;
use dyad_datasets::synthetic::imagenet::ImagenetStandin;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The class count of a Caltech-256 subset name.
fn subset_classes(subset: &str) -> Option<usize> {
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
pub(crate) fn caltech_root(ctx: &DataContext) -> Option<PathBuf> {
    ["caltech256/256_ObjectCategories", "256_ObjectCategories"]
        .iter()
        .map(|p| ctx.data_dir.join(p))
        .find(|p| p.is_dir())
}

pub(super) fn caltech(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("caltech256", params)?;
    let config: CaltechParams = typed("caltech256", own)?;
    let subset = Subset::from_name(&config.subset)?;
    if let Some(rel) = &config.svmlight {
        let path = ctx.data_dir.join(rel);
        if !path.is_file() {
            return Err(DataError::Missing {
                name: "caltech256".into(),
                dir: ctx.data_dir.clone(),
                tried: rel.clone(),
                hint: "the `svmlight` parameter names a features file under the data directory"
                    .into(),
            });
        }
        let (p1, p2) = (path.clone(), path.clone());
        let opts = dyad_datasets::formats::svmlight::SvmlightOptions::default;
        return real(
            ctx,
            "caltech256",
            std::slice::from_ref(&path),
            &config,
            format!(
                "real Caltech-256 {} features read from {}",
                config.subset,
                path.display()
            ),
            move || tree_content_id(&p1),
            move || {
                let set = dyad_datasets::formats::svmlight::read_svmlight_labeled(&p2, opts())?;
                Ok((tree_content_id(&p2)?, Data::Labeled(set)))
            },
        );
    }
    let Some(root) = caltech_root(ctx) else {
        let mut t = standin;
        t.insert("subset".into(), toml::Value::String(config.subset.clone()));
        let mut r = caltech_standin(ctx, &t)?;
        r.note = format!(
            "SYNTHETIC stand-in for Caltech-256 {} (256_ObjectCategories not found in {})",
            config.subset,
            ctx.data_dir.display()
        );
        return Ok(r);
    };
    config.features.validate()?;
    let features_cache = ctx.cache_dir.join("features");
    let (r1, r2) = (root.clone(), root.clone());
    let (cfg, seed) = (config.features.clone(), config.features_seed);
    real(
        ctx,
        "caltech256",
        std::slice::from_ref(&root),
        &config,
        format!(
            "real Caltech-256 {} images from {}, OASIS features",
            config.subset,
            root.display()
        ),
        move || tree_content_id(&r1),
        move || {
            let id = tree_content_id(&r2)?;
            let f = caltech_features(&r2, &subset, &cfg, seed, Some(&features_cache))?;
            Ok((id, Data::Labeled(f.set)))
        },
    )
}

pub(super) fn caltech_standin(
    _: &DataContext,
    params: &toml::Table,
) -> Result<Resolved, DataError> {
    let mut t = params.clone();
    if let Some(s) = t.remove("subset") {
        let s = s
            .as_str()
            .ok_or_else(|| param_err("caltech256-standin", "`subset` must be a string"))?
            .to_string();
        let classes = subset_classes(&s)
            .ok_or_else(|| param_err("caltech256-standin", format!("unknown subset `{s}`")))?;
        t.entry("classes")
            .or_insert(toml::Value::Integer(classes as i64));
        let seed = derive_seed(0, &format!("caltech256-standin/{s}")) >> 1;
        t.entry("seed").or_insert(toml::Value::Integer(seed as i64));
    }
    let config: CaltechStandin = typed("caltech256-standin", t)?;
    let note = format!(
        "SYNTHETIC Caltech-256 stand-in: {} classes x {} images, d = {}",
        config.classes, config.per_class, config.dim
    );
    let c = config.clone();
    synthetic("caltech256-standin", &config, note, move || {
        c.generate().map(Data::Labeled)
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImagenetParams {
    /// Ancestor labels covering more than this fraction of the images are dropped (§5.2).
    #[serde(default = "ten_percent")]
    max_label_fraction: f64,
}

fn ten_percent() -> f64 {
    imagenet::MAX_LABEL_FRACTION
}

/// Real SBOW data: `<data dir>/imagenet/meta.mat` (the devkit's synsets) and
/// `<data dir>/imagenet/sbow/<WNID>.sbow.mat` (training features).
pub(super) fn imagenet(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("imagenet-sbow", params)?;
    let config: ImagenetParams = typed("imagenet-sbow", own)?;
    let dir = ctx.data_dir.join("imagenet");
    let (meta, sbow) = (dir.join("meta.mat"), dir.join("sbow"));
    if !meta.is_file() || !sbow.is_dir() {
        let mut t = standin;
        t.insert(
            "max_label_fraction".into(),
            toml::Value::Float(config.max_label_fraction),
        );
        let mut r = imagenet_standin(ctx, &t)?;
        r.note = format!(
            "SYNTHETIC stand-in for ImageNet LSVRC-2010 SBOW (meta.mat and sbow/ not found in {})",
            dir.display()
        );
        return Ok(r);
    }
    let files = [meta.clone(), sbow.clone()];
    let (d1, fraction) = (dir.clone(), config.max_label_fraction);
    let identify = {
        let files = files.clone();
        move || {
            let mut h = dyad_datasets::ContentHasher::new("imagenet-sbow/v1");
            for f in &files {
                h.str(&tree_content_id(f)?);
            }
            Ok(h.finish().0)
        }
    };
    let load_id = identify.clone();
    real(
        ctx,
        "imagenet-sbow",
        &files,
        &config,
        format!("real ImageNet LSVRC-2010 SBOW from {}", dir.display()),
        identify,
        move || {
            let h = imagenet::read_meta(&d1.join("meta.mat"))?;
            let data = imagenet::load_sbow_dir(&d1.join("sbow"), &h, imagenet::VOCAB)?;
            let (set, _) = MultiLabelSet::from_counts(&h, &data.counts, data.leaf, fraction)?;
            Ok((load_id()?, Data::MultiLabel(set)))
        },
    )
}

pub(super) fn imagenet_standin(
    _: &DataContext,
    params: &toml::Table,
) -> Result<Resolved, DataError> {
    let config: ImagenetStandin = typed("imagenet-standin", params.clone())?;
    let note = format!(
        "SYNTHETIC ImageNet stand-in: {} leaves x {} images, d = {}",
        config.leaves, config.per_leaf, config.dim
    );
    let c = config.clone();
    synthetic("imagenet-standin", &config, note, move || {
        c.generate().map(Data::MultiLabel)
    })
}
