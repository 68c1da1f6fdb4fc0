//! Python peers: learners that live in Python, run as solvers of the harness and judged by
//! dyad's own evaluation code.
//!
//! A peer is a [`Ranker`] whose `fit` writes the training rows and everything the learner
//! needs to a temporary directory, runs `python peers/<script>.py DIR` in the peers' virtual
//! environment, and reads back the model the script wrote at each checkpoint, which it hands
//! to the observer as a dyad model ([`dyad_oasis::BilinearModel`] for `W`,
//! [`dyad_metric_baselines::metric::Mahalanobis`] for `M`, [`dyad_loreta::LowRankModel`] for
//! the factors `A`, `B` of `W = A B^T`, which travel as two `d x k` arrays, never as `d x d`)
//! with the script's own training clock. The protocol (files, formats, the report) is
//! documented once, in `peers/dyadpeer.py`, the helper every script uses. Here, [`params`]
//! holds what each peer is and takes, [`protocol`] the files exchanged with a script and how
//! its models come back, [`venv`] the virtual environment.
//!
//! Triplet learners receive the exact triplets dyad's OASIS would draw from the same
//! generator ([`dyad_core::sampling::TripletSampler`], one per step), so a peer and dyad's
//! OASIS can be compared step for step. A peer's canonical parameters (hashed into its cells' keys) hold the sha256
//! of its script, of the protocol helper and of the pinned requirements file: editing any of
//! them recomputes exactly the peer's cells.
//!
//! The virtual environment lives in `.venv-peers/` at the workspace root (or
//! `$DYAD_PEERS_VENV`); it is created from `peers/requirements.txt` on first use (or by
//! `just peers`, i.e. `dyad peers`) and rebuilt when the requirements change. Specs without
//! peers never touch Python.

pub mod npy;
pub mod params;
pub mod protocol;
pub mod venv;

pub use params::*;
pub use protocol::{
    HELPER, PROTOCOL, PeerMatrix, PeerRanker, PeerSparsePca, PeerTensor, REQUIREMENTS,
    peer_command, pinned_kernels,
};
pub use venv::{PeerEnv, tail};

use crate::registry::{BuiltSolver, typed};
use dyad_givens::{SparsePca, TensorDecomposer};
use dyad_kernels::{ParamError, Ranker};

/// Build a peer from spec parameters with the peers located by [`PeerEnv::locate`] (the
/// registry's builder).
pub fn peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    peer_in::<P>(v, &PeerEnv::locate())
}

/// Build a peer whose scripts and environment are `env`.
pub fn peer_in<P: PeerParams>(v: toml::Value, env: &PeerEnv) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn Ranker>(v, env, |p| Box::new(p))
}

/// Build a sparse-PCA peer from spec parameters (the registry's builder).
pub fn sparse_pca_peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn SparsePca>(v, &PeerEnv::locate(), |p| Box::new(PeerSparsePca(p)))
}

/// Build a tensor-decomposition peer from spec parameters (the registry's builder).
pub fn tensor_peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn TensorDecomposer>(v, &PeerEnv::locate(), |p| Box::new(PeerTensor(p)))
}

