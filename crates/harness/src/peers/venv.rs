//! The peers' virtual environment: where the scripts and the environment are, and building
//! it from the pinned `requirements.txt` on first use (rebuilt when the requirements change).

use super::protocol::{HELPER, REQUIREMENTS};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Where the peers' scripts and their virtual environment are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEnv {
    /// The directory of the scripts, the helper and `requirements.txt`.
    pub root: PathBuf,
    /// The virtual environment.
    pub venv: PathBuf,
}

/// One environment build at a time in this process (cells run in parallel).
static ENSURE: Mutex<()> = Mutex::new(());

/// The stamp the environment keeps of the requirements it was built from.
const STAMP: &str = "dyad-requirements.sha256";

impl PeerEnv {
    /// The scripts in `$DYAD_PEERS_DIR`, else `peers/` of the current directory (the
    /// workspace root), else `peers/` of the checkout this binary was built from; the
    /// environment in `$DYAD_PEERS_VENV`, else `.venv-peers/` beside the scripts' directory.
    pub fn locate() -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v| cwd.join(v))
        };
        let root = var("DYAD_PEERS_DIR").unwrap_or_else(|| {
            let here = cwd.join("peers");
            if here.join(HELPER).is_file() {
                here
            } else {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
            }
        });
        let root = root.canonicalize().unwrap_or(root);
        let venv = var("DYAD_PEERS_VENV").unwrap_or_else(|| {
            root.parent()
                .map_or_else(|| PathBuf::from(".venv-peers"), |p| p.join(".venv-peers"))
        });
        Self { root, venv }
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        if cfg!(windows) {
            self.venv.join("Scripts").join("python.exe")
        } else {
            self.venv.join("bin").join("python")
        }
    }

    pub fn requirements(&self) -> PathBuf {
        self.root.join(REQUIREMENTS)
    }

    /// Hex sha256 of a file under the scripts' directory.
    pub fn sha256(&self, file: &str) -> Result<String, String> {
        let path = self.root.join(file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(dyad_datasets::identity::hex(&Sha256::digest(&bytes)))
    }

    /// Whether the environment exists and was built from the current requirements.
    pub fn is_ready(&self) -> bool {
        let Ok(want) = self.sha256(REQUIREMENTS) else {
            return false;
        };
        self.python().is_file()
            && std::fs::read_to_string(self.venv.join(STAMP)).is_ok_and(|s| s.trim() == want)
    }

    /// Create (or rebuild, when the requirements changed) the environment; returns its
    /// interpreter. Needs `python3` (or `$DYAD_PEERS_PYTHON`) with the `venv` module, and
    /// PyPI.
    pub fn ensure(&self) -> Result<PathBuf, String> {
        let _one = ENSURE.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_ready() {
            return Ok(self.python());
        }
        let want = self.sha256(REQUIREMENTS)?;
        let base = std::env::var("DYAD_PEERS_PYTHON").unwrap_or_else(|_| "python3".into());
        let fix = "install CPython 3.11 with its venv module (Debian: apt-get install python3 \
                   python3-venv), then run `just peers`";
        eprintln!(
            "creating the Python peers' environment {} from {} (once)",
            self.venv.display(),
            self.requirements().display()
        );
        let venv = run_quiet(
            Command::new(&base)
                .args(["-m", "venv", "--clear"])
                .arg(&self.venv),
        )
        .map_err(|e| match e {
            RunError::Spawn(e) => {
                format!("Python peers need `{base}`, which cannot be run ({e}): {fix}")
            }
            RunError::Failed(tail) => format!(
                "`{base} -m venv {}` failed (is the venv module installed?): {fix}\n{tail}",
                self.venv.display()
            ),
        });
        venv?;
        run_quiet(
            Command::new(self.python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--only-binary=:all:",
                    "-r",
                ])
                .arg(self.requirements()),
        )
        .map_err(|e| {
            let why = match e {
                RunError::Spawn(e) => e.to_string(),
                RunError::Failed(tail) => tail,
            };
            format!(
                "installing {} into {} failed (PyPI must be reachable; then run `just peers`):\n{why}",
                self.requirements().display(),
                self.venv.display()
            )
        })?;
        std::fs::write(self.venv.join(STAMP), format!("{want}\n"))
            .map_err(|e| format!("{}: {e}", self.venv.join(STAMP).display()))?;
        Ok(self.python())
    }
}

enum RunError {
    Spawn(std::io::Error),
    /// The tail of the output of a command that exited non-zero.
    Failed(String),
}

/// Run a command with its output captured; a failure carries the output's tail.
fn run_quiet(cmd: &mut Command) -> Result<(), RunError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(RunError::Spawn)?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(RunError::Failed(format!(
        "({}) {}",
        out.status,
        tail(&text)
    )))
}

/// The last lines of a script's output (at most 20 lines, 4,000 characters).
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let t = lines[lines.len().saturating_sub(20)..].join("\n");
    match t.char_indices().rev().nth(3999) {
        Some((at, _)) => format!("...{}", &t[at..]),
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        let text: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text);
        assert!(t.starts_with("line 10") && t.ends_with("line 29"), "{t}");
        assert_eq!(tail("a\nb\n"), "a\nb");
    }
}
