//! Instruction-count gates of the hot kernels: one OASIS PA-I step at MNIST and at 20
//! Newsgroups densities, one LORETA-1 step (at n = m = 1,000 and at issue 13's 10,000; also in
//! Gram form), one
//! d-AROMA and one f-AROMA round, one Givens rotation (d = 100, 1,000, 10,000), one sweep
//! of Givens tensor decomposition, one low-rank KR gradient (tensor ranking, Eqs. 23–24).
//! Each kernel runs a fixed, seeded workload under valgrind's callgrind,
//! counting only the instructions executed inside [`measured`]
//! (`--collect-atstart=no --toggle-collect=*gate_measured*`), and the count per operation is
//! compared with the baseline committed in `results/references/instructions.json`: more than
//! `tolerance` above it fails (exit 1), printing old, new and ratio. Instruction counts do not
//! depend on the machine's load, so the gate is exact where wall time on shared 2-core
//! machines is not.
//!
//! Under valgrind the CPU reports no AVX-512 (valgrind does not emulate it), so the kernels run
//! their AVX2 or baseline paths: the counts gate the code, not this machine's widest path.
//!
//! `cargo bench --workspace --bench gates` runs every gate (`just check` does);
//! `DYAD_GATES_BLESS=1` writes the measured counts as the new baselines (after a deliberate
//! change, reviewed like any other); `DYAD_GATES_BLESS=name[,name...]` blesses only the named
//! gates (a new gate, or the one kernel a change meant to alter), keeps every other baseline
//! and still gates the others. Without valgrind the gates are skipped with a message,
//! unless `DYAD_REQUIRE_VALGRIND=1` (CI) makes that a failure.
//!
//! Why not gungraun: it needs its own runner binary (a few hundred thousand lines of
//! dependencies) built in CI to do what this file does with valgrind alone.

use dyad_aroma::{DiagonalAroma, FactoredAroma, Update};
use dyad_core::observe::NullObserver;
use dyad_core::{Schedule, SparseVec, seeded};
use dyad_givens::fixtures::planted_orthogonal_tensor;
use dyad_givens::{Givens, GivensTensorConfig, MomentTensor, TensorDecomposer};
use dyad_kernels::fixtures::random_sparse;
use dyad_loreta::gram::DEFAULT_REFRESH_EVERY;
use dyad_loreta::init::gaussian;
use dyad_loreta::{Loreta1, Loreta1Gram, PinvTolerances, ScaledSparse};
use dyad_oasis::{BilinearModel, StepScratch};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use sprs::CsVec;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// A gate: its name, the number of operations one run measures, and the workload.
struct Gate {
    name: &'static str,
    about: &'static str,
    ops: u64,
    run: fn(u64),
}

/// The instructions of `f` are the ones counted (the toggle matches this function's name).
#[inline(never)]
fn gate_measured(f: &mut dyn FnMut()) {
    f();
}

/// `ops` OASIS PA-I steps on unit-norm sparse rows of dimension `d` with `nnz` non-zeros
/// (a pool of 256 rows, triplets cycling through it).
fn oasis_steps(d: usize, nnz: usize, ops: u64) {
    let mut rng = seeded(1);
    let pool: Vec<CsVec<f64>> = (0..256).map(|_| random_sparse(d, nnz, &mut rng)).collect();
    let mut model = BilinearModel::identity(d);
    let mut scratch = StepScratch::default();
    let mut i = 0usize;
    gate_measured(&mut || {
        for _ in 0..ops {
            let (p, a, n) = (
                &pool[i % 256],
                &pool[(i * 7 + 1) % 256],
                &pool[(i * 13 + 2) % 256],
            );
            i += 1;
            black_box(model.pa1_step(p.view(), a.view(), n.view(), 0.1, &mut scratch));
        }
    });
}

fn oasis_mnist(ops: u64) {
    oasis_steps(784, 150, ops)
}

fn oasis_20ng(ops: u64) {
    oasis_steps(1000, 30, ops)
}

