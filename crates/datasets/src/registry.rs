//! The registry of real data sets: where each lives under the data directory, where it can
//! be downloaded from, how to check it, its license and citation, and the stand-in used when
//! it is absent. `dyad data list | info | verify | fetch` read it. [`PROVIDERS`] lists every
//! data set the specs can name.

use crate::provider::Provider;

/// One file of a data set's canonical release.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// Path under the data set's directory where the file is stored.
    pub file: &'static str,
    /// Canonical download address, when the file is downloadable without an account.
    pub url: Option<&'static str>,
    /// SHA-256 of the file as published (hex), when known.
    pub sha256: Option<&'static str>,
    /// Size in bytes, when known.
    pub size: Option<u64>,
    /// Unpack after download (a tar archive into the data set's directory).
    pub unpack: Unpack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpack {
    /// Keep the file as it is (dyad reads it directly, compressed or not).
    No,
    /// A tar archive (optionally gzip-compressed) to extract next to it.
    Tar,
}

/// A real data set.
#[derive(Debug, Clone, Copy)]
pub struct DatasetInfo {
    pub name: &'static str,
    pub title: &'static str,
    /// Directory under the data directory.
    pub dir: &'static str,
    pub sources: &'static [Source],
    pub license: &'static str,
    pub citation: &'static str,
    /// Content identity of the decoded release (see each loader's `content_id`).
    pub identity: Option<&'static str>,
    /// The seeded stand-in used when the data is absent.
    pub standin: &'static str,
    /// How to obtain the data by hand (shown when a download is impossible).
    pub manual: &'static str,
}

