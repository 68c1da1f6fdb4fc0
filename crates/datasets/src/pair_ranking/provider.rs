//! Providers of ordered data (kind [`ORDERED`]): the stand-ins `s-class` and `s-attr`, and
//! the real releases `relative-attributes` (OSR, PubFig, Shoes: `$DYAD_DATA_DIR/
//! relative-attributes/<dataset>/data.mat`; S-ATTR at that panel's size when absent) and
//! `eth80-hog` (`$DYAD_DATA_DIR/eth80-hog/eth80_hog.mat`; S-CLASS with 8 classes of 410
//! points in an arbitrary order when absent). The real releases cannot be downloaded here
//! (spec §7 "HARD"): their registry entries have no download address, only instructions.

use super::attributes::{read_features_labels, read_relative_attributes};
use super::standin::{ClassOrder, SAttrSpec, SClassSpec};
use super::{ORDERED, OrderedSet};
use crate::DataError;
use crate::provider::{
    Data, DataContext, Provider, Resolved, Shape, absent, param_err, real, split_standin,
    synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

fn shape(n: usize, dim: usize, groups: usize) -> Shape {
    Shape {
        rows: n,
        dim,
        class_sizes: Some(
            (0..groups)
                .map(|c| n / groups + usize::from(c < n % groups))
                .collect(),
        ),
        ..Shape::default()
    }
}

fn shape_of(s: &OrderedSet) -> Shape {
    let mut sizes = vec![0; s.groups()];
    for &g in &s.group {
        sizes[g as usize] += 1;
    }
    Shape {
        rows: s.n(),
        dim: s.x.ncols(),
        class_sizes: Some(sizes),
        ..Shape::default()
    }
}

/// S-CLASS (spec §9.1).
pub struct SClassProvider;

impl Provider for SClassProvider {
    fn name(&self) -> &'static str {
        "s-class"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded S-CLASS (tensor-ranking spec §9.1): ordered classes on a Swiss roll lifted to R^m"
    }
    fn kind(&self) -> &'static str {
        ORDERED
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/pair_ranking/standin.rs",
            "datasets/src/pair_ranking/mod.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let spec: SClassSpec = typed(self.name(), params)?;
        spec.check()?;
        let note = format!(
            "SYNTHETIC S-CLASS: {} points of {} classes ({} order) on a Swiss roll in R^{}",
            spec.n,
            spec.classes,
            match spec.order {
                ClassOrder::Smooth => "smooth",
                ClassOrder::Arbitrary => "arbitrary",
            },
            spec.m
        );
        let sh = shape(spec.n, spec.m, spec.classes);
        let s = spec.clone();
        synthetic(self, &spec, Some(sh), note, move || {
            Ok(Data::new(ORDERED, s.generate()?.set))
        })
    }
}

/// S-ATTR (spec §9.2).
pub struct SAttrProvider;

impl Provider for SAttrProvider {
    fn name(&self) -> &'static str {
        "s-attr"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded S-ATTR (tensor-ranking spec §9.2): categories on a 2-D manifold in R^m, random weak orders per attribute"
    }
    fn kind(&self) -> &'static str {
        ORDERED
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/pair_ranking/standin.rs",
            "datasets/src/pair_ranking/mod.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let spec: SAttrSpec = typed(self.name(), params)?;
        spec.check()?;
        let note = format!(
            "SYNTHETIC S-ATTR: {} points of {} categories, {} attributes, {} in R^{}",
            spec.n,
            spec.categories,
            spec.attributes,
            if spec.manifold {
                "on a 2-D manifold"
            } else {
                "isotropic clusters (no manifold)"
            },
            spec.m
        );
        let sh = shape(spec.n, spec.m, spec.categories);
        let s = spec.clone();
        synthetic(self, &spec, Some(sh), note, move || {
            Ok(Data::new(ORDERED, s.generate()?))
        })
    }
}

