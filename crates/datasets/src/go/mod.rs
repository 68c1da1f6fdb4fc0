//! The Gene Ontology and gene-to-GO annotations (FuncISH, funcish.md §2.5, §2.8).
//!
//! # Formats read
//!
//! * **`go-basic.obo`** (OBO 1.2 flat file, the GO Consortium's canonical download, plain or
//!   gzipped): `[Term]` stanzas with `id`, `name`, `namespace`, `is_a: GO:… ! name`,
//!   `relationship: <type> GO:… ! name`, `alt_id` and `is_obsolete`; other stanzas
//!   (`[Typedef]`) and tags are skipped. Obsolete terms are dropped with their edges. An edge
//!   to a term the file does not define is an error naming the line.
//! * **`GO.sqlite`** of Bioconductor's `GO.db` (Debian package `r-bioc-go.db`, 3.16.0: built
//!   from go-basic.obo of 2022-07-01, 43,559 terms): tables `go_term`, `go_{bp,mf,cc}_parents`
//!   (relationship types `isa`, `part of`, `regulates`, …), secondary ids in `go_synonym`, the
//!   release in `metadata.GOSOURCEDATE`.
//! * **GAF 2.x** annotation files (`goa_human.gaf.gz`, `mgi.gaf.gz`, …): tab-separated, 15–17
//!   columns; the gene is column 3 (symbol), the term column 5, the evidence column 7, the
//!   aspect column 9 (`P`, `F`, `C`); lines whose qualifier (column 4) contains `NOT` are
//!   negative statements and are skipped; `!` lines are comments.
//! * **`org.Hs.eg.sqlite`** of Bioconductor's `org.Hs.eg.db` (Debian package
//!   `r-bioc-org.hs.eg.db`): table `go_bp` (gene `_id`, `go_id`, evidence) joined with
//!   `gene_info.symbol`. These are *human* annotations: the paper used mouse ones, which no
//!   package registry ships (funcish.md §3); a GAF file (e.g. MGI's) in `$DYAD_DATA_DIR/go/`
//!   takes precedence over it.
//!
//! Annotations to terms the ontology does not know (obsolete since the annotation file was
//! made, or of another release) are counted and dropped, never an error: annotation files
//! and ontology releases are published separately.
//!
//! # Choices (funcish.md §2.5, §2.8: \[A\])
//!
//! * **Ancestors** follow `is_a` and `part_of` edges (the true-path rule over the two
//!   relations GO guarantees to propagate); `regulates` edges are kept in [`Ontology::parents`]
//!   but not followed. Ancestor sets include the term itself.
//! * **Propagation**: a gene annotated to a term is annotated to all its ancestors.
//! * **Evidence codes**: all by default; [`AnnotationFilter`] can keep or drop a list.
//! * **Information content** `IC(t) = −log10(#genes(t) / #genes)` over the gene universe in
//!   use (the imaged genes, spec default), with propagated counts, so the root has IC 0.
//! * **The nervous-system categories** (the paper's 164, not listed there): the categories that
//!   descend (`is_a`/`part_of`, or-self) from [`NEURAL_ROOTS`]: "nervous system development",
//!   "nervous system process" (formerly "neurological system process") and "synaptic
//!   signaling" (which holds "chemical synaptic transmission", formerly "synaptic
//!   transmission"): the three candidates the spec names.

pub mod provider;
pub mod random;

use crate::DataError;
use crate::formats::expr_text::Lines;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// GO's three namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Namespace {
    BiologicalProcess,
    MolecularFunction,
    CellularComponent,
}

impl Namespace {
    /// From the OBO `namespace` value.
    pub fn from_obo(s: &str) -> Option<Self> {
        match s {
            "biological_process" => Some(Self::BiologicalProcess),
            "molecular_function" => Some(Self::MolecularFunction),
            "cellular_component" => Some(Self::CellularComponent),
            _ => None,
        }
    }

