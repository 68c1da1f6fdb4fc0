//! SIGINT and SIGTERM while cells are computed. Finished cells are already safe (each is
//! stored atomically when it ends); what an interrupt would leave behind is the claims of the
//! cells in progress, which another run then waits on until their heartbeat goes stale
//! ([`super::cache::STALE_AFTER`]). So on either signal the runs of this process release their
//! claims, say what finished and what did not, and the process exits with `128 + signal` as a
//! shell expects.
//!
//! The handler is installed by the first run of a process ([`watch`]) and stays: outside a run
//! it only ends the process with the same status, as the default action would.
//!
//! A cell that runs a child process (a Python peer) runs it through [`run_child`]: on either
//! signal the child is killed and its scratch directory removed, so that nothing goes on
//! computing, or stays on disk, for a run that has ended. (A terminal's Ctrl-C reaches the
//! child too; a `kill` of dyad's pid, or a batch system's, reaches dyad alone.)

use super::cache::Claims;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

struct Active {
    id: u64,
    claims: Claims,
    computed: Arc<AtomicUsize>,
    pending: usize,
}

static ACTIVE: Mutex<Vec<Active>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
static CHILDREN: Mutex<Vec<Running>> = Mutex::new(Vec::new());

/// A child process of [`run_child`] and the directory it works in.
struct Running {
    id: u64,
    child: Arc<Mutex<Child>>,
    scratch: PathBuf,
}

/// A run being watched; dropping it ends the watch.
#[must_use = "the run is watched until this is dropped"]
pub struct Watch {
    id: u64,
}

impl Drop for Watch {
    fn drop(&mut self) {
        lock().retain(|a| a.id != self.id);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Active>> {
    ACTIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Watch a run that holds `claims` and counts the cells it computed in `computed`, of
/// `pending` to compute. `Err` (the run goes on, unwatched) when no handler can be installed.
pub fn watch(claims: &Claims, computed: Arc<AtomicUsize>, pending: usize) -> Result<Watch, String> {
    INSTALLED.get_or_init(install).clone()?;
    let id = NEXT.fetch_add(1, Ordering::SeqCst);
    lock().push(Active {
        id,
        claims: claims.clone(),
        computed,
        pending,
    });
    Ok(Watch { id })
}

/// Run `cmd` to its end, as [`Command::status`] does, killing it (and removing `scratch`, the
/// directory it works in) if this process is interrupted meanwhile (module docs).
pub fn run_child(cmd: &mut Command, scratch: &Path) -> std::io::Result<ExitStatus> {
    // Without a handler the default action ends dyad alone; the child is still run.
    let _ = INSTALLED.get_or_init(install);
    let child = Arc::new(Mutex::new(cmd.spawn()?));
    let id = NEXT.fetch_add(1, Ordering::SeqCst);
    children().push(Running {
        id,
        child: child.clone(),
        scratch: scratch.to_path_buf(),
    });
    let status = loop {
        // Polled, so that the handler can take the lock and kill the child meanwhile.
        let done = child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_wait();
        match done {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e),
        }
    };
    children().retain(|r| r.id != id);
    status
}

fn children() -> std::sync::MutexGuard<'static, Vec<Running>> {
    CHILDREN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kill the children of [`run_child`] and remove their scratch directories; how many.
fn end_children() -> usize {
    let children = children();
    for r in children.iter() {
        let mut child = r
            .child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&r.scratch);
    }
    children.len()
}

fn install() -> Result<(), String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("installing the SIGINT/SIGTERM handler: {e}"))?;
    std::thread::Builder::new()
        .name("dyad-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                eprintln!("{}", interrupted(sig));
                std::process::exit(128 + sig);
            }
        })
        .map_err(|e| format!("starting the signal thread: {e}"))?;
    Ok(())
}

/// Release the claims of every watched run and say what finished (the message printed on
/// `sig`).
fn interrupted(sig: i32) -> String {
    let name = match sig {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "a signal",
    };
    let killed = end_children();
    let runs = lock();
    let mut out = format!("\ndyad: interrupted by {name}");
    if killed > 0 {
        out.push_str(&format!(
            " (ended {killed} child process{} of its cells)",
            if killed == 1 { "" } else { "es" }
        ));
    }
    if runs.is_empty() {
        return out;
    }
    let (mut done, mut pending, mut released) = (0, 0, 0);
    for r in runs.iter() {
        done += r.computed.load(Ordering::SeqCst);
        pending += r.pending;
        released += r.claims.release_all();
    }
    out.push_str(&format!(
        ": {done} of {pending} cells were computed by this run and are kept in the cache; \
         {released} in progress were abandoned (their claims released, so another run can \
         take them) and {} were not started. Run the same command again to go on: it computes \
         only what is missing (a `--recompute` run: every cell it asks for, again; the cells it \
         had not reached are still cached as they were).",
        pending.saturating_sub(done + released)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_counts_what_finished_and_the_claims_are_released() {
        let dir = tempfile::tempdir().unwrap();
        let cache = super::super::cache::Cache::new(dir.path());
        let claims = Claims::default();
        let key = "ab".repeat(32);
        let guard = match cache.claim(&key, &claims).unwrap() {
            super::super::cache::Claim::Mine(g) => g,
            other => panic!("{other:?}"),
        };
        let computed = Arc::new(AtomicUsize::new(3));
        let w = watch(&claims, computed, 10).unwrap();
        let msg = interrupted(signal_hook::consts::SIGTERM);
        assert!(
            msg.contains("interrupted by SIGTERM: 3 of 10 cells were computed")
                && msg.contains("1 in progress were abandoned")
                && msg.contains("6 were not started"),
            "{msg}"
        );
        // The claim's lock file is gone: another run may take the cell at once.
        assert!(matches!(
            cache.claim(&key, &Claims::default()).unwrap(),
            super::super::cache::Claim::Mine(_)
        ));
        drop((w, guard));
        assert!(!interrupted(signal_hook::consts::SIGINT).contains("cells were computed"));
    }
}
