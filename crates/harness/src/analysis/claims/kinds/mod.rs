//! The claim kinds a spec's `[[claims]]` may name (`kind = "..."`). A new kind is a file
//! here declaring its [`super::ClaimKind`] entry and one line in [`CLAIM_KINDS`].

mod compare;
mod correlated;
mod near;
mod peak_within;
mod quantity;
mod slope_within;
mod value_within;

use super::ClaimKind;

/// Every claim kind, by the name specs write.
pub static CLAIM_KINDS: &[&ClaimKind] = &[
    &compare::GREATER,
    &compare::BETTER,
    &compare::CLOSE,
    &correlated::CORRELATED,
    &near::NEAR,
    &quantity::FACTOR,
    &quantity::DIFFERENCE,
    &peak_within::PEAK_WITHIN,
    &slope_within::SLOPE_WITHIN,
    &value_within::VALUE_WITHIN,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for k in CLAIM_KINDS {
            assert!(names.insert(k.name), "two claim kinds named {}", k.name);
        }
    }
}
