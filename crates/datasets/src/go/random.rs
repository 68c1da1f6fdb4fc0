//! The random ontology of funcish.md §8 item 1, for when the Gene Ontology is not installed:
//! `terms` terms on 7 levels (level sizes growing by 1.6×), each non-root term with 1–3
//! `is_a` parents on earlier levels; a "neural" subtree (a level-1 term, and below level 1
//! each term with probability ~10 %, whose parents stay inside the subtree, so about 8 % of
//! the terms); and `genes` genes, each annotated to 1–6 terms drawn with Zipf-like
//! popularity (`1/(rank + 1)^0.8` over a random order of the non-root terms).

use super::{Annotations, GoData, Namespace, Ontology, Relation, Term};
use dyad_core::{Rng, derive_seed, seeded};
use rand::Rng as _;
use rand::seq::{IndexedRandom, SliceRandom};
use rand_distr::Distribution;
use serde::{Deserialize, Serialize};

/// Parameters of the random ontology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomGoConfig {
    #[serde(default = "d_terms")]
    pub terms: usize,
    #[serde(default = "d_genes")]
    pub genes: usize,
    #[serde(default)]
    pub seed: u64,
}

fn d_terms() -> usize {
    400
}
fn d_genes() -> usize {
    1500
}

impl RandomGoConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.terms < 20 {
            return Err(format!("`terms` must be at least 20; got {}", self.terms));
        }
        if self.genes < 1 {
            return Err("`genes` must be positive".into());
        }
        Ok(())
    }
}

/// The random DAG with its neural flags.
fn random_ontology(n: usize, rng: &mut Rng) -> (Ontology, Vec<bool>) {
    const LEVELS: usize = 7;
    let mut level = vec![0usize; n];
    let mut neural = vec![false; n];
    let weights: Vec<f64> = (1..LEVELS).map(|l| 1.6f64.powi(l as i32)).collect();
    let total: f64 = weights.iter().sum();
    let mut t = 1;
    for (l, wgt) in weights.iter().enumerate() {
        let k = if l + 2 == LEVELS {
            n - t
        } else {
            ((n - 1) as f64 * wgt / total).round().max(2.0) as usize
        };
        for _ in 0..k.min(n - t) {
            level[t] = l + 1;
            t += 1;
        }
    }
    neural[1] = true;
    let mut parents: Vec<Vec<(u32, Relation)>> = vec![Vec::new(); n];
    for t in 1..n {
        if t > 1 && level[t] >= 2 {
            neural[t] = rng.random_bool(0.104);
        }
        let pool: Vec<u32> = (0..t as u32)
            .filter(|&p| {
                level[p as usize] < level[t]
                    && if neural[t] {
                        neural[p as usize]
                    } else {
                        !neural[p as usize]
                    }
            })
            .collect();
        let pool = if pool.is_empty() { vec![0] } else { pool };
        let k = rng.random_range(1..=3).min(pool.len());
        let mut chosen: Vec<u32> = pool.choose_multiple(rng, k).copied().collect();
        chosen.sort_unstable();
        parents[t] = chosen.into_iter().map(|p| (p, Relation::IsA)).collect();
    }
    let terms = (0..n)
        .map(|t| Term {
            id: format!("RND:{t:05}"),
            name: if t == 0 {
                "random biological process (root)".into()
            } else if neural[t] {
                format!("random neural process {t}")
            } else {
                format!("random process {t}")
            },
            namespace: Namespace::BiologicalProcess,
        })
        .collect();
    let onto = Ontology::new(
        terms,
        parents,
        Vec::new(),
        "random".into(),
        format!("random DAG of {n} terms"),
    )
    .expect("a DAG by construction");
    (onto, neural)
}

/// The random ontology and its random gene annotations.
pub fn random_go(cfg: &RandomGoConfig) -> GoData {
    let mut rng = seeded(derive_seed(cfg.seed, "go-random"));
    let (ontology, _neural) = random_ontology(cfg.terms, &mut rng);
    let mut order: Vec<u32> = (1..ontology.len() as u32).collect();
    order.shuffle(&mut rng);
    let pop: Vec<f64> = (0..order.len())
        .map(|r| 1.0 / ((r + 1) as f64).powf(0.8))
        .collect();
    let dist = rand::distr::weighted::WeightedIndex::new(&pop).expect("positive weights");
    let direct: Vec<Vec<u32>> = (0..cfg.genes)
        .map(|_| {
            let k = rng.random_range(1..=6);
            let mut ts: Vec<u32> = (0..k).map(|_| order[dist.sample(&mut rng)]).collect();
            ts.sort_unstable();
            ts.dedup();
            ts
        })
        .collect();
    let annotations = Annotations {
        genes: (0..cfg.genes).map(|g| format!("G{g:05}")).collect(),
        direct,
        unknown_terms: 0,
        negated: 0,
        source: "random".into(),
    };
    GoData {
        // Term 1 heads the neural subtree (`neural` marks it and its descendants).
        neural_roots: vec![1],
        ontology,
        annotations,
        real: false,
    }
}
