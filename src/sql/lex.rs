//! A small lexer: enough to read a statement's leading keywords, names and
//! clause boundaries without a full parse (DuckDB accepts more syntax than
//! any parser we could embed, so most statements pass through unparsed).

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A bare word, upper-cased in `upper`.
    Word,
    /// A "quoted identifier"; `text` holds the unquoted name.
    Ident,
    /// A 'string' literal (any kind), or a dollar-quoted body.
    Str,
    Number,
    Punct,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub kind: Tok,
    /// Byte offsets of the token in the statement.
    pub start: usize,
    pub end: usize,
    /// Words upper-cased; identifiers unquoted; others as written.
    pub text: String,
}

impl Token {
    pub fn is_kw(&self, kw: &str) -> bool {
        self.kind == Tok::Word && self.text == kw
    }
    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Tok::Punct && self.text == p
    }
}

pub fn tokenize(sql: &str) -> Vec<Token> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 1;
            i += 2;
            while i < b.len() && depth > 0 {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if c == b'\'' {
            let s = i;
            i = skip(b, i, b'\'');
            out.push(Token {
                kind: Tok::Str,
                start: s,
                end: i,
                text: sql[s..i].to_string(),
            });
        } else if c == b'"' {
            let s = i;
            i = skip(b, i, b'"');
            // An unterminated name runs to the end of the text.
            let closed = i > s + 1 && b[i - 1] == b'"';
            let inner = &sql[s + 1..if closed { i - 1 } else { i }];
            out.push(Token {
                kind: Tok::Ident,
                start: s,
                end: i,
                text: inner.replace("\"\"", "\""),
            });
        } else if c == b'$' && matches!(b.get(i + 1), Some(d) if d.is_ascii_digit()) {
            let s = i;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Token {
                kind: Tok::Punct,
                start: s,
                end: i,
                text: sql[s..i].to_string(),
            });
        } else if c == b'$' {
            let s = i;
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j < b.len() && b[j] == b'$' {
                let tag = &sql[s..=j];
                let end = sql[j + 1..]
                    .find(tag)
                    .map(|k| j + 1 + k + tag.len())
                    .unwrap_or(b.len());
                i = end;
                out.push(Token {
                    kind: Tok::Str,
                    start: s,
                    end: i,
                    text: sql[s..i].to_string(),
                });
            } else {
                i += 1;
                out.push(Token {
                    kind: Tok::Punct,
                    start: s,
                    end: i,
                    text: "$".into(),
                });
            }
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let s = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80)
            {
                i += 1;
            }
            // E'..' / X'..' prefixed strings
            if i < b.len() && b[i] == b'\'' && i - s == 1 {
                i = skip(b, i, b'\'');
                out.push(Token {
                    kind: Tok::Str,
                    start: s,
                    end: i,
                    text: sql[s..i].to_string(),
                });
                continue;
            }
            out.push(Token {
                kind: Tok::Word,
                start: s,
                end: i,
                text: sql[s..i].to_ascii_uppercase(),
            });
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            out.push(Token {
                kind: Tok::Number,
                start: s,
                end: i,
                text: sql[s..i].to_string(),
            });
        } else {
            let s = i;
            let two = b.get(i..i + 2).unwrap_or_default();
            i += if matches!(two, b"::" | b"<=" | b">=" | b"<>" | b"!=" | b"||") {
                2
            } else {
                1
            };
            // keep multi-byte chars whole
            while i < b.len() && !sql.is_char_boundary(i) {
                i += 1;
            }
            out.push(Token {
                kind: Tok::Punct,
                start: s,
                end: i,
                text: sql[s..i].to_string(),
            });
        }
    }
    out
}

/// The end of the quoted text opened at `open`: just past its closing quote, or the end of `b`
/// when it is unterminated. Always a char boundary: it follows an ASCII quote or is `b.len()`.
fn skip(b: &[u8], open: usize, q: u8) -> usize {
    let escapes = q == b'\'' && open > 0 && (b[open - 1] == b'E' || b[open - 1] == b'e');
    let mut i = open + 1;
    while i < b.len() {
        if escapes && b[i] == b'\\' {
            // A backslash escapes the next byte; the end may come right after it.
            i = (i + 2).min(b.len());
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_names() {
        let t = tokenize("CREATE materialized view \"My View\" AS select 'a' -- x\n");
        let texts: Vec<_> = t.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "CREATE",
                "MATERIALIZED",
                "VIEW",
                "My View",
                "AS",
                "SELECT",
                "'a'"
            ]
        );
    }
}