pub static DATASETS: &[DatasetInfo] = &[
    DatasetInfo {
        name: "mnist",
        title: "MNIST handwritten digits (IDX)",
        dir: "mnist",
        sources: &[
            Source {
                file: "train-images-idx3-ubyte.gz",
                url: Some(
                    "https://storage.googleapis.com/cvdf-datasets/mnist/train-images-idx3-ubyte.gz",
                ),
                sha256: Some("0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971"),
                size: Some(9_719_438),
                unpack: Unpack::No,
            },
            Source {
                file: "train-labels-idx1-ubyte.gz",
                url: Some(
                    "https://storage.googleapis.com/cvdf-datasets/mnist/train-labels-idx1-ubyte.gz",
                ),
                sha256: Some("1787548bbe0bff1ec2ecdc0ef292b02df999e2d1a6002d27500982c652b17203"),
                size: Some(28_857),
                unpack: Unpack::No,
            },
            Source {
                file: "t10k-images-idx3-ubyte.gz",
                url: Some(
                    "https://storage.googleapis.com/cvdf-datasets/mnist/t10k-images-idx3-ubyte.gz",
                ),
                sha256: Some("1a1a05eab793c14bb050b398624a11b0ffd1a2953baed553b1b9bd079e2a20be"),
                size: Some(1_616_508),
                unpack: Unpack::No,
            },
            Source {
                file: "t10k-labels-idx1-ubyte.gz",
                url: Some(
                    "https://storage.googleapis.com/cvdf-datasets/mnist/t10k-labels-idx1-ubyte.gz",
                ),
                sha256: Some("b91679a0acfe4ba0e50a2437a903084cba1f5f92592b016a25a7dfd00455798b"),
                size: Some(4_517),
                unpack: Unpack::No,
            },
        ],
        license: "CC BY-SA 3.0 (Yann LeCun and Corinna Cortes)",
        citation: "Y. LeCun, L. Bottou, Y. Bengio, P. Haffner. Gradient-based learning applied to document recognition. Proc. IEEE 86(11), 1998.",
        identity: Some("fdbf0b1cb23b313197a3ee1c756fe2324916838f101c25df99944bed3150632b"),
        standin: "mnist-standin",
        manual: "Download the four .gz files from https://yann.lecun.com/exdb/mnist/ (or https://storage.googleapis.com/cvdf-datasets/mnist/) into <data dir>/mnist/; plain (gunzipped) files and the dotted spelling train-images.idx3-ubyte also work.",
    },
    DatasetInfo {
        name: "20newsgroups",
        title: "20 Newsgroups, by-date split (raw Usenet messages)",
        dir: "20newsgroups",
        sources: &[Source {
            file: "20news-bydate.tar.gz",
            url: Some("http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz"),
            sha256: Some("5c7f9a3f3f41562a42b4ad43832e714964422ecad12393aae8820fa9d9a2e2f1"),
            size: Some(14_496_967),
            unpack: Unpack::No,
        }],
        license: "no explicit license; distributed for research by Jason Rennie (originally Ken Lang)",
        citation: "K. Lang. NewsWeeder: learning to filter netnews. ICML 1995.",
        identity: Some("cbfcb3be847c492f5d96f09e0138126399192f3ec21f493ed622ea394de411ec"),
        standin: "20newsgroups-standin",
        manual: "Download 20news-bydate.tar.gz from http://qwone.com/~jason/20Newsgroups/ into <data dir>/20newsgroups/ (the unpacked folder 20news-bydate-train/ + 20news-bydate-test/ also works).",
    },
    DatasetInfo {
        name: "20newsgroups-w1000",
        title: "20 Newsgroups, 1000 stemmed-word counts, bydate split (MAT v5)",
        dir: "20newsgroups",
        sources: &[Source {
            file: "20news_w1000.mat",
            url: None,
            sha256: Some("ccdbccc06d2981a9011eb4d515955e5083868e760fb26d4ca5602c433979e6c5"),
            size: Some(1_210_033),
            unpack: Unpack::No,
        }],
        license: "derived from 20 Newsgroups; research use",
        citation: "K. Lang. NewsWeeder: learning to filter netnews. ICML 1995.",
        identity: Some("57a8685be58d5919204fa464ce4f2108dcc8e775e743312e3e04fe741597787a"),
        standin: "20newsgroups-standin",
        manual: "Place 20news_w1000.mat (a MATLAB bag-of-words release in the style of S. Roweis's 20news_w100.mat) in <data dir>/20newsgroups/.",
    },
    DatasetInfo {
        name: "caltech256",
        title: "Caltech-256 object categories (JPEG images)",
        dir: "caltech256",
        sources: &[Source {
            file: "256_ObjectCategories.tar",
            url: Some(
                "https://data.caltech.edu/records/nyy15-4j048/files/256_ObjectCategories.tar",
            ),
            sha256: None,
            size: None,
            unpack: Unpack::Tar,
        }],
        license: "research use (Caltech)",
        citation: "G. Griffin, A. Holub, P. Perona. Caltech-256 object category dataset. Caltech Technical Report 7694, 2007.",
        identity: None,
        standin: "caltech256-standin",
        manual: "Download 256_ObjectCategories.tar from https://data.caltech.edu/records/nyy15-4j048 and unpack it in <data dir>/caltech256/ (giving caltech256/256_ObjectCategories/001.ak47/...).",
    },
    DatasetInfo {
        name: "imagenet-sbow",
        title: "ImageNet LSVRC-2010 SIFT bag-of-words features (per-synset MAT v5) and devkit",
        dir: "imagenet",
        sources: &[],
        license: "ImageNet terms of access (non-commercial research)",
        citation: "O. Russakovsky et al. ImageNet Large Scale Visual Recognition Challenge. IJCV 2015; LSVRC-2010.",
        identity: None,
        standin: "imagenet-standin",
        manual: "Requires an ImageNet account: download the LSVRC-2010 training SBOW archive (one <WNID>.sbow.mat per synset) into <data dir>/imagenet/sbow/ and the development kit's meta.mat into <data dir>/imagenet/.",
    },
    DatasetInfo {
        name: "prostate",
        title: "Prostate cancer expression, tumour vs normal (Singh et al. 2002), Kent Ridge CSV",
        dir: "prostate",
        sources: &[
            Source {
                file: "prostate_TumorVSNormal_train.data",
                url: None,
                sha256: Some("c4bac80b5577f8112525ee203b690754c858a3c0efba30934a41d6d7d5cdeca5"),
                size: Some(3_714_462),
                unpack: Unpack::No,
            },
            Source {
                file: "prostate_TumorVSNormal_test.data",
                url: None,
                sha256: Some("7b34d8363e25285e00bec78a368183734a8cad04a685fefdba2ada50b791fbe9"),
                size: Some(1_570_285),
                unpack: Unpack::No,
            },
        ],
        license: "public research data (Kent Ridge Bio-medical Data Set Repository)",
        citation: "D. Singh et al. Gene expression correlates of clinical prostate cancer behavior. Cancer Cell 1(2), 2002.",
        identity: Some("72716099874471fb45fcfafe6409199686fadd12109e6c409da3683a7cdfd801"),
        standin: "prostate-standin",
        manual: "The Kent Ridge repository (datam.i2r.a-star.edu.sg/datasets/krbd/) is offline; mirrors of prostate_TumorVSNormal_{train,test}.data exist. Place both in <data dir>/prostate/. The Broad release (Prostate_TN_final0701_allmeanScale.res + .cls, or GCT) also works.",
    },
    DatasetInfo {
        name: "allen-brain",
        title: "Allen Human Brain Atlas microarray, six donors (per-donor CSVs)",
        dir: "allen-brain",
        sources: &[],
        license: "Allen Institute terms of use (research)",
        citation: "M. Hawrylycz et al. An anatomically comprehensive atlas of the adult human brain transcriptome. Nature 489, 2012.",
        identity: None,
        standin: "allen-brain-standin",
        manual: "Download the six donors' normalized microarray zips from https://human.brain-map.org/static/download and unpack each into <data dir>/allen-brain/<donor>/ (MicroarrayExpression.csv, Probes.csv, SampleAnnot.csv).",
    },
    DatasetInfo {
        name: "relative-attributes",
        title: "Relative attributes: OSR and PubFig (Parikh & Grauman 2011), Shoes (Kovashka et al. 2012)",
        dir: "relative-attributes",
        sources: &[
            Source {
                file: "osr/data.mat",
                url: None,
                sha256: None,
                size: None,
                unpack: Unpack::No,
            },
            Source {
                file: "pubfig/data.mat",
                url: None,
                sha256: None,
                size: None,
                unpack: Unpack::No,
            },
            Source {
                file: "shoes/data.mat",
                url: None,
                sha256: None,
                size: None,
                unpack: Unpack::No,
            },
        ],
        license: "research use, as distributed by the authors",
        citation: "D. Parikh and K. Grauman. Relative Attributes. ICCV 2011; A. Kovashka, D. Parikh and K. Grauman. WhittleSearch: Image Search with Relative Attribute Feedback. CVPR 2012.",
        identity: None,
        standin: "s-attr",
        manual: "Download the relative-attributes releases from the authors' pages (OSR and PubFig: Parikh's relative attributes page; Shoes: the WhittleSearch page) and place each data.mat (variables feat, class_labels, relative_ordering, attribute_names) as <data dir>/relative-attributes/<osr|pubfig|shoes>/data.mat.",
    },
    DatasetInfo {
        name: "eth80-hog",
        title: "ETH-80 HOG features (Ebert et al.)",
        dir: "eth80-hog",
        sources: &[Source {
            file: "eth80_hog.mat",
            url: None,
            sha256: None,
            size: None,
            unpack: Unpack::No,
        }],
        license: "research use, as distributed by the authors",
        citation: "B. Leibe and B. Schiele. Analyzing appearance and contour based methods for object categorization. CVPR 2003 (ETH-80); HOG features as provided by S. Ebert et al.",
        identity: None,
        standin: "s-class",
        manual: "Export the HOG features of the 3,280 ETH-80 images and their class labels into a MAT file with variables `features` (n x m, or m x n) and `labels` (n), and place it as <data dir>/eth80-hog/eth80_hog.mat.",
    },
    DatasetInfo {
        name: "gene-ontology",
        title: "Gene Ontology (go-basic) with gene annotations (GAF, or Bioconductor GO.db + org.Hs.eg.db)",
        dir: "go",
        sources: &[
            Source {
                file: "go-basic.obo",
                url: Some("https://purl.obolibrary.org/obo/go/go-basic.obo"),
                sha256: None,
                size: None,
                unpack: Unpack::No,
            },
            Source {
                file: "mgi.gaf.gz",
                url: Some("https://current.geneontology.org/annotations/mgi.gaf.gz"),
                sha256: None,
                size: None,
                unpack: Unpack::No,
            },
        ],
        license: "CC BY 4.0 (Gene Ontology Consortium); Bioconductor packages: Artistic-2.0",
        citation: "The Gene Ontology Consortium. Gene Ontology: tool for the unification of biology. Nature Genetics 25, 2000; Bioconductor GO.db and org.Hs.eg.db 3.16.",
        identity: None,
        standin: "go-random",
        manual: "Either install the Debian/Ubuntu packages (apt install r-bioc-go.db r-bioc-org.hs.eg.db: GO of 2022-07-01 with human annotations), or download go-basic.obo and a GAF (e.g. mgi.gaf.gz, the mouse annotations the paper used) into <data dir>/go/ (`dyad data fetch gene-ontology`).",
    },
    DatasetInfo {
        name: "allen-ish",
        title: "Allen Brain Atlas adult mouse ISH, expression-masked medial sagittal images (FuncISH)",
        dir: "allen-ish",
        sources: &[],
        license: "Allen Institute terms of use (research)",
        citation: "E. S. Lein et al. Genome-wide atlas of gene expression in the adult mouse brain. Nature 445, 2007; N. Liscovitch, U. Shalit and G. Chechik. FuncISH: learning a functional representation of neural ISH images. Bioinformatics 29(13), 2013.",
        identity: None,
        standin: "ish-standin",
        manual: "List the sagittal adult-mouse ISH series with their genes through the ABA API (api.brain-map.org, model SectionDataSet), download the expression mask of each series' most medial section (section_image_download/<id>?view=expression), and write <data dir>/allen-ish/images.csv (columns image, gene) with the images under images/; optional relations/{cell_type,pathway,ppi}.tsv. GO annotations: the gene-ontology data set (mouse: mgi.gaf.gz).",
    },
];

