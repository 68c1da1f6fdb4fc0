//! The papers' words: which seed text holds each paper, and the check that a claim's
//! `quote` occurs in it (`tests/claim_quotes.rs` runs it over every spec).
//!
//! The seed texts are `../shared/seeds/<file>` beside the repository (the project's shared
//! directory, as CI has it): PDF or OCR dumps, two of them JSON records whose `title`,
//! `abstract` and `full_text` fields are the text. The thesis (`001_…`) holds the JMLR
//! versions of OASIS and LORETA and the chapters of the Givens and FuncISH papers, so a
//! paper may have two seeds; a claim's `section` opening with a seed's tag (`NIPS`, `JMLR`)
//! names the one its quote must be found in, otherwise any of the paper's seeds will do.
//!
//! **Normalisation.** A quote must be the seed's words in order; only what a text dump
//! garbles is normalised, on both sides alike ([`normalise`]):
//!
//! 1. typographic ligatures are spelled out (`ﬁ` → `fi`, ...);
//! 2. letters are lowercased;
//! 3. everything but letters and digits is dropped: whitespace and line breaks,
//!    punctuation, hyphens (so a word hyphenated at a line end, `pre-\nselected`, reads as
//!    `preselected` whichever way the quote spells it), TeX markup and math glyphs.
//!
//! What remains is the sequence of letters and digits, which a quote must match exactly and
//! contiguously: no word may be added, dropped, changed or moved. An elision is written
//! `...` (or `…`): each fragment must occur, in order, each starting within
//! [`MAX_GAP`] normalised characters of the previous one's end. Every fragment must have at
//! least [`MIN_FRAGMENT`] normalised characters, so that a quote cannot be stitched from
//! scraps.

use std::path::Path;

/// One seed text of a paper: a tag a claim's `section` may open with, and the file name.
#[derive(Debug, Clone, Copy)]
pub struct Seed {
    pub tag: &'static str,
    pub file: &'static str,
}

const THESIS: &str = "001_61e4f63056d8ee45.txt";

/// The seed texts of a paper (the spec's `paper`), as the paper specs in
/// `../shared/papers/*.md` name them; `None` for a paper without one.
pub fn seeds_of(paper: &str) -> Option<&'static [Seed]> {
    Some(match paper {
        "aroma" => &[Seed {
            tag: "AROMA",
            file: "000_a1b459870a26ff57.txt",
        }],
        "oasis" => &[
            Seed {
                tag: "NIPS",
                file: "004_6fb5347858bf31ca.txt",
            },
            Seed {
                tag: "JMLR",
                file: THESIS,
            },
        ],
        "loreta" => &[
            Seed {
                tag: "NIPS",
                file: "002_19c5eb847ca2b3cc.txt",
            },
            Seed {
                tag: "JMLR",
                file: THESIS,
            },
        ],
        "givens" | "funcish" => &[Seed {
            tag: "thesis",
            file: THESIS,
        }],
        "tensor-ranking" => &[Seed {
            tag: "paper",
            file: "003_100cb26dead654dd.txt",
        }],
        _ => return None,
    })
}

/// Longest stretch, in normalised characters, between the fragments of an elided quote.
pub const MAX_GAP: usize = 2000;
/// Fewest normalised characters in a quote's fragment.
pub const MIN_FRAGMENT: usize = 12;

/// The letters and digits of `text`, lowercased, ligatures spelled out (module docs).
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let spelled = match c {
            'ﬀ' => "ff",
            'ﬁ' => "fi",
            'ﬂ' => "fl",
            'ﬃ' => "ffi",
            'ﬄ' => "ffl",
            'ﬅ' | 'ﬆ' => "st",
            _ => {
                if c.is_alphanumeric() {
                    out.extend(c.to_lowercase());
                }
                continue;
            }
        };
        out.push_str(spelled);
    }
    out
}

/// The text of a seed file: a JSON record's `title`, `abstract` and `full_text`, else the
/// file as it is.
pub fn seed_text(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(m)) => ["title", "abstract", "full_text"]
            .iter()
            .filter_map(|k| m.get(*k).and_then(|v| v.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => raw.to_string(),
    }
}

