//! `dyad compare A B`: a tiny spec is run, its cells archived as the reference A, and the
//! results directory B altered cell by cell the ways a code change alters it.

use dyad_harness::engine::cache::{Cache, CellResult};
use dyad_harness::engine::plan::cell_key;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const DYAD: &str = env!("CARGO_BIN_EXE_dyad");

const SPEC: &str = r#"
title = "compare demo"
paper = "demo"
figure = "F1"

[[datasets]]
id = "c10"
name = "caltech256"
params = { subset = "c10" }

[protocol]
repeats = 2
seed = 3
checkpoints = { max = 400, every = 200 }

[protocol.retrieval]
train_per_class = 30
test_per_class = 20
k_max = 10

[[solvers]]
name = "oasis"

[[solvers]]
name = "euclidean"

[[claims]]
id = "oasis-beats-euclidean"
origin = "ours"
text = "OASIS ranks better than the Euclidean baseline"
kind = "greater"
metric = "map"
solver = "oasis"
versus = "euclidean"
"#;

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let exp = dir.path().join("experiments/demo");
        std::fs::create_dir_all(&exp).unwrap();
        std::fs::write(exp.join("fig.toml"), SPEC).unwrap();
        Ws { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(DYAD)
            .current_dir(self.dir.path())
            .env("CI", "true")
            .env("DYAD_DATA_DIR", self.path("no-data"))
            .args(args)
            .output()
            .unwrap()
    }

    /// `dyad compare reference results --profile paper` plus `extra`: (exit code, stdout).
    fn compare(&self, extra: &[&str]) -> (i32, String) {
        let mut args = vec!["compare", "reference", "results", "--profile", "paper"];
        args.extend_from_slice(extra);
        let o = self.run(&args);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let code = o.status.code().unwrap();
        assert!(
            code != 2,
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr).into_owned()
        );
        (code, out)
    }

    /// `dyad compare reference results [targets] --profile paper --bless`.
    fn bless(&self, targets: &[&str]) -> Output {
        let mut args = vec!["compare", "reference", "results"];
        args.extend_from_slice(targets);
        args.extend_from_slice(&["--profile", "paper", "--bless"]);
        self.run(&args)
    }

    fn json(&self) -> (i32, Value) {
        let (code, out) = self.compare(&["--json"]);
        (code, serde_json::from_str(&out).unwrap())
    }

    fn cache(&self) -> Cache {
        Cache::new(&self.path("results"))
    }
}

/// The cell line of `solver` (label) and `repeat` in a JSON report.
fn line<'a>(report: &'a Value, solver: &str, repeat: u64) -> &'a Value {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["solver"] == solver && c["repeat"] == repeat)
        .unwrap_or_else(|| panic!("no cell {solver} r{repeat} in {report}"))
}

/// Adds `by` to every test mAP record of a cell.
fn shift_map(cell: &mut CellResult, by: f64) {
    let mut n = 0;
    for r in cell
        .records
        .iter_mut()
        .filter(|r| r.set == "test" && r.metric == "map")
    {
        r.value += by;
        n += 1;
    }
    assert!(n > 0, "no test mAP records");
}

fn count(report: &Value, status: &str) -> usize {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == status)
        .count()
}

