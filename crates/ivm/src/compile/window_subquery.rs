//! A window query read through a derived table or CTE — how PostgreSQL, which has no QUALIFY,
//! writes the top rows per group: `SELECT k, v FROM (SELECT k, v, row_number() OVER (PARTITION
//! BY g ORDER BY v) AS rn FROM t) x WHERE rn <= 3`. When the outer query only projects and
//! filters the inner one's rows, it is the inner query with the outer select list over the
//! inner's expressions and the outer filter as QUALIFY, which like the outer WHERE runs after
//! the window functions; that query is maintained as a window view (`window`).

use std::collections::HashMap;

use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, Query, Select, SelectItem, SetExpr, TableFactor,
};

use super::{levels, Analyzer};

impl Analyzer<'_> {
    /// `q` with its one FROM item, a derived table or CTE whose query calls window functions,
    /// merged into it; None when `q` is not such a query.
    pub(super) fn merged_window(&self, q: &Query) -> Option<Query> {
        let SetExpr::Select(outer) = q.body.as_ref() else {
            return None;
        };
        let plain = |s: &Select| {
            matches!(&s.group_by, GroupByExpr::Expressions(k, m) if k.is_empty() && m.is_empty())
                && s.having.is_none()
                && s.distinct.is_none()
                && s.qualify.is_none()
                && s.named_window.is_empty()
        };
        if !plain(outer) || self.is_aggregate(outer) || self.has_window(outer) {
            return None;
        }
        let [item] = outer.from.as_slice() else {
            return None;
        };
        if !item.joins.is_empty() {
            return None;
        }
        let (alias, inner_query) = self.window_source(q, &item.relation)?;
        let plain_query = super::support::bare_query(&inner_query);
        let SetExpr::Select(inner) = inner_query.body.as_ref() else {
            return None;
        };
        if !plain_query || inner.distinct.is_some() || !self.has_window(inner) {
            return None;
        }
        let names = Names::of(inner, &alias)?;
        let mut merged = (**inner).clone();
        merged.projection = Vec::new();
        for item in &outer.projection {
            match item {
                SelectItem::Wildcard(o) if o.opt_exclude.is_none() && o.opt_replace.is_none() => {
                    merged.projection.extend(inner.projection.iter().cloned())
                }
                SelectItem::UnnamedExpr(e) => {
                    let alias = match e {
                        Expr::Identifier(i) => Some(i.clone()),
                        Expr::CompoundIdentifier(p) => p.last().cloned(),
                        _ => None,
                    };
                    let expr = names.rewrite(e)?;
                    merged.projection.push(match alias {
                        Some(alias) => SelectItem::ExprWithAlias { expr, alias },
                        None => SelectItem::UnnamedExpr(expr),
                    });
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    merged.projection.push(SelectItem::ExprWithAlias {
                        expr: names.rewrite(expr)?,
                        alias: alias.clone(),
                    })
                }
                _ => return None,
            }
        }
        if let Some(w) = &outer.selection {
            let w = names.rewrite(w)?;
            merged.qualify = Some(match merged.qualify.take() {
                Some(q) => Expr::BinaryOp {
                    left: Box::new(Expr::Nested(Box::new(q))),
                    op: BinaryOperator::And,
                    right: Box::new(Expr::Nested(Box::new(w))),
                },
                None => w,
            });
        }
        let mut out = q.clone();
        out.body = Box::new(SetExpr::Select(Box::new(merged)));
        Some(out)
    }

    /// The alias and query of a FROM item that is a derived table or names a CTE of `q`.
    fn window_source(&self, q: &Query, relation: &TableFactor) -> Option<(String, Query)> {
        match relation {
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias: Some(a),
                sample: None,
            } if a.columns.is_empty() => Some((a.name.value.clone(), (**subquery).clone())),
            TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                version: None,
                sample: None,
                ..
            } if with_hints.is_empty() && alias.as_ref().is_none_or(|a| a.columns.is_empty()) => {
                let [part] = name.0.as_slice() else {
                    return None;
                };
                let cte_name = part.as_ident()?.value.to_lowercase();
                let with = q.with.as_ref().filter(|w| !w.recursive)?;
                let cte = with
                    .cte_tables
                    .iter()
                    .find(|c| c.alias.name.value.to_lowercase() == cte_name)?;
                if !cte.alias.columns.is_empty() {
                    return None;
                }
                let alias = alias.as_ref().map_or(cte_name, |a| a.name.value.clone());
                Some((alias, (*cte.query).clone()))
            }
            _ => None,
        }
    }
}

/// The inner query's columns as the outer query names them: `alias.c` and (outside
/// subqueries) `c`.
struct Names {
    alias: String,
    by_name: HashMap<String, Expr>,
    /// `*` in the inner select list: a name not listed is that column of its FROM.
    star: bool,
}

impl Names {
    fn of(inner: &Select, alias: &str) -> Option<Names> {
        let mut by_name = HashMap::new();
        let mut star = false;
        for item in &inner.projection {
            match item {
                SelectItem::ExprWithAlias { expr, alias } => {
                    by_name.insert(alias.value.to_lowercase(), expr.clone());
                }
                SelectItem::UnnamedExpr(e @ Expr::Identifier(i)) => {
                    by_name.insert(i.value.to_lowercase(), e.clone());
                }
                SelectItem::UnnamedExpr(e @ Expr::CompoundIdentifier(p)) => {
                    let last = p.last()?.value.to_lowercase();
                    by_name.insert(last, e.clone());
                }
                SelectItem::UnnamedExpr(_) => {}
                SelectItem::Wildcard(o) if o.opt_exclude.is_none() && o.opt_replace.is_none() => {
                    star = true
                }
                _ => return None,
            }
        }
        Some(Names {
            alias: alias.to_lowercase(),
            by_name,
            star,
        })
    }

    /// The inner expression the outer column `name` reads.
    fn column(&self, name: &Ident) -> Option<Expr> {
        if let Some(e) = self.by_name.get(&name.value.to_lowercase()) {
            return Some(Expr::Nested(Box::new(e.clone())));
        }
        self.star.then(|| Expr::Identifier(name.clone()))
    }

    /// `e` over the inner query's expressions; None when it names a column the inner query
    /// does not show.
    fn rewrite(&self, e: &Expr) -> Option<Expr> {
        let mut e = e.clone();
        let mut missing = false;
        levels::visit(&mut e, |e: &mut Expr, depth: usize| {
            let name = match e {
                Expr::CompoundIdentifier(p)
                    if p.len() == 2 && p[0].value.to_lowercase() == self.alias =>
                {
                    p[1].clone()
                }
                // Inside a subquery a bare name may be a column of its own tables.
                Expr::Identifier(i) if depth == 0 => i.clone(),
                _ => return,
            };
            match self.column(&name) {
                Some(x) => *e = x,
                None => missing = true,
            }
        });
        (!missing).then_some(e)
    }
}
