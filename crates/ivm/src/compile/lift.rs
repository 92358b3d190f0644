//! Lifting a grouped block's select list over a derived table that holds its groups: each
//! group key and each aggregate call of one level becomes a column of that table
//! (`__mv_g<i>`, `__mv_a<i>`). Used where SQL evaluates something after GROUP BY that has no
//! rule of its own over the aggregate's state — window functions (`grouped_window`) and the
//! grouping sets' branches (`grouping_sets`).

use super::reasons::Why;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Query, Select,
    SelectItem, SetExpr, TableAlias, TableFactor, TableWithJoins, Value, VisitMut, VisitorMut,
};

use super::support::{aggregate_call, fn_name};
use super::{full, Analyzer, R};
use crate::ir::plain_query;

/// The derived table's column of group key `i`.
fn key(i: usize) -> String {
    format!("__mv_g{}", i + 1)
}

/// The derived table's column of aggregate call `i`.
fn aggregate(i: usize) -> String {
    format!("__mv_a{}", i + 1)
}

fn aliased(e: &Expr, name: String) -> SelectItem {
    SelectItem::ExprWithAlias {
        expr: e.clone(),
        alias: Ident::new(name),
    }
}

/// `(grouped) AS alias`, the one FROM item of the lifted block.
pub(super) fn derived(grouped: Select, alias: &str) -> Vec<TableWithJoins> {
    vec![derived_table(
        plain_query(SetExpr::Select(Box::new(grouped))),
        alias,
    )]
}

/// `(subquery) AS alias` as a FROM item.
pub(super) fn derived_table(subquery: Query, alias: &str) -> TableWithJoins {
    TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(subquery),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::new(alias),
                columns: Vec::new(),
                at: None,
            }),
            sample: None,
        },
        joins: Vec::new(),
    }
}

/// A GROUP BY key naming a select-list position or alias (which the derived table could
/// not evaluate in its own scope the way GROUP BY resolves it).
pub(super) fn positional_or_alias(k: &Expr, s: &Select) -> bool {
    match k {
        Expr::Value(_) => true,
        Expr::Identifier(id) => s.projection.iter().any(|p| match p {
            SelectItem::ExprWithAlias { expr, alias } => {
                alias.value.eq_ignore_ascii_case(&id.value) && last_name(expr) != Some(&id.value)
            }
            _ => false,
        }),
        _ => false,
    }
}

/// The column name a (possibly qualified) column reference ends with.
pub(super) fn last_name(e: &Expr) -> Option<&String> {
    match e {
        Expr::Identifier(i) => Some(&i.value),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| &p.value),
        _ => None,
    }
}

/// Replaces the group keys and the aggregate calls of one level by columns of `table`. A
/// column named as a key is that key, however qualified (the definition binds, so a column
/// outside any aggregate is one of the keys). A key absent from the grouping set
/// (`present[i]` false) becomes NULL, and `GROUPING(…)` the set's constant.
pub(super) struct Lift<'x, 'a> {
    pub an: &'x Analyzer<'a>,
    pub table: &'x str,
    pub keys: &'x [Expr],
    pub present: Vec<bool>,
    /// The aggregate calls found, each once, in order of appearance.
    pub aggregates: Vec<Expr>,
}

impl<'x, 'a> Lift<'x, 'a> {
    pub(super) fn new(an: &'x Analyzer<'a>, table: &'x str, keys: &'x [Expr]) -> Self {
        Lift {
            an,
            table,
            keys,
            present: vec![true; keys.len()],
            aggregates: Vec::new(),
        }
    }

    /// The grouped query's select list: the keys of the set, then every aggregate call found.
    pub(super) fn columns(&self) -> Vec<SelectItem> {
        let keys = self.keys.iter().enumerate();
        let keys = keys.filter(|(i, _)| self.present[*i]);
        let keys = keys.map(|(i, k)| aliased(k, key(i)));
        let aggregates = self.aggregates.iter().enumerate();
        keys.chain(aggregates.map(|(i, a)| aliased(a, aggregate(i))))
            .collect()
    }