/// `ops` LORETA-1 steps at `n = m = 1,000`, `k = 50` on gradients shaped like the triplet loss
/// (`q` with 100 non-zeros, `p+ - p-` with about 200).
fn loreta1(ops: u64) {
    let (n, k) = (1_000, 50);
    let mut rng = seeded(1);
    let (a, b) = (gaussian(n, k, 1.0, &mut rng), gaussian(n, k, 1.0, &mut rng));
    let mut state = Loreta1::new(a, b, PinvTolerances::default()).expect("full rank");
    let grads: Vec<(CsVec<f64>, SparseVec)> = (0..64)
        .map(|_| {
            let q = random_sparse(n, 100, &mut rng);
            let (x, y) = (
                random_sparse(n, 100, &mut rng),
                random_sparse(n, 100, &mut rng),
            );
            let mut d = SparseVec::default();
            d.set_difference(x.view(), y.view());
            (q, d)
        })
        .collect();
    let mut i = 0usize;
    gate_measured(&mut || {
        for _ in 0..ops {
            let (q, d) = &grads[i % grads.len()];
            i += 1;
            black_box(
                state
                    .step(
                        ScaledSparse::new(q.indices(), q.data(), 0.01),
                        ScaledSparse::new(&d.indices, &d.values, 1.0),
                    )
                    .expect("finite step"),
            );
        }
    });
}

/// `ops` LORETA-1 steps at issue 13's size, `n = m = 10,000`, `k = 50`, from Gaussian factors
/// (so both pseudo-inverse updates take Algorithm 7's generic branch), on sparse bag-of-words
/// triplets: `g1 = eta q` and `g2 = p+ - p-` for unit-norm documents of 80 words each (about
/// the density of a 20 Newsgroups document over 10,000 terms). `step` is one step of the
/// state built from the two factors.
fn loreta1_10k_with<S>(
    ops: u64,
    build: impl FnOnce(Array2<f64>, Array2<f64>) -> S,
    mut step: impl FnMut(&mut S, ScaledSparse<'_>, ScaledSparse<'_>),
) {
    let (n, k, words) = (10_000, 50, 80);
    let mut rng = seeded(2);
    let (a, b) = (gaussian(n, k, 1.0, &mut rng), gaussian(n, k, 1.0, &mut rng));
    let mut state = build(a, b);
    let docs: Vec<CsVec<f64>> = (0..48).map(|_| random_sparse(n, words, &mut rng)).collect();
    let triplets: Vec<(usize, SparseVec)> = (0..16)
        .map(|i| {
            let mut d = SparseVec::default();
            d.set_difference(docs[3 * i + 1].view(), docs[3 * i + 2].view());
            (3 * i, d)
        })
        .collect();
    let mut i = 0usize;
    gate_measured(&mut || {
        for _ in 0..ops {
            let (q, d) = &triplets[i % triplets.len()];
            let q = &docs[*q];
            i += 1;
            step(
                &mut state,
                ScaledSparse::new(q.indices(), q.data(), 0.01),
                ScaledSparse::new(&d.indices, &d.values, 1.0),
            );
        }
    });
}

fn loreta1_10k(ops: u64) {
    loreta1_10k_with(
        ops,
        |a, b| Loreta1::new(a, b, PinvTolerances::default()).expect("full rank"),
        |s, g1, g2| {
            black_box(s.step(g1, g2).expect("finite step"));
        },
    )
}

/// The same workload through the Gram form (`loreta::gram`; no refresh falls in the run).
fn loreta1_gram_10k(ops: u64) {
    loreta1_10k_with(
        ops,
        |a, b| {
            Loreta1Gram::new(a, b, PinvTolerances::default(), DEFAULT_REFRESH_EVERY)
                .expect("full rank")
        },
        |s, g1, g2| {
            black_box(s.step(g1, g2).expect("finite step"));
        },
    )
}

