//! `WITH RECURSIVE`: a definition over one recursive CTE, `r AS (base UNION step)`, whose two
//! terms are joins of tables with filters and whose step reads r once (the rule is in
//! `plan::recursive`). r becomes a source of the view, read by the rest of the definition like
//! a table; a CTE under WITH RECURSIVE that does not refer to itself is an ordinary one.

use std::ops::ControlFlow;

use sqlparser::ast::{Cte, ObjectName, Query, Select, SetExpr, SetOperator, SetQuantifier, With};

use super::reasons::Why;
use super::{full, name_parts, Analyzer, Scope, R};
use crate::plan::{
    positional, rec_change, rec_table, Block, Body, ItemFrom, Recursion, Rel, Source, SourceKind,
};

impl Analyzer<'_> {
    /// The whole definition, which starts with WITH RECURSIVE.
    pub(super) fn recursive_top(&mut self, q: &Query, w: &With, ncols: usize) -> R<Body> {
        let looping: Vec<&Cte> = w.cte_tables.iter().filter(|c| reads_itself(c)).collect();
        let mut rest = q.clone();
        match looping.as_slice() {
            [] => {
                if let Some(w) = rest.with.as_mut() {
                    w.recursive = false;
                }
            }
            // The other CTEs are ordinary ones: those r reads (which may not read r) are in
            // scope for its terms, and the rest of the definition reads r as a source.
            [cte] => {
                let helpers = helpers_of(cte, w)?;
                let scope = self.query_scope(&with_only(q, helpers.clone()), &Vec::new())?;
                self.recursion_of(cte, &helpers, &scope)?;
                let mut others: Vec<Cte> = w
                    .cte_tables
                    .iter()
                    .filter(|c| c.alias.name != cte.alias.name)
                    .cloned()
                    .collect();
                if !others.is_empty() {
                    // The name r reads the source (`recursive_source` comes first); in the
                    // scope, this empty stand-in of r's columns lets probes of the other CTEs
                    // bind without the recursion.
                    others.splice(0..0, self.stand_in(&cte.alias.name.value));
                }
                rest.with = (!others.is_empty()).then(|| With {
                    recursive: false,
                    cte_tables: others,
                    ..w.clone()
                });
                self.features.insert("WITH RECURSIVE");
            }
            _ => return full(Why::RecursiveCtes),
        }
        self.top(&rest, ncols)
    }

    /// Compiles the recursive CTE, whose terms may read the CTEs `helpers` (in `scope`), and
    /// makes its name read its rows.
    fn recursion_of(&mut self, cte: &Cte, helpers: &[Cte], scope: &Scope) -> R<()> {
        let name = cte.alias.name.value.to_lowercase();
        let q = cte.query.as_ref();
        if !super::support::bare_query(q) {
            return full(Why::RecursiveShape);
        }
        let SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier,
            left,
            right,
        } = q.body.as_ref()
        else {
            return full(Why::RecursiveShape);
        };
        let all = match set_quantifier {
            SetQuantifier::None | SetQuantifier::Distinct => false,
            SetQuantifier::All => true,
            _ => return full(Why::RecursiveShape),
        };
        let (SetExpr::Select(base), SetExpr::Select(step)) = (left.as_ref(), right.as_ref()) else {
            return full(Why::RecursiveShape);
        };
        if reads_of(left, &name) != 0 || reads_of(right, &name) != 1 {
            return full(Why::RecursiveShape);
        }
        let with = With {
            with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            recursive: true,
            cte_tables: helpers.iter().chain([cte]).cloned().collect(),
        };
        let query = format!("{with} SELECT * FROM {}", cte.alias.name);
        let described = self.db.query(&format!("DESCRIBE {query}"))?;
        let column =
            |r: &[Option<String>], i: usize| r.get(i).cloned().flatten().unwrap_or_default();
        let names: Vec<String> = described.iter().map(|r| column(r, 0)).collect();
        let types: Vec<String> = described.iter().map(|r| column(r, 1)).collect();
        let id = self.id;
        self.sources.push(Source {
            catalog: None,
            schema: "_duckmv".into(),
            name: format!("rec_{id}"),
            kind: SourceKind::Recursive,
            view_id: None,
            columns: names.clone(),
            relation: rec_table(id),
            delta: Some(rec_change(id)),
            log: None,
        });
        let source = self.sources.len() - 1;
        let base = self.term(base, names.len(), scope)?;
        self.recursive = Some((name, source));
        let step = self.term(step, names.len(), scope)?;
        let reads_r = |b: &Block| {
            b.items
                .iter()
                .filter(|i| matches!(i.from, ItemFrom::Source(s) if s == source))
                .count()
        };
        if reads_r(&step) != 1 {
            return full(Why::RecursiveTerm);
        }
        self.recursion = Some(Recursion {
            source,
            types,
            query,
            base,
            step,
            all,
        });
        Ok(())
    }

    /// `name AS (SELECT CAST(NULL AS t1) AS c1, … WHERE false)`: r's columns and types, no rows.
    fn stand_in(&self, name: &str) -> Option<Cte> {
        let rec = self.recursion.as_ref()?;
        let (r, types) = (self.sources.get(rec.source)?, &rec.types);
        let items = r
            .columns
            .iter()
            .zip(types)
            .map(|(c, t)| sqlparser::ast::SelectItem::ExprWithAlias {
                expr: crate::ir::Expr::Null.cast(t).to_ast(),
                alias: sqlparser::ast::Ident::with_quote('"', c),
            })
            .collect();
        let none = sqlparser::ast::Expr::Value(sqlparser::ast::Value::Boolean(false).into());
        let select = crate::ir::ast_select(items, Vec::new(), Some(none));
        let q = crate::ir::plain_query(SetExpr::Select(Box::new(select)));
        Some(super::probe::cte(name, &q))
    }

    /// One term of the recursive CTE: a join of tables (and r, and CTEs that are such joins
    /// themselves) with a filter, nothing that could take a row out when a row comes in.
    fn term(&mut self, s: &Select, ncols: usize, scope: &Scope) -> R<Block> {
        if self.is_aggregate(s) || s.distinct.is_some() || self.has_window(s) {
            return full(Why::RecursiveTerm);
        }
        let block = self.spj(s, scope, Some(positional(ncols)))?;
        if !joins_only(&block) {
            return full(Why::RecursiveTerm);
        }
        Ok(block)
    }

    /// The source a one-part table name reads when it names the recursive CTE.
    pub(super) fn recursive_source(&self, parts: &[String]) -> Option<usize> {
        match (parts, &self.recursive) {
            ([n], Some((name, i))) if n.to_lowercase() == *name => Some(*i),
            _ => None,
        }
    }
}