    /// Lifts a select list and the clauses after it (`others`: HAVING, QUALIFY) in place, then
    /// resolves the select-list aliases they name by the lifted expressions they stand for.
    /// Refuses what the derived table could not evaluate: a subquery (it may read the grouped
    /// block's own tables), or a column reference left that is neither a key, an aggregate
    /// nor an alias.
    pub(super) fn block(&mut self, items: &mut [SelectItem], others: &mut [&mut Expr]) -> R<()> {
        for item in items.iter_mut() {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    self.expr(e)
                }
                _ => return full(Why::StarInAnAggregateQuery),
            }
        }
        let aliases: Vec<(String, Expr)> = items
            .iter()
            .filter_map(|p| match p {
                SelectItem::ExprWithAlias { expr, alias } => {
                    Some((alias.value.to_lowercase(), expr.clone()))
                }
                _ => None,
            })
            .collect();
        for e in others.iter_mut() {
            self.expr(e);
        }
        let mut r = Resolve {
            table: self.table,
            aliases: &aliases,
            replaced: 0,
            stray: None,
        };
        for item in items.iter_mut() {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                let _ = VisitMut::visit(e, &mut r);
            }
        }
        for e in others.iter_mut() {
            let _ = VisitMut::visit(&mut **e, &mut r);
        }
        match r.stray {
            Some(what) => full(Why::InGroupedRead.with(what)),
            None => Ok(()),
        }
    }

    /// Lifts one expression in place.
    pub(super) fn expr(&mut self, e: &mut Expr) {
        let _ = VisitMut::visit(e, self);
    }

    fn key_of(&self, e: &Expr) -> Option<usize> {
        let text = e.to_string();
        if let Some(i) = self.keys.iter().position(|k| k.to_string() == text) {
            return Some(i);
        }
        let name = last_name(e)?;
        self.keys
            .iter()
            .position(|k| last_name(k).is_some_and(|n| n.eq_ignore_ascii_case(name)))
    }

    fn column(&self, name: String) -> Expr {
        Expr::CompoundIdentifier(vec![Ident::new(self.table), Ident::new(name)])
    }

    /// `GROUPING(a, b, …)`: bit n−1−i set when argument i is aggregated away; None when an
    /// argument is not a key (DuckDB refuses the query then).
    fn grouping(&self, f: &Function) -> Option<Expr> {
        let FunctionArguments::List(list) = &f.args else {
            return None;
        };
        let mut bits: u64 = 0;
        for a in &list.args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return None;
            };
            bits = bits * 2 + u64::from(!self.present[self.key_of(e)?]);
        }
        Some(Expr::value(Value::Number(bits.to_string(), false)))
    }
}

impl VisitorMut for Lift<'_, '_> {
    type Break = ();
    // Subqueries are not skipped: `block` refuses any it finds afterwards.
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(i) = self.key_of(e) {
            *e = match self.present[i] {
                true => self.column(key(i)),
                false => Expr::value(Value::Null),
            };
            return ControlFlow::Continue(());
        }
        let Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let name = fn_name(&f.name);
        if f.over.is_none() && matches!(name.as_str(), "grouping" | "grouping_id") {
            if let Some(bits) = self.grouping(f) {
                *e = bits;
            }
        } else if f.over.is_none() && aggregate_call(&self.an.aggregates, f) {
            let text = e.to_string();
            let at = self.aggregates.iter().position(|a| a.to_string() == text);
            let i = at.unwrap_or_else(|| {
                self.aggregates.push(e.clone());
                self.aggregates.len() - 1
            });
            *e = self.column(aggregate(i));
        }
        ControlFlow::Continue(())
    }
}

/// Replaces alias references by their expressions; notes what is left that the derived table
/// does not have.
struct Resolve<'x> {
    table: &'x str,
    aliases: &'x [(String, Expr)],
    /// Replacements made, to stop on aliases that name each other.
    replaced: usize,
    stray: Option<String>,
}

impl VisitorMut for Resolve<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.stray = Some("a subquery".into());
        ControlFlow::Break(())
    }
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => {
                let name = i.value.to_lowercase();
                match self.aliases.iter().find(|(a, _)| *a == name) {
                    Some((_, x)) if self.replaced < 64 => {
                        self.replaced += 1;
                        *e = x.clone();
                    }
                    _ => {
                        self.stray = Some(format!("column {i}"));
                        return ControlFlow::Break(());
                    }
                }
            }
            Expr::CompoundIdentifier(parts) if parts[0].value != self.table => {
                self.stray = Some(format!("column {e}"));
                return ControlFlow::Break(());
            }
            Expr::Lambda(_) => {
                self.stray = Some("a lambda".into());
                return ControlFlow::Break(());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
