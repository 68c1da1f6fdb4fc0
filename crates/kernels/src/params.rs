//! Checked hyper-parameters, in the manner of linfa's `ParamGuard`: every learner's
//! configuration can be [`Checked::check`]ed on its own, before any data is read, and a bad
//! value is a [`ParamError`] naming the parameter, so the harness can point at the line of the
//! spec that set it.

/// A hyper-parameter outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{param}` {message}")]
pub struct ParamError {
    /// The parameter's name as written in a spec (a dotted path for nested ones, e.g.
    /// `psd.every`).
    pub param: String,
    /// What is wrong, including the value given.
    pub message: String,
}

impl ParamError {
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            param: param.into(),
            message: message.into(),
        }
    }

    /// The same error for a parameter of a nested table: `param` becomes `prefix.param`
    /// (a sub-configuration checks its own fields; its owner names where it sits).
    pub fn under(mut self, prefix: &str) -> Self {
        self.param = if self.param.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{}", self.param)
        };
        self
    }
}

/// A configuration whose values can be checked without data.
pub trait Checked {
    /// `Ok` when every parameter lies in its domain; otherwise the first one that does not.
    fn check(&self) -> Result<(), ParamError>;
}

/// `v > 0` and finite.
pub fn positive(param: &str, v: f64) -> Result<(), ParamError> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must be positive and finite, got {v}"),
        ))
    }
}

/// `v >= 0` and finite.
pub fn non_negative(param: &str, v: f64) -> Result<(), ParamError> {
    if v >= 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must be >= 0 and finite, got {v}"),
        ))
    }
}

/// `lo < v < hi`.
pub fn open_interval(param: &str, v: f64, lo: f64, hi: f64) -> Result<(), ParamError> {
    if v > lo && v < hi {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must lie in ({lo}, {hi}), got {v}"),
        ))
    }
}

/// `v >= lo` and finite.
pub fn at_least(param: &str, v: f64, lo: f64) -> Result<(), ParamError> {
    if v >= lo && v.is_finite() {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must be >= {lo} and finite, got {v}"),
        ))
    }
}

/// `lo < v <= hi`.
pub fn half_open_interval(param: &str, v: f64, lo: f64, hi: f64) -> Result<(), ParamError> {
    if v > lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must lie in ({lo}, {hi}], got {v}"),
        ))
    }
}

/// An integer count `>= 1`.
pub fn at_least_one(param: &str, v: u64) -> Result<(), ParamError> {
    if v >= 1 {
        Ok(())
    } else {
        Err(ParamError::new(param, "must be at least 1, got 0"))
    }
}

/// An integer count `>= lo`.
pub fn count_at_least(param: &str, v: u64, lo: u64) -> Result<(), ParamError> {
    if v >= lo {
        Ok(())
    } else {
        Err(ParamError::new(
            param,
            format!("must be at least {lo}, got {v}"),
        ))
    }
}

/// An optional value, checked by `f` when given.
pub fn if_given<T: Copy>(
    v: Option<T>,
    f: impl FnOnce(T) -> Result<(), ParamError>,
) -> Result<(), ParamError> {
    v.map_or(Ok(()), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_reject_what_they_should() {
        assert!(positive("c", 0.1).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = positive("c", bad).unwrap_err();
            assert_eq!(e.param, "c");
            assert!(e.to_string().starts_with("`c` must be positive"), "{e}");
        }
        assert!(non_negative("tol", 0.0).is_ok() && non_negative("tol", -1e-9).is_err());
        assert!(open_interval("a", 0.5, 0.0, 1.0).is_ok());
        assert!(open_interval("a", 1.0, 0.0, 1.0).is_err());
        assert!(open_interval("a", f64::NAN, 0.0, 1.0).is_err());
        assert!(at_least("g", 1.0, 1.0).is_ok() && at_least("g", 0.99, 1.0).is_err());
        assert!(at_least_one("n", 1).is_ok() && at_least_one("n", 0).is_err());
        assert!(half_open_interval("f", 1.0, 0.0, 1.0).is_ok());
        assert!(half_open_interval("f", 0.0, 0.0, 1.0).is_err());
        assert!(half_open_interval("f", f64::NAN, 0.0, 1.0).is_err());
        assert!(count_at_least("k", 2, 2).is_ok());
        assert_eq!(count_at_least("k", 1, 2).unwrap_err().param, "k");
        assert!(if_given(None, |v| positive("t0", v)).is_ok());
        assert_eq!(
            if_given(Some(0.0), |v| positive("t0", v))
                .unwrap_err()
                .param,
            "t0"
        );
        let e = positive("every", 0.0).unwrap_err().under("psd");
        assert_eq!(e.param, "psd.every");
        assert_eq!(
            e.to_string(),
            "`psd.every` must be positive and finite, got 0"
        );
    }
}