/// Whether `b` joins tables, or blocks that do, with filters only: no existence test, outer
/// join, aggregate or union, whose rows could go when others come.
fn joins_only(b: &Block) -> bool {
    let item = |i: &crate::plan::Item| match &i.from {
        ItemFrom::Source(_) => true,
        ItemFrom::Sub(rel) => matches!(rel.as_ref(), Rel::Block(inner) if joins_only(inner)),
        ItemFrom::Tree(_) => false,
    };
    b.items.iter().all(item) && b.exists.is_empty() && b.guards.is_empty()
}

/// The CTEs of `w` other than the recursive `cte` that do not read it, which its terms may
/// read; a CTE that both reads r and is read by it would be a second recursion.
fn helpers_of(cte: &Cte, w: &With) -> R<Vec<Cte>> {
    let r = cte.alias.name.value.to_lowercase();
    let others = w
        .cte_tables
        .iter()
        .filter(|c| c.alias.name != cte.alias.name);
    let (reading_r, helpers): (Vec<&Cte>, Vec<&Cte>) =
        others.partition(|c| reads_of(c.query.body.as_ref(), &r) > 0);
    let read_by_r =
        |c: &&Cte| reads_of(cte.query.body.as_ref(), &c.alias.name.value.to_lowercase()) > 0;
    if reading_r.iter().any(read_by_r) {
        return full(Why::RecursiveCtes);
    }
    Ok(helpers.into_iter().cloned().collect())
}

/// `q` with `ctes` as its (plain) WITH: the scope r's terms are compiled in.
fn with_only(q: &Query, ctes: Vec<Cte>) -> Query {
    let with = (!ctes.is_empty()).then(|| With {
        with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        recursive: false,
        cte_tables: ctes,
    });
    Query {
        with,
        order_by: None,
        limit_clause: None,
        fetch: None,
        ..q.clone()
    }
}

/// Whether the CTE's query names the CTE itself.
fn reads_itself(cte: &Cte) -> bool {
    let name = cte.alias.name.value.to_lowercase();
    reads_of(cte.query.body.as_ref(), &name) > 0
}

/// How many times `e` names the relation `name` (one part, any case), at any depth.
fn reads_of(e: &SetExpr, name: &str) -> usize {
    let mut n = 0;
    let _ = sqlparser::ast::visit_relations(e, |r: &ObjectName| {
        if matches!(name_parts(r).as_slice(), [p] if p.to_lowercase() == name) {
            n += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    n
}
