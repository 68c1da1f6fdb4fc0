//! Where a result came from: the git commit of the workspace and the dyad version.

/// The dyad version (the workspace version).
pub const DYAD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the running binary was built from (`git rev-parse HEAD` at build time), with
/// `+dirty` when its source (`crates/`, `Cargo.toml`, `Cargo.lock`) differed from that commit;
/// `"unknown"` when built outside a git checkout. Set by `build.rs`: cells record the code
/// that computed them, whatever the working tree holds by the time they are stored.
pub fn git_commit() -> &'static str {
    env!("DYAD_GIT_COMMIT")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_commit_is_a_full_hash_or_unknown() {
        let c = super::git_commit();
        let hash = c.strip_suffix("+dirty").unwrap_or(c);
        assert!(
            c == "unknown" || (hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit())),
            "{c}"
        );
    }
}
