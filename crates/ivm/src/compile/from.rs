//! A select-project-join block: its FROM items (tables, views, CTEs, derived tables, inner
//! joins), its WHERE, and its select list with `*` expanded.

use super::reasons::Why;
use sqlparser::ast::{
    Expr, Ident, JoinConstraint, JoinOperator, Select, SelectItem, SelectItemQualifiedWildcardKind,
    TableFactor,
};

use super::super::ir;
use super::super::plan::{Block, Item, ItemFrom, Source, SourceKind};
use super::super::text::{ident, sanitize, unquoted};
use super::super::user_expr::UserExpr;
use super::{
    column_lists, full, joins, name_parts, resolve, same_relation, Analyzer, BlockFrom, Scope, R,
};

/// Joins wider than this are recomputed.
pub(super) const MAX_JOIN_INPUTS: usize = 8;

impl Analyzer<'_> {
    /// FROM and WHERE of a block: inner/cross joins of tables, views and subqueries.
    pub(super) fn from(&mut self, s: &Select, scope: &Scope) -> R<BlockFrom> {
        if s.from.is_empty() {
            return full(Why::QueryWithoutFrom);
        }
        let mut out = BlockFrom::default();
        let mut preds: Vec<Expr> = Vec::new();
        for twj in &s.from {
            if !twj.joins.iter().all(|j| joins::is_inner(&j.join_operator)) {
                self.chain(twj, scope, &mut out)?;
                continue;
            }
            let first = out.items.len();
            self.factor(&twj.relation, scope, &mut out)?;
            for j in &twj.joins {
                let constraint = match &j.join_operator {
                    JoinOperator::Join(c) | JoinOperator::Inner(c) => c,
                    JoinOperator::CrossJoin(c) => c,
                    // Outer, semi and anti joins took the chain above.
                    _ => return full(Why::ThisKindOfJoin),
                };
                match constraint {
                    JoinConstraint::On(e) => {
                        self.check_expr(e, false)?;
                        preds.push(e.clone());
                    }
                    JoinConstraint::None => {}
                    JoinConstraint::Natural => return full(Why::NaturalJoin),
                    _ => return full(Why::JoinUsing),
                }
                self.factor(&j.relation, scope, &mut out)?;
            }
            for i in first..out.items.len() {
                out.visible
                    .push((out.items[i].alias.clone(), out.columns[i].clone()));
            }
        }
        if out.items.len() > MAX_JOIN_INPUTS {
            return full(Why::JoinTooWide);
        }
        if out.items.len() > 1 {
            self.features.insert("inner join");
        }
        if let Some(w) = &s.selection {
            self.where_clause(w, scope, &mut out, &mut preds)?;
        }
        self.push_into_windows(&out, &preds);
        out.filter = UserExpr::all(preds);
        Ok(out)
    }

    pub(super) fn factor(&mut self, f: &TableFactor, scope: &Scope, out: &mut BlockFrom) -> R<()> {
        match f {
            TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                version: None,
                sample: None,
                ..
            } if with_hints.is_empty() => {
                if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
                    return full(Why::TableAliasColumnList);
                }
                let parts = name_parts(name);
                let alias_name = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| parts.last().cloned().unwrap_or_default());
                if let Some(idx) = self.recursive_source(&parts) {
                    out.columns.push(self.sources[idx].columns.clone());
                    out.items.push(Item {
                        alias: ident(&alias_name),
                        from: ItemFrom::Source(idx),
                    });
                    return Ok(());
                }
                if parts.len() == 1 {
                    let lower = parts[0].to_lowercase();
                    if let Some(pos) = scope.iter().rposition(|(n, _)| *n == lower) {
                        let (_, cte) = &scope[pos];
                        let inner: Scope = scope[..pos].to_vec();
                        let cte = cte.clone();
                        if let Some((idx, cols)) = self.kept_window(&cte, &inner)? {
                            out.columns.push(cols);
                            out.items.push(Item {
                                alias: ident(&alias_name),
                                from: ItemFrom::Source(idx),
                            });
                            return Ok(());
                        }
                        let (rel, cols) = self.sub(&cte, &inner)?;
                        out.items.push(Item {
                            alias: ident(&alias_name),
                            from: ItemFrom::Sub(Box::new(rel)),
                        });
                        out.columns.push(cols);
                        return Ok(());
                    }
                }
                let idx = self.source(name, &parts)?;
                out.columns.push(self.sources[idx].columns.clone());
                out.items.push(Item {
                    alias: ident(&alias_name),
                    from: ItemFrom::Source(idx),
                });
                Ok(())
            }
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                sample: None,
            } => {
                let renamed = match alias.as_ref().filter(|a| !a.columns.is_empty()) {
                    Some(a) => Some(column_lists::rename(subquery, &a.columns).or_else(full)?),
                    None => None,
                };
                let query = renamed.as_ref().unwrap_or(subquery);
                let window = self.kept_window(query, scope)?;
                self.subquery_count += 1;
                let alias_name = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| format!("_mv_sq{}", self.subquery_count));
                let (from, cols) = match window {
                    Some((idx, cols)) => (ItemFrom::Source(idx), cols),
                    None => {
                        let (rel, cols) = self.sub(query, scope)?;
                        (ItemFrom::Sub(Box::new(rel)), cols)
                    }
                };
                out.items.push(Item {
                    alias: ident(&alias_name),
                    from,
                });
                out.columns.push(cols);
                Ok(())
            }
            TableFactor::Derived { lateral: true, .. } => full(Why::Lateral),
            TableFactor::NestedJoin { .. } => full(Why::ParenthesizedJoin),
            TableFactor::Table { args: Some(_), .. }
            | TableFactor::Function { .. }
            | TableFactor::TableFunction { .. } => full(Why::TableFunction),
            _ => full(Why::ThisKindOfFromItem),
        }
    }

    /// The source a table name reads, registered once per view with its own delta name.
    fn source(&mut self, name: &sqlparser::ast::ObjectName, parts: &[String]) -> R<usize> {
        let Some(src) = resolve(self.db, parts)? else {
            return full(Why::NotARelation.with(name));
        };
        if let Some(cat) = &src.catalog {
            return full(Why::OtherDatabase.with(cat));
        }
        if src.kind == SourceKind::View {
            self.features.insert("materialized view");
        }
        if let Some(i) = self.sources.iter().position(|s| same_relation(s, &src)) {
            return Ok(i);
        }
        let mut src = src;
        if src.kind == SourceKind::Table {
            // Before any scope sees the table: every column list the compiler writes for it
            // (a derived table's, say) then names only columns its log carries.
            src.columns = self.reads.read(&src.columns);
        }
        let base = format!("d_{}_{}", self.id, sanitize(&src.name));
        let mut delta = base.clone();
        let mut k = 1;
        let taken = |d: &str, sources: &[Source]| {
            sources
                .iter()
                .any(|s| s.delta.as_deref() == Some(&format!("_duckmv.{d}")))
        };
        while taken(&delta, &self.sources) {
            k += 1;
            delta = format!("{base}_{k}");
        }
        src.delta = Some(format!("_duckmv.{delta}"));
        self.sources.push(src);
        Ok(self.sources.len() - 1)
    }

    /// Expands `*` and `t.*` against the FROM items' columns; other items keep their expression
    /// and optional alias.
    /// `windows`: the select list may call window functions.
    pub(super) fn projection(
        &self,
        s: &Select,
        from: &BlockFrom,
        windows: bool,
    ) -> R<Vec<(Expr, Option<String>)>> {
        let check = |e: &Expr| {
            if windows {
                self.check_windowed(e)
            } else {
                self.check_expr(e, false)
            }
        };
        let mut out = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    check(e)?;
                    // DuckDB names a bare column after the column; other expressions it names
                    // itself (asked later, only if needed).
                    let name = match e {
                        Expr::Identifier(i) => Some(i.value.clone()),
                        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
                        _ => None,
                    };
                    out.push((e.clone(), name));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    check(expr)?;
                    out.push((expr.clone(), Some(alias.value.clone())));
                }
                SelectItem::Wildcard(opts) => {
                    if !plain_wildcard(opts) {
                        return full(Why::StarExcludeReplace);
                    }
                    for (alias, cols) in &from.visible {
                        for c in cols {
                            out.push((column_of(alias, c), Some(c.clone())));
                        }
                    }
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    opts,
                ) => {
                    if !plain_wildcard(opts) {
                        return full(Why::StarExcludeReplace);
                    }
                    let parts = name_parts(n);
                    let want = ident(parts.last().map(String::as_str).unwrap_or(""));
                    let Some((alias, cols)) = from
                        .visible
                        .iter()
                        .find(|(a, _)| a.to_lowercase() == want.to_lowercase())
                    else {
                        return full(Why::UnresolvedQualifiedStar);
                    };
                    for c in cols {
                        out.push((column_of(alias, c), Some(c.clone())));
                    }
                }
                _ => return full(Why::ThisKindOfSelectItem),
            }
        }
        Ok(out)
    }

    /// A select-project-join block. `names` fixes the output names (the top level uses
    /// positional `c1..cn`); otherwise they are DuckDB's own names for the select list.
    pub(super) fn spj(
        &mut self,
        s: &Select,
        scope: &Scope,
        names: Option<Vec<String>>,
    ) -> R<Block> {
        if let Some(s) = self.scalar_subqueries(s, scope)? {
            return self.spj(&s, scope, names);
        }
        self.check_select(s)?;
        let from = self.from(s, scope)?;
        let proj = self.projection(s, &from, false)?;
        let select: Vec<UserExpr> = proj.iter().map(|(e, _)| UserExpr::new(e.clone())).collect();
        let names = match names {
            Some(n) if n.len() == select.len() => n,
            Some(_) => return full(Why::UnmatchedSelectList),
            None => {
                if proj.iter().all(|(_, a)| a.is_some()) {
                    proj.iter().map(|(_, a)| a.clone().unwrap()).collect()
                } else {
                    // DuckDB names unaliased expressions itself; ask it rather than guess.
                    let unaliased: Vec<ir::Item> = proj
                        .iter()
                        .map(|(e, a)| ir::Item::Expr(ir::user(e), a.clone()))
                        .collect();
                    let probe = Block {
                        items: from.items.clone(),
                        select: Vec::new(),
                        names: Vec::new(),
                        filter: from.filter.clone(),
                        exists: from.exists.clone(),
                        guards: from.guards.clone(),
                    };
                    let t = |sources: &[Source]| super::super::ops::block_cur_term(sources, &probe);
                    let rows = self.describe_term(t, unaliased)?;
                    rows.into_iter()
                        .map(|r| r[0].clone().unwrap_or_default())
                        .collect()
                }
            }
        };
        Ok(from.into_block(select, names))
    }
}

/// `"alias"."column"`: a column of a FROM item, by its quoted alias.
pub(super) fn column_of(alias: &str, column: &str) -> Expr {
    Expr::CompoundIdentifier(vec![
        Ident::with_quote('"', unquoted(alias)),
        Ident::with_quote('"', column),
    ])
}

fn plain_wildcard(o: &sqlparser::ast::WildcardAdditionalOptions) -> bool {
    o.opt_ilike.is_none()
        && o.opt_exclude.is_none()
        && o.opt_except.is_none()
        && o.opt_replace.is_none()
        && o.opt_rename.is_none()
}