    /// From GO.db's `ontology` column and GAF's aspect column (`BP`/`P`, …).
    pub fn from_code(s: &str) -> Option<Self> {
        match s {
            "BP" | "P" => Some(Self::BiologicalProcess),
            "MF" | "F" => Some(Self::MolecularFunction),
            "CC" | "C" => Some(Self::CellularComponent),
            _ => None,
        }
    }

    fn sqlite_table(self) -> &'static str {
        match self {
            Self::BiologicalProcess => "go_bp_parents",
            Self::MolecularFunction => "go_mf_parents",
            Self::CellularComponent => "go_cc_parents",
        }
    }
}

/// The relation of a term to one of its parents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    IsA,
    PartOf,
    Regulates,
    NegativelyRegulates,
    PositivelyRegulates,
    Other,
}

impl Relation {
    fn parse(s: &str) -> Self {
        match s {
            "is_a" | "isa" => Self::IsA,
            "part_of" | "part of" => Self::PartOf,
            "regulates" => Self::Regulates,
            "negatively_regulates" | "negatively regulates" => Self::NegativelyRegulates,
            "positively_regulates" | "positively regulates" => Self::PositivelyRegulates,
            _ => Self::Other,
        }
    }

    /// Whether annotations propagate along this relation (the true-path rule's `is_a` and
    /// `part_of`).
    pub fn propagates(self) -> bool {
        matches!(self, Self::IsA | Self::PartOf)
    }
}

/// One GO term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// `GO:0008150`.
    pub id: String,
    pub name: String,
    pub namespace: Namespace,
}

/// The roots of the nervous-system categories (see the module documentation).
pub const NEURAL_ROOTS: [&str; 3] = ["GO:0007399", "GO:0050877", "GO:0099536"];
/// The root of the biological-process namespace.
pub const BP_ROOT: &str = "GO:0008150";

/// A GO release: terms, their parents, and the secondary ids that name them.
#[derive(Debug, Clone)]
pub struct Ontology {
    pub terms: Vec<Term>,
    /// Parents of each term (index into `terms`) with the relation.
    pub parents: Vec<Vec<(u32, Relation)>>,
    /// The release (`data-version` of the OBO file, `GOSOURCEDATE` of GO.db).
    pub release: String,
    /// What was read: `go-basic.obo`, `GO.db sqlite`, or a generator's description.
    pub source: String,
    index: HashMap<String, u32>,
}

