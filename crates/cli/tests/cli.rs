//! The `dyad` binary: reproduce, resume after a kill, check, and errors.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const DYAD: &str = env!("CARGO_BIN_EXE_dyad");

fn spec(repeats: u32, max: u64) -> String {
    format!(
        r#"
title = "resume demo"
paper = "demo"
figure = "F1"

[[datasets]]
id = "c10"
name = "caltech256"
params = {{ subset = "c10" }}

[protocol]
repeats = {repeats}
seed = 3
checkpoints = {{ max = {max}, every = {max} }}

[protocol.retrieval]
train_per_class = 40
test_per_class = 25
k_max = 10

[[solvers]]
name = "oasis"

[[solvers]]
name = "euclidean"

[[plots]]
id = "prec"
title = "precision"
x = "k"
metric = "precision"
x_label = "k"
y_label = "precision"
chance = true

[[expect]]
dataset = "c10"
solver = "oasis"
metric = "map"
min = 0.99
"#
    )
}

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new(spec: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let exp = dir.path().join("experiments/demo");
        std::fs::create_dir_all(&exp).unwrap();
        std::fs::write(exp.join("fig.toml"), spec).unwrap();
        Ws { dir }
    }

    fn results(&self) -> PathBuf {
        self.dir.path().join("results")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(DYAD);
        c.current_dir(self.dir.path())
            .env("CI", "true")
            .env("DYAD_DATA_DIR", self.dir.path().join("no-data"))
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn cached_cells(&self) -> Vec<(PathBuf, Vec<u8>)> {
        cell_files(&self.results().join("cache"))
    }

    /// Gives the demo spec's OASIS the parameter `c` (its cells get other keys).
    fn set_oasis_c(&self, c: f64) {
        let fig = self.dir.path().join("experiments/demo/fig.toml");
        let text = std::fs::read_to_string(&fig).unwrap();
        let with = format!("name = \"oasis\"\nparams = {{ c = {c} }}");
        std::fs::write(&fig, text.replace("name = \"oasis\"", &with)).unwrap();
    }
}