/// Typed, checked parameters, the peer keyed by its files, boxed as a member of family `F`.
fn build<P: PeerParams, F: ?Sized + Send + Sync + 'static>(
    v: toml::Value,
    env: &PeerEnv,
    wrap: impl FnOnce(PeerRanker) -> Box<F>,
) -> Result<BuiltSolver, ParamError> {
    let params: P = typed(v)?;
    params.check()?;
    let peer = PeerRanker::new(P::SCRIPT, env.clone(), &params)?;
    let canonical = peer.canonical();
    Ok(BuiltSolver::new(wrap(peer), canonical, P::SCRIPT.iterative))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn the_repository_holds_every_peer_and_the_canonical_parameters_hash_them() {
        let env = PeerEnv::locate();
        let v: toml::Value = toml::from_str("c = 0.5").unwrap();
        let b = peer_in::<OasisNumpyParams>(v, &env).unwrap();
        assert_eq!(b.canonical["c"], serde_json::json!(0.5));
        let peer = &b.canonical["peer"];
        assert_eq!(peer["script"], "oasis_numpy.py");
        assert_eq!(
            peer["script_sha256"],
            serde_json::json!(env.sha256("oasis_numpy.py").unwrap())
        );
        assert_eq!(peer["requirements_sha256"].as_str().unwrap().len(), 64);
        assert!(b.iterative);
        let empty = toml::Value::Table(Default::default());
        let l = peer_in::<LmnnMetricLearnParams>(empty.clone(), &env).unwrap();
        assert_eq!(l.canonical["n_neighbors"], serde_json::json!(3));
        assert!(!l.iterative);
        let i = peer_in::<ItmlMetricLearnParams>(empty, &env).unwrap();
        assert_eq!(i.canonical["n_constraints"], serde_json::Value::Null);
        // Unknown and out-of-domain parameters name themselves.
        let bad = |s: &str| {
            peer_in::<OasisNumpyParams>(toml::from_str(s).unwrap(), &env)
                .err()
                .unwrap()
                .param
        };
        assert_eq!(bad("C = 1.0"), "C");
        assert_eq!(bad("c = 0.0"), "c");
        assert_eq!(bad("peer = 1"), "peer");
        let e = peer_in::<ItmlMetricLearnParams>(toml::from_str("prior = \"x\"").unwrap(), &env)
            .err()
            .unwrap();
        assert_eq!(e.param, "prior");
        // A missing script is an error at build (plan) time, naming the file.
        let elsewhere = PeerEnv {
            root: env.root.join("no-such-dir"),
            venv: env.venv.clone(),
        };
        let e = peer_in::<OasisNumpyParams>(toml::Value::Table(Default::default()), &elsewhere)
            .err()
            .unwrap();
        assert!(e.message.contains("oasis_numpy.py"), "{e}");
    }

    #[test]
    fn the_loreta_peers_take_dyads_rank_and_step_size_and_report_factors() {
        let env = PeerEnv::locate();
        let empty = toml::Value::Table(Default::default());
        let n = peer_in::<LoretaNumpyParams>(empty.clone(), &env).unwrap();
        assert_eq!(n.canonical["rank"], serde_json::json!(10));
        assert_eq!(n.canonical["eta"], serde_json::json!(0.1));
        assert_eq!(n.canonical["peer"]["script"], "loreta_numpy.py");
        assert!(n.iterative);
        let v: toml::Value = toml::from_str("rank = 50\neta = 0.3").unwrap();
        let p = peer_in::<LoretaPymanoptParams>(v, &env).unwrap();
        assert_eq!(p.canonical["rank"], serde_json::json!(50));
        assert_eq!(p.canonical["peer"]["script"], "loreta_pymanopt.py");
        // The two scripts differ, so do their keys.
        assert_ne!(
            n.canonical["peer"]["script_sha256"],
            p.canonical["peer"]["script_sha256"]
        );
        let bad = |s: &str| {
            peer_in::<LoretaNumpyParams>(toml::from_str(s).unwrap(), &env)
                .err()
                .unwrap()
                .param
        };
        assert_eq!(bad("rank = 0"), "rank");
        assert_eq!(bad("eta = 0.0"), "eta");
        assert_eq!(bad("eta = nan"), "eta");
        assert_eq!(bad("c = 0.1"), "c");
        assert_eq!(LORETA_NUMPY.model.kind(), "lowrank");
        // Factors come back as W = A B^T without forming W until asked.
        let (a, b) = (
            Array2::from_shape_fn((4, 2), |(i, j)| (i + 2 * j) as f64),
            Array2::from_shape_fn((4, 2), |(i, j)| (i * j) as f64 - 1.0),
        );
        let w = PeerMatrix::Factors(a.clone(), b.clone()).dense();
        assert_eq!(w, a.dot(&b.t()));
    }
}