impl Ontology {
    /// An ontology from its parts; checks that edges point at terms and that the
    /// propagating relations form no cycle.
    pub fn new(
        terms: Vec<Term>,
        parents: Vec<Vec<(u32, Relation)>>,
        alt_ids: Vec<(String, u32)>,
        release: String,
        source: String,
    ) -> Result<Self, String> {
        if parents.len() != terms.len() {
            return Err(format!(
                "{} parent lists for {} terms",
                parents.len(),
                terms.len()
            ));
        }
        let mut index = HashMap::with_capacity(terms.len() + alt_ids.len());
        for (i, t) in terms.iter().enumerate() {
            if index.insert(t.id.clone(), i as u32).is_some() {
                return Err(format!("term {} is defined twice", t.id));
            }
        }
        for (alt, i) in alt_ids {
            index.entry(alt).or_insert(i);
        }
        for (i, ps) in parents.iter().enumerate() {
            if let Some(&(p, _)) = ps.iter().find(|(p, _)| *p as usize >= terms.len()) {
                return Err(format!(
                    "term {} has parent #{p}, out of range",
                    terms[i].id
                ));
            }
        }
        let o = Self {
            terms,
            parents,
            release,
            source,
            index,
        };
        o.topological_order()?;
        Ok(o)
    }

    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The index of a term by its id or one of its secondary ids.
    pub fn find(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// Terms ordered so that every term comes after all its (propagating) parents; an error
    /// names a term on a cycle.
    pub fn topological_order(&self) -> Result<Vec<u32>, String> {
        let n = self.terms.len();
        let mut pending = vec![0u32; n];
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (t, ps) in self.parents.iter().enumerate() {
            for &(p, r) in ps {
                if r.propagates() {
                    pending[t] += 1;
                    children[p as usize].push(t as u32);
                }
            }
        }
        let mut order: Vec<u32> = (0..n as u32)
            .filter(|&t| pending[t as usize] == 0)
            .collect();
        let mut head = 0;
        while head < order.len() {
            let t = order[head] as usize;
            head += 1;
            for &c in &children[t] {
                pending[c as usize] -= 1;
                if pending[c as usize] == 0 {
                    order.push(c);
                }
            }
        }
        if order.len() < n {
            let t = (0..n).find(|&t| pending[t] > 0).unwrap_or(0);
            return Err(format!(
                "the is_a/part_of graph has a cycle through {}",
                self.terms[t].id
            ));
        }
        Ok(order)
    }

    /// Ancestors-or-self of every term over `is_a` and `part_of`, each sorted.
    pub fn ancestor_sets(&self) -> Vec<Vec<u32>> {
        let order = self
            .topological_order()
            .expect("checked acyclic at construction");
        let mut anc: Vec<Vec<u32>> = vec![Vec::new(); self.terms.len()];
        for &t in &order {
            let mut set = vec![t];
            for &(p, r) in &self.parents[t as usize] {
                if r.propagates() {
                    set.extend_from_slice(&anc[p as usize]);
                }
            }
            set.sort_unstable();
            set.dedup();
            anc[t as usize] = set;
        }
        anc
    }

    /// Which terms descend (or-self, over `is_a`/`part_of`) from any of `roots`.
    pub fn descends_from(&self, ancestors: &[Vec<u32>], roots: &[u32]) -> Vec<bool> {
        ancestors
            .iter()
            .map(|a| roots.iter().any(|r| a.binary_search(r).is_ok()))
            .collect()
    }
}

/// An ontology with gene annotations (biological process): what ISH images are labelled
/// with. Kind [`crate::provider::kinds::GO`].
#[derive(Debug, Clone)]
pub struct GoData {
    pub ontology: Ontology,
    pub annotations: Annotations,
    /// The terms whose descendants are the nervous-system categories.
    pub neural_roots: Vec<u32>,
    /// The real Gene Ontology (else the random stand-in).
    pub real: bool,
}

// ---------------------------------------------------------------------------------------
// OBO
// ---------------------------------------------------------------------------------------

/// Read a `go-basic.obo` file (plain or gzip).
pub fn read_obo(path: &Path) -> Result<Ontology, DataError> {
    parse_obo(Lines::open(path)?, path)
}

/// Parse OBO text already in memory (tests, fixtures).
pub fn parse_obo_bytes(bytes: Vec<u8>, path: &Path) -> Result<Ontology, DataError> {
    parse_obo(Lines::from_bytes(bytes), path)
}

#[derive(Default)]
struct Stanza {
    line: u64,
    id: Option<String>,
    name: Option<String>,
    namespace: Option<(u64, String)>,
    obsolete: bool,
    alt_ids: Vec<String>,
    /// (line, parent id, relation)
    edges: Vec<(u64, String, Relation)>,
}

fn parse_obo(mut lines: Lines, path: &Path) -> Result<Ontology, DataError> {
    let err = |line: u64, expected: &str, found: &str| DataError::Line {
        path: path.to_path_buf(),
        line,
        column: None,
        expected: expected.into(),
        found: crate::formats::expr_text::show(found),
    };
    let mut release = String::new();
    let mut stanzas: Vec<Stanza> = Vec::new();
    let mut current: Option<Stanza> = None;
    let mut in_term = false;
    let mut saw_header = false;
    while let Some((no, raw)) = lines.next_line(path)? {
        let line = strip_obo_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            if let Some(s) = current.take() {
                stanzas.push(s);
            }
            in_term = line == "[Term]";
            if in_term {
                current = Some(Stanza {
                    line: no,
                    ..Default::default()
                });
            }
            continue;
        }
        let Some((tag, value)) = line.split_once(':') else {
            return Err(err(no, "`tag: value`", line));
        };
        let value = value.trim();
        if stanzas.is_empty() && current.is_none() && !in_term {
            saw_header = true;
            if tag == "data-version" {
                release = value.to_string();
            }
            continue;
        }
        let Some(s) = current.as_mut() else {
            continue; // a [Typedef] or other stanza
        };
        match tag {
            "id" => s.id = Some(value.to_string()),
            "name" => s.name = Some(value.to_string()),
            "namespace" => s.namespace = Some((no, value.to_string())),
            "alt_id" => s.alt_ids.push(value.to_string()),
            "is_obsolete" => s.obsolete = value == "true",
            "is_a" => {
                let parent = value.split_whitespace().next().unwrap_or("");
                if !parent.starts_with("GO:") {
                    return Err(err(no, "`is_a: GO:nnnnnnn`", line));
                }
                s.edges.push((no, parent.to_string(), Relation::IsA));
            }
            "relationship" => {
                let mut it = value.split_whitespace();
                let (Some(kind), Some(parent)) = (it.next(), it.next()) else {
                    return Err(err(no, "`relationship: <type> GO:nnnnnnn`", line));
                };
                if parent.starts_with("GO:") {
                    s.edges
                        .push((no, parent.to_string(), Relation::parse(kind)));
                }
            }
            _ => {}
        }
    }
    if let Some(s) = current.take() {
        stanzas.push(s);
    }
    if !saw_header && stanzas.is_empty() {
        return Err(err(
            1,
            "an OBO file (`format-version:` header, `[Term]` stanzas)",
            "",
        ));
    }
    let mut terms = Vec::new();
    let mut kept = Vec::new();
    for s in &stanzas {
        let id =
            s.id.clone()
                .ok_or_else(|| err(s.line, "an `id:` in the [Term] stanza", "none"))?;
        if s.obsolete {
            continue;
        }
        let (ns_line, ns) = s
            .namespace
            .clone()
            .ok_or_else(|| err(s.line, &format!("a `namespace:` for {id}"), "none"))?;
        let namespace = Namespace::from_obo(&ns).ok_or_else(|| {
            err(
                ns_line,
                "biological_process, molecular_function or cellular_component",
                &ns,
            )
        })?;
        terms.push(Term {
            name: s.name.clone().unwrap_or_default(),
            id,
            namespace,
        });
        kept.push(s);
    }
    let index: HashMap<&str, u32> = terms
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i as u32))
        .collect();
    let mut parents = Vec::with_capacity(terms.len());
    let mut alt_ids = Vec::new();
    for (i, s) in kept.iter().enumerate() {
        let mut ps = Vec::with_capacity(s.edges.len());
        for (no, p, r) in &s.edges {
            let &j = index
                .get(p.as_str())
                .ok_or_else(|| err(*no, "a parent defined (and not obsolete) in the file", p))?;
            ps.push((j, *r));
        }
        parents.push(ps);
        alt_ids.extend(s.alt_ids.iter().map(|a| (a.clone(), i as u32)));
    }
    Ontology::new(terms, parents, alt_ids, release, "go-basic.obo".into()).map_err(|m| {
        DataError::Inconsistent {
            path: path.to_path_buf(),
            message: m,
        }
    })
}