/// The entry for `name`.
pub fn dataset(name: &str) -> Option<&'static DatasetInfo> {
    DATASETS.iter().find(|d| d.name == name)
}

/// Every data set the specs can name: the real ones (each with its stand-in) and the
/// stand-ins. Adding a data set is one folder with a [`Provider`] and one line here.
pub static PROVIDERS: &[&dyn Provider] = &[
    &crate::caltech256::provider::CaltechProvider,
    &crate::caltech256::provider::CaltechStandinProvider,
    &crate::web::provider::WebStandinProvider,
    &crate::mnist::provider::MnistProvider,
    &crate::mnist::provider::MnistStandinProvider,
    &crate::newsgroups::provider::NewsgroupsProvider,
    &crate::newsgroups::provider::NewsgroupsW1000Provider,
    &crate::newsgroups::provider::NewsgroupsStandinProvider,
    &crate::imagenet::provider::ImagenetProvider,
    &crate::imagenet::provider::ImagenetStandinProvider,
    &crate::prostate::provider::ProstateProvider,
    &crate::prostate::provider::ProstateStandinProvider,
    &crate::allen::provider::AllenProvider,
    &crate::allen::provider::AllenStandinProvider,
    &crate::gmm::GmmProvider,
    &crate::go::provider::GoProvider,
    &crate::go::provider::GoRandomProvider,
    &crate::ish::provider::AllenIshProvider,
    &crate::ish::provider::IshStandinProvider,
    &crate::pair_ranking::provider::SClassProvider,
    &crate::pair_ranking::provider::SAttrProvider,
    &crate::pair_ranking::provider::RelativeAttributesProvider,
    &crate::pair_ranking::provider::Eth80HogProvider,
];

