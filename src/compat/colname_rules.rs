//! The name PostgreSQL gives a result column that has no alias, read off the
//! expression's parse tree the way PostgreSQL's parser does: a column is
//! named by its last name part, a function call by the function, a cast by
//! what it casts or else by its type, CASE by its ELSE result or else `case`;
//! anything else is `?column?`.

use sqlparser::ast::{
    AccessExpr, DataType, Expr, Function, Ident, ObjectName, ObjectNamePart, Query, SelectItem,
    SetExpr, TrimWhereField,
};

/// What PostgreSQL calls an expression's column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Figured {
    /// A name, and how strongly the expression gives it: 2 for a column,
    /// function or keyword expression, 1 for a fallback (a cast's type,
    /// `case`), which an enclosing cast or CASE may replace.
    Name(String, u8),
    /// `?column?`: nothing names it.
    Unnamed,
    /// Depends on something the parse does not show (`(SELECT * …)`).
    Unknown,
}

impl Figured {
    fn strength(&self) -> u8 {
        match self {
            Figured::Name(_, s) => *s,
            _ => 0,
        }
    }

    /// The column name, or None when it cannot be told.
    pub fn column(self) -> Option<String> {
        match self {
            Figured::Name(n, _) => Some(n),
            Figured::Unnamed => Some("?column?".into()),
            Figured::Unknown => None,
        }
    }
}

fn name(n: &str, strength: u8) -> Figured {
    Figured::Name(n.to_string(), strength)
}

/// An identifier as PostgreSQL folds it: unquoted names are lower-case.
pub fn folded(id: &Ident) -> String {
    match id.quote_style {
        None => id.value.to_lowercase(),
        Some(_) => id.value.clone(),
    }
}

fn last_part(n: &ObjectName) -> Option<String> {
    match n.0.last()? {
        ObjectNamePart::Identifier(id) => Some(folded(id)),
        ObjectNamePart::Function(_) => None,
    }
}

/// PostgreSQL's name for `e` as a result column.
pub fn figure(e: &Expr) -> Figured {
    match e {
        Expr::Identifier(id) => name(&folded(id), 2),
        Expr::CompoundIdentifier(ids) => ids
            .last()
            .map_or(Figured::Unnamed, |id| name(&folded(id), 2)),
        Expr::CompoundFieldAccess { root, access_chain } => {
            // `(x).field[1]` is named by its last field, `x[1]` by `x`.
            let field = access_chain.iter().rev().find_map(|a| match a {
                AccessExpr::Dot(Expr::Identifier(id)) => Some(folded(id)),
                _ => None,
            });
            field.map_or_else(|| figure(root), |f| name(&f, 2))
        }
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure(inner),
        Expr::Function(f) => function(f),
        Expr::Cast {
            expr, data_type, ..
        } => {
            let inner = figure(expr);
            if inner.strength() <= 1 {
                name(&type_name(data_type), 1)
            } else {
                inner
            }
        }
        Expr::TypedString(t) => name(&type_name(&t.data_type), 1),
        Expr::Interval(_) => name("interval", 1),
        Expr::Case { else_result, .. } => {
            let inner = else_result.as_deref().map_or(Figured::Unnamed, figure);
            if inner.strength() <= 1 {
                name("case", 1)
            } else {
                inner
            }
        }
        Expr::Exists { negated: false, .. } => name("exists", 2),
        Expr::Subquery(q) => first_column(q),
        Expr::Array(_) => name("array", 2),
        Expr::Tuple(_) => name("row", 2),
        Expr::Trim { trim_where, .. } => name(
            match trim_where {
                Some(TrimWhereField::Leading) => "ltrim",
                Some(TrimWhereField::Trailing) => "rtrim",
                _ => "btrim",
            },
            2,
        ),
        Expr::Extract { .. } => name("extract", 2),
        Expr::Position { .. } => name("position", 2),
        Expr::Substring { .. } => name("substring", 2),
        Expr::Overlay { .. } => name("overlay", 2),
        Expr::Ceil { .. } => name("ceil", 2),
        Expr::Floor { .. } => name("floor", 2),
        // PostgreSQL parses `x AT TIME ZONE z` as timezone(z, x).
        Expr::AtTimeZone { .. } => name("timezone", 2),
        _ => Figured::Unnamed,
    }
}

fn function(f: &Function) -> Figured {
    last_part(&f.name).map_or(Figured::Unnamed, |n| name(&n, 2))
}

