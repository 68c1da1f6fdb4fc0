//! `dyad reproduce --executor slurm` on a real Slurm cluster (`just slurm-up` starts a
//! one-node one): the OASIS quick profile (or `$DYAD_SLURM_TARGETS`) is submitted as a job
//! array, one running task is cancelled, the jobs drain, `dyad status` shows what is missing,
//! a resubmission (`dyad run --executor slurm`) computes exactly that, and the tables equal a
//! local run's apart from timings (the local run's tables are `$DYAD_SLURM_COMPARE_WITH` when
//! set — CI points it at the quick profile `just check` has just computed — else the test
//! runs it).
//!
//! It takes as long as the profile it submits (minutes), so it runs only when asked:
//! `DYAD_SLURM_TEST=1` or `DYAD_REQUIRE_SLURM=1` (`just slurm-test`; CI). Without a cluster
//! it prints why and passes, unless `DYAD_REQUIRE_SLURM=1`.

use dyad_harness::engine::cluster::Queue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const DYAD: &str = env!("CARGO_BIN_EXE_dyad");

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Wait (up to two minutes) for the node to have a free CPU. A node `allocated` to jobs that
/// are not this test's would make the killed-task step wait on them; the message then lists
/// the queue (`just slurm-up` starts a controller with an empty one).
fn cluster_up() -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        let out = Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .output()
            .map_err(|e| format!("sinfo: {e} (no Slurm client; `just slurm-up`)"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success()
            && text
                .lines()
                .any(|l| l.contains("idle") || l.contains("mixed"))
        {
            return Ok(());
        }
        if !out.status.success() || t0.elapsed() > Duration::from_secs(120) {
            let queue = Command::new("squeue")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            return Err(format!(
                "no idle Slurm node after {:?} (`just slurm-up`): {}{}\nqueue:\n{queue}",
                t0.elapsed(),
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn dyad(results: &Path, args: &[&str]) -> std::process::Output {
    Command::new(DYAD)
        .current_dir(workspace_root())
        .arg("--results")
        .arg(results)
        .args(args)
        .output()
        .expect("runs dyad")
}

/// The submission's jobs still in Slurm's queue, as `cluster::Queue` reads them.
fn queued(jobs: &[String]) -> Queue {
    Queue::ask(jobs).expect("squeue")
}

fn is_empty(q: &Queue) -> bool {
    q.tasks.is_empty() && q.jobs.is_empty()
}

/// Submit with `command` (`reproduce` or `run`), returning the manifest and the (array,
/// report) job ids.
fn submit(results: &Path, command: &str, targets: &[String]) -> (PathBuf, Vec<String>) {
    let mut args = vec![command];
    args.extend(targets.iter().map(String::as_str));
    args.extend([
        "--profile",
        "quick",
        "--executor",
        "slurm",
        "--array-limit",
        "2",
    ]);
    let out = dyad(results, &args);
    assert!(
        out.status.success(),
        "submission failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let jobs = std::fs::read_to_string(manifest.with_file_name("jobs")).unwrap();
    (manifest, jobs.lines().map(String::from).collect())
}

fn wait_gone(jobs: &[String], limit: Duration) {
    let t0 = Instant::now();
    while !is_empty(&queued(jobs)) {
        assert!(
            t0.elapsed() < limit,
            "jobs {jobs:?} still queued after {limit:?}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn manifest_cells(path: &Path) -> usize {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["cells"].as_array().unwrap().len()
}

/// Split one CSV line (RFC 4180 quoting).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A tidy table without what depends on the clock or the build: rows keyed by everything
/// but timings, provenance and timing metrics.
fn comparable(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head = fields(lines.next().unwrap());
    let col = |name: &str| head.iter().position(|h| h == name);
    let skip: Vec<usize> = head
        .iter()
        .enumerate()
        .filter(|(_, h)| h.contains("seconds") || *h == "git_commit" || *h == "dyad_version")
        .map(|(i, _)| i)
        .collect();
    let (metric, value) = (col("metric").unwrap(), col("value").unwrap());
    let timing = |m: &str| {
        ["second", "per_step", "time", "speed"]
            .iter()
            .any(|t| m.contains(t))
    };
    let mut rows = BTreeMap::new();
    for l in lines {
        let f = fields(l);
        if timing(&f[metric]) {
            continue;
        }
        let key: Vec<&str> = f
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != value && !skip.contains(i))
            .map(|(_, v)| v.as_str())
            .collect();
        rows.insert(key.join("|"), f[value].clone());
    }
    rows
}

#[test]
fn oasis_quick_profile_as_a_job_array_survives_a_killed_task() {
    let required = std::env::var("DYAD_REQUIRE_SLURM").is_ok_and(|v| v == "1");
    if !required && std::env::var("DYAD_SLURM_TEST").as_deref() != Ok("1") {
        eprintln!("SKIPPED: the Slurm test runs with DYAD_SLURM_TEST=1 (`just slurm-test`)");
        return;
    }
    if let Err(why) = cluster_up() {
        if required {
            panic!("DYAD_REQUIRE_SLURM=1 but {why}");
        }
        eprintln!("SKIPPED: {why}");
        return;
    }
    let targets: Vec<String> = std::env::var("DYAD_SLURM_TARGETS")
        .unwrap_or_else(|_| "oasis".into())
        .split_whitespace()
        .map(String::from)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let limit = Duration::from_secs(30 * 60);

    // 1. Submit; cancel the first task seen running.
    let (manifest, jobs) = submit(&results, "reproduce", &targets);
    let n = manifest_cells(&manifest);
    assert!(n > 1, "{n} cells to compute");
    let t0 = Instant::now();
    let killed = loop {
        let q = queued(&jobs[..1]);
        if let Some((i, _)) = q.tasks.iter().find(|(_, st)| *st == "RUNNING") {
            break Some(format!("{}_{i}", jobs[0]));
        }
        if is_empty(&q) || t0.elapsed() > limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let killed = killed.expect("an array task was seen running");
    assert!(
        Command::new("scancel")
            .arg(&killed)
            .status()
            .unwrap()
            .success()
    );
    eprintln!("cancelled task {killed} of {n}");
    wait_gone(&jobs, limit);

    // 2. Status: the cancelled task's cell is not done (unless it finished in between).
    let out = dyad(&results, &["status", manifest.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{}", text.lines().last().unwrap_or_default());
    let done = text.lines().filter(|l| l.starts_with("done")).count();
    assert!(done < n, "the cancelled cell is done anyway:\n{text}");
    assert!(
        text.lines().any(|l| l.starts_with("missing"))
            && !text.lines().any(|l| l.starts_with("queued")),
        "the cancelled cell is missing, nothing is queued:\n{text}"
    );

    // 3. Resubmit (with `run`, which submits the same way): exactly the missing cells; then
    // everything is done.
    let (again, jobs2) = submit(&results, "run", &targets);
    assert_eq!(manifest_cells(&again), n - done, "resubmission");
    wait_gone(&jobs2, limit);
    let out = dyad(&results, &["status", again.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.lines().all(|l| l.starts_with("done")
            || l.starts_with("report job")
            || l.contains(" done, 0 running, 0 queued, 0 failed, 0 missing")),
        "{text}"
    );
    assert!(
        results.join("report-quick/REPORT.md").is_file(),
        "the report job ran"
    );

    // 4. The tables equal a local run's, apart from timings.
    let reference = match std::env::var("DYAD_SLURM_COMPARE_WITH") {
        Ok(d) => PathBuf::from(d),
        Err(_) => {
            let local = dir.path().join("local");
            let mut args = vec!["reproduce"];
            args.extend(targets.iter().map(String::as_str));
            args.extend(["--profile", "quick", "--quiet"]);
            let out = dyad(&local, &args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            local.join("tables/quick")
        }
    };
    let ours = results.join("tables/quick");
    let mut compared = 0;
    for e in std::fs::read_dir(&ours).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "csv") {
            continue;
        }
        let theirs = reference.join(p.file_name().unwrap());
        assert!(
            theirs.is_file(),
            "{} has no counterpart in {}",
            p.display(),
            reference.display()
        );
        let (a, b) = (comparable(&p), comparable(&theirs));
        assert_eq!(a.len(), b.len(), "{}: rows", p.display());
        for (k, v) in &a {
            assert_eq!(Some(v), b.get(k), "{}: {k}", p.display());
        }
        compared += 1;
    }
    assert!(compared > 0, "no tables written in {}", ours.display());
    eprintln!(
        "{compared} tables identical to {} apart from timings",
        reference.display()
    );
}

#[test]
fn csv_fields_are_split_with_quotes() {
    assert_eq!(
        fields(r#"a,"b,c","d ""e""",,f"#),
        vec!["a", "b,c", r#"d "e""#, "", "f"]
    );
}
