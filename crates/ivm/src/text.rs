//! Small helpers for writing SQL text: quoting and name handling.

/// Quotes an identifier for DuckDB (always quoted, so any name is safe; DuckDB still matches
/// quoted names case-insensitively).
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The name an [`ident`] quotes; other text as it is.
pub fn unquoted(quoted: &str) -> String {
    match quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(inner) if quoted.len() >= 2 => inner.replace("\"\"", "\""),
        _ => quoted.to_string(),
    }
}

/// `sql` parsed as exactly one query (the dialect every analysis of a definition uses); None
/// for anything else or what does not parse.
pub fn parse_query(sql: &str) -> Option<Box<sqlparser::ast::Query>> {
    use sqlparser::ast::Statement;
    let mut stmts =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::GenericDialect {}, sql).ok()?;
    match (stmts.len(), stmts.pop()) {
        (1, Some(Statement::Query(q))) => Some(q),
        _ => None,
    }
}

/// Quotes a string literal.
pub fn lit(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// `"schema"."name"`.
pub fn qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", ident(schema), ident(name))
}

/// Splits a possibly qualified, possibly quoted name (`v`, `s.v`, `"My View"`) into
/// (schema, name); the schema defaults to `main`.
pub fn split_name(name: &str) -> (String, String) {
    let (_, schema, name) = split_qualified(name);
    (schema, name)
}

/// [`split_name`] keeping a three-part name's first part, the attached database.
pub fn split_qualified(name: &str) -> (Option<String>, String, String) {
    let mut parts = crate::ir::Name::of(name).0;
    let name = parts.pop().unwrap_or_default();
    let schema = parts.pop().unwrap_or_else(|| "main".to_string());
    (parts.pop(), schema, name)
}

/// A name usable inside an internal identifier (`d_17_orders`).
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(lit("it's"), "'it''s'");
        assert_eq!(qualified("main", "v"), "\"main\".\"v\"");
    }

    #[test]
    fn names() {
        assert_eq!(split_name("v"), ("main".into(), "v".into()));
        assert_eq!(split_name("s.v"), ("s".into(), "v".into()));
        assert_eq!(split_name("\"My.View\""), ("main".into(), "My.View".into()));
        assert_eq!(split_name("\"s\".\"a\"\"b\""), ("s".into(), "a\"b".into()));
        assert_eq!(sanitize("Order Lines"), "order_lines");
    }
}
