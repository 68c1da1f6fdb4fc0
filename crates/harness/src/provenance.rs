//! Where a result came from: the git commit of the workspace and the dyad version.

use std::sync::OnceLock;

/// The dyad version (the workspace version).
pub const DYAD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `git rev-parse HEAD` of the current directory, with `+dirty` when tracked files differ
/// from it; `"unknown"` outside a git checkout.
pub fn git_commit() -> &'static str {
    static COMMIT: OnceLock<String> = OnceLock::new();
    COMMIT.get_or_init(|| {
        let run = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        match run(&["rev-parse", "HEAD"]) {
            Some(c) if !c.is_empty() => {
                let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty());
                if dirty { format!("{c}+dirty") } else { c }
            }
            _ => "unknown".to_string(),
        }
    })
}
