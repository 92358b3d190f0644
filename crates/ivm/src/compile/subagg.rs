//! The compiler's part for aggregates read as relations: `FROM (SELECT k, sum(v) AS s FROM t
//! GROUP BY k) x` and `x IN (SELECT k FROM t GROUP BY k HAVING …)`. Such an aggregate has no
//! storage of its own; see `plan::SubAgg` for how its change is computed.

use super::reasons::Why;
use std::collections::HashSet;

use sqlparser::ast::{Expr, GroupByExpr, Select, SelectItem, Visit};

use super::super::agg::AggFn;
use super::super::plan::{Aggregate, Item, ItemFrom, Rel, SubAgg};
use super::{full, Analyzer, FnVisitor, Scope, R};

impl Analyzer<'_> {
    /// The aggregate query `s` as a relation, and its column names. `named`: the columns are
    /// referenced by name (a derived table), so each needs one.
    pub(super) fn sub_aggregate(
        &mut self,
        s: &Select,
        scope: &Scope,
        named: bool,
    ) -> R<(Rel, Vec<String>)> {
        let agg = self.aggregate(s, scope, false)?;
        // Taking a change back needs the value before, which only the group's rows know: the
        // touched groups are aggregated as they were (`ops::rescan`), which gives the row once
        // added only when the value does not depend on the order the rows are read in.
        let order_bound =
            |f: &&AggFn| f.call.is_some() && !ORDER_FREE.contains(&f.label().as_str());
        if let Some(f) = agg.aggs.iter().find(order_bound) {
            // SUM/AVG are kept whole only over floating-point values, whose sums depend on the
            // order they are added in.
            if matches!(f.label().as_str(), "sum" | "avg" | "mean") {
                return full(Why::FloatSumInAggregateSubquery);
            }
            let probe = super::probe::Probe::new(scope).block(s);
            let alone = !self.correlated(s, &agg) && self.db.binds_alone(&probe.to_string());
            if alone {
                if let Some(kept) = self.kept_groups(s, scope)? {
                    return Ok(kept);
                }
            }
            return full(Why::FunctionInAggregateSubquery.with(f.label()));
        }
        // A DISTINCT aggregate is not invertible: whether a row taken back removes a distinct
        // value needs the group's other rows, so its touched groups are recomputed now and as
        // they were (`ops::rescan`). Its value is exact (a count, or a sum of exact values), so
        // the row taken back is the row added.
        let names = item_names(s, named)?;
        // The static check catches the usual forms; DuckDB binding the subquery on its own
        // catches the rest (ON predicates, derived tables), with the CTEs in scope.
        let probe = super::probe::Probe::new(scope).block(s);
        if self.correlated(s, &agg) || !self.db.binds_alone(&probe.to_string()) {
            return full(Why::CorrelatedAggregateSubquery);
        }
        self.features.insert("aggregate subquery");
        Ok((
            Rel::Agg(Box::new(SubAgg {
                agg,
                names: names.clone(),
            })),
            names,
        ))
    }

    /// Whether `s` refers to anything outside its own FROM (a correlated subquery, which is
    /// not a relation of its own). Names that cannot be placed count as outside.
    fn correlated(&self, s: &Select, agg: &Aggregate) -> bool {
        let mut aliases = HashSet::new();
        let mut columns: HashSet<String> = HashSet::new();
        for item in &agg.input.items {
            if !self.place(item, &mut aliases, &mut columns) {
                return true;
            }
        }
        // Select-list aliases name columns in GROUP BY and HAVING, not in WHERE (where the
        // compiled input could not resolve them).
        let output: HashSet<String> = s
            .projection
            .iter()
            .filter_map(|p| match p {
                SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
                _ => None,
            })
            .collect();
        let mut outside = false;
        let mut check = |e: &Expr, aliases_ok: bool| {
            let _ = e.visit(&mut FnVisitor(|x: &Expr| match x {
                Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                    let q = parts[parts.len() - 2].value.to_lowercase();
                    outside |= !aliases.contains(&q);
                }
                Expr::Identifier(id) => {
                    let n = id.value.to_lowercase();
                    outside |= !(columns.contains(&n) || aliases_ok && output.contains(&n));
                }
                _ => {}
            }));
        };
        for p in &s.projection {
            match p {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    check(e, false)
                }
                _ => return true,
            }
        }
        s.selection.iter().for_each(|e| check(e, false));
        s.having.iter().for_each(|e| check(e, true));
        if let GroupByExpr::Expressions(keys, _) = &s.group_by {
            keys.iter().for_each(|e| check(e, true));
        }
        outside
    }

    /// Adds the alias and column names `item` brings into scope (a join tree's: its leaves');
    /// false when they cannot be known.
    fn place(
        &self,
        item: &Item,
        aliases: &mut HashSet<String>,
        columns: &mut HashSet<String>,
    ) -> bool {
        let cols: &[String] = match &item.from {
            ItemFrom::Source(i) => &self.sources[*i].columns,
            ItemFrom::Sub(rel) => match rel.as_ref() {
                Rel::Block(b) => &b.names,
                Rel::Agg(sa) => &sa.names,
                Rel::Union(_) => return false,
            },
            ItemFrom::Tree(t) => {
                return t
                    .leaves()
                    .into_iter()
                    .all(|l| self.place(l, aliases, columns));
            }
        };
        aliases.insert(item.alias.trim_matches('"').to_lowercase());
        columns.extend(cols.iter().map(|c| c.to_lowercase()));
        true
    }
}

/// Aggregates kept whole (`agg::whole`) whose value depends only on the multiset of values
/// they read: the order statistics.
const ORDER_FREE: &[&str] = &[
    "median",
    "quantile",
    "quantile_cont",
    "quantile_disc",
    "percentile_cont",
    "percentile_disc",
];

/// The column names of an aggregate query read as a relation: each item's alias or column
/// name. `named`: the columns are referenced by name, so each needs one; otherwise the
/// unnamed get positional names.
pub(super) fn item_names(s: &Select, named: bool) -> R<Vec<String>> {
    let mut names = Vec::new();
    for (i, p) in s.projection.iter().enumerate() {
        names.push(match p {
            SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => id.value.clone(),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(|p| p.value.clone()).unwrap_or_default()
            }
            _ if named => return full(Why::UnnamedAggregateSubqueryColumn),
            _ => format!("_mv_c{}", i + 1),
        });
    }
    Ok(names)
}
