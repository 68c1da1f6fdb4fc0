//! Profiles: `quick` (CI-sized) and `paper` (the paper's sizes), and values that differ by
//! profile, written in a spec as `{ quick = .., paper = .. }`.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// Which sizes an experiment runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Quick,
    Paper,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Quick, Profile::Paper];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Paper => "paper",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "quick" => Ok(Profile::Quick),
            "paper" => Ok(Profile::Paper),
            _ => Err(format!(
                "unknown profile `{s}` (expected `quick` or `paper`)"
            )),
        }
    }
}

/// A value that is either the same for every profile or given per profile as
/// `{ quick = .., paper = .. }` (both keys required).
#[derive(Debug, Clone, PartialEq)]
pub enum PerProfile<T> {
    Same(T),
    Split { quick: T, paper: T },
}

impl<T> PerProfile<T> {
    pub fn at(&self, p: Profile) -> &T {
        match (self, p) {
            (PerProfile::Same(v), _) => v,
            (PerProfile::Split { quick, .. }, Profile::Quick) => quick,
            (PerProfile::Split { paper, .. }, Profile::Paper) => paper,
        }
    }
}

impl<T: Default> Default for PerProfile<T> {
    fn default() -> Self {
        PerProfile::Same(T::default())
    }
}

/// Whether a TOML value is written in the per-profile form.
pub fn is_split(v: &toml::Value) -> bool {
    match v {
        toml::Value::Table(t) => !t.is_empty() && t.keys().all(|k| k == "quick" || k == "paper"),
        _ => false,
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for PerProfile<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = toml::Value::deserialize(d)?;
        let conv = |v: toml::Value, which: &str| {
            T::deserialize(v).map_err(|e| {
                let e = e.to_string();
                let e = e.trim();
                D::Error::custom(if which.is_empty() {
                    e.to_string()
                } else {
                    format!("in `{which}`: {e}")
                })
            })
        };
        if is_split(&v) {
            let toml::Value::Table(mut t) = v else {
                unreachable!()
            };
            let (Some(q), Some(p)) = (t.remove("quick"), t.remove("paper")) else {
                return Err(D::Error::custom(
                    "a per-profile value needs both `quick` and `paper`",
                ));
            };
            return Ok(PerProfile::Split {
                quick: conv(q, "quick")?,
                paper: conv(p, "paper")?,
            });
        }
        Ok(PerProfile::Same(conv(v, "")?))
    }
}

/// Resolve every per-profile value inside a free-form TOML value (solver and data-set
/// parameters).
pub fn resolve_value(v: &toml::Value, p: Profile) -> toml::Value {
    match v {
        toml::Value::Table(t) if is_split(v) => {
            let chosen = t
                .get(p.as_str())
                .cloned()
                .unwrap_or(toml::Value::Table(t.clone()));
            resolve_value(&chosen, p)
        }
        toml::Value::Table(t) => toml::Value::Table(
            t.iter()
                .map(|(k, v)| (k.clone(), resolve_value(v, p)))
                .collect(),
        ),
        toml::Value::Array(a) => {
            toml::Value::Array(a.iter().map(|v| resolve_value(v, p)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct S {
        n: PerProfile<u32>,
        m: PerProfile<Vec<u32>>,
    }

    #[test]
    fn same_and_split_values() {
        let s: S = toml::from_str("n = { quick = 2, paper = 5 }\nm = [1, 2]").unwrap();
        assert_eq!(*s.n.at(Profile::Quick), 2);
        assert_eq!(*s.n.at(Profile::Paper), 5);
        assert_eq!(s.m.at(Profile::Quick), &vec![1, 2]);
        let e = toml::from_str::<S>("n = { quick = 2 }\nm = []")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("both `quick` and `paper`") && e.contains("line 1"),
            "{e}"
        );
        let e = toml::from_str::<S>("n = { quick = \"x\", paper = 1 }\nm = []")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("in `quick`"), "{e}");
    }

    #[test]
    fn free_form_values_resolve_recursively() {
        let v: toml::Value = toml::from_str(
            "a = { quick = 1, paper = 2 }\nb = { c = { quick = [1], paper = [2, 3] } }",
        )
        .unwrap();
        let r = resolve_value(&v, Profile::Paper);
        assert_eq!(r["a"].as_integer(), Some(2));
        assert_eq!(r["b"]["c"].as_array().unwrap().len(), 2);
    }
}
