//! A derived table or CTE whose query calls window functions, read beside other relations
//! (`FROM (SELECT …, row_number() OVER (…) AS rn FROM t) x JOIN u ON …`): the view keeps its
//! rows as a source of its own (`plan::sub_window`), compiled as a window view's query is.
//! A window query the outer query only projects and filters is merged into it instead
//! (`window_subquery`). Probes of the definition read such rows as typed stand-ins.

use sqlparser::ast::{Query, SetExpr};

use super::reasons::Why;
use super::{full, Analyzer, Scope, R};
use crate::ir;
use crate::plan::{Source, SourceKind, SubWindow};

impl Analyzer<'_> {
    /// The source of `q`'s rows and their column names when `q` is a window query; None when
    /// it is not one.
    pub(super) fn kept_window(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> R<Option<(usize, Vec<String>)>> {
        let SetExpr::Select(s) = q.body.as_ref() else {
            return Ok(None);
        };
        if !self.has_window(s) || self.is_aggregate(s) {
            return Ok(None);
        }
        if self.recursive.is_some() {
            return full(Why::WindowSubqueryWithRecursion);
        }
        // With the CTEs of its scope in front: a query DuckDB describes alone.
        let text = super::probe::Probe::new(scope).query(q);
        if let Some(&source) = self.window_sources.get(&text.to_string()) {
            *self.window_reads.entry(source).or_default() += 1;
            return Ok(Some((source, self.sources[source].columns.clone())));
        }
        let inner = self.query_scope(q, scope)?;
        let window = self.windowed(s, &inner)?;
        let described = self.db.query(&format!("DESCRIBE {text}"))?;
        let column =
            |r: &[Option<String>], i: usize| r.get(i).cloned().flatten().unwrap_or_default();
        let names: Vec<String> = described.iter().map(|r| column(r, 0)).collect();
        let types: Vec<String> = described.iter().map(|r| column(r, 1)).collect();
        let key = |n: &String| {
            n.strip_prefix("_p")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        };
        if let Some(n) = names.iter().find(|n| key(n)) {
            return full(Why::WindowSubqueryColumn.with(n));
        }
        let name = format!("win_{}_{}", self.id, self.windows.len() + 1);
        self.sources.push(Source {
            catalog: None,
            schema: "_duckmv".into(),
            name: name.clone(),
            kind: SourceKind::Window,
            view_id: None,
            columns: names.clone(),
            relation: format!("_duckmv.{name}"),
            delta: Some(format!("_duckmv.{}", name.replacen("win_", "wd_", 1))),
            log: None,
        });
        let source = self.sources.len() - 1;
        self.window_sources.insert(text.to_string(), source);
        self.window_reads.insert(source, 1);
        self.windows.push(SubWindow {
            source,
            window,
            types,
        });
        self.features.insert("window subquery");
        Ok(Some((source, names)))
    }
}

impl Analyzer<'_> {
    /// Asks DuckDB for the columns of `t` selecting `items` (name and type per row), with the
    /// rows the view keeps itself — a window query's, a recursive query's — read as typed
    /// stand-ins of no rows: their tables are created only with the view.
    pub(super) fn describe_term(
        &mut self,
        t: impl Fn(&[Source]) -> crate::ops::Term,
        items: Vec<ir::Item>,
    ) -> Result<Vec<Vec<Option<String>>>, crate::DbError> {
        let mut sources = self.sources.clone();
        let mut ctes = Vec::new();
        let windows = self.windows.iter().map(|w| (w.source, &w.types));
        let recursion = self.recursion.as_ref().map(|r| (r.source, &r.types));
        for (i, types) in windows.chain(recursion) {
            let name = format!("_mv_kept{i}");
            let cols = sources[i]
                .columns
                .iter()
                .zip(types)
                .map(|(c, t)| ir::Item::named(ir::Expr::Null.cast(t), c.clone()))
                .collect();
            let none = ir::Select::new(cols, Vec::new()).filtered([ir::Expr::Bool(false)]);
            ctes.push(ir::Cte {
                name: name.clone(),
                query: ir::Query::select(none),
                materialized: false,
            });
            sources[i].relation = name;
        }
        let body = ir::Query::select(t(&sources).select(items));
        let probe = match ctes.is_empty() {
            true => body,
            false => ir::Query::With {
                ctes,
                body: Box::new(body),
            },
        };
        self.db.query(&format!("DESCRIBE {probe}"))
    }
}