/// Which relative-attributes release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttributeSet {
    Osr,
    Pubfig,
    Shoes,
}

impl AttributeSet {
    fn dir(self) -> &'static str {
        match self {
            AttributeSet::Osr => "osr",
            AttributeSet::Pubfig => "pubfig",
            AttributeSet::Shoes => "shoes",
        }
    }

    /// The S-ATTR size standing in for it (spec §9.2).
    fn standin(self) -> SAttrSpec {
        match self {
            AttributeSet::Osr => SAttrSpec::osr(),
            AttributeSet::Pubfig => SAttrSpec::pubfig(),
            AttributeSet::Shoes => SAttrSpec::shoes(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttributeParams {
    dataset: AttributeSet,
}

/// `defaults` (a serialisable stand-in configuration) overridden by the spec's `standin`
/// table, key by key.
fn merged<T: Serialize>(
    name: &str,
    defaults: &T,
    overrides: &serde_json::Value,
) -> Result<serde_json::Value, DataError> {
    let mut base = serde_json::to_value(defaults).map_err(|e| param_err(name, e))?;
    if let (Some(b), Some(o)) = (base.as_object_mut(), overrides.as_object()) {
        for (k, v) in o {
            b.insert(k.clone(), v.clone());
        }
    }
    Ok(base)
}

/// A real data set in one MAT file read by `read`: identity from the file's content, shape
/// and data from one reading each (the shape is remembered, so a cached run reads nothing).
fn real_mat<P: Provider, T: Serialize>(
    provider: &P,
    ctx: &DataContext,
    file: PathBuf,
    params: &T,
    note: String,
    read: fn(&std::path::Path) -> Result<OrderedSet, DataError>,
) -> Result<Resolved, DataError> {
    let (f1, f2) = (file.clone(), file.clone());
    real(
        provider,
        ctx,
        std::slice::from_ref(&file),
        params,
        note,
        move || {
            let s = read(&f1)?;
            Ok((tree_content_id(&f1)?, Some(shape_of(&s))))
        },
        move || {
            let s = read(&f2)?;
            Ok((tree_content_id(&f2)?, Data::new(ORDERED, s)))
        },
    )
}

/// Source files of the real-data providers.
const READERS: &[&str] = &[
    "datasets/src/pair_ranking/attributes.rs",
    "datasets/src/pair_ranking/provider.rs",
    "datasets/src/pair_ranking/mod.rs",
    "datasets/src/formats/mat.rs",
];

/// The relative-attributes releases (OSR, PubFig, Shoes).
pub struct RelativeAttributesProvider;

impl Provider for RelativeAttributesProvider {
    fn name(&self) -> &'static str {
        "relative-attributes"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "relative attributes (Parikh & Grauman: OSR, PubFig; Kovashka et al.: Shoes), data.mat with features, category labels and per-attribute category orders"
    }
    fn kind(&self) -> &'static str {
        ORDERED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("relative-attributes")
    }
    fn sources(&self) -> &'static [&'static str] {
        READERS
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: AttributeParams = typed(self.name(), &own)?;
        let dir = ctx
            .data_dir
            .join("relative-attributes")
            .join(config.dataset.dir());
        let file = dir.join("data.mat");
        if !file.is_file() {
            let standin = merged(self.name(), &config.dataset.standin(), &standin)?;
            return absent(self, ctx, &dir, &standin);
        }
        let note = format!(
            "real {} relative attributes from {}",
            config.dataset.dir(),
            ctx.show(&file)
        );
        real_mat(self, ctx, file, &config, note, read_relative_attributes)
    }
}

/// The ETH-80 HOG features of Ebert et al.
pub struct Eth80HogProvider;

/// Where the ETH-80 HOG file lives.
pub fn eth80_file(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("eth80-hog").join("eth80_hog.mat")
}