/// `ops` low-rank KR objective-and-gradient evaluations (Eqs. 22–24, `O(np² + knp)`) at
/// n = 2,000, p = 50 on a ring lattice with 8 neighbours a point (each point linked to the 4
/// before and after it, weights `1/(1 + distance)`: the sparsity of the paper's 8-NN graph
/// without the kNN search under valgrind), labels by the §4.1 protocol with l = 10 on 10
/// classes (`i mod 10`, class `c` ranked `9 − c`), `B` uniform in [-1, 1].
fn low_rank_kr_gradient(ops: u64) {
    use dyad_tensor_rank::LowRankProblem;
    use dyad_tensor_rank::graph::Laplacian;
    use dyad_tensor_rank::synthetic::class_pairs;
    use rand::Rng as _;
    let (n, p) = (2_000usize, 50usize);
    let mut edges = Vec::new();
    for i in 0..n {
        for d in 1..=4 {
            edges.push((i as u32, ((i + d) % n) as u32, 1.0 / (1.0 + d as f64)));
        }
    }
    let l = Laplacian::from_edges(n, &edges);
    let class: Vec<u32> = (0..n).map(|i| (i % 10) as u32).collect();
    let rank: Vec<f64> = class.iter().map(|&c| 9.0 - c as f64).collect();
    let mut rng = seeded(3);
    let pairs = class_pairs(&class, &rank, 10, &Default::default(), &mut rng).expect("pairs");
    let b = ndarray::Array2::from_shape_fn((n, p), |_| rng.random_range(-1.0..1.0));
    let problem = LowRankProblem::new(l, 0.01, &pairs, p);
    let mut ws = problem.workspace();
    let mut grad = ndarray::Array2::zeros((n, p));
    gate_measured(&mut || {
        for _ in 0..ops {
            black_box(problem.objective_and_gradient(b.view(), &mut ws, grad.view_mut()));
        }
    });
}

/// `ops` Givens rotations applied in place to a pair of columns of length `d` (the O(d)
/// kernel every Givens step uses on its column-major matrices).
fn givens_rotations(d: usize, ops: u64) {
    let mut x: Vec<f64> = (0..d).map(|i| ((i * 31) % 97) as f64 / 97.0).collect();
    let mut y: Vec<f64> = (0..d).map(|i| ((i * 17) % 89) as f64 / 89.0).collect();
    let mut t = 0usize;
    gate_measured(&mut || {
        for _ in 0..ops {
            t += 1;
            let g = Givens::new(0, 1, 0.1 + (t % 13) as f64 * 0.01);
            dyad_givens::rotation::rotate_pair(&mut x, &mut y, g.c, g.s);
        }
    });
    black_box((&x, &y));
}

fn givens_rotation_100(ops: u64) {
    givens_rotations(100, ops);
}
fn givens_rotation(ops: u64) {
    givens_rotations(1_000, ops);
}
fn givens_rotation_10k(ops: u64) {
    givens_rotations(10_000, ops);
}

/// `ops` sweeps of Algorithm 3 (K(K-1)/2 = 190 coordinate steps each, closed-form angle) on a
/// noisy orthogonally decomposable 20 x 20 x 20 tensor, the size of the paper's GMM
/// experiments (setting up the problem, a copy of the tensor, is counted too: it is 1 % of a
/// sweep).
fn givens_tensor_sweeps(ops: u64) {
    let planted = planted_orthogonal_tensor(20, 0.1, 7);
    let input = MomentTensor::Dense(planted.tensor);
    let config = GivensTensorConfig {
        tolerance: 0.0,
        ..GivensTensorConfig::default()
    };
    let schedule = Schedule::new(vec![190 * ops]);
    gate_measured(&mut || {
        config
            .fit(&input, &schedule, &mut seeded(2), &mut NullObserver)
            .expect("decomposes");
    });
}