/// OBO comments: an unescaped `!` starts a trailing comment (outside quoted text).
fn strip_obo_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let (mut quoted, mut escaped) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => quoted = !quoted,
            b'!' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

// ---------------------------------------------------------------------------------------
// SQLite (Bioconductor GO.db, org.Hs.eg.db)
// ---------------------------------------------------------------------------------------

fn open_sqlite(path: &Path) -> Result<rusqlite::Connection, DataError> {
    if !path.is_file() {
        return Err(DataError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| sql_err(path, e))
}

fn sql_err(path: &Path, e: rusqlite::Error) -> DataError {
    DataError::Inconsistent {
        path: path.to_path_buf(),
        message: format!("not a readable Bioconductor SQLite annotation file: {e}"),
    }
}

/// Read Bioconductor's `GO.sqlite` (all three namespaces).
pub fn read_go_sqlite(path: &Path) -> Result<Ontology, DataError> {
    let db = open_sqlite(path)?;
    let e = |err| sql_err(path, err);
    let mut terms = Vec::new();
    let mut by_rowid: HashMap<i64, u32> = HashMap::new();
    {
        let mut q = db
            .prepare("SELECT _id, go_id, term, ontology FROM go_term ORDER BY _id")
            .map_err(e)?;
        let mut rows = q.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let rowid: i64 = r.get(0).map_err(e)?;
            let id: String = r.get(1).map_err(e)?;
            let ns: String = r.get(3).map_err(e)?;
            // GO.db has one pseudo-term "all" (ontology "universal") above the three roots.
            let Some(namespace) = Namespace::from_code(&ns) else {
                continue;
            };
            by_rowid.insert(rowid, terms.len() as u32);
            terms.push(Term {
                id,
                name: r.get(2).map_err(e)?,
                namespace,
            });
        }
    }
    if terms.is_empty() {
        return Err(DataError::Inconsistent {
            path: path.to_path_buf(),
            message: "table go_term holds no GO terms".into(),
        });
    }
    let mut parents: Vec<Vec<(u32, Relation)>> = vec![Vec::new(); terms.len()];
    for ns in [
        Namespace::BiologicalProcess,
        Namespace::MolecularFunction,
        Namespace::CellularComponent,
    ] {
        let mut q = db
            .prepare(&format!(
                "SELECT _id, _parent_id, relationship_type FROM {}",
                ns.sqlite_table()
            ))
            .map_err(e)?;
        let mut rows = q.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let (c, p): (i64, i64) = (r.get(0).map_err(e)?, r.get(1).map_err(e)?);
            let rel: String = r.get(2).map_err(e)?;
            let (Some(&c), Some(&p)) = (by_rowid.get(&c), by_rowid.get(&p)) else {
                // Edges to the "all" pseudo-term.
                continue;
            };
            parents[c as usize].push((p, Relation::parse(&rel)));
        }
    }
    let mut alt_ids = Vec::new();
    {
        let mut q = db
            .prepare("SELECT _id, secondary FROM go_synonym WHERE secondary IS NOT NULL")
            .map_err(e)?;
        let mut rows = q.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let rowid: i64 = r.get(0).map_err(e)?;
            let alt: String = r.get(1).map_err(e)?;
            if let Some(&t) = by_rowid.get(&rowid) {
                alt_ids.push((alt, t));
            }
        }
    }
    let release: String = db
        .query_row(
            "SELECT value FROM metadata WHERE name = 'GOSOURCEDATE'",
            [],
            |r| r.get(0),
        )
        .unwrap_or_default();
    Ontology::new(terms, parents, alt_ids, release, "GO.db sqlite".into()).map_err(|m| {
        DataError::Inconsistent {
            path: path.to_path_buf(),
            message: m,
        }
    })
}

