//! Splitting a simple-query string into statements.
//!
//! pgwire hands over the whole query string; PostgreSQL runs each
//! `;`-separated statement in turn. The splitter must not break inside
//! string literals, quoted identifiers, dollar-quoted bodies or comments.

/// Splits `sql` into statements, trimmed, without the trailing `;`.
/// Statements that hold nothing but whitespace and comments are dropped.
pub fn split_statements(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let mut has_code = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                // E'...' strings treat backslash as an escape.
                let escapes = i > 0
                    && (b[i - 1] == b'E' || b[i - 1] == b'e')
                    && (i < 2 || !is_ident(b[i - 2]));
                i = skip_quoted(b, i, b'\'', escapes);
                has_code = true;
            }
            b'"' => {
                i = skip_quoted(b, i, b'"', false);
                has_code = true;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
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
            }
            b'$' if i == 0 || !is_ident(b[i - 1]) => {
                if let Some(end) = dollar_tag_end(b, i) {
                    let tag = &b[i..=end];
                    let body = end + 1;
                    match find(b, body, tag) {
                        Some(close) => i = close + tag.len(),
                        None => i = b.len(),
                    }
                    has_code = true;
                } else {
                    i += 1;
                    has_code = true;
                }
            }
            b';' => {
                if has_code {
                    out.push(sql[start..i].trim().to_string());
                }
                start = i + 1;
                has_code = false;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                has_code = true;
                i += 1;
            }
        }
    }
    if has_code {
        out.push(sql[start..].trim().to_string());
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Index just past the closing quote (doubled quotes stay inside).
fn skip_quoted(b: &[u8], open: usize, q: u8, backslash: bool) -> usize {
    let mut i = open + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
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

/// For `$tag$` starting at `i`, the index of the closing `$` of the tag.
fn dollar_tag_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        if j == i + 1 && b[j].is_ascii_digit() {
            return None; // $1 is a parameter
        }
        j += 1;
    }
    (j < b.len() && b[j] == b'$').then_some(j)
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    (from..=b.len().saturating_sub(pat.len())).find(|&k| &b[k..k + pat.len()] == pat)
}

#[cfg(test)]
mod tests {
    use super::split_statements as s;

    #[test]
    fn splits_plain() {
        assert_eq!(s("select 1; select 2;"), vec!["select 1", "select 2"]);
        assert_eq!(s("select 1"), vec!["select 1"]);
        assert!(s(" ; ;; -- nothing\n").is_empty());
    }

    #[test]
    fn keeps_quoted_semicolons() {
        assert_eq!(
            s("select 'a;b'; select \"x;y\" from t"),
            vec!["select 'a;b'", "select \"x;y\" from t"]
        );
        assert_eq!(
            s("select 'it''s;'; select 2"),
            vec!["select 'it''s;'", "select 2"]
        );
        assert_eq!(
            s("select E'a\\';b'; select 2"),
            vec!["select E'a\\';b'", "select 2"]
        );
        assert_eq!(
            s("select $$a;b$$; select $q$;$q$"),
            vec!["select $$a;b$$", "select $q$;$q$"]
        );
        assert_eq!(s("select $1; select 2"), vec!["select $1", "select 2"]);
    }

    #[test]
    fn skips_comments() {
        assert_eq!(
            s("select 1 -- a;b\n; /* c;d /* e; */ */ select 2"),
            vec!["select 1 -- a;b", "/* c;d /* e; */ */ select 2"]
        );
    }
}