/// Query rows and object differences at 20 Newsgroups density (d = 1,000, 30 non-zeros a
/// row, so about 60 in `p = p+ - p-`), each round followed by its negation so that every
/// round updates (no model satisfies both).
fn aroma_rounds(ops: u64) -> Vec<(SparseVec, SparseVec)> {
    let mut rng = seeded(3);
    let rows: Vec<CsVec<f64>> = (0..129)
        .map(|_| random_sparse(1000, 30, &mut rng))
        .collect();
    let sv = |v: &CsVec<f64>| SparseVec {
        indices: v.indices().to_vec(),
        values: v.data().to_vec(),
    };
    (0..ops as usize)
        .map(|i| {
            let j = (i / 2) % 128;
            let mut p = SparseVec::default();
            p.set_difference(rows[j + 1].view(), rows[(j * 7 + 3) % 129].view());
            if i % 2 == 1 {
                p.values.iter_mut().for_each(|v| *v = -*v);
            }
            (sv(&rows[j]), p)
        })
        .collect()
}

fn d_aroma(ops: u64) {
    let rounds = aroma_rounds(ops);
    let mut model = DiagonalAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
    gate_measured(&mut || {
        for (q, p) in &rounds {
            black_box(model.step((&q.indices, &q.values), (&p.indices, &p.values)));
        }
    });
}

fn f_aroma(ops: u64) {
    let rounds = aroma_rounds(ops);
    let mut model = FactoredAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
    gate_measured(&mut || {
        for (q, p) in &rounds {
            black_box(model.step((&q.indices, &q.values), (&p.indices, &p.values))).ok();
        }
    });
}

static GATES: &[Gate] = &[
    Gate {
        name: "oasis_step_mnist",
        about: "one OASIS PA-I step, d = 784, 150 non-zeros (MNIST density)",
        ops: 200,
        run: oasis_mnist,
    },
    Gate {
        name: "oasis_step_20ng",
        about: "one OASIS PA-I step, d = 1,000, 30 non-zeros (20 Newsgroups density)",
        ops: 1000,
        run: oasis_20ng,
    },
    Gate {
        name: "loreta1_step",
        about: "one LORETA-1 step, n = m = 1,000, k = 50, rank-one sparse gradient",
        ops: 50,
        run: loreta1,
    },
    Gate {
        name: "loreta1_step_10k",
        about: "one LORETA-1 step, n = m = 10,000, k = 50, bag-of-words triplet (80 words a document)",
        ops: 20,
        run: loreta1_10k,
    },
    Gate {
        name: "loreta1_gram_step_10k",
        about: "one LORETA-1 step in Gram form, n = m = 10,000, k = 50, bag-of-words triplet (80 words a document)",
        ops: 200,
        run: loreta1_gram_10k,
    },
    Gate {
        name: "d_aroma_round",
        about: "one updating d-AROMA round, d = 1,000, 30 non-zeros a row (20 Newsgroups density)",
        ops: 1000,
        run: d_aroma,
    },
    Gate {
        name: "f_aroma_round",
        about: "one updating f-AROMA round, d = 1,000, 20 Newsgroups density (32 rounds: one queue flush amortised)",
        ops: 32,
        run: f_aroma,
    },
    Gate {
        name: "givens_rotation_100",
        about: "one Givens rotation of two columns, d = 100",
        ops: 2000,
        run: givens_rotation_100,
    },
    Gate {
        name: "givens_rotation",
        about: "one Givens rotation of two columns, d = 1,000",
        ops: 2000,
        run: givens_rotation,
    },
    Gate {
        name: "givens_rotation_10k",
        about: "one Givens rotation of two columns, d = 10,000",
        ops: 200,
        run: givens_rotation_10k,
    },
    Gate {
        name: "givens_tensor_sweep",
        about: "one sweep (190 coordinate steps) of Givens tensor decomposition, K = 20",
        ops: 5,
        run: givens_tensor_sweeps,
    },
    Gate {
        name: "low_rank_kr_gradient",
        about: "one low-rank KR objective and gradient (Eqs. 22-24), n = 2,000, p = 50, 8 neighbours a point, 450 + 100 labelled pairs",
        ops: 4,
        run: low_rank_kr_gradient,
    },
];

/// The committed baselines: instructions per operation.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Baselines {
    /// Relative growth that still passes (e.g. 0.03).
    tolerance: f64,
    gates: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    instructions_per_op: f64,
    about: String,
}