// ---------------------------------------------------------------------------------------
// Annotations
// ---------------------------------------------------------------------------------------

/// Which annotations to keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationFilter {
    pub namespace: Namespace,
    /// Keep only these evidence codes (empty: all).
    #[serde(default)]
    pub keep_evidence: Vec<String>,
    /// Drop these evidence codes (e.g. `IEA`, inferred electronically).
    #[serde(default)]
    pub drop_evidence: Vec<String>,
}

impl Default for AnnotationFilter {
    fn default() -> Self {
        Self {
            namespace: Namespace::BiologicalProcess,
            keep_evidence: Vec::new(),
            drop_evidence: Vec::new(),
        }
    }
}

impl AnnotationFilter {
    fn keeps(&self, evidence: &str) -> bool {
        (self.keep_evidence.is_empty() || self.keep_evidence.iter().any(|e| e == evidence))
            && !self.drop_evidence.iter().any(|e| e == evidence)
    }
}

/// Direct gene-to-term annotations of one namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotations {
    /// Gene symbols, sorted.
    pub genes: Vec<String>,
    /// Direct terms of each gene (indices into the ontology), sorted, deduplicated.
    pub direct: Vec<Vec<u32>>,
    /// Annotations dropped because the ontology does not know their term.
    pub unknown_terms: usize,
    /// Negative (`NOT`) statements skipped.
    pub negated: usize,
    pub source: String,
}