/// The provider named `name`.
pub fn provider(name: &str) -> Option<&'static dyn Provider> {
    PROVIDERS.iter().copied().find(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_checksums_well_formed() {
        let mut names = std::collections::BTreeSet::new();
        for d in DATASETS {
            assert!(names.insert(d.name), "duplicate {}", d.name);
            for s in d.sources {
                if let Some(h) = s.sha256 {
                    assert_eq!(h.len(), 64);
                    assert!(
                        h.bytes()
                            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                    );
                }
            }
            assert!(!d.manual.is_empty() && !d.citation.is_empty());
        }
    }

    #[test]
    fn every_real_data_set_has_a_provider_and_a_synthetic_standin_of_its_kind() {
        let mut names = std::collections::BTreeSet::new();
        for p in PROVIDERS {
            assert!(names.insert(p.name()), "duplicate provider {}", p.name());
        }
        for d in DATASETS {
            let p = provider(d.name).unwrap_or_else(|| panic!("no provider for {}", d.name));
            assert!(!p.synthetic() && p.info().map(|i| i.name) == Some(d.name));
            let s = provider(d.standin).unwrap_or_else(|| panic!("no stand-in {}", d.standin));
            assert!(s.synthetic(), "{} must be synthetic", s.name());
            assert_eq!(
                s.kind(),
                p.kind(),
                "{} and its stand-in differ in kind",
                d.name
            );
        }
    }

    #[test]
    fn absent_data_falls_back_to_marked_standins_of_the_right_kind() {
        use crate::provider::{DataContext, kinds};
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().join("none"), dir.path().join("cache"));
        let small = [
            (
                "web-standin",
                serde_json::json!({"images": 300, "idf_reference": 0}),
            ),
            (
                "caltech256",
                serde_json::json!({"subset": "c10", "standin": {"per_class": 4, "dim": 50}}),
            ),
            (
                "mnist",
                serde_json::json!({"standin": {"train": 20, "test": 10}}),
            ),
            (
                "20newsgroups",
                serde_json::json!({"pipeline": {"features": 50}, "standin": {"docs_per_class": 6}}),
            ),
            (
                "imagenet-sbow",
                serde_json::json!({"standin": {"leaves": 12, "per_leaf": 3, "dim": 40}}),
            ),
            (
                "prostate",
                serde_json::json!({"standin": {"genes": 60, "tumor": 5, "normal": 4}}),
            ),
            (
                "allen-brain",
                serde_json::json!({"standin": {"genes": 80, "donor_sizes": [3, 4]}}),
            ),
        ];
        for (name, params) in small {
            let p = provider(name).unwrap();
            let r = p
                .resolve(&ctx, &params)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                r.synthetic && r.note.starts_with("SYNTHETIC"),
                "{name}: {}",
                r.note
            );
            assert_eq!(r.kind, p.kind());
            let data = (r.loader)().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(data.kind(), p.kind(), "{name}");
            let readable = match data.kind() {
                kinds::LABELLED => data.get::<dyad_core::LabeledSet>().is_some(),
                kinds::MULTI_LABEL => data.get::<crate::imagenet::MultiLabelSet>().is_some(),
                kinds::EXPRESSION => data.get::<crate::expression::ExpressionSet>().is_some(),
                kinds::WEB => data.get::<crate::web::WebData>().is_some(),
                _ => false,
            };
            assert!(readable, "{name} delivers a value not of its kind");
            // The identity is stable and needs no data.
            assert_eq!(p.resolve(&ctx, &params).unwrap().identity, r.identity);
        }
    }
}
