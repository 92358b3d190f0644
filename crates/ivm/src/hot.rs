//! Parameters of repeated refresh statements ([`super::Sql::exec_hot`]) for connections that do
//! not keep statements prepared: the values are written into the text as string literals.

use super::text::lit;

/// `sql` with each placeholder `$n` (outside quotes) replaced by the quoted `params[n - 1]`, in
/// one pass: a value is written once and never read again as SQL (a value holding `$1` stays as
/// it is), and `$10` is read whole. A placeholder without a value stays as written.
pub fn substitute(sql: &str, params: &[String]) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => i = past_quoted(b, i, q),
            b'$' => {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                let end = i + 1 + digits;
                let value = sql[i + 1..end]
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| params.get(n.checked_sub(1)?));
                if let Some(v) = value {
                    out.push_str(&sql[copied..i]);
                    out.push_str(&lit(v));
                    copied = end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    out
}

/// Just past the quoted text opened at `open` (a doubled quote stays inside), or the end.
fn past_quoted(b: &[u8], open: usize, q: u8) -> usize {
    let mut i = open + 1;
    while i < b.len() {
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
    fn numbered_parameters_become_literals() {
        let p: Vec<String> = (1..=10).map(|i| format!("v{i}")).collect();
        assert_eq!(substitute("SELECT $1, $10", &p), "SELECT 'v1', 'v10'");
        assert_eq!(substitute("SELECT $1", &["it's".into()]), "SELECT 'it''s'");
    }

    /// Values are not SQL: one holding a placeholder is written as it is, and quoted text keeps
    /// its dollars.
    #[test]
    fn values_and_quoted_text_are_not_read_as_placeholders() {
        let p: Vec<String> = vec!["a$2".into(), "b".into()];
        assert_eq!(
            substitute("SELECT $1, $2, '$1', \"$2\"", &p),
            "SELECT 'a$2', 'b', '$1', \"$2\""
        );
        assert_eq!(substitute("SELECT $3, $0, $", &p), "SELECT $3, $0, $");
    }
}