impl Provider for Eth80HogProvider {
    fn name(&self) -> &'static str {
        "eth80-hog"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "ETH-80 HOG features (Ebert et al.), 3,280 images of 8 classes, classes ordered by label"
    }
    fn kind(&self) -> &'static str {
        ORDERED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("eth80-hog")
    }
    fn sources(&self) -> &'static [&'static str] {
        READERS
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        if own.as_object().is_some_and(|o| !o.is_empty()) {
            return Err(param_err(
                self.name(),
                "takes no parameters besides `standin`",
            ));
        }
        let file = eth80_file(&ctx.data_dir);
        if !file.is_file() {
            let eth = SClassSpec {
                n: 3280,
                classes: 8,
                order: ClassOrder::Arbitrary,
                ..SClassSpec::default()
            };
            let standin = merged(self.name(), &eth, &standin)?;
            let dir = file.parent().map(PathBuf::from).unwrap_or_default();
            return absent(self, ctx, &dir, &standin);
        }
        let note = format!("real ETH-80 HOG features from {}", ctx.show(&file));
        real_mat(
            self,
            ctx,
            file,
            &serde_json::json!({}),
            note,
            read_features_labels,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::Order;
    use super::*;

    #[test]
    fn standins_are_marked_synthetic_and_deliver_their_shape() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().join("none"), dir.path().join("cache"));
        let r = SClassProvider
            .resolve(&ctx, &serde_json::json!({"n": 50, "m": 5}))
            .unwrap();
        assert!(
            r.synthetic && r.note.starts_with("SYNTHETIC S-CLASS"),
            "{}",
            r.note
        );
        let d = (r.loader)().unwrap();
        let s = d.get::<OrderedSet>().unwrap();
        assert_eq!(r.shape, Some(shape_of(s)));
        assert!(
            SClassProvider
                .resolve(&ctx, &serde_json::json!({"nn": 5}))
                .is_err()
        );
        // Absent releases fall back to their panel's stand-in size, overridable.
        let r = RelativeAttributesProvider
            .resolve(
                &ctx,
                &serde_json::json!({"dataset": "pubfig", "standin": {"m": 16}}),
            )
            .unwrap();
        assert!(
            r.synthetic
                && r.note
                    .starts_with("SYNTHETIC stand-in for relative-attributes")
        );
        let d = (r.loader)().unwrap();
        let s = d.get::<OrderedSet>().unwrap();
        assert_eq!((s.n(), s.x.ncols(), s.n_orders()), (772, 16, 11));
        let r = Eth80HogProvider
            .resolve(&ctx, &serde_json::json!({"standin": {"n": 80, "m": 4}}))
            .unwrap();
        assert!(r.synthetic);
        let s = (r.loader)().unwrap();
        let s = s.get::<OrderedSet>().unwrap();
        assert_eq!((s.n(), s.groups()), (80, 8));
    }

    #[test]
    fn present_releases_are_read_as_real_data() {
        let dir = tempfile::tempdir().unwrap();
        let osr = dir.path().join("relative-attributes").join("osr");
        std::fs::create_dir_all(&osr).unwrap();
        super::super::attributes::tests::write_relative(&osr.join("data.mat"), true);
        let ctx = DataContext::new(dir.path().to_path_buf(), dir.path().join("cache"));
        let r = RelativeAttributesProvider
            .resolve(&ctx, &serde_json::json!({"dataset": "osr"}))
            .unwrap();
        assert!(!r.synthetic && r.note.contains("real osr"), "{}", r.note);
        assert_eq!(r.shape.as_ref().unwrap().rows, 6);
        let d = (r.loader)().unwrap();
        let s = d.get::<OrderedSet>().unwrap();
        assert!(matches!(s.order, Order::Attributes { .. }));
        // Shoes is still absent: its stand-in.
        assert!(
            RelativeAttributesProvider
                .resolve(
                    &ctx,
                    &serde_json::json!({"dataset": "shoes", "standin": {"n": 30, "m": 4}})
                )
                .unwrap()
                .synthetic
        );
    }
}
