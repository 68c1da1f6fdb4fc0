//! The `prostate` and `prostate-standin` providers: the Singh et al. (2002) expression data
//! (genes x samples) from `$DYAD_DATA_DIR/prostate/`: the Kent Ridge files (both parts), else
//! the Broad release (the 102 training samples only); absent, the seeded planted-factor
//! stand-in of Givens spec §10, whose planted factors travel with the data as its truth.

use super::{Prostate, locate, locate_broad, read_broad};
use crate::DataError;
use crate::expression::ExpressionSet;
use crate::expression::planted::ProstateStandin;
use crate::provider::{
    Data, DataContext, Presence, Provider, Resolved, Shape, absent, kinds, param_err, real,
    split_standin, synthetic, tree_content_id, typed,
};
use crate::registry::DatasetInfo;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Part {
    Train,
    Test,
    Both,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProstateParams {
    /// Which file: the 102-sample training file the Givens experiments use (default), the
    /// 34-sample test file (on a ~12x larger scale), or both (grouped `train`/`test`).
    #[serde(default = "train")]
    part: Part,
}

fn train() -> Part {
    Part::Train
}

fn shape_of(set: &ExpressionSet) -> Shape {
    Shape {
        rows: set.n_samples(),
        dim: set.n_genes(),
        ..Shape::default()
    }
}

/// Real prostate data.
pub struct ProstateProvider;

impl Provider for ProstateProvider {
    fn name(&self) -> &'static str {
        "prostate"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "prostate tumour vs normal expression, Singh et al. 2002 (Kent Ridge CSV or Broad RES/GCT + CLS), genes x samples"
    }
    fn kind(&self) -> &'static str {
        kinds::EXPRESSION
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        crate::registry::dataset("prostate")
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/prostate/",
            "datasets/src/formats/gct.rs",
            "datasets/src/formats/expr_text.rs",
            "datasets/src/expression/mod.rs",
        ]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        let (own, standin) = split_standin(self.name(), params)?;
        let config: ProstateParams = typed(self.name(), &own)?;
        let dir = ctx.data_dir.join("prostate");
        if let Presence::Complete(files) = locate(&dir)? {
            let (d1, d2, part) = (dir.clone(), dir.clone(), config.part);
            let pick = move |p: &Prostate| match part {
                Part::Train => p.train.clone(),
                Part::Test => p.test.clone(),
                Part::Both => p.combined(),
            };
            return real(
                self,
                ctx,
                &files,
                &config,
                format!(
                    "real Singh 2002 prostate expression (Kent Ridge) from {}",
                    ctx.show(&dir)
                ),
                move || {
                    let p = Prostate::load(&d1)?;
                    Ok((p.content_id().0, Some(shape_of(&pick(&p)))))
                },
                move || {
                    let p = Prostate::load(&d2)?;
                    let set = pick(&p);
                    Ok((p.content_id().0, Data::new(kinds::EXPRESSION, set)))
                },
            );
        }
        match locate_broad(&dir)? {
            Presence::Complete(files) => {
                if config.part != Part::Train {
                    return Err(param_err(
                        self.name(),
                        "the Broad release holds only the 102 training samples: `part` must be \"train\"",
                    ));
                }
                let (f1, f2) = (files.clone(), files.clone());
                let identify = move |f: &[std::path::PathBuf]| -> Result<String, DataError> {
                    let mut h = crate::ContentHasher::new("prostate-broad/v1");
                    for p in f {
                        h.str(&tree_content_id(p)?);
                    }
                    Ok(h.finish().0)
                };
                real(
                    self,
                    ctx,
                    &files,
                    &config,
                    format!(
                        "real Singh 2002 prostate expression (Broad release, training samples) from {}",
                        ctx.show(&dir)
                    ),
                    move || {
                        let set = read_broad(&f1[0], &f1[1])?;
                        Ok((identify(&f1)?, Some(shape_of(&set))))
                    },
                    move || {
                        let set = read_broad(&f2[0], &f2[1])?;
                        Ok((identify(&f2)?, Data::new(kinds::EXPRESSION, set)))
                    },
                )
            }
            Presence::Absent => absent(self, ctx, &dir, &standin),
        }
    }
}

/// The prostate-like planted-factor stand-in.
pub struct ProstateStandinProvider;

impl Provider for ProstateStandinProvider {
    fn name(&self) -> &'static str {
        "prostate-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded prostate-like expression: sparse planted factors, 52/50 groups (Givens spec §10)"
    }
    fn kind(&self) -> &'static str {
        kinds::EXPRESSION
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "datasets/src/expression/planted.rs",
            "datasets/src/expression/mod.rs",
            "datasets/src/prostate/provider.rs",
        ]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let config: ProstateStandin = typed(self.name(), params)?;
        let note = format!(
            "SYNTHETIC prostate-like expression: {} genes x {} + {} samples",
            config.genes, config.tumor, config.normal
        );
        let shape = Shape {
            rows: config.tumor + config.normal,
            dim: config.genes,
            ..Shape::default()
        };
        let c = config.clone();
        synthetic(self, &config, Some(shape), note, move || {
            let p = c.generate()?;
            Ok(Data::new(kinds::EXPRESSION, p.data).with_truth(p.truth))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expression::planted::Planted;

    #[test]
    fn the_standin_keeps_its_planted_truth_and_its_shape() {
        let ctx = DataContext::new("/nonexistent".into(), std::env::temp_dir());
        let r = ProstateProvider
            .resolve(
                &ctx,
                &serde_json::json!({"standin": {"genes": 60, "tumor": 5, "normal": 4}}),
            )
            .unwrap();
        assert!(r.synthetic && r.note.starts_with("SYNTHETIC stand-in for prostate"));
        let data = (r.loader)().unwrap();
        let set = data.get::<ExpressionSet>().unwrap();
        assert_eq!(r.shape, Some(shape_of(set)));
        assert!(!data.truth::<Planted>().unwrap().loadings.is_empty());
    }

    #[test]
    fn the_broad_release_is_read_as_the_training_part() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("prostate");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("prostate.gct"),
            "#1.2\n2\t3\nName\tDescription\ts1\ts2\ts3\ng1\tx\t1\t2\t3\ng2\ty\t4\t5\t6\n",
        )
        .unwrap();
        std::fs::write(d.join("prostate.cls"), "3 2 1\n# Tumor Normal\n0 1 0\n").unwrap();
        let ctx = DataContext::new(dir.path().to_path_buf(), dir.path().join("cache"));
        let r = ProstateProvider
            .resolve(&ctx, &serde_json::json!({}))
            .unwrap();
        assert!(!r.synthetic && r.note.contains("Broad"), "{}", r.note);
        let data = (r.loader)().unwrap();
        let set = data.get::<ExpressionSet>().unwrap();
        assert_eq!((set.n_genes(), set.n_samples()), (2, 3));
        let e = ProstateProvider
            .resolve(&ctx, &serde_json::json!({"part": "test"}))
            .unwrap_err();
        assert!(
            e.to_string().contains("only the 102 training samples"),
            "{e}"
        );
        // One file of the Kent Ridge pair is an error, not the Broad release or a stand-in.
        std::fs::write(d.join("prostate_TumorVSNormal_train.data"), "x").unwrap();
        assert!(matches!(
            ProstateProvider.resolve(&ctx, &serde_json::json!({})),
            Err(DataError::Incomplete { .. })
        ));
    }
}