/// The normalised text of each seed of `paper` in `dir`, with its seed.
pub fn load_seeds(dir: &Path, paper: &str) -> Result<Vec<(Seed, String)>, String> {
    let seeds = seeds_of(paper).ok_or(format!("no seed text is known for paper `{paper}`"))?;
    seeds
        .iter()
        .map(|s| {
            let path = dir.join(s.file);
            std::fs::read_to_string(&path)
                .map(|raw| (*s, normalise(&seed_text(&raw))))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The fragments of a quote (split at `...` / `…`), normalised.
fn fragments(quote: &str) -> Vec<String> {
    quote
        .replace('…', "...")
        .split("...")
        .map(normalise)
        .filter(|f| !f.is_empty())
        .collect()
}

/// Whether the fragments occur in `text` in order, each within [`MAX_GAP`] of the previous.
fn occurs(fragments: &[String], text: &str) -> bool {
    let Some((first, rest)) = fragments.split_first() else {
        return false;
    };
    text.match_indices(first.as_str()).any(|(start, _)| {
        let mut end = start + first.len();
        rest.iter().all(|f| {
            // The earliest next occurrence is the best: it leaves the most room after it.
            let window = &text[end..(end + MAX_GAP + f.len()).min(text.len())];
            match window.find(f.as_str()) {
                Some(at) if at <= MAX_GAP => {
                    end += at + f.len();
                    true
                }
                _ => false,
            }
        })
    })
}

/// Check a claim's quote against its paper's normalised seeds (from [`load_seeds`]): the
/// seed its `section` names by tag, or any. `Err` says why not.
pub fn check_quote(quote: &str, section: &str, seeds: &[(Seed, String)]) -> Result<(), String> {
    let frags = fragments(quote);
    if frags.is_empty() {
        return Err("the quote is empty".into());
    }
    if let Some(short) = frags.iter().find(|f| f.chars().count() < MIN_FRAGMENT) {
        return Err(format!(
            "the fragment \"{short}\" is shorter than {MIN_FRAGMENT} letters and digits"
        ));
    }
    let tagged: Vec<&(Seed, String)> = seeds
        .iter()
        .filter(|(s, _)| section.trim_start().starts_with(s.tag))
        .collect();
    let candidates: Vec<&(Seed, String)> = if tagged.is_empty() {
        seeds.iter().collect()
    } else {
        tagged
    };
    if candidates.iter().any(|(_, text)| occurs(&frags, text)) {
        return Ok(());
    }
    let elsewhere: Vec<&str> = seeds
        .iter()
        .filter(|(s, t)| !candidates.iter().any(|(c, _)| c.file == s.file) && occurs(&frags, t))
        .map(|(s, _)| s.tag)
        .collect();
    Err(if elsewhere.is_empty() {
        format!(
            "not found in {}",
            candidates
                .iter()
                .map(|(s, _)| s.file)
                .collect::<Vec<_>>()
                .join(" or ")
        )
    } else {
        format!(
            "found in the {} version, not in the one `section` names",
            elsewhere.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds(texts: &[(&'static str, &str)]) -> Vec<(Seed, String)> {
        texts
            .iter()
            .map(|(tag, t)| (Seed { tag, file: tag }, normalise(&seed_text(t))))
            .collect()
    }

    #[test]
    fn normalisation_keeps_the_words_and_drops_what_dumps_garble() {
        assert_eq!(
            normalise("The ﬁrst Ofﬁce-\nhours, 33% (p < 0.05)"),
            "thefirstofficehours33p005"
        );
        // A word hyphenated at a line end reads as the word.
        assert_eq!(normalise("pre-\n  selected"), normalise("preselected"));
        assert_eq!(normalise("low-rank"), normalise("low rank"));
        assert_eq!(normalise("Λ and σ²"), "λandσ²");
    }

    #[test]
    fn a_quote_must_be_the_seeds_words_in_order() {
        let s = seeds(&[(
            "NIPS",
            "Loreta performed better than other tech-\nniques that operate on a factorized model, \
             and also improves retrieval precision by 33% as compared with training a full \
             rank model.",
        )]);
        let ok = |q: &str| check_quote(q, "NIPS §1", &s);
        assert!(ok("also improves retrieval precision by 33 % as compared").is_ok());
        assert!(ok("performed better than other techniques that operate").is_ok());
        // An elision joins two fragments in order.
        assert!(ok("Loreta performed better ... improves retrieval precision by 33%").is_ok());
        // A changed, added or moved word, or fragments out of order, fail.
        assert!(ok("also improves retrieval precision by 50 % as compared").is_err());
        assert!(ok("also greatly improves retrieval precision by 33%").is_err());
        assert!(ok("improves retrieval precision by 33% ... Loreta performed better").is_err());
        // Scraps are refused.
        assert!(ok("Loreta ... 33%").unwrap_err().contains("shorter"));
        assert!(ok("").is_err());
        // JSON records are read by their text fields.
        let json = r#"{"title": "T", "abstract": "An abstract sentence here.", "full_text": "Body text of the paper."}"#;
        let j = seeds(&[("NIPS", json)]);
        assert!(check_quote("an abstract sentence here", "NIPS", &j).is_ok());
        assert!(check_quote("body text of the paper", "NIPS", &j).is_ok());
    }

    #[test]
    fn a_section_naming_a_version_checks_that_version() {
        let s = seeds(&[
            ("NIPS", "the short version says this sentence"),
            ("JMLR", "the long version says another sentence"),
        ]);
        assert!(check_quote("short version says this", "NIPS §5", &s).is_ok());
        let e = check_quote("short version says this", "JMLR §7", &s).unwrap_err();
        assert!(e.contains("found in the NIPS version"), "{e}");
        // A section naming no version: either will do.
        assert!(check_quote("long version says another", "Fig. 2 caption", &s).is_ok());
    }

    #[test]
    fn every_paper_of_the_project_has_its_seeds() {
        for p in [
            "aroma",
            "oasis",
            "loreta",
            "givens",
            "funcish",
            "tensor-ranking",
        ] {
            assert!(seeds_of(p).is_some_and(|s| !s.is_empty()), "{p}");
        }
        assert!(seeds_of("demo").is_none());
    }
}
