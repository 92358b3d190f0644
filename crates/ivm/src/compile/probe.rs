//! Probe queries: a piece of a definition that DuckDB binds on its own, to learn whether it
//! refers to nothing outside itself, and what types its columns have.
//!
//! A piece that reads a CTE of the definition binds only with that CTE in scope, so every
//! probe carries the CTEs of its scope as a typed `WITH`. A scope where one name shadows
//! another gets no `WITH`: the probe then fails to bind, and the piece keeps its conservative
//! answer (it stays as it is).

use std::collections::HashSet;

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    CastKind, Cte, DataType, Expr, Ident, Query, Select, SelectItem, SetExpr, TableAlias,
    TableFactor, TableWithJoins, Value, With,
};

use super::Scope;

/// Builds probe queries under one scope's CTEs.
pub(super) struct Probe {
    with: Option<With>,
}

impl Probe {
    pub(super) fn new(scope: &Scope) -> Self {
        let mut names = HashSet::new();
        let distinct = scope.iter().all(|(n, _)| names.insert(n));
        let with = (!scope.is_empty() && distinct).then(|| With {
            with_token: AttachedToken::empty(),
            recursive: false,
            cte_tables: scope.iter().map(|(n, q)| cte(n, q)).collect(),
        });
        Probe { with }
    }

    /// `q` with the scope's CTEs in front. A query with a WITH of its own is nested, so its
    /// CTEs shadow the scope's as they do inside the definition.
    pub(super) fn query(&self, q: &Query) -> Query {
        match (&self.with, &q.with) {
            (None, _) => q.clone(),
            (Some(w), None) => Query {
                with: Some(w.clone()),
                ..q.clone()
            },
            (Some(_), Some(_)) => self.wrap(SetExpr::Query(Box::new(q.clone()))),
        }
    }

    /// The block `s` as a query under the scope's CTEs.
    pub(super) fn block(&self, s: &Select) -> Query {
        self.wrap(SetExpr::Select(Box::new(s.clone())))
    }

    /// `SELECT items FROM from [WHERE selection]` under the scope's CTEs.
    pub(super) fn select(
        &self,
        items: &[Expr],
        from: &[TableWithJoins],
        selection: Option<Expr>,
    ) -> Query {
        let projection = items.iter().cloned().map(SelectItem::UnnamedExpr).collect();
        self.wrap(SetExpr::Select(Box::new(select(
            projection, from, selection,
        ))))
    }

    /// `SELECT * FROM relation WHERE selection` under the scope's CTEs.
    pub(super) fn star(&self, relation: &TableFactor, selection: Expr) -> Query {
        let from = [TableWithJoins {
            relation: relation.clone(),
            joins: Vec::new(),
        }];
        let star = SelectItem::Wildcard(Default::default());
        let s = select(vec![star], &from, Some(selection));
        self.wrap(SetExpr::Select(Box::new(s)))
    }

    /// `SELECT CAST((value) AS VARCHAR), typeof((value)) FROM from WHERE FALSE`: the aggregate
    /// `value` over no rows, as text, and its type.
    pub(super) fn value_over_no_rows(&self, value: &Expr, from: &[TableWithJoins]) -> Query {
        let text = Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(value.clone()),
            data_type: DataType::Varchar(None),
            format: None,
        };
        let ty = crate::ir::call("typeof", vec![crate::ir::user(value)]).to_ast();
        self.select(
            &[text, ty],
            from,
            Some(Expr::Value(Value::Boolean(false).into())),
        )
    }

    fn wrap(&self, body: SetExpr) -> Query {
        Query {
            with: self.with.clone(),
            ..crate::ir::plain_query(body)
        }
    }
}

pub(super) fn cte(name: &str, q: &Query) -> Cte {
    Cte {
        alias: TableAlias {
            explicit: false,
            name: Ident::with_quote('"', name),
            columns: Vec::new(),
            at: None,
        },
        query: Box::new(q.clone()),
        from: None,
        materialized: None,
        closing_paren_token: AttachedToken::empty(),
    }
}