impl Annotations {
    fn from_pairs(pairs: Vec<(String, u32)>, unknown: usize, negated: usize, source: &str) -> Self {
        let mut map: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for (g, t) in pairs {
            map.entry(g).or_default().push(t);
        }
        let (mut genes, mut direct) = (Vec::with_capacity(map.len()), Vec::new());
        for (g, mut ts) in map {
            ts.sort_unstable();
            ts.dedup();
            genes.push(g);
            direct.push(ts);
        }
        Self {
            genes,
            direct,
            unknown_terms: unknown,
            negated,
            source: source.into(),
        }
    }

    /// Propagated terms of every gene (ancestors-or-self of its direct terms), sorted.
    pub fn propagated(&self, ancestors: &[Vec<u32>]) -> Vec<Vec<u32>> {
        self.direct
            .iter()
            .map(|ts| {
                let mut all: Vec<u32> = ts
                    .iter()
                    .flat_map(|&t| ancestors[t as usize].iter().copied())
                    .collect();
                all.sort_unstable();
                all.dedup();
                all
            })
            .collect()
    }
}

/// Read a GAF 2.x file (plain or gzip) against `onto`.
pub fn read_gaf(
    path: &Path,
    onto: &Ontology,
    filter: &AnnotationFilter,
) -> Result<Annotations, DataError> {
    gaf_from_lines(path, Lines::open(path)?, onto, filter)
}

/// Parse GAF 2.x bytes (plain or gzip) against `onto`; `path` names the source in errors.
pub fn parse_gaf_bytes(
    bytes: Vec<u8>,
    path: &Path,
    onto: &Ontology,
    filter: &AnnotationFilter,
) -> Result<Annotations, DataError> {
    gaf_from_lines(path, Lines::from_bytes(bytes), onto, filter)
}

fn gaf_from_lines(
    path: &Path,
    mut lines: Lines,
    onto: &Ontology,
    filter: &AnnotationFilter,
) -> Result<Annotations, DataError> {
    let (mut pairs, mut unknown, mut negated) = (Vec::new(), 0, 0);
    while let Some((no, line)) = lines.next_line(path)? {
        if line.starts_with('!') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 15 {
            return Err(DataError::Line {
                path: path.to_path_buf(),
                line: no,
                column: None,
                expected: "a GAF annotation line of 15 to 17 tab-separated columns".into(),
                found: format!("{} columns", cols.len()),
            });
        }
        let Some(aspect) = Namespace::from_code(cols[8]) else {
            return Err(DataError::Line {
                path: path.to_path_buf(),
                line: no,
                column: Some(9),
                expected: "aspect P, F or C".into(),
                found: crate::formats::expr_text::show(cols[8]),
            });
        };
        if aspect != filter.namespace || !filter.keeps(cols[6]) {
            continue;
        }
        if cols[3].split('|').any(|q| q == "NOT") {
            negated += 1;
            continue;
        }
        match onto.find(cols[4]) {
            Some(t) if onto.terms[t as usize].namespace == filter.namespace => {
                pairs.push((cols[2].to_string(), t))
            }
            _ => unknown += 1,
        }
    }
    Ok(Annotations::from_pairs(pairs, unknown, negated, "GAF"))
}

/// Read the GO annotations of Bioconductor's `org.Hs.eg.sqlite` (human genes by symbol).
pub fn read_orgdb_sqlite(
    path: &Path,
    onto: &Ontology,
    filter: &AnnotationFilter,
) -> Result<Annotations, DataError> {
    let db = open_sqlite(path)?;
    let e = |err| sql_err(path, err);
    let table = match filter.namespace {
        Namespace::BiologicalProcess => "go_bp",
        Namespace::MolecularFunction => "go_mf",
        Namespace::CellularComponent => "go_cc",
    };
    let mut q = db
        .prepare(&format!(
            "SELECT g.symbol, a.go_id, a.evidence FROM {table} a JOIN gene_info g ON g._id = a._id"
        ))
        .map_err(e)?;
    let mut rows = q.query([]).map_err(e)?;
    let (mut pairs, mut unknown) = (Vec::new(), 0);
    while let Some(r) = rows.next().map_err(e)? {
        let evidence: String = r.get(2).map_err(e)?;
        if !filter.keeps(&evidence) {
            continue;
        }
        let go: String = r.get(1).map_err(e)?;
        match onto.find(&go) {
            Some(t) if onto.terms[t as usize].namespace == filter.namespace => {
                pairs.push((r.get(0).map_err(e)?, t))
            }
            _ => unknown += 1,
        }
    }
    Ok(Annotations::from_pairs(
        pairs,
        unknown,
        0,
        "org.Hs.eg.db sqlite",
    ))
}