fn baseline_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/references/instructions.json")
}

/// The summary count of a callgrind output file.
fn summary(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .or_else(|| text.lines().find_map(|l| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{}: no summary line", path.display()))
}

/// Run one gate under callgrind; its instructions per operation.
fn count(gate: &Gate, dir: &Path) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = dir.join(format!("callgrind.{}.out", gate.name));
    let status = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=*gate_measured*",
            &format!("--callgrind-out-file={}", out.display()),
        ])
        .arg(&exe)
        .args(["--gate", gate.name])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("running valgrind: {e}"))?;
    if !status.status.success() {
        return Err(format!(
            "valgrind failed for {}: {}",
            gate.name,
            String::from_utf8_lossy(&status.stderr)
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    Ok(summary(&out)? as f64 / gate.ops as f64)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // Child mode: run one gate's workload (under valgrind).
    if let Some(i) = args.iter().position(|a| a == "--gate") {
        let name = args.get(i + 1).map(String::as_str).unwrap_or_default();
        let Some(g) = GATES.iter().find(|g| g.name == name) else {
            eprintln!("no gate {name}");
            return ExitCode::from(2);
        };
        (g.run)(g.ops);
        return ExitCode::SUCCESS;
    }
    let have_valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_valgrind {
        let required = std::env::var("DYAD_REQUIRE_VALGRIND").is_ok_and(|v| v == "1");
        eprintln!(
            "{}: valgrind not found; the instruction-count gates need it (Debian: apt-get install valgrind)",
            if required { "FAILED" } else { "SKIPPED" }
        );
        return if required {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    // Which gates to bless: none, all (`1`) or the named ones.
    let bless_var = std::env::var("DYAD_GATES_BLESS").unwrap_or_default();
    let blessed = |name: &str| {
        bless_var == "1"
            || bless_var
                .split(',')
                .any(|n| !n.is_empty() && n.trim() == name)
    };
    let bless = !bless_var.is_empty() && bless_var != "0";
    let path = baseline_path();
    let mut base: Baselines = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Baselines {
            tolerance: 0.03,
            ..Default::default()
        });
    let dir = std::env::temp_dir().join(format!("dyad-gates-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut failed = Vec::new();
    println!(
        "{:<20} {:>14} {:>14} {:>8}  (instructions per operation; tolerance {:.0} %)",
        "gate",
        "baseline",
        "measured",
        "ratio",
        base.tolerance * 100.0
    );
    for g in GATES {
        let new = match count(g, &dir) {
            Ok(n) => n,
            Err(e) => {
                println!("{:<20} ERROR {e}", g.name);
                failed.push(g.name);
                continue;
            }
        };
        let old = base.gates.get(g.name).map(|e| e.instructions_per_op);
        let ratio = old.map(|o| new / o);
        let verdict = match ratio {
            None => "new",
            Some(r) if r > 1.0 + base.tolerance => "REGRESSED",
            Some(r) if r < 1.0 - base.tolerance => "faster",
            Some(_) => "ok",
        };
        println!(
            "{:<20} {:>14} {:>14.0} {:>8}  {verdict}",
            g.name,
            old.map_or("—".into(), |o| format!("{o:.0}")),
            new,
            ratio.map_or("—".into(), |r| format!("{r:.3}")),
        );
        if (verdict == "REGRESSED" || verdict == "new") && !blessed(g.name) {
            failed.push(g.name);
        }
        if blessed(g.name) {
            base.gates.insert(
                g.name.into(),
                Entry {
                    instructions_per_op: new,
                    about: g.about.into(),
                },
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if bless {
        let text = serde_json::to_string_pretty(&base).expect("serializable") + "\n";
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("baselines written to {}", path.display());
    }
    if failed.is_empty() {
        println!("all {} gates within their baselines", GATES.len());
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "{} gate(s) failed: {} (a new gate needs a baseline: DYAD_GATES_BLESS=1)",
            failed.len(),
            failed.join(", ")
        );
        ExitCode::FAILURE
    }
}