fn select(projection: Vec<SelectItem>, from: &[TableWithJoins], selection: Option<Expr>) -> Select {
    crate::ir::ast_select(projection, from.to_vec(), selection)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_query;

    fn scope(ctes: &[(&str, &str)]) -> Scope {
        ctes.iter()
            .map(|(n, q)| (n.to_string(), *parse_query(q).unwrap()))
            .collect()
    }

    fn ctes(q: &Query) -> Vec<String> {
        q.with
            .iter()
            .flat_map(|w| &w.cte_tables)
            .map(|c| c.alias.name.value.clone())
            .collect()
    }

    #[test]
    fn a_probe_carries_every_cte_in_scope() {
        let p = Probe::new(&scope(&[("r", "SELECT 1 AS a"), ("s", "SELECT 2 AS b")]));
        let q = p.query(&parse_query("SELECT a FROM r").unwrap());
        assert_eq!(ctes(&q), ["r", "s"]);
        assert!(matches!(q.body.as_ref(), SetExpr::Select(_)));
    }

    #[test]
    fn shadowed_names_give_no_with() {
        let p = Probe::new(&scope(&[("r", "SELECT 1 AS a"), ("r", "SELECT 2 AS a")]));
        assert!(p
            .query(&parse_query("SELECT a FROM r").unwrap())
            .with
            .is_none());
        assert!(Probe::new(&Vec::new()).with.is_none());
    }

    #[test]
    fn a_query_with_its_own_with_is_nested_under_the_scope() {
        let p = Probe::new(&scope(&[("r", "SELECT 1 AS a")]));
        let own = parse_query("WITH r AS (SELECT 3 AS a) SELECT a FROM r").unwrap();
        let q = p.query(&own);
        assert_eq!(ctes(&q), ["r"]);
        let SetExpr::Query(inner) = q.body.as_ref() else {
            panic!("not nested: {q}");
        };
        assert_eq!(inner, &own);
    }

    #[test]
    fn the_empty_aggregate_probe_filters_every_row() {
        let q = parse_query("SELECT sum(v) FROM t").unwrap();
        let SetExpr::Select(s) = q.body.as_ref() else {
            unreachable!()
        };
        let SelectItem::UnnamedExpr(value) = &s.projection[0] else {
            unreachable!()
        };
        let probe = Probe::new(&Vec::new()).value_over_no_rows(value, &s.from);
        let SetExpr::Select(p) = probe.body.as_ref() else {
            unreachable!()
        };
        assert_eq!(p.from, s.from);
        assert_eq!(p.selection, Some(Expr::Value(Value::Boolean(false).into())));
        assert!(matches!(
            &p.projection[..],
            [
                SelectItem::UnnamedExpr(Expr::Cast { .. }),
                SelectItem::UnnamedExpr(Expr::Function(_))
            ]
        ));
    }

    #[test]
    fn every_probe_prints_as_sql_that_parses_back() {
        let p = Probe::new(&scope(&[("r", "SELECT 1 AS a")]));
        let q = parse_query("SELECT a FROM r, t WHERE a = k").unwrap();
        let SetExpr::Select(s) = q.body.as_ref() else {
            unreachable!()
        };
        let a = Expr::Identifier(Ident::new("a"));
        let probes = [
            p.query(&q),
            p.block(s),
            p.select(std::slice::from_ref(&a), &s.from, s.selection.clone()),
            p.star(&s.from[0].relation, a.clone()),
            p.value_over_no_rows(&a, &s.from),
        ];
        for probe in probes {
            let text = probe.to_string();
            assert!(
                text.starts_with("WITH \"r\" AS (SELECT 1 AS a) SELECT "),
                "{text}"
            );
            assert_eq!(parse_query(&text).as_deref(), Some(&probe), "{text}");
        }
    }
}
