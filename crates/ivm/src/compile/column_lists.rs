//! Column lists on derived tables and CTEs (`(SELECT …) AS t(a, b)`, `WITH r(a, b) AS (…)`),
//! rewritten away before analysis: the subquery's select items are renamed to the listed names
//! (of a set operation, its first branch's, which name its columns), so the rest of the compiler
//! sees an ordinary subquery.
//!
//! A rename must not change what the subquery computes. DuckDB lets a select item's alias be
//! used elsewhere in the same SELECT (GROUP BY, HAVING, WHERE, later items), so an item is not
//! renamed when its old alias or its new name appears as a name anywhere in that SELECT (the
//! new name could then start to mean the item instead of a column), unless the name is the
//! item itself (`SELECT k … GROUP BY k` listed as `k`). Items under `*` have no position to
//! rename; those cases stay whole.

use super::reasons::Why;
use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, Expr, Ident, Query, Select, SelectItem, SetExpr, TableAliasColumnDef,
};

/// `q` with its output columns named `names` (a prefix of its columns), or why not.
pub fn rename(q: &Query, names: &[TableAliasColumnDef]) -> Result<Query, String> {
    if names.iter().any(|c| c.data_type.is_some()) {
        return Err(Why::ColumnListWithTypes.into());
    }
    let mut q = q.clone();
    let select = first_select(&mut q.body)
        .ok_or_else(|| "a column list over this kind of subquery".to_string())?;
    let names: Vec<&Ident> = names.iter().map(|c| &c.name).collect();
    rename_items(select, &names)?;
    Ok(q)
}

/// The SELECT whose items name a query's columns: the body, or a set operation's left branch.
fn first_select(body: &mut SetExpr) -> Option<&mut Select> {
    match body {
        SetExpr::Select(s) => Some(s),
        SetExpr::SetOperation { left, .. } => first_select(left),
        SetExpr::Query(q) if q.order_by.is_none() && q.limit_clause.is_none() => {
            first_select(&mut q.body)
        }
        _ => None,
    }
}

fn rename_items(select: &mut Select, names: &[&Ident]) -> Result<(), String> {
    if names.len() > select.projection.len() {
        return Err(Why::ColumnListTooLong.into());
    }
    let used = names_used(select);
    let uses = |n: &str| used.iter().any(|u| u.eq_ignore_ascii_case(n));
    for (item, new) in select.projection.iter_mut().zip(names) {
        let (expr, old_alias) = match item {
            SelectItem::UnnamedExpr(e) => (e.clone(), None),
            SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.value.clone())),
            _ => return Err(Why::ColumnListOverStar.into()),
        };
        let current = old_alias.clone().or_else(|| match &expr {
            Expr::Identifier(i) => Some(i.value.clone()),
            _ => None,
        });
        if current
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case(&new.value))
        {
            continue;
        }
        if uses(&new.value) || old_alias.as_deref().is_some_and(uses) {
            return Err(Why::ColumnListRenamesToUsedName.with(&expr));
        }
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: (*new).clone(),
        };
    }
    Ok(())
}

/// Every bare name an expression of the SELECT mentions.
fn names_used(select: &Select) -> Vec<String> {
    let mut out = Vec::new();
    let _ = visit_expressions(select, |e| {
        if let Expr::Identifier(i) = e {
            out.push(i.value.clone());
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::Statement;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn query(sql: &str) -> Query {
        match Parser::parse_sql(&GenericDialect {}, sql).unwrap().pop() {
            Some(Statement::Query(q)) => *q,
            other => panic!("{other:?}"),
        }
    }

    fn cols(names: &[&str]) -> Vec<TableAliasColumnDef> {
        names
            .iter()
            .map(|n| TableAliasColumnDef::from_name(*n))
            .collect()
    }

    #[test]
    fn items_take_the_listed_names() {
        let q = query("SELECT c_custkey, count(o_orderkey) FROM c GROUP BY c_custkey");
        let r = rename(&q, &cols(&["c_custkey", "c_count"])).unwrap();
        assert_eq!(
            r.to_string(),
            "SELECT c_custkey, count(o_orderkey) AS c_count FROM c GROUP BY c_custkey"
        );
        let u = query("SELECT a AS x, b FROM t UNION ALL SELECT c, d FROM u");
        let r = rename(&u, &cols(&["p"])).unwrap();
        assert_eq!(
            r.to_string(),
            "SELECT a AS p, b FROM t UNION ALL SELECT c, d FROM u"
        );
    }

    #[test]
    fn a_rename_that_could_change_a_reference_is_refused() {
        // GROUP BY x names the alias being renamed.
        let q = query("SELECT k + 1 AS x, count(*) FROM t GROUP BY x");
        assert!(rename(&q, &cols(&["y"])).is_err());
        // The new name k is a column the SELECT reads.
        let q = query("SELECT v, count(*) FROM t GROUP BY v, k");
        assert!(rename(&q, &cols(&["k"])).is_err());
        assert!(rename(&query("SELECT * FROM t"), &cols(&["a"])).is_err());
        assert!(rename(&query("SELECT a FROM t"), &cols(&["a", "b"])).is_err());
    }
}
