//! `WITH RECURSIVE`: a definition over one recursive CTE, `r AS (base UNION step)`, whose two
//! terms are joins of tables with filters and whose step reads r once (the rule is in
//! `plan::recursive`). r becomes a source of the view, read by the rest of the definition like
//! a table; a CTE under WITH RECURSIVE that does not refer to itself is an ordinary one.

use std::ops::ControlFlow;

use sqlparser::ast::{Cte, ObjectName, Query, Select, SetExpr, SetOperator, SetQuantifier, With};

use super::reasons::Why;
use super::{full, name_parts, Analyzer, R};
use crate::plan::{
    positional, rec_change, rec_table, Block, Body, ItemFrom, Recursion, Source, SourceKind,
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
            // The other CTEs are ordinary ones of the rest of the definition, which reads r as
            // a source; r's terms, compiled apart, may read tables only.
            [cte] if !reads_another(cte, w) => {
                self.recursion_of(cte)?;
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

    /// Compiles the recursive CTE and makes its name read its rows.
    fn recursion_of(&mut self, cte: &Cte) -> R<()> {
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
        let query = format!("WITH RECURSIVE {cte} SELECT * FROM {}", cte.alias.name);
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
        let base = self.term(base, names.len())?;
        self.recursive = Some((name, source));
        let step = self.term(step, names.len())?;
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

    /// One term of the recursive CTE: a join of tables (and r) with a filter, nothing that
    /// could take a row out when a row comes in.
    fn term(&mut self, s: &Select, ncols: usize) -> R<Block> {
        if self.is_aggregate(s) || s.distinct.is_some() || self.has_window(s) {
            return full(Why::RecursiveTerm);
        }
        let block = self.spj(s, &Vec::new(), Some(positional(ncols)))?;
        let joins_only = block
            .items
            .iter()
            .all(|i| matches!(i.from, ItemFrom::Source(_)));
        if !joins_only || !block.exists.is_empty() || !block.guards.is_empty() {
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

/// Whether the recursive CTE's query names another CTE of the same WITH.
fn reads_another(cte: &Cte, w: &With) -> bool {
    w.cte_tables.iter().any(|other| {
        other.alias.name != cte.alias.name
            && reads_of(
                cte.query.body.as_ref(),
                &other.alias.name.value.to_lowercase(),
            ) > 0
    })
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
