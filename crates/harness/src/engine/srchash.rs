//! Source fingerprints: a hash of a Rust file's token stream that ignores comments, doc
//! comments, formatting and `#[cfg(test)]` items. Shared by the build script (which
//! fingerprints every source file of the workspace) and the library (which tests it).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Hex sha256 of the canonical token text; raw bytes when the file does not tokenize.
pub fn fingerprint(text: &str) -> String {
    let mut canon = String::new();
    match text.parse::<TokenStream>() {
        Ok(ts) => canonical(ts, &mut canon),
        Err(_) => canon.push_str(text),
    }
    Sha256::digest(canon.as_bytes())
        .iter()
        .fold(String::new(), |mut s, b| {
            write!(s, "{b:02x}").unwrap();
            s
        })
}

/// Tokens separated by single spaces, groups recursively, without `#[doc = ..]` attributes
/// (doc comments), without items marked `#[cfg(test)]` and without trailing commas (which
/// rustfmt adds or removes as line breaks change).
fn canonical(ts: TokenStream, out: &mut String) {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let Some((len, kind)) = attribute_at(&tokens, i) {
            i += len;
            if kind == Attr::CfgTest {
                // Skip the item: up to and including its first brace group or `;`.
                while i < tokens.len() {
                    let end = match &tokens[i] {
                        TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
                        TokenTree::Punct(p) => p.as_char() == ';',
                        _ => false,
                    };
                    i += 1;
                    if end {
                        break;
                    }
                }
            } else if kind == Attr::Other {
                for t in &tokens[i - len..i] {
                    emit(t.clone(), out);
                }
            }
            continue;
        }
        // A trailing comma before a closing delimiter is formatting, not code.
        let trailing_comma = i + 1 == tokens.len()
            && matches!(&tokens[i], TokenTree::Punct(p) if p.as_char() == ',');
        if !trailing_comma {
            emit(tokens[i].clone(), out);
        }
        i += 1;
    }
}

#[derive(PartialEq)]
enum Attr {
    Doc,
    CfgTest,
    Other,
}

/// Recognise `#[..]` / `#![..]` at `i`: its token length and kind.
fn attribute_at(tokens: &[TokenTree], i: usize) -> Option<(usize, Attr)> {
    let TokenTree::Punct(p) = &tokens[i] else {
        return None;
    };
    if p.as_char() != '#' {
        return None;
    }
    let mut j = i + 1;
    if let Some(TokenTree::Punct(b)) = tokens.get(j)
        && b.as_char() == '!'
    {
        j += 1;
    }
    let TokenTree::Group(g) = tokens.get(j)? else {
        return None;
    };
    if g.delimiter() != Delimiter::Bracket {
        return None;
    }
    let inner: Vec<String> = g.stream().into_iter().map(|t| t.to_string()).collect();
    let kind = match inner.first().map(String::as_str) {
        Some("doc") => Attr::Doc,
        Some("cfg") if inner.get(1).is_some_and(|s| s.replace(' ', "") == "(test)") => {
            Attr::CfgTest
        }
        _ => Attr::Other,
    };
    Some((j + 1 - i, kind))
}

fn emit(t: TokenTree, out: &mut String) {
    match t {
        TokenTree::Group(g) => {
            let (open, close) = match g.delimiter() {
                Delimiter::Parenthesis => ("(", ")"),
                Delimiter::Brace => ("{", "}"),
                Delimiter::Bracket => ("[", "]"),
                Delimiter::None => ("", ""),
            };
            out.push_str(open);
            out.push(' ');
            canonical(g.stream(), out);
            out.push_str(close);
            out.push(' ');
        }
        other => {
            out.push_str(&other.to_string());
            out.push(' ');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    const BASE: &str = "/// Adds.\nfn add(a: u32, b: u32) -> u32 { a + b }\n";

    #[test]
    fn comments_docs_and_layout_do_not_count() {
        let edited = "// a new comment\n/// Adds two numbers.\nfn add(a: u32,\n  b: u32) -> u32 {\n    a + b /* sum */\n}\n";
        assert_eq!(fingerprint(BASE), fingerprint(edited));
        let with_tests =
            format!("{BASE}#[cfg(test)]\nmod tests {{ fn t() {{ assert!(true) }} }}\n");
        assert_eq!(fingerprint(BASE), fingerprint(&with_tests));
    }

    #[test]
    fn code_changes_count() {
        assert_ne!(
            fingerprint(BASE),
            fingerprint("fn add(a: u32, b: u32) -> u32 { a - b }")
        );
        assert_ne!(
            fingerprint(BASE),
            fingerprint("fn add(a: u32, b: u32) -> u32 { a + b + 0 }")
        );
        let attr = "#[inline]\nfn add(a: u32, b: u32) -> u32 { a + b }";
        assert_ne!(fingerprint(BASE), fingerprint(attr));
    }
}
