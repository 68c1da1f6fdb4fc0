//! The `mnist` and `mnist-standin` providers: MNIST's IDX files from `$DYAD_DATA_DIR/mnist/`
//! as labelled rows (classes as labels, the official train/test partition), optionally
//! L2-normalised and cut to nested subsets; absent, the seeded stroke-glyph stand-in.

use super::standin::MnistStandin;
use super::{Mnist, locate};
use crate::DataError;
use crate::provider::{
    Data, DataContext, Presence, Provider, Resolved, Shape, absent, kinds, param_err, real,
    split_standin, synthetic, typed,
};
use crate::registry::DatasetInfo;
use dyad_core::LabeledSet;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MnistParams {
    /// Scale every image to unit Euclidean norm (so the dot product ranks as distance).
    #[serde(default = "yes")]
    l2_normalize: bool,
    /// Keep only this many training images: the first of a fixed random order, so smaller
    /// subsets are nested in larger ones (runtime scaling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    train_images: Option<usize>,
    /// Keep only this many test images (nested likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    test_images: Option<usize>,
}

fn yes() -> bool {
    true
}

/// Where MNIST lives: `<data dir>/mnist/`.
pub fn mnist_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mnist")
}

/// The first `train` / `test` rows of each official part in a fixed random order (nested
/// for growing sizes), in ascending row order.
pub fn nested_parts(set: LabeledSet, train: Option<usize>, test: Option<usize>) -> LabeledSet {
    use dyad_core::Partition;
    use rand::seq::SliceRandom;
    if train.is_none() && test.is_none() {
        return set;
    }
    let part = set.partition.clone().unwrap_or_default();
    let mut keep = Vec::new();
    for (which, max) in [(Partition::Train, train), (Partition::Test, test)] {
        let mut rows: Vec<usize> = (0..set.n())
            .filter(|&i| part.get(i) == Some(&which))
            .collect();
        rows.shuffle(&mut dyad_core::seeded(dyad_core::derive_seed(
            0,
            "nested-subset",
        )));
        rows.truncate(max.unwrap_or(usize::MAX));
        keep.extend(rows);
    }
    keep.sort_unstable();
    set.select(&keep)
}

/// Real MNIST.
pub struct MnistProvider;

impl Provider for MnistProvider {
    fn name(&self) -> &'static str {
        "mnist"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "MNIST handwritten digits, IDX files (LeCun et al. 1998), classes as labels"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("mnist")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/mnist/mod.rs",
            "datasets/src/mnist/provider.rs",
            "datasets/src/formats/idx.rs",
            "datasets/src/formats/mod.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: MnistParams = typed(self.name(), &own)?;
        let dir = mnist_dir(&ctx.data_dir);
        let files = match locate(&dir)? {
            Presence::Complete(f) => f,
            Presence::Absent => {
                let mut t = standin.as_object().cloned().unwrap_or_default();
                t.insert("l2_normalize".into(), config.l2_normalize.into());
                for (k, v) in [("train", config.train_images), ("test", config.test_images)] {
                    if let Some(v) = v {
                        t.entry(k).or_insert(v.into());
                    }
                }
                return absent(self, ctx, &dir, &t.into());
            }
        };
        let (normalize, train_n, test_n) =
            (config.l2_normalize, config.train_images, config.test_images);
        let (d1, d2) = (dir.clone(), dir.clone());
        let labelled = move |m: &Mnist| nested_parts(m.to_labeled_set(normalize), train_n, test_n);
        real(
            self,
            ctx,
            &files,
            &config,
            format!("real MNIST from {}", ctx.show(&dir)),
            move || {
                let m = Mnist::load(&d1)?;
                let shape = Shape::of_labelled(&labelled(&m));
                Ok((m.content_id().0, Some(shape)))
            },
            move || {
                let m = Mnist::load(&d2)?;
                let set = labelled(&m);
                Ok((m.content_id().0, Data::new(kinds::LABELLED, set)))
            },
        )
    }
}

/// The seeded stroke-glyph stand-in with MNIST's shape.
pub struct MnistStandinProvider;

