//! The `funcish-lr` solver (FuncISH §2.6, §2.12): one L2-regularised logistic regression per
//! GO category with nested cross-validation ([`NestedCvConfig`], from `dyad-funcish`), and
//! the visual variant of the supplement it runs on (`words`, `pyramid`), which the
//! gene-function task reads from the solver's canonical parameters.
//!
//! It lives in the harness, beside the registry that lists it, rather than in `dyad-funcish`:
//! its `pyramid` is a data pipeline's configuration ([`PyramidConfig`], `dyad-datasets`), and
//! the algorithm crates know nothing of the data sets. Nor does it live in the task's module:
//! the registry would then import a task, which imports the registry.

use dyad_core::{Observer, Schedule};
use dyad_datasets::pipelines::bow::PyramidConfig;
use dyad_funcish::classify::{CategoryClassifier, CategoryData, NestedCvConfig, NestedCvResult};
use dyad_kernels::Checked;
use serde::{Deserialize, Serialize};

/// Parameters of the `funcish-lr` solver: the nested cross-validation of §2.6 (every key of
/// [`NestedCvConfig`]) and, optionally, the visual variant of the supplement that replaces
/// the protocol's (§2.12): `words` per scale (Figs. S3, S4, Table S1: K = 100 … 1000) and a
/// spatial `pyramid` (Fig. S7). A variant is a method of its own in the paper's figures, so
/// it is a solver parameter: a `grid` over `words` draws Fig. S3 as a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct FuncIshLr {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pyramid: Option<PyramidConfig>,
    #[serde(flatten)]
    pub cv: NestedCvConfig,
}

impl<'de> Deserialize<'de> for FuncIshLr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = toml::Table::deserialize(d)?;
        let words = t
            .remove("words")
            .map(|v| v.try_into::<usize>())
            .transpose()
            .map_err(|e| D::Error::custom(format!("words: {}", e.to_string().trim())))?;
        let pyramid = t
            .remove("pyramid")
            .map(|v| v.try_into::<PyramidConfig>())
            .transpose()
            .map_err(|e| D::Error::custom(format!("pyramid: {}", e.to_string().trim())))?;
        let cv = NestedCvConfig::deserialize(toml::Value::Table(t))
            .map_err(|e| D::Error::custom(e.to_string().trim().to_string()))?;
        Ok(FuncIshLr { words, pyramid, cv })
    }
}

impl Checked for FuncIshLr {
    fn check(&self) -> Result<(), dyad_kernels::ParamError> {
        use dyad_kernels::ParamError;
        if let Some(k) = self.words
            && k < 2
        {
            return Err(ParamError::new(
                "words",
                format!("a dictionary needs at least 2 words per scale, got {k}"),
            ));
        }
        if let Some(p) = &self.pyramid {
            p.validate()
                .map_err(|e| ParamError::new("pyramid", e.to_string()))?;
        }
        self.cv.check()
    }
}

impl CategoryClassifier for FuncIshLr {
    fn fit(
        &self,
        input: &CategoryData<'_>,
        schedule: &Schedule,
        rng: &mut dyad_core::Rng,
        obs: &mut dyn Observer<NestedCvResult>,
    ) -> Result<(), dyad_kernels::AlgoError> {
        self.cv.fit(input, schedule, rng, obs)
    }

    fn is_iterative(&self) -> bool {
        false
    }

    fn cross_validation(&self) -> Option<&NestedCvConfig> {
        Some(&self.cv)
    }
}