/// A scalar subquery is named by its (first) column.
fn first_column(q: &Query) -> Figured {
    let mut body = q.body.as_ref();
    loop {
        match body {
            SetExpr::Select(s) => {
                return match s.projection.first() {
                    Some(SelectItem::UnnamedExpr(e)) => match figure(e) {
                        Figured::Name(n, _) => name(&n, 2),
                        // The subquery's own column is `?column?`, which names this one.
                        Figured::Unnamed => name("?column?", 2),
                        Figured::Unknown => Figured::Unknown,
                    },
                    Some(SelectItem::ExprWithAlias { alias, .. }) => name(&folded(alias), 2),
                    _ => Figured::Unknown,
                };
            }
            SetExpr::SetOperation { left, .. } => body = left,
            SetExpr::Query(q) => body = q.body.as_ref(),
            _ => return Figured::Unknown,
        }
    }
}

/// The last part of a type's PostgreSQL name (`int` is `int4`, `double
/// precision` is `float8`).
pub fn type_name(t: &DataType) -> String {
    if let DataType::Custom(n, _) = t {
        return last_part(n).unwrap_or_default();
    }
    let written = t.to_string().to_lowercase();
    // Drop modifiers and array brackets: `numeric(10,2)`, `int[]`.
    let mut base = String::new();
    let mut depth = 0;
    for c in written.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ if depth == 0 => base.push(c),
            _ => {}
        }
    }
    let base = base.split_whitespace().collect::<Vec<_>>().join(" ");
    let precision = written
        .split_once('(')
        .and_then(|(_, r)| r.split(')').next())
        .and_then(|p| p.trim().parse::<u32>().ok());
    internal_type_name(&base, precision).to_string()
}

fn internal_type_name(base: &str, precision: Option<u32>) -> &str {
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "float" if precision.is_some_and(|p| p <= 24) => "float4",
        "float" | "double precision" | "double" | "float8" => "float8",
        "boolean" | "bool" => "bool",
        "char" | "character" | "bpchar" | "nchar" => "bpchar",
        "varchar" | "character varying" | "char varying" => "varchar",
        "decimal" | "numeric" | "dec" => "numeric",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "timestamptz" | "timestamp with time zone" => "timestamptz",
        "time" | "time without time zone" => "time",
        "timetz" | "time with time zone" => "timetz",
        "bit varying" | "varbit" => "varbit",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn col(expr: &str) -> Option<String> {
        let e = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(expr)
            .unwrap()
            .parse_expr()
            .unwrap();
        figure(&e).column()
    }

    /// Each expression with the column name PostgreSQL 15 gives it.
    #[test]
    fn names_follow_postgres() {
        for (expr, expected) in [
            ("count(*)", "count"),
            ("pg_catalog.format_type(a, b)", "format_type"),
            ("t.X", "x"),
            ("\"Mixed\"", "Mixed"),
            ("1", "?column?"),
            ("x::int", "x"),
            ("'x'::text", "text"),
            ("1::int", "int4"),
            ("CAST(y AS double precision)", "y"),
            ("NULL::bigint", "int8"),
            ("'a'::varchar(3)::character(3)", "bpchar"),
            ("'{1}'::int[]", "int4"),
            ("1::float(10)", "float4"),
            ("'x'::pg_catalog.regclass", "regclass"),
            ("case when a then 1 end", "case"),
            ("case when a then 1 else b end", "b"),
            ("case when a then 1 else b::int end", "b"),
            ("case when a then 1 else 'x'::text end", "case"),
            ("(select max(z) from t)", "max"),
            ("(select 1)", "?column?"),
            ("(select 1 as q)", "q"),
            ("exists (select 1)", "exists"),
            ("not exists (select 1)", "?column?"),
            ("array[1, 2]", "array"),
            ("(array[1, 2])[1]", "array"),
            ("(x).n", "n"),
            ("x[1]", "x"),
            ("(1, 2)", "row"),
            ("row(1, 2)", "row"),
            ("trim(' a ')", "btrim"),
            ("trim(leading 'a' from x)", "ltrim"),
            ("extract(year from d)", "extract"),
            ("substring(x from 1 for 2)", "substring"),
            ("position('a' in x)", "position"),
            ("interval '1 day'", "interval"),
            ("date '2020-01-01'", "date"),
            ("timestamp with time zone '2020-01-01'", "timestamptz"),
            ("coalesce(a, b)", "coalesce"),
            ("nullif(a, b)", "nullif"),
            ("current_date", "current_date"),
            ("now() at time zone 'utc'", "timezone"),
            ("a = b", "?column?"),
            ("-x", "?column?"),
            ("x is null", "?column?"),
            ("count(*) filter (where a) over ()", "count"),
        ] {
            assert_eq!(col(expr).as_deref(), Some(expected), "{expr}");
        }
        assert_eq!(col("(select * from t)"), None);
    }
}