impl Provider for MnistStandinProvider {
    fn name(&self) -> &'static str {
        "mnist-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded synthetic stroke-glyph stand-in with MNIST's shape"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/mnist/standin.rs",
            "datasets/src/mnist/mod.rs",
            "datasets/src/mnist/provider.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let mut t = params.as_object().cloned().unwrap_or_default();
        let normalize = match t.remove("l2_normalize") {
            Some(v) => v
                .as_bool()
                .ok_or_else(|| param_err(self.name(), "`l2_normalize` must be a boolean"))?,
            None => true,
        };
        let config: MnistStandin = typed(self.name(), &t.into())?;
        let note = format!(
            "SYNTHETIC MNIST stand-in: {} train + {} test stroke glyphs",
            config.train, config.test
        );
        #[derive(Serialize)]
        struct Canon<'a> {
            generator: &'a MnistStandin,
            l2_normalize: bool,
        }
        let canon = Canon {
            generator: &config,
            l2_normalize: normalize,
        };
        // Labels are `i % 10` in each part.
        let per_class = |n: usize| (0..10).map(|c| n / 10 + usize::from(c < n % 10)).collect();
        let train_sizes: Vec<usize> = per_class(config.train);
        let test_sizes: Vec<usize> = per_class(config.test);
        let shape = Shape {
            rows: config.train + config.test,
            dim: 784,
            class_sizes: Some(
                train_sizes
                    .iter()
                    .zip(&test_sizes)
                    .map(|(a, b)| a + b)
                    .collect(),
            ),
            train_class_sizes: Some(train_sizes),
            test_class_sizes: Some(test_sizes),

            ..Shape::default()
        };
        let c = config.clone();
        synthetic(self, &canon, Some(shape), note, move || {
            Ok(Data::new(
                kinds::LABELLED,
                c.generate()?.to_labeled_set(normalize),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standin_shape_is_what_it_generates() {
        let ctx = DataContext::new("/nonexistent".into(), std::env::temp_dir());
        let r = MnistStandinProvider
            .resolve(&ctx, &serde_json::json!({"train": 23, "test": 11}))
            .unwrap();
        let data = (r.loader)().unwrap();
        let set = data.get::<LabeledSet>().unwrap();
        // The shape known before generating has no row audit; the rows have no degenerate one.
        let mut generated = Shape::of_labelled(set);
        let audit = generated.audit.take().unwrap();
        assert_eq!(r.shape, Some(generated));
        assert!(audit.is_clean(), "{audit:?}");
    }

    #[test]
    fn real_data_of_other_content_is_labelled_unpublished_everywhere_it_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        crate::testdata::write_other_mnist(&dir.path().join("mnist"), 20, 0);
        let ctx = DataContext::new(dir.path().to_path_buf(), dir.path().join("cache"));
        let r = MnistProvider.resolve(&ctx, &serde_json::json!({})).unwrap();
        assert!(!r.synthetic);
        let why = r.unpublished.as_deref().expect("not the published release");
        assert!(
            why.contains("is not the published release's fdbf0b1cb23b"),
            "{why}"
        );
        assert!(
            r.note.starts_with("UNPUBLISHED CONTENT (content identity ")
                && r.note.ends_with("real MNIST from $DYAD_DATA_DIR/mnist"),
            "{}",
            r.note
        );
    }

    #[test]
    fn data_changed_in_place_behind_the_memo_is_identified_anew_on_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let mnist = dir.path().join("mnist");
        crate::testdata::write_other_mnist(&mnist, 20, 0);
        let cache = dir.path().join("cache");
        let first = MnistProvider
            .resolve(
                &DataContext::new(dir.path().into(), cache.clone()),
                &serde_json::json!({}),
            )
            .unwrap();
        assert!((first.loader)().is_ok());
        // Other pixels, the same sizes and modification times: the memo cannot tell.
        crate::testdata::rewrite_other_mnist_in_place(&mnist, 20, 7);
        let stale = MnistProvider
            .resolve(
                &DataContext::new(dir.path().into(), cache.clone()),
                &serde_json::json!({}),
            )
            .unwrap();
        assert_eq!(stale.identity, first.identity, "the memo's record");
        let e = (stale.loader)().expect_err("changed content").to_string();
        assert!(
            e.contains("changed since its identity was recorded")
                && e.contains("the record is dropped: run again"),
            "{e}"
        );
        // The next run identifies the data anew and loads it.
        let again = MnistProvider
            .resolve(
                &DataContext::new(dir.path().into(), cache),
                &serde_json::json!({}),
            )
            .unwrap();
        assert_ne!(again.identity, first.identity);
        assert!((again.loader)().is_ok());
    }

    #[test]
    fn a_read_only_context_writes_no_memo() {
        let dir = tempfile::tempdir().unwrap();
        crate::testdata::write_other_mnist(&dir.path().join("mnist"), 10, 0);
        let cache = dir.path().join("cache");
        let ctx = DataContext::new(dir.path().into(), cache.clone()).read_only();
        MnistProvider.resolve(&ctx, &serde_json::json!({})).unwrap();
        assert!(!ctx.memo_path().exists());
        let ctx = DataContext::new(dir.path().into(), cache);
        MnistProvider.resolve(&ctx, &serde_json::json!({})).unwrap();
        assert!(ctx.memo_path().exists());
    }

    #[test]
    fn absent_mnist_is_the_marked_standin_and_partial_mnist_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().to_path_buf(), dir.path().join("cache"));
        let params = serde_json::json!({"standin": {"train": 20, "test": 10}});
        let r = MnistProvider.resolve(&ctx, &params).unwrap();
        assert!(r.synthetic && r.note.starts_with("SYNTHETIC stand-in for mnist"));
        assert!(r.note.contains("$DYAD_DATA_DIR/mnist"), "{}", r.note);
        std::fs::create_dir_all(dir.path().join("mnist")).unwrap();
        std::fs::write(dir.path().join("mnist/train-labels-idx1-ubyte"), b"x").unwrap();
        let e = MnistProvider.resolve(&ctx, &params).unwrap_err();
        assert!(matches!(e, DataError::Incomplete { .. }), "{e}");
    }
}
