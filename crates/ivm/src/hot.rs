//! Parameters of repeated refresh statements ([`super::Sql::exec_hot`]) for connections that do
//! not keep statements prepared: the values are written into the text as string literals.

use super::text::lit;

/// `sql` with `$1`, `$2`, … replaced by the quoted values (highest number first, so `$1` does
/// not eat the start of `$10`).
pub fn substitute(sql: &str, params: &[String]) -> String {
    let mut out = sql.to_string();
    for (i, v) in params.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), &lit(v));
    }
    out
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
}