#[test]
fn compare_pairs_cells_across_versions_and_names_unexplained_changes() {
    let ws = Ws::new();
    let o = ws.run(&["run", "demo/fig", "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ws.run(&["archive", "export", "--to", "reference"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // (a) Identical runs: exit 0, every cell identical, the claim unchanged.
    let (code, report) = ws.json();
    assert_eq!(code, 0, "{report}");
    assert_eq!(count(&report, "identical"), 4, "{report}");
    assert_eq!(report["claims"][0]["changed"], false);
    let euclid = line(&report, "Euclidean", 0)["key_b"]
        .as_str()
        .unwrap()
        .to_string();
    let oasis0 = line(&report, "OASIS", 0)["key_b"]
        .as_str()
        .unwrap()
        .to_string();
    let oasis1 = line(&report, "OASIS", 1)["key_b"]
        .as_str()
        .unwrap()
        .to_string();
    let euclid1 = line(&report, "Euclidean", 1)["key_b"]
        .as_str()
        .unwrap()
        .to_string();
    let cache = ws.cache();

    // Timings are never differences: the cell's clocks and the records' seconds.
    let mut c = cache.get(&euclid).unwrap();
    c.train_seconds += 100.0;
    c.wall_seconds += 100.0;
    c.eval_seconds += 1.0;
    for r in &mut c.records {
        r.seconds += 7.0;
    }
    cache.put(&c).unwrap();
    let (code, out) = ws.compare(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cells: 4 identical"), "{out}");

    // (b) A solver version bump that changes values: the new cell has another key, pairs with
    // the old one by identity, and the difference is explained.
    let mut c = cache.get(&oasis0).unwrap();
    cache.remove(&oasis0).unwrap();
    let v = c.canonical["solver"]["version"].as_u64().unwrap();
    c.canonical["solver"]["version"] = Value::from(v + 1);
    c.key = cell_key(&c.canonical);
    shift_map(&mut c, 0.05);
    cache.put(&c).unwrap();
    let (code, out) = ws.compare(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Explained differences:"), "{out}");
    assert!(
        out.contains(&format!("demo/fig c10 OASIS r0 [{}]: ", &oasis0[..10]))
            && out.contains(&format!("solver version {v} → {}", v + 1)),
        "{out}"
    );
    assert!(!out.contains("UNEXPLAINED differences"), "{out}");
    // The headline metric's difference is reported with its paired spread.
    assert!(out.contains("Headline metrics that differ"), "{out}");
    let (_, report) = ws.json();
    let l = line(&report, "OASIS", 0);
    assert_eq!(l["status"], "differs");
    assert_eq!(l["explanation"], "version");
    assert_eq!(l["key_a"].as_str(), Some(oasis0.as_str()));
    assert_eq!(l["key_b"].as_str(), Some(c.key.as_str()));
    let m = report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["solver"] == "OASIS" && m["metric"] == "mAP")
        .unwrap_or_else(|| panic!("{report}"));
    assert!((m["diff"].as_f64().unwrap() - 0.025).abs() < 1e-9, "{m}");
    assert_eq!(m["n"], 2);

    // (c) A value changed with no version change: unexplained, exit 1, named cell by cell;
    // a changed code fingerprint alone does not explain it either.
    let mut c = cache.get(&euclid1).unwrap();
    shift_map(&mut c, -0.01);
    cache.put(&c).unwrap();
    let mut c = cache.get(&oasis1).unwrap();
    shift_map(&mut c, 0.02);
    c.code.insert("solver".into(), "0123456789abcdef".into());
    cache.put(&c).unwrap();
    let (code, out) = ws.compare(&[]);
    assert_eq!(code, 1, "{out}");
    let unexplained = out
        .split("UNEXPLAINED differences")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        unexplained.contains(&format!("demo/fig c10 Euclidean r1 [{}]", &euclid1[..10]))
            && unexplained.contains("nothing changed"),
        "{out}"
    );
    assert!(
        unexplained.contains("demo/fig c10 OASIS r1")
            && unexplained.contains("solver code changed, version not bumped"),
        "{out}"
    );
    assert!(!unexplained.contains("OASIS r0"), "{out}");
    // The FAIL line names them again, last: a CI log may keep only the output's tail.
    let tail = out
        .split("FAIL: 2 cells changed value")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        tail.contains(&format!("demo/fig c10 Euclidean r1 [{}]", &euclid1[..10]))
            && tail.contains("demo/fig c10 OASIS r1")
            && !tail.contains("OASIS r0"),
        "{out}"
    );
    let (code, report) = ws.json();
    assert_eq!(code, 1);
    assert_eq!(
        line(&report, "OASIS", 1)["explanation"],
        "code_without_version"
    );
    assert_eq!(line(&report, "Euclidean", 1)["explanation"], "nothing");

    // Blessing makes the reference hold B's cells: then nothing differs, and a cell identical
    // on both sides is kept byte for byte.
    let kept = std::fs::read(Cache::at(&ws.path("reference")).path(&euclid)).unwrap();
    let (code, _) = ws.compare(&["--bless"]);
    assert_eq!(code, 0);
    let (code, report) = ws.json();
    assert_eq!(code, 0, "{report}");
    assert_eq!(count(&report, "identical"), 4, "{report}");
    assert_eq!(
        std::fs::read(Cache::at(&ws.path("reference")).path(&euclid)).unwrap(),
        kept
    );
    assert!(!Cache::at(&ws.path("reference")).path(&oasis0).exists());

    // (d) Cells on one side only: a cell B lacks, and an archived cell of other parameters
    // that pairs with no cell of the spec.
    cache.remove(&euclid).unwrap();
    let reference = Cache::at(&ws.path("reference"));
    let mut other = reference.get(&euclid1).unwrap();
    other.canonical["solver"]["params"] = serde_json::json!({ "normalize": "other" });
    other.key = cell_key(&other.canonical);
    reference.put(&other).unwrap();
    let (code, out) = ws.compare(&[]);
    assert_eq!(code, 0, "one-sided cells are listed, not failed: {out}");
    let only_a = out
        .split("Only in A:")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        only_a.contains(&format!("demo/fig c10 Euclidean r0 [{}]", &euclid[..10])),
        "{out}"
    );
    assert!(
        only_a.contains(&other.key[..10])
            && only_a.contains("no cell of the selected specs pairs with"),
        "{out}"
    );
    assert!(!out.contains("Only in B:"), "{out}");
    // The claim is judged on A; on B, which lacks one of its cells, it is not comparable.
    let (_, report) = ws.json();
    assert_eq!(report["claims"][0]["b"], "not comparable", "{report}");
    assert_eq!(report["claims"][0]["changed"], true, "{report}");
    // Blessing from an incomplete run is refused.
    let o = ws.bless(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not blessing"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Neither a results directory nor an archive: an error naming it.
    let o = ws.run(&["compare", "experiments", "results"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither a results directory"));
}

#[test]
fn blessing_one_spec_keeps_the_reference_cells_of_another() {
    let ws = Ws::new();
    // A second spec on the same data with the same solvers and a third repeat: its r2 cells
    // are of the kinds demo/fig plans, but demo/fig does not plan them.
    std::fs::write(
        ws.path("experiments/demo/more.toml"),
        SPEC.replace("repeats = 2", "repeats = 3"),
    )
    .unwrap();
    let o = ws.run(&["run", "demo/fig", "demo/more", "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ws.run(&["archive", "export", "--to", "reference"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cache = ws.cache();
    let third: Vec<String> = cache
        .keys()
        .into_iter()
        .filter(|k| cache.get(k).is_some_and(|c| c.repeat == 2))
        .collect();
    assert_eq!(third.len(), 2, "OASIS and Euclidean at r2");
    // A leftover: a reference cell of other parameters that no spec plans.
    let reference = Cache::at(&ws.path("reference"));
    let mut leftover = reference.get(&third[0]).unwrap();
    leftover.canonical["solver"]["params"] = serde_json::json!({ "normalize": "other" });
    leftover.key = cell_key(&leftover.canonical);
    reference.put(&leftover).unwrap();
    // Comparing demo/fig alone lists the leftover as one-sided, not demo/more's r2 cells.
    let (code, out) = ws.compare(&["demo/fig"]);
    assert_eq!(code, 0, "{out}");
    let only_a = out
        .split("Only in A:")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    assert!(only_a.contains(&leftover.key[..10]), "{out}");
    assert!(third.iter().all(|k| !only_a.contains(&k[..10])), "{out}");
    let o = ws.bless(&["demo/fig"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !reference.path(&leftover.key).exists(),
        "the leftover is dropped"
    );
    for key in &third {
        assert!(
            reference.path(key).is_file(),
            "blessing demo/fig deleted demo/more's cell {key}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // Blessing every spec keeps them too: they are planned.
    reference.put(&leftover).unwrap();
    let o = ws.bless(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(third.iter().all(|k| reference.path(k).is_file()));
    assert!(!reference.path(&leftover.key).exists());
}
