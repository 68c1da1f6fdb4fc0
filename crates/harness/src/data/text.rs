//! Text data: 20 Newsgroups through the LORETA §5.1 pipeline (real, or SYN-20NG), and the
//! 1000-word MAT release.

use super::{Data, DataContext, Resolved, real, split_standin, synthetic, typed};
use dyad_datasets::DataError;
use dyad_datasets::formats::newsgroups::NewsCorpus;
use dyad_datasets::newsgroups_mat::{self, NewsgroupsW1000};
use dyad_datasets::pipelines::text::TextPipeline;
use dyad_datasets::synthetic::newsgroups::SynNewsgroups;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewsParams {
    /// The text pipeline (defaults: the spec's choices), fitted on the official training part.
    #[serde(default)]
    pipeline: TextPipeline,
}

/// The files of the by-date release that are present: the tarball, else the two folders.
pub(super) fn newsgroups_files_in(dir: &std::path::Path) -> Vec<PathBuf> {
    use dyad_datasets::formats::newsgroups::{ARCHIVE_NAMES, TEST_DIR, TRAIN_DIR};
    if let Some(t) = ARCHIVE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
    {
        return vec![t];
    }
    let folders = [dir.join(TRAIN_DIR), dir.join(TEST_DIR)];
    if folders.iter().all(|p| p.is_dir()) {
        folders.to_vec()
    } else {
        Vec::new()
    }
}

pub(super) fn newsgroups(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("20newsgroups", params)?;
    let config: NewsParams = typed("20newsgroups", own)?;
    let dir = ctx.data_dir.join("20newsgroups");
    let files = newsgroups_files_in(&dir);
    if files.is_empty() {
        let mut t = standin;
        t.insert(
            "pipeline".into(),
            toml::Value::try_from(&config.pipeline)
                .map_err(|e| super::param_err("20newsgroups", e))?,
        );
        let mut r = newsgroups_standin(ctx, &t)?;
        r.note = format!(
            "SYNTHETIC stand-in for 20 Newsgroups (20news-bydate not found in {})",
            dir.display()
        );
        return Ok(r);
    }
    let (d1, d2, pipeline) = (dir.clone(), dir.clone(), config.pipeline.clone());
    real(
        ctx,
        "20newsgroups",
        &files,
        &config,
        format!(
            "real 20 Newsgroups (by-date) from {}, text pipeline",
            dir.display()
        ),
        move || Ok(NewsCorpus::load(&d1)?.content_id().0),
        move || {
            let corpus = NewsCorpus::load(&d2)?;
            let f = pipeline.run(&corpus)?;
            Ok((corpus.content_id().0, Data::Labeled(f.set)))
        },
    )
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct W1000Params {
    #[serde(default = "super::yes")]
    l2_normalize: bool,
}

pub(super) fn newsgroups_w1000(
    ctx: &DataContext,
    params: &toml::Table,
) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("20newsgroups-w1000", params)?;
    let config: W1000Params = typed("20newsgroups-w1000", own)?;
    let dir = ctx.data_dir.join("20newsgroups");
    let path = match newsgroups_mat::locate(&dir) {
        Ok(p) => p,
        Err(DataError::Missing { .. }) => {
            let mut r = newsgroups_standin(ctx, &standin)?;
            r.note = format!(
                "SYNTHETIC stand-in for 20 Newsgroups (20news_w1000.mat not found in {})",
                dir.display()
            );
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    let (p1, p2, l2) = (path.clone(), path.clone(), config.l2_normalize);
    real(
        ctx,
        "20newsgroups-w1000",
        std::slice::from_ref(&path),
        &config,
        format!(
            "real 20 Newsgroups 1000-word counts from {}",
            path.display()
        ),
        move || Ok(NewsgroupsW1000::load(&p1)?.content_id().0),
        move || {
            let n = NewsgroupsW1000::load(&p2)?;
            Ok((n.content_id().0, Data::Labeled(n.to_labeled_set(l2))))
        },
    )
}

pub(super) fn newsgroups_standin(
    _: &DataContext,
    params: &toml::Table,
) -> Result<Resolved, DataError> {
    let mut t = params.clone();
    let pipeline: TextPipeline = match t.remove("pipeline") {
        Some(v) => typed(
            "20newsgroups-standin",
            v.as_table().cloned().unwrap_or_default(),
        )?,
        None => TextPipeline::default(),
    };
    let generator: SynNewsgroups = typed("20newsgroups-standin", t)?;
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
        "20newsgroups-standin",
        &Canon {
            generator: &generator,
            pipeline: &pipeline,
        },
        note,
        move || {
            let bow = g.generate()?;
            let train = bow.official_train_rows().unwrap_or_default();
            Ok(Data::Labeled(p.featurize(&bow, &train)?.set))
        },
    )
}