/// The cell files (path, bytes) of a cache or cell archive rooted at `root`, sorted.
fn cell_files(root: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(root.join("cells"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|x| x == "json") {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `(total, cached, computed)` from the run summary line.
fn summary(o: &Output) -> (usize, usize, usize) {
    let e = stderr(o);
    let line = e
        .lines()
        .find(|l| l.starts_with("cells: "))
        .unwrap_or_else(|| panic!("{e}"));
    let nums: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1], nums[2])
}

#[test]
fn reproduce_writes_everything_and_a_second_run_computes_nothing() {
    let ws = Ws::new(&spec(2, 2000));
    let o = ws.run(&["reproduce", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(summary(&o), (4, 0, 4));
    assert!(
        stderr(&o).contains("SYNTHETIC stand-in for caltech256"),
        "{}",
        stderr(&o)
    );
    let report = ws.results().join("report-quick/REPORT.md");
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("demo/fig") && md.contains("SYNTHETIC"));
    assert!(
        ws.results()
            .join("report-quick/figures/demo-fig-prec.png")
            .is_file()
    );
    assert!(ws.results().join("tables/quick/demo-fig.parquet").is_file());
    let again = ws.run(&["reproduce", "demo/fig", "--profile", "quick"]);
    assert_eq!(summary(&again), (4, 4, 0));
    assert!(
        stderr(&again).contains("data sets loaded: 0"),
        "{}",
        stderr(&again)
    );
    // --results from the command line goes where it is told.
    let other = ws.dir.path().join("elsewhere");
    let o = ws.run(&[
        "run",
        "experiments/demo/fig.toml",
        "--profile",
        "quick",
        "--results",
        other.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(other.join("tables/quick/demo-fig.csv").is_file());
}

/// `--solver` / `--dataset` limit a run (and a plan) to some cells; a later full run computes
/// only the rest: keys do not depend on which cells run together.
#[test]
fn a_run_limited_to_one_solver_computes_its_cells_and_a_full_run_the_rest() {
    let ws = Ws::new(&spec(2, 200));
    let o = ws.run(&[
        "plan",
        "demo",
        "--profile",
        "quick",
        "--solver",
        "euclidean",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    let row = out.lines().find(|l| l.starts_with("demo/fig")).unwrap();
    let nums: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((nums[1], nums[2]), ("2", "2"), "{out}");
    let o = ws.run(&["run", "demo", "--profile", "quick", "--solver", "euclidean"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(summary(&o), (2, 0, 2));
    assert!(
        stderr(&o).contains("demo/fig: 2 cells missing; no table or figure written"),
        "{}",
        stderr(&o)
    );
    assert_eq!(ws.cached_cells().len(), 2);
    // By legend label and data set id too; nothing left to compute for them.
    let o = ws.run(&[
        "run",
        "demo",
        "--profile",
        "quick",
        "--solver",
        "Euclidean",
        "--dataset",
        "c10",
    ]);
    assert_eq!(summary(&o), (2, 2, 0), "{}", stderr(&o));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 2, 2), "{}", stderr(&o));
    assert!(ws.results().join("tables/quick/demo-fig.csv").is_file());
    // Names that match nothing say what there is.
    let o = ws.run(&["run", "demo", "--profile", "quick", "--solver", "oasys"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--solver oasys: no such solver")
            && stderr(&o).contains("`euclidean`")
            && stderr(&o).contains("\"OASIS\""),
        "{}",
        stderr(&o)
    );
    // A spec solver with a grid: its label without the grid point selects every point, and
    // the error names the spec solver, not each point.
    let spec_without_expect = spec(1, 200).split("[[expect]]").next().unwrap().to_string();
    let grid = Ws::new(&spec_without_expect.replace(
        "name = \"oasis\"\n",
        "name = \"oasis\"\ngrid = { c = [0.01, 0.1, 1.0] }\n",
    ));
    let o = grid.run(&["plan", "demo", "--profile", "quick", "--solver", "OASIS"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    let row = out.lines().find(|l| l.starts_with("demo/fig")).unwrap();
    assert_eq!(row.split_whitespace().nth(1), Some("3"), "{out}");
    let o = grid.run(&[
        "plan",
        "demo",
        "--profile",
        "quick",
        "--solver",
        "OASIS (c=0.1)",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let row = out.lines().find(|l| l.starts_with("demo/fig")).unwrap();
    assert_eq!(row.split_whitespace().nth(1), Some("1"), "{out}");
    let o = grid.run(&["plan", "demo", "--profile", "quick", "--solver", "OASIS c"]);
    assert!(
        !o.status.success() && stderr(&o).contains("\"OASIS\"") && !stderr(&o).contains("c=0.1"),
        "{}",
        stderr(&o)
    );
    let o = ws.run(&["plan", "demo", "--profile", "quick", "--dataset", "c11"]);
    assert!(
        !o.status.success() && stderr(&o).contains("(they have: c10)"),
        "{}",
        stderr(&o)
    );
}

/// `dyad prune` lists the cells no spec refers to any more (here: a solver's parameter
/// changed), deletes them with `--delete` and keeps every cell a spec still uses; it refuses
/// when real data read before resolves to its stand-in (those cells would look orphaned).
/// `DYAD_MEMORY` plans for another machine's memory: a value that is no size is one error
/// (not one per spec), and a size too small for a cell refuses it at its solver's line.
#[test]
fn dyad_memory_plans_for_another_machine() {
    let ws = Ws::new(&spec(2, 2000));
    std::fs::write(
        ws.dir.path().join("experiments/demo/twin.toml"),
        spec(2, 2000),
    )
    .unwrap();
    let plan = |memory: &str, targets: &[&str]| {
        let mut args = vec!["plan", "--profile", "quick"];
        args.extend_from_slice(targets);
        ws.cmd(&args).env("DYAD_MEMORY", memory).output().unwrap()
    };
    let o = plan("64Q", &[]);
    assert!(!o.status.success());
    assert_eq!(
        stderr(&o)
            .matches("DYAD_MEMORY = \"64Q\": expected bytes")
            .count(),
        1,
        "{}",
        stderr(&o)
    );
    let o = plan("1K", &["demo/fig"]);
    assert!(!o.status.success());
    let line = spec(2, 2000)
        .lines()
        .position(|l| l == "name = \"oasis\"")
        .unwrap()
        + 1;
    assert!(
        stderr(&o).contains(&format!(
            "fig.toml:{line}: solver `OASIS` on `c10`: one cell needs at least"
        )) && stderr(&o).contains("more than the 1 KB cells may use"),
        "{}",
        stderr(&o)
    );
    let o = plan("64G", &["demo/fig"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn prune_lists_and_deletes_only_cells_no_spec_refers_to() {
    let ws = Ws::new(&spec(2, 200));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 0, 4), "{}", stderr(&o));
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let o = ws.run(&["prune"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out(&o).contains("0 of 4 cached cells"), "{}", out(&o));
    // OASIS's parameter changes: its two cells are orphans, Euclidean's are still used.
    ws.set_oasis_c(0.2);
    let o = ws.run(&["prune"]);
    let listed = out(&o);
    assert!(
        listed.contains("2 of 4 cached cells")
            && listed.contains("ranking / caltech256-standin / oasis"),
        "{listed}"
    );
    assert_eq!(ws.cached_cells().len(), 4, "listing deletes nothing");
    let o = ws.run(&["prune", "--delete"]);
    assert!(
        out(&o).contains("deleted 2 of 4 cached cells"),
        "{}",
        out(&o)
    );
    assert_eq!(ws.cached_cells().len(), 2);
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 2, 2), "{}", stderr(&o));
    // Real Caltech-256 was read from another directory before (the memo says so): refuse.
    let mirror = ws.dir.path().join("mirror/caltech256");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::write(mirror.join("x.jpg"), b"x").unwrap();
    let memo = serde_json::json!({
        format!("caltech256|{{}}|{}:1:2", mirror.join("x.jpg").display()): { "identity": "abc" }
    });
    std::fs::write(
        ws.results().join("cache/data-identity.json"),
        memo.to_string(),
    )
    .unwrap();
    let o = ws.run(&["prune", "--delete"]);
    assert!(
        !o.status.success() && stderr(&o).contains("not pruning") && stderr(&o).contains("mirror"),
        "{}",
        stderr(&o)
    );
    assert_eq!(ws.cached_cells().len(), 4);
}

/// `dyad prune --in DIR` does to a cell archive what `dyad prune` does to the cache: it
/// lists, then deletes, the archived cells no spec refers to, and leaves the cache alone.
#[test]
fn prune_in_an_archive_drops_only_what_no_spec_reads() {
    let ws = Ws::new(&spec(2, 200));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 0, 4), "{}", stderr(&o));
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let archive = ws.dir.path().join("archive");
    let arg = archive.to_str().unwrap();
    let o = ws.run(&["prune", "--in", arg]);
    assert!(
        !o.status.success() && stderr(&o).contains("holds no cell archive"),
        "{}",
        stderr(&o)
    );
    let o = ws.run(&["archive", "export", "--profile", "quick", "--to", arg]);
    assert!(out(&o).contains("archived 4 cells"), "{}", out(&o));
    let o = ws.run(&["prune", "--in", arg]);
    assert!(out(&o).contains("0 of 4 archived"), "{}", out(&o));
    ws.set_oasis_c(0.2);
    let o = ws.run(&["prune", "--in", arg, "--delete"]);
    assert!(
        o.status.success() && out(&o).contains("deleted 2 of 4 archived"),
        "{}{}",
        out(&o),
        stderr(&o)
    );
    assert_eq!(
        cell_files(&archive).len(),
        2,
        "the archive keeps the Euclidean cells"
    );
    assert_eq!(ws.cached_cells().len(), 4, "the cache is not the archive");
    let o = ws.run(&["prune", "--in", arg]);
    assert!(out(&o).contains("0 of 2 archived"), "{}", out(&o));
}

#[test]
fn an_archive_carries_computed_cells_to_another_clone() {
    let ws = Ws::new(&spec(2, 200));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 0, 4), "{}", stderr(&o));
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let archive = ws.dir.path().join("archive");
    let archive_arg = archive.to_str().unwrap();
    let o = ws.run(&[
        "archive",
        "export",
        "demo",
        "--profile",
        "quick",
        "--to",
        archive_arg,
    ]);
    assert!(
        out(&o).contains("archived 4 cells"),
        "{}{}",
        out(&o),
        stderr(&o)
    );
    // Again: nothing new. From a clone that computed nothing: nothing to archive.
    let o = ws.run(&[
        "archive",
        "export",
        "--profile",
        "quick",
        "--to",
        archive_arg,
    ]);
    assert!(
        out(&o).contains("archived 0 cells") && out(&o).contains("4 were there already"),
        "{}",
        out(&o)
    );
    let empty = Ws::new(&spec(2, 200));
    let elsewhere = empty.dir.path().join("archive");
    let o = empty.run(&[
        "archive",
        "export",
        "--profile",
        "quick",
        "--to",
        elsewhere.to_str().unwrap(),
    ]);
    assert!(out(&o).contains("4 not computed yet"), "{}", out(&o));
    // Another clone of the same specs: the archive's cells are its cells, byte for byte.
    let other = Ws::new(&spec(2, 200));
    let o = other.run(&["archive", "import", archive_arg]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out(&o).contains("imported 4 cells"), "{}", out(&o));
    assert_eq!(
        other
            .cached_cells()
            .iter()
            .map(|c| &c.1)
            .collect::<Vec<_>>(),
        ws.cached_cells().iter().map(|c| &c.1).collect::<Vec<_>>()
    );
    let o = other.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 4, 0), "{}", stderr(&o));
    // The results directory's own archive is pointed at, never read by itself.
    let kept = other.results().join("archive");
    std::fs::rename(&archive, &kept).unwrap();
    std::fs::remove_dir_all(other.results().join("cache/cells")).unwrap();
    let o = other.run(&["plan", "--profile", "quick"]);
    assert!(
        stderr(&o).contains("holds 4 computed cells"),
        "{}",
        stderr(&o)
    );
    std::fs::rename(&kept, &archive).unwrap();
    // A damaged archived cell is named and skipped; the others still come in.
    let third = Ws::new(&spec(2, 200));
    let files: Vec<PathBuf> = cell_files(&archive).into_iter().map(|f| f.0).collect();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::write(
        &files[0],
        text.replacen("\"value\":", "\"value\": 1e9, \"x\":", 1),
    )
    .unwrap();
    let o = third.run(&["archive", "import", archive_arg]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(files[0].to_str().unwrap()) && out(&o).contains("imported 3 cells"),
        "{}{}",
        out(&o),
        stderr(&o)
    );
    let o = third.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 3, 1), "{}", stderr(&o));
    // Not an archive: said so.
    let o = third.run(&["archive", "import", "experiments"]);
    assert!(stderr(&o).contains("no cell archive"), "{}", stderr(&o));
}

#[test]
fn a_killed_run_resumes_and_loses_no_finished_cell() {
    // 16 cells of a few tenths of a second each, one at a time.
    let ws = Ws::new(&spec(8, 60_000));
    let mut child = ws
        .cmd(&["run", "demo", "--profile", "quick", "--threads", "1"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ws.cached_cells().len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("run finished before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = ws.cached_cells();
    assert!(before.len() >= 3 && before.len() < 16, "{}", before.len());
    for (p, bytes) in &before {
        assert!(
            serde_json::from_slice::<serde_json::Value>(bytes).is_ok(),
            "{} is torn",
            p.display()
        );
    }
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (total, cached, computed) = summary(&o);
    assert_eq!(total, 16);
    assert_eq!(cached, before.len());
    assert_eq!(cached + computed, 16);
    let after = ws.cached_cells();
    assert_eq!(after.len(), 16);
    for (p, bytes) in &before {
        let now = after
            .iter()
            .find(|(q, _)| q == p)
            .expect("finished cell kept");
        assert_eq!(&now.1, bytes, "{} was recomputed", p.display());
    }
}

/// Files a run left in the cache besides cells: claims and temporaries.
fn leftovers(ws: &Ws) -> Vec<PathBuf> {
    std::fs::read_dir(ws.results().join("cache/cells"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|s| std::fs::read_dir(s.path()).unwrap().flatten())
        .filter(|f| f.path().extension().is_none_or(|x| x != "json"))
        .map(|f| f.path())
        .collect()
}

/// Start `dyad run demo` on one thread and wait until `n` cells are stored.
fn run_until(ws: &Ws, n: usize) -> std::process::Child {
    let mut child = ws
        .cmd(&["run", "demo", "--profile", "quick", "--threads", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ws.cached_cells().len() < n {
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("run finished before it could be interrupted: {status}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn sigint_and_sigterm_release_the_claims_and_say_what_finished() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let ws = Ws::new(&spec(4, 60_000));
        let child = run_until(&ws, 2);
        let pid = child.id().to_string();
        let kill = Command::new("sh")
            .args(["-c", &format!("kill -{signal} {pid}")])
            .status()
            .unwrap();
        assert!(kill.success());
        let o = child.wait_with_output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{e}");
        assert!(
            e.contains(&format!("interrupted by SIG{signal}: "))
                && e.contains("of 8 cells were computed by this run")
                && e.contains("Run the same command again"),
            "{e}"
        );
        // The cell in progress was abandoned, its claim released: nothing waits on it. (A
        // cell being written at that moment may leave its temporary file, which the next run
        // removes: its writer is gone.)
        let claims: Vec<_> = leftovers(&ws)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "lock"))
            .collect();
        assert!(claims.is_empty(), "{claims:?}");
        let kept = ws.cached_cells().len();
        let o = ws.run(&["run", "demo", "--profile", "quick"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(summary(&o), (8, kept, 8 - kept));
        assert!(
            !stderr(&o).contains("being computed by another run"),
            "{}",
            stderr(&o)
        );
        assert!(leftovers(&ws).is_empty(), "{:?}", leftovers(&ws));
    }
}

/// A SIGTERM to dyad alone (`kill <pid>`, a batch system; not a terminal's Ctrl-C, which
/// reaches the whole process group) ends the Python peer a cell runs and removes the peer's
/// scratch directory. The peer is a stand-in script that sleeps, run by the system's Python
/// through an environment that only looks ready (no package is needed).
#[test]
fn sigterm_ends_a_python_peer_child_and_removes_its_scratch_directory() {
    let Some(python) = Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        eprintln!("SKIPPED: no python3 on PATH");
        return;
    };
    let ws = Ws::new(
        r#"
title = "peer"
paper = "demo"
figure = "P1"

[[datasets]]
id = "small"
name = "caltech256-standin"
params = { classes = 4, per_class = 12, dim = 50, seed = 5 }

[protocol]
repeats = 1
seed = 7
checkpoints = { max = 400, every = 200 }

[protocol.retrieval]
train_per_class = 7
test_per_class = 5
k_max = 5

[[solvers]]
name = "py:oasis-numpy"
params = { c = 0.1 }
"#,
    );
    let root = ws.dir.path();
    let peers = root.join("peers");
    std::fs::create_dir_all(&peers).unwrap();
    let repo_peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers");
    for e in std::fs::read_dir(repo_peers).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), peers.join(e.file_name())).unwrap();
        }
    }
    std::fs::write(
        peers.join("oasis_numpy.py"),
        "import os, sys, time\n\
         with open(os.environ['PEER_PIDFILE'] + '.tmp', 'w') as f:\n    \
         f.write(f'{os.getpid()} {sys.argv[1]}')\n\
         os.rename(os.environ['PEER_PIDFILE'] + '.tmp', os.environ['PEER_PIDFILE'])\n\
         time.sleep(300)\n",
    )
    .unwrap();
    let venv = root.join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::os::unix::fs::symlink(&python, venv.join("bin/python")).unwrap();
    let sum = Command::new("sha256sum")
        .arg(peers.join("requirements.txt"))
        .output()
        .unwrap();
    let sum = String::from_utf8_lossy(&sum.stdout);
    let stamp = sum.split_whitespace().next().unwrap();
    std::fs::write(venv.join("dyad-requirements.sha256"), format!("{stamp}\n")).unwrap();
    let pidfile = root.join("peer.pid");
    let mut run = ws
        .cmd(&["run", "demo", "--profile", "quick", "--threads", "1"])
        .env("DYAD_PEERS_DIR", &peers)
        .env("DYAD_PEERS_VENV", &venv)
        .env("PEER_PIDFILE", &pidfile)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !pidfile.exists() {
        if let Some(status) = run.try_wait().unwrap() {
            let o = run.wait_with_output().unwrap();
            panic!(
                "the run ended before its peer started ({status}): {}",
                stderr(&o)
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the peer never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(&pidfile).unwrap();
    let (pid, scratch) = text.split_once(' ').unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(std::path::Path::new(scratch).is_dir());
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", run.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = run.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(143), "{e}");
    assert!(e.contains("(ended 1 child process of its cells)"), "{e}");
    // Killed and reaped: no such process any more, and its inputs are gone.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "{e}"
    );
    assert!(!std::path::Path::new(scratch).exists(), "{scratch} {e}");
}

/// A tmpfs of `kb` KiB mounted on a fresh directory, unmounted when dropped; `None` where
/// this process may not mount (not root, or a container without the capability).
struct TinyDisk(tempfile::TempDir);

impl TinyDisk {
    fn mount(kb: u32) -> Option<TinyDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kb}k"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(TinyDisk(dir))
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// A cache on a disk that fills up: the cell that cannot be stored fails with the system's
/// reason and the path, the run stops (exit 2), the cells stored before are whole, and no
/// claim or temporary file is left behind.
#[test]
fn a_full_disk_fails_the_cell_it_cannot_store_and_leaves_nothing_behind() {
    let Some(disk) = TinyDisk::mount(20) else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)");
        return;
    };
    let ws = Ws::new(&spec(4, 2000));
    let results = disk.0.path().join("results");
    let o = ws.run(&[
        "run",
        "demo",
        "--profile",
        "quick",
        "--threads",
        "1",
        "--results",
        results.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("No space left on device") && e.contains("storing in") && e.contains("failed"),
        "{e}"
    );
    let cells = cell_files(&results.join("cache"));
    assert!(!cells.is_empty() && cells.len() < 8, "{}", cells.len());
    for (p, bytes) in &cells {
        assert!(
            serde_json::from_slice::<serde_json::Value>(bytes).is_ok(),
            "{} is torn",
            p.display()
        );
    }
    let stray: Vec<_> = std::fs::read_dir(results.join("cache/cells"))
        .unwrap()
        .flatten()
        .flat_map(|s| std::fs::read_dir(s.path()).unwrap().flatten())
        .filter(|f| f.path().extension().is_none_or(|x| x != "json"))
        .map(|f| f.path())
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// `dyad compare --ignore PATH` compares two settings: a run of OASIS at another `c`
/// pairs with the first run's cells only when the path is ignored, and its differences are
/// then explained by that setting (exit 0), each line naming both values.
#[test]
fn compare_ignoring_a_setting_pairs_the_runs_of_its_two_values() {
    let ws = Ws::new(&spec(2, 200));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 0, 4), "{}", stderr(&o));
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let before = ws.dir.path().join("before");
    let before_arg = before.to_str().unwrap();
    let o = ws.run(&[
        "archive",
        "export",
        "--profile",
        "quick",
        "--to",
        before_arg,
    ]);
    assert!(out(&o).contains("archived 4 cells"), "{}", out(&o));
    ws.set_oasis_c(0.5);
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(summary(&o), (4, 2, 2), "{}", stderr(&o));
    let results = ws.results();
    let compare = |extra: &[&str]| {
        let mut args = vec!["compare", before_arg, results.to_str().unwrap()];
        args.extend_from_slice(&["--profile", "quick"]);
        args.extend_from_slice(extra);
        ws.run(&args)
    };
    // Without --ignore the new OASIS cells pair with nothing in A.
    let o = compare(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out(&o).contains("2 identical") && out(&o).contains("2 only in B"),
        "{}",
        out(&o)
    );
    let o = compare(&["--ignore", "solver.params.c"]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(
        text.contains("2 identical") && text.contains("2 differ (2 explained, 0 UNEXPLAINED)"),
        "{text}"
    );
    assert!(text.contains("solver.params.c 0.1 → 0.5"), "{text}");
    let o = compare(&["--ignore", "solver.params.nothing"]);
    assert!(
        stderr(&o).contains("--ignore solver.params.nothing: no cell of the selected specs"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&compare(&["--ignore", "solver.params.c"])).contains("warning: --ignore"));
    let o = compare(&["--ignore", "solver.params.c", "--bless"]);
    assert!(
        !o.status.success(),
        "--ignore and --bless do not go together"
    );
}

/// kill -9 at several moments (between cells and inside one), then a run to the end: every
/// value equals an uninterrupted run's (`dyad compare`, timings aside), nothing is left over.
#[test]
fn runs_killed_at_several_moments_end_with_the_values_of_an_uninterrupted_run() {
    let ws = Ws::new(&spec(6, 30_000));
    // Moments: after n stored cells, then a delay into the next cell (a fixed pseudo-random
    // sequence, so that a failure replays).
    for (n, delay_ms) in [(1, 0), (3, 37), (6, 113), (9, 5)] {
        let mut child = run_until(&ws, n);
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        for (p, bytes) in ws.cached_cells() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&bytes).is_ok(),
                "{} is torn",
                p.display()
            );
        }
    }
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ws.cached_cells().len(), 12);
    // A killed run's claim is stale at once (its process is gone); the temporaries are cleaned.
    assert!(leftovers(&ws).is_empty(), "{:?}", leftovers(&ws));
    let clean = Ws::new(&spec(6, 30_000));
    let o = clean.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = ws.run(&[
        "compare",
        clean.results().to_str().unwrap(),
        ws.results().to_str().unwrap(),
        "--profile",
        "quick",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("12 identical"), "{out}");
}

/// Real data in MNIST's place whose content is not the published release: every line that
/// shows it says so, a band for real data is skipped, `dyad data list` writes nothing; when the
/// data then changes in place (same sizes and times), `--recompute all` keeps the cached cells
/// and the run after it identifies the data anew.
#[test]
fn data_that_is_not_the_published_release_is_named_and_changed_data_identified_anew() {
    let spec = r#"
title = "digits"
paper = "demo"
figure = "F1"

[[datasets]]
id = "digits"
name = "mnist"

[protocol]
repeats = 1
seed = 3
checkpoints = { max = 10, every = 10 }

[protocol.retrieval]
train_per_class = 2
test_per_class = 2
k_max = 2

[[solvers]]
name = "euclidean"

[[tables]]
id = "map"
title = "mAP"
rows = [{ metric = "map" }]

[[expect]]
dataset = "digits"
solver = "euclidean"
metric = "map"
min = 0.0
data = "real"
"#;
    let ws = Ws::new(spec);
    let data = ws.dir.path().join("no-data");
    dyad_datasets::testdata::write_other_mnist(&data.join("mnist"), 20, 0);
    let memo = ws.results().join("cache/data-identity.json");
    let o = ws.run(&["data", "list"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("UNPUBLISHED CONTENT (content identity "),
        "{out}"
    );
    assert!(!memo.exists(), "`data list` only reads");

    let o = ws.run(&["reproduce", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("UNPUBLISHED CONTENT"), "{}", stderr(&o));
    let report = std::fs::read_to_string(ws.results().join("report-quick/REPORT.md")).unwrap();
    assert!(
        report.contains("UNPUBLISHED CONTENT (content identity")
            && report.contains("digits (UNPUBLISHED CONTENT)"),
        "{report}"
    );
    let o = ws.run(&["check", "--profile", "quick"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("band is calibrated on the published release"),
        "{out}{}",
        stderr(&o)
    );

    // Other pixels, the same sizes and modification times.
    let mnist = data.join("mnist");
    dyad_datasets::testdata::rewrite_other_mnist_in_place(&mnist, 20, 9);
    let before = ws.cached_cells();
    let o = ws.run(&["run", "demo", "--profile", "quick", "--recompute", "all"]);
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("changed since its identity was recorded")
            && e.contains("the record is dropped: run again")
            && e.contains("the cached cell is kept"),
        "{e}"
    );
    assert_eq!(ws.cached_cells(), before, "no cell moved aside");
    // The next run plans on the data as it is now: new keys, computed.
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(summary(&o), (1, 0, 1));
}

#[test]
fn check_names_every_metric_outside_its_band() {
    let ws = Ws::new(&spec(1, 1000));
    let o = ws.run(&["check", "--profile", "quick"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not run"), "{}", stderr(&o));
    assert!(
        ws.run(&["run", "demo", "--profile", "quick"])
            .status
            .success()
    );
    let o = ws.run(&["check", "--profile", "quick"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("demo/fig c10 oasis map (test)") && e.contains("outside [0.99, inf]"),
        "{e}"
    );
}

#[test]
fn bad_specs_and_targets_are_clear_errors() {
    let ws = Ws::new(&spec(1, 1000).replace("seed = 3", "seed = 3\nsede = 4"));
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("experiments/demo/fig.toml:14:") && e.contains("sede"),
        "{e}"
    );
    let ws = Ws::new(&spec(1, 1000));
    let e = stderr(&ws.run(&["run", "nosuch/fig"]));
    assert!(
        e.contains("no experiment matches `nosuch/fig`") && e.contains("demo/fig"),
        "{e}"
    );
}

#[test]
fn two_runs_on_one_cache_split_the_work_and_never_repeat_it() {
    // 8 cells of a few tenths of a second, two processes with one thread each.
    let ws = Ws::new(&spec(4, 30_000));
    let spawn = || {
        ws.cmd(&["run", "demo", "--profile", "quick", "--threads", "1"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    let (_, _, ca) = summary(&a);
    let (_, _, cb) = summary(&b);
    // Every cell computed exactly once, by one run or the other.
    assert_eq!(ca + cb, 8, "{}\n{}", stderr(&a), stderr(&b));
    assert_eq!(ws.cached_cells().len(), 8);
    // No claims or temporaries left behind.
    assert!(leftovers(&ws).is_empty(), "{:?}", leftovers(&ws));
}

#[test]
fn a_damaged_cell_is_recomputed_and_missing_cells_fail_the_run() {
    let ws = Ws::new(&spec(1, 1000));
    assert!(
        ws.run(&["run", "demo", "--profile", "quick"])
            .status
            .success()
    );
    let cells = ws.cached_cells();
    assert_eq!(cells.len(), 2);
    // Truncate one, overwrite the other with garbage: both are recomputed.
    std::fs::write(&cells[0].0, &cells[0].1[..cells[0].1.len() / 2]).unwrap();
    std::fs::write(&cells[1].0, b"garbage").unwrap();
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(summary(&o), (2, 0, 2));
    // `list` agrees with the run: every cell cached.
    let l = ws.run(&["list"]);
    let out = String::from_utf8_lossy(&l.stdout);
    assert!(out.contains("2/2"), "{out}");
    // A cell that cannot be computed fails the run (non-zero exit), it is not a silent gap.
    let bad = Ws::new(&spec(1, 1000).replace("train_per_class = 40", "train_per_class = 400"));
    let o = bad.run(&["run", "demo", "--profile", "quick"]);
    assert!(!o.status.success(), "{}", stderr(&o));
}

#[test]
fn closed_pipes_zero_threads_and_the_default_profile() {
    let ws = Ws::new(&spec(1, 1000));
    // `dyad list | head -1`: a closed stdout ends the process quietly.
    let mut child = ws.cmd(&["list"]).stdout(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert!(status.success() || status.code() == Some(0), "{status:?}");
    // `dyad list > /dev/full`: an error that says so, not a panic.
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let o = ws.cmd(&["list"]).stdout(full).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("error: writing to stdout") && !stderr(&o).contains("panicked"),
            "{}",
            stderr(&o)
        );
    }
    let o = ws.run(&["run", "demo", "--profile", "quick", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("threads"), "{}", stderr(&o));
    // After a quick run, `check` and `report` default to the quick profile.
    assert!(
        ws.run(&["run", "demo", "--profile", "quick"])
            .status
            .success()
    );
    let o = ws.run(&["report"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ws.results().join("report-quick/REPORT.md").is_file());
    assert!(!ws.results().join("report/REPORT.md").exists());
    let l = String::from_utf8_lossy(&ws.run(&["list"]).stdout).into_owned();
    assert!(
        l.contains("quick") && l.contains("paper") && l.contains("2/2"),
        "{l}"
    );
}

/// A manifest of the missing cells runs anywhere `dyad cell` runs: one cell, then the rest
/// here; `plan` estimates from the cells already timed, `status` follows.
#[test]
fn a_manifest_runs_cell_by_cell_and_status_follows() {
    let ws = Ws::new(&spec(2, 40));
    let manifest = ws.dir.path().join("manifest.json");
    let out = ws.run(&[
        "plan",
        "--profile",
        "quick",
        "--cells",
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("4 cells to compute") && text.contains("plus 4 with no timing"),
        "{text}"
    );
    let status = |ws: &Ws| {
        let o = ws.run(&["status", manifest.to_str().unwrap()]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        status(&ws).contains("0 done, 0 running, 0 queued, 0 failed, 4 missing"),
        "{}",
        status(&ws)
    );
    let out = ws.run(&["cell", manifest.to_str().unwrap(), "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        status(&ws).contains("1 done, 0 running, 0 queued, 0 failed, 3 missing"),
        "{}",
        status(&ws)
    );
    // The timed cell now gives the others (same solver, other repeat) an estimate.
    let out = ws.run(&["plan", "--profile", "quick"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("3 cells to compute") && text.contains("plus 2 with no timing"),
        "{text}"
    );
    let out = ws.run(&["cell", manifest.to_str().unwrap(), "9"]);
    assert!(!out.status.success() && stderr(&out).contains("no cell 9 (the manifest has 4)"));
    let out = ws.run(&["cell", manifest.to_str().unwrap(), "--all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        status(&ws).contains("4 done, 0 running, 0 queued, 0 failed, 0 missing"),
        "{}",
        status(&ws)
    );
    assert_eq!(ws.cached_cells().len(), 4);
    // `--recompute all` with a manifest: the cached cells are moved aside and listed, and the
    // task that computes one compares it with the old cell (identical: the old one is gone).
    let again = ws.dir.path().join("again.json");
    let out = ws.run(&[
        "plan",
        "--profile",
        "quick",
        "--manifest",
        again.to_str().unwrap(),
        "--recompute",
        "all",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("moved 4 cached cells aside"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("wrote") && stderr(&out).contains("(4 cells)"));
    let superseded = ws.results().join("cache/superseded");
    let aside = || std::fs::read_dir(&superseded).map_or(0, |d| d.count());
    assert_eq!(aside(), 4);
    let out = ws.run(&["cell", again.to_str().unwrap(), "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recomputed 1 cached cells: 1 identical"),
        "{}",
        stderr(&out)
    );
    assert_eq!(aside(), 3);
    let out = ws.run(&["cell", again.to_str().unwrap(), "--all"]);
    assert!(
        stderr(&out).contains("recomputed 3 cached cells: 3 identical"),
        "{}",
        stderr(&out)
    );
    assert_eq!((aside(), ws.cached_cells().len()), (0, 4));
    // Without a manifest there is nothing to list the cells in.
    let out = ws.run(&["plan", "--recompute", "all"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A damaged cell file is computed again, and the run says which cell, which file and why.
#[test]
fn a_damaged_cell_is_computed_again_with_a_warning_naming_it() {
    let ws = Ws::new(&spec(1, 1000));
    assert!(
        ws.run(&["run", "demo", "--profile", "quick"])
            .status
            .success()
    );
    let cells = ws.results().join("cache/cells");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&cells)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let damaged = &files[0];
    let text = std::fs::read(damaged).unwrap();
    std::fs::write(damaged, &text[..text.len() / 2]).unwrap();
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        err.contains("is not a valid cell")
            && err.contains(&name)
            && err.contains("computing it again"),
        "{err}"
    );
    // Computed again: a valid cell, and a third run says nothing.
    let o = ws.run(&["run", "demo", "--profile", "quick"]);
    assert!(
        !stderr(&o).contains("is not a valid cell"),
        "{}",
        stderr(&o)
    );
}

/// `dyad check` at the paper profile lists each tuned parameter chosen on its grid's edge in
/// most cells that no `[[choices]]` entry keeps on purpose, and is silent once one does.
#[test]
fn check_lists_grid_edges_no_choice_decides() {
    let tuned = spec(1, 1000)
        .replace(
            "k_max = 10\n",
            "k_max = 10\nearly_stopping = { validation_fraction = 0.2 }\n",
        )
        .replace(
            "name = \"oasis\"\n",
            "name = \"oasis\"\ntune = { c = [0.01, 0.1] }\n",
        );
    let ws = Ws::new(&tuned);
    assert!(
        ws.run(&["run", "demo", "--profile", "paper"])
            .status
            .success()
    );
    // A two-value grid: its one choice sits on an edge.
    let o = ws.run(&["check", "--profile", "paper"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        out.contains("grid edge: OASIS c at its")
            && out.contains("1 tuned parameters chosen on a grid edge"),
        "{out}"
    );
    // The quick profile's grids are CI-sized: no notes there.
    ws.run(&["run", "demo", "--profile", "quick"]);
    let o = ws.run(&["check", "--profile", "quick"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("grid edge"));
    // Kept on purpose: no note.
    let decided = tuned.replacen(
        "[[datasets]]",
        "[[choices]]\ntopic = \"grid\"\nchoice = \"kept\"\nreason = \"r\"\n\
         edges = [{ solver = \"oasis\", param = \"c\" }]\n\n[[datasets]]",
        1,
    );
    std::fs::write(ws.dir.path().join("experiments/demo/fig.toml"), decided).unwrap();
    let o = ws.run(&["check", "--profile", "paper"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(!out.contains("grid edge"), "{out}");
}