/// `IC(t) = −log10(count_t / total)`; `None` for a term no gene carries.
pub fn information_content(counts: &[u32], total: usize) -> Vec<Option<f64>> {
    counts
        .iter()
        .map(|&c| (c > 0 && total > 0).then(|| -((c as f64) / (total as f64)).log10()))
        .collect()
}

/// Genes per term (propagated annotations).
pub fn term_counts(n_terms: usize, gene_terms: &[Vec<u32>]) -> Vec<u32> {
    let mut counts = vec![0u32; n_terms];
    for ts in gene_terms {
        for &t in ts {
            counts[t as usize] += 1;
        }
    }
    counts
}

// ---------------------------------------------------------------------------------------
// Where the files are
// ---------------------------------------------------------------------------------------

/// The Debian/Ubuntu install places of Bioconductor's packages (`apt install r-bioc-go.db
/// r-bioc-org.hs.eg.db`).
pub const DEBIAN_GO_SQLITE: &str = "/usr/lib/R/site-library/GO.db/extdata/GO.sqlite";
pub const DEBIAN_ORG_HS_SQLITE: &str =
    "/usr/lib/R/site-library/org.Hs.eg.db/extdata/org.Hs.eg.sqlite";

/// Ontology files looked for, in order: `$DYAD_DATA_DIR/go/go-basic.obo(.gz)`,
/// `$DYAD_DATA_DIR/go/GO.sqlite`, then the Debian package's file.
pub fn ontology_candidates(data_dir: &Path) -> Vec<PathBuf> {
    let go = data_dir.join("go");
    vec![
        go.join("go-basic.obo"),
        go.join("go-basic.obo.gz"),
        go.join("GO.sqlite"),
        PathBuf::from(DEBIAN_GO_SQLITE),
    ]
}

/// Annotation files looked for, in order: a GAF in `$DYAD_DATA_DIR/go/` (`*.gaf`,
/// `*.gaf.gz`, first by name), `$DYAD_DATA_DIR/go/org.Hs.eg.sqlite`, then the Debian file.
pub fn annotation_candidates(data_dir: &Path) -> Vec<PathBuf> {
    let go = data_dir.join("go");
    let mut gafs: Vec<PathBuf> = std::fs::read_dir(&go)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    n.is_some_and(|n| n.ends_with(".gaf") || n.ends_with(".gaf.gz"))
                })
                .collect()
        })
        .unwrap_or_default();
    gafs.sort();
    gafs.push(go.join("org.Hs.eg.sqlite"));
    gafs.push(PathBuf::from(DEBIAN_ORG_HS_SQLITE));
    gafs
}

/// Read whichever ontology file `path` is (by extension: `.sqlite` or OBO).
pub fn read_ontology(path: &Path) -> Result<Ontology, DataError> {
    if path.extension().is_some_and(|e| e == "sqlite") {
        read_go_sqlite(path)
    } else {
        read_obo(path)
    }
}

/// Read whichever annotation file `path` is (`.sqlite`: an OrgDb; else GAF).
pub fn read_annotations(
    path: &Path,
    onto: &Ontology,
    filter: &AnnotationFilter,
) -> Result<Annotations, DataError> {
    if path.extension().is_some_and(|e| e == "sqlite") {
        read_orgdb_sqlite(path, onto, filter)
    } else {
        read_gaf(path, onto, filter)
    }
}

#[cfg(test)]
mod tests;
