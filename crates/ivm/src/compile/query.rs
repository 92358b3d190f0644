//! Binding the shape of a definition: the top-level body, the clauses around each query
//! (CTEs are inlined where they are referenced), UNION chains and subqueries used as relations.

use super::reasons::Why;
use sqlparser::ast::{
    Distinct, Ident, Query, Select, SelectItem, SetExpr, SetOperator, SetQuantifier, TableAlias,
    TableFactor, TableWithJoins,
};

use super::super::plan::{Body, Rel};
use super::{column_lists, full, Analyzer, Scope, R};

impl Analyzer<'_> {
    /// The whole definition.
    pub(super) fn top(&mut self, q: &Query, ncols: usize) -> R<Body> {
        if let Some(w) = q.with.as_ref().filter(|w| w.recursive) {
            return self.recursive_top(q, w, ncols);
        }
        if let Some(merged) = self.merged_window(q) {
            self.features.insert("subquery");
            return self.top(&merged, ncols);
        }
        let scope = self.query_scope(q, &Vec::new())?;
        match q.body.as_ref() {
            SetExpr::Select(s) if self.has_grouping_sets(s) => {
                let branches = self.grouping_set_branches(s)?;
                let names = super::super::plan::positional(ncols);
                let rel = self.union(&branches, &scope, false, &names)?;
                self.features.insert("GROUPING SETS");
                Ok(Body::Bag {
                    rel,
                    distinct: false,
                })
            }
            SetExpr::Select(s) if self.is_aggregate(s) && self.has_window(s) => {
                let windows = self.windows_over_groups(s, &scope)?;
                Ok(Body::Windowed(self.windowed(&windows, &scope)?))
            }
            SetExpr::Select(s) if self.is_aggregate(s) => {
                Ok(Body::Aggregate(self.aggregate(s, &scope, true)?))
            }
            SetExpr::Select(s) if self.has_window(s) && self.distinct_over_hidden_keys(s) => {
                self.top(&distinct_over(q, s), ncols)
            }
            SetExpr::Select(s) if self.has_window(s) => {
                Ok(Body::Windowed(self.windowed(s, &scope)?))
            }
            SetExpr::Select(s) => {
                let distinct = matches!(s.distinct, Some(Distinct::Distinct));
                let names = super::super::plan::positional(ncols);
                if let Some(rel) = self.select_tests(s, &scope, &names)? {
                    return Ok(Body::Bag { rel, distinct });
                }
                let block = self.spj(s, &scope, Some(names))?;
                Ok(Body::Bag {
                    rel: Rel::Block(block),
                    distinct,
                })
            }
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier,
                ..
            } => {
                let distinct = match set_quantifier {
                    SetQuantifier::All => false,
                    SetQuantifier::Distinct | SetQuantifier::None => true,
                    _ => return full(Why::UnionByName),
                };
                let names = super::super::plan::positional(ncols);
                let rel = self.union(q.body.as_ref(), &scope, distinct, &names)?;
                Ok(Body::Bag { rel, distinct })
            }
            SetExpr::SetOperation { op, .. } => {
                full(Why::SetOperation.with(op.to_string().to_uppercase()))
            }
            SetExpr::Query(inner) if q.with.is_none() => self.top(inner, ncols),
            _ => full(Why::ThisKindOfQuery),
        }
    }

    /// Checks the clauses around a query body and returns the CTEs it defines, inlined later
    /// wherever they are referenced.
    pub(super) fn query_scope(&mut self, q: &Query, outer: &Scope) -> R<Scope> {
        if q.order_by.is_some() {
            return full(Why::OrderBy);
        }
        if q.limit_clause.is_some() || q.fetch.is_some() {
            return full(Why::Limit);
        }
        if !q.locks.is_empty()
            || q.for_clause.is_some()
            || q.settings.is_some()
            || !q.pipe_operators.is_empty()
        {
            return full(Why::ThisQueryClause);
        }
        let mut scope = outer.clone();
        if let Some(w) = &q.with {
            if w.recursive {
                return full(Why::WithRecursive);
            }
            for cte in &w.cte_tables {
                let body = if cte.alias.columns.is_empty() {
                    (*cte.query).clone()
                } else {
                    column_lists::rename(&cte.query, &cte.alias.columns).or_else(full)?
                };
                scope.push((cte.alias.name.value.to_lowercase(), body));
            }
            self.features.insert("CTE");
        }
        Ok(scope)
    }

    pub(super) fn union(
        &mut self,
        body: &SetExpr,
        scope: &Scope,
        distinct: bool,
        names: &[String],
    ) -> R<Rel> {
        let mut branches = Vec::new();
        self.union_branches(body, distinct, &mut branches)?;
        self.features
            .insert(if distinct { "UNION" } else { "UNION ALL" });
        let mut rels = Vec::new();
        for b in branches {
            match b {
                SetExpr::Select(s) if self.is_aggregate(s) => {
                    rels.push(self.union_aggregate(s, scope, Some(names))?.0);
                }
                SetExpr::Select(s) => {
                    let plain = match &s.distinct {
                        None => None,
                        // Rows UNION keeps once anyway.
                        Some(Distinct::Distinct) if distinct => Some(Select {
                            distinct: None,
                            ..(**s).clone()
                        }),
                        Some(_) => return full(Why::DistinctInUnion),
                    };
                    let s = plain.as_ref().unwrap_or(s);
                    rels.push(Rel::Block(self.spj(s, scope, Some(names.to_vec()))?));
                }
                SetExpr::Query(q) => {
                    let inner = self.query_scope(q, scope)?;
                    rels.push(self.union(q.body.as_ref(), &inner, false, names)?);
                }
                _ => return full(Why::ThisKindOfUnionBranch),
            }
        }
        Ok(Rel::Union(rels))
    }

    /// An aggregate branch of a UNION, read as a relation (see `plan::SubAgg`) under the
    /// union's column `names`, or its own when it is the first branch of a derived table.
    fn union_aggregate(
        &mut self,
        s: &Select,
        scope: &Scope,
        names: Option<&[String]>,
    ) -> R<(Rel, Vec<String>)> {
        let (mut rel, own) = self.sub_aggregate(s, scope, names.is_none())?;
        let names = names.map(<[String]>::to_vec).unwrap_or(own);
        if let Rel::Agg(sa) = &mut rel {
            sa.names = names.clone();
        }
        Ok((rel, names))
    }

    pub(super) fn union_branches<'q>(
        &self,
        e: &'q SetExpr,
        distinct: bool,
        out: &mut Vec<&'q SetExpr>,
    ) -> R<()> {
        match e {
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier,
                left,
                right,
            } => {
                let this = match set_quantifier {
                    SetQuantifier::All => false,
                    SetQuantifier::Distinct | SetQuantifier::None => true,
                    _ => return full(Why::UnionByName),
                };
                if this != distinct {
                    return full(Why::MixOfUnionAndUnionAll);
                }
                self.union_branches(left, distinct, out)?;
                self.union_branches(right, distinct, out)
            }
            SetExpr::SetOperation { op, .. } => {
                full(Why::SetOperation.with(op.to_string().to_uppercase()))
            }
            other => {
                out.push(other);
                Ok(())
            }
        }
    }

    /// A subquery or CTE used as a FROM item: select-project-join blocks and UNION ALL only.
    pub(super) fn sub(&mut self, q: &Query, scope: &Scope) -> R<(Rel, Vec<String>)> {
        let scope = self.query_scope(q, scope)?;
        self.features.insert("subquery");
        let rel = match q.body.as_ref() {
            // One aggregate per grouping set, as at the top (`grouping_sets`), named as the
            // query's columns.
            SetExpr::Select(s) if self.has_grouping_sets(s) => {
                let names = super::subagg::item_names(s, true)?;
                let branches = self.grouping_set_branches(s)?;
                let rel = self.union(&branches, &scope, false, &names)?;
                self.features.insert("GROUPING SETS");
                return Ok((rel, names));
            }
            SetExpr::Select(s) => {
                if self.is_aggregate(s) {
                    return self.sub_aggregate(s, &scope, true);
                }
                if s.distinct.is_some() {
                    return full(Why::DistinctInSubquery);
                }
                Rel::Block(self.spj(s, &scope, None)?)
            }
            SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier: SetQuantifier::All,
                ..
            } => {
                let mut branches = Vec::new();
                self.union_branches(q.body.as_ref(), false, &mut branches)?;
                let mut rels = Vec::new();
                let mut names: Option<Vec<String>> = None;
                for b in branches {
                    let SetExpr::Select(s) = b else {
                        return full(Why::ThisKindOfUnionBranch);
                    };
                    if self.is_aggregate(s) {
                        let (rel, own) = self.union_aggregate(s, &scope, names.as_deref())?;
                        names.get_or_insert(own);
                        rels.push(rel);
                        continue;
                    }
                    if s.distinct.is_some() {
                        return full(Why::DistinctInUnion);
                    }
                    let block = self.spj(s, &scope, names.clone())?;
                    names.get_or_insert_with(|| block.names.clone());
                    rels.push(Rel::Block(block));
                }
                self.features.insert("UNION ALL");
                Rel::Union(rels)
            }
            SetExpr::Query(inner) => return self.sub(inner, &scope),
            SetExpr::SetOperation { op, .. } => {
                return full(Why::SetOperation.with(op.to_string().to_uppercase()))
            }
            _ => return full(Why::ThisKindOfSubquery),
        };
        let names = match &rel {
            Rel::Block(b) => b.names.clone(),
            Rel::Union(parts) => match &parts[0] {
                Rel::Union(_) => return full(Why::NestedUnion),
                first => super::super::plan::rel_names(first).to_vec(),
            },
            Rel::Agg(sa) => sa.names.clone(),
        };
        Ok((rel, names))
    }
}

/// `SELECT DISTINCT * FROM (s without DISTINCT) AS _mv_w`, under `q`'s clauses: the window
/// query read as a FROM item (see `kept_window`), its duplicates removed over the whole result.
fn distinct_over(q: &Query, s: &Select) -> Query {
    let inner = Select {
        distinct: None,
        ..s.clone()
    };
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(crate::ir::plain_query(SetExpr::Select(Box::new(inner)))),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new("_mv_w"),
            columns: Vec::new(),
            at: None,
        }),
        sample: None,
    };
    let from = vec![TableWithJoins {
        relation: derived,
        joins: Vec::new(),
    }];
    let star = SelectItem::Wildcard(Default::default());
    let mut outer = crate::ir::ast_select(vec![star], from, None);
    outer.distinct = Some(Distinct::Distinct);
    Query {
        body: Box::new(SetExpr::Select(Box::new(outer))),
        ..q.clone()
    }
}
