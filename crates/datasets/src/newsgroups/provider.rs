//! The 20 Newsgroups providers: `20newsgroups` (the by-date release, raw messages, through
//! the LORETA §5.1 text pipeline), `20newsgroups-w1000` (the 1000-word MAT packaging) and
//! `20newsgroups-standin` (SYN-20NG of LORETA spec §10.1 through the same text pipeline).
//! Both real providers read `$DYAD_DATA_DIR/20newsgroups/`.

use super::standin::SynNewsgroups;
use super::w1000::{self, NewsgroupsW1000};
use super::{ARCHIVE_NAMES, NewsCorpus, TEST_DIR, TRAIN_DIR};
use crate::DataError;
use crate::pipelines::text::TextPipeline;
use crate::provider::{
    Data, DataContext, Presence, Provider, Resolved, Shape, absent, kinds, param_err, real,
    split_standin, synthetic, typed,
};
use crate::registry::DatasetInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewsParams {
    /// The text pipeline (defaults: the spec's choices), fitted on the official training part.
    #[serde(default)]
    pipeline: TextPipeline,
}

/// Where the by-date release stands in `dir`: the tarball (any of [`ARCHIVE_NAMES`]), else
/// both unpacked folders; one folder without the other is incomplete.
pub fn locate(dir: &Path) -> Result<Presence, DataError> {
    if let Some(t) = ARCHIVE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
    {
        return Ok(Presence::Complete(vec![t]));
    }
    let folders = [dir.join(TRAIN_DIR), dir.join(TEST_DIR)];
    match folders.iter().map(|p| p.is_dir()).collect::<Vec<_>>()[..] {
        [true, true] => Ok(Presence::Complete(folders.to_vec())),
        [false, false] => Ok(Presence::Absent),
        [train, _] => Err(DataError::Incomplete {
            name: "20newsgroups".into(),
            dir: dir.to_path_buf(),
            found: if train { TRAIN_DIR } else { TEST_DIR }.into(),
            missing: format!(
                "{} (or the tarball {})",
                if train { TEST_DIR } else { TRAIN_DIR },
                ARCHIVE_NAMES[0]
            ),
            hint: "Download 20news-bydate.tar.gz (`dyad data fetch 20newsgroups`).".into(),
        }),
        _ => unreachable!("two folders"),
    }
}

/// The shape of text features, with the documents the pipeline's policy dropped.
fn text_shape(f: &crate::pipelines::text::TextFeatures) -> Shape {
    Shape::of_labelled(&f.set)
        .with_dropped(
            "documents empty after feature selection (training part)",
            f.dropped_empty.0,
        )
        .with_dropped(
            "documents empty after feature selection (test part)",
            f.dropped_empty.1,
        )
}

/// The by-date release through the text pipeline.
pub struct NewsgroupsProvider;

impl Provider for NewsgroupsProvider {
    fn name(&self) -> &'static str {
        "20newsgroups"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "20 Newsgroups by-date (raw text) through the LORETA §5.1 text pipeline; documents that keep no selected term are dropped"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("20newsgroups")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/newsgroups/mod.rs",
            "datasets/src/newsgroups/provider.rs",
            "datasets/src/formats/tar.rs",
            "datasets/src/pipelines/text.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: NewsParams = typed(self.name(), &own)?;
        let dir = ctx.data_dir.join("20newsgroups");
        let files = match locate(&dir)? {
            Presence::Complete(f) => f,
            Presence::Absent => {
                let mut t = standin.as_object().cloned().unwrap_or_default();
                t.insert(
                    "pipeline".into(),
                    serde_json::to_value(&config.pipeline)
                        .map_err(|e| param_err(self.name(), e))?,
                );
                return absent(self, ctx, &dir, &t.into());
            }
        };
        let (d1, d2) = (dir.clone(), dir.clone());
        let (p1, p2) = (config.pipeline.clone(), config.pipeline.clone());
        real(
            self,
            ctx,
            &files,
            &config,
            format!(
                "real 20 Newsgroups (by-date) from {}, text pipeline",
                ctx.show(&dir)
            ),
            move || {
                let corpus = NewsCorpus::load(&d1)?;
                let f = p1.run(&corpus)?;
                Ok((corpus.content_id().0, Some(text_shape(&f))))
            },
            move || {
                let corpus = NewsCorpus::load(&d2)?;
                let f = p2.run(&corpus)?;
                Ok((corpus.content_id().0, Data::new(kinds::LABELLED, f.set)))
            },
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct W1000Params {
    #[serde(default = "yes")]
    l2_normalize: bool,
}

fn yes() -> bool {
    true
}

/// The 1000-word MAT packaging.
pub struct NewsgroupsW1000Provider;

impl Provider for NewsgroupsW1000Provider {
    fn name(&self) -> &'static str {
        "20newsgroups-w1000"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "20 Newsgroups, 1000 stemmed-word counts (MAT v5), L2-normalised"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("20newsgroups-w1000")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/newsgroups/w1000.rs",
            "datasets/src/newsgroups/provider.rs",
            "datasets/src/formats/mat.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: W1000Params = typed(self.name(), &own)?;
        let dir = ctx.data_dir.join("20newsgroups");
        let path = dir.join(w1000::FILE_NAME);
        if !path.is_file() {
            return absent(self, ctx, &path, &standin);
        }
        let (p1, p2, l2) = (path.clone(), path.clone(), config.l2_normalize);
        real(
            self,
            ctx,
            std::slice::from_ref(&path),
            &config,
            format!(
                "real 20 Newsgroups 1000-word counts from {}",
                ctx.show(&path)
            ),
            move || {
                let n = NewsgroupsW1000::load(&p1)?;
                Ok((
                    n.content_id().0,
                    Some(Shape::of_labelled(&n.to_labeled_set(l2))),
                ))
            },
            move || {
                let n = NewsgroupsW1000::load(&p2)?;
                Ok((
                    n.content_id().0,
                    Data::new(kinds::LABELLED, n.to_labeled_set(l2)),
                ))
            },
        )
    }
}

/// SYN-20NG through the text pipeline.
pub struct NewsgroupsStandinProvider;

impl Provider for NewsgroupsStandinProvider {
    fn name(&self) -> &'static str {
        "20newsgroups-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded SYN-20NG documents (LORETA spec §10.1) through the same text pipeline (empty documents dropped)"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/newsgroups/standin.rs",
            "datasets/src/newsgroups/provider.rs",
            "datasets/src/pipelines/text.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let mut t = params.as_object().cloned().unwrap_or_default();
        let pipeline: TextPipeline = match t.remove("pipeline") {
            Some(v) => typed(self.name(), &v)?,
            None => TextPipeline::default(),
        };
        let generator: SynNewsgroups = typed(self.name(), &t.into())?;
        #[derive(Serialize)]
        struct Canon<'a> {
            generator: &'a SynNewsgroups,
            pipeline: &'a TextPipeline,
        }
        let note = format!(
            "SYNTHETIC SYN-20NG stand-in: 20 classes x {} documents, {} features",
            generator.docs_per_class, pipeline.features
        );
        let (g, p) = (generator.clone(), pipeline.clone());
        synthetic(
            self,
            &Canon {
                generator: &generator,
                pipeline: &pipeline,
            },
            None,
            note,
            move || {
                let bow = g.generate()?;
                let train = bow.official_train_rows().unwrap_or_default();
                Ok(Data::new(kinds::LABELLED, p.featurize(&bow, &train)?.set))
            },
        )
    }
}
