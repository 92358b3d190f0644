//! EXISTS and IN (subquery) in the select list (`SELECT k, EXISTS (…) AS has_b FROM a`): the
//! block becomes a UNION ALL of copies, one per combination of the tests' values (two for
//! EXISTS; three for IN, whose value may be unknown). Each copy keeps the rows where the tests
//! have those values and shows the values as constants, so it is an ordinary block with
//! existence filters, maintained as such: a row whose test flips leaves one copy and enters
//! another.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, Ident, Select, SelectItem, UnaryOperator, VisitMut, VisitorMut,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use super::super::plan::Rel;
use super::joins::existence;
use super::{full, Analyzer, Scope, R};

/// Tests beyond this many would multiply the copies (3^n) past what is worth maintaining.
const MAX_TESTS: usize = 3;

fn placeholder(i: usize) -> String {
    format!("__mv_sel_{i}__")
}

/// Replaces each outermost existence test with a placeholder, recording the test.
struct Collect {
    tests: Vec<Expr>,
}

impl VisitorMut for Collect {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if existence(e).is_some() {
            self.tests.push(e.clone());
            *e = Expr::Identifier(Ident::new(placeholder(self.tests.len() - 1)));
        }
        ControlFlow::Continue(())
    }
}

/// Replaces the placeholders with the values of one combination.
struct Fill<'v> {
    values: &'v [Expr],
}

impl VisitorMut for Fill<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(id) = e {
            if let Some(i) = (0..self.values.len()).find(|i| id.value == placeholder(*i)) {
                *e = self.values[i].clone();
            }
        }
        ControlFlow::Continue(())
    }
}

fn literal(sql: &str) -> Expr {
    Parser::new(&GenericDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .expect("a SQL literal parses")
}

fn and(a: Expr, b: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(Expr::Nested(Box::new(a))),
        op: BinaryOperator::And,
        right: Box::new(Expr::Nested(Box::new(b))),
    }
}

/// The WHERE conjunct keeping the rows where `test` has the value `v` (0 true, 1 false,
/// 2 unknown). "False" is `NOT test`: true exactly when the test is false.
fn holds_as(test: &Expr, v: usize) -> Expr {
    let t = Box::new(Expr::Nested(Box::new(test.clone())));
    match v {
        0 => test.clone(),
        1 => Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr: t,
        },
        _ => Expr::IsNull(t),
    }
}

impl Analyzer<'_> {
    /// The block `s` as a union of copies when its select list holds existence tests; None
    /// when it holds none.
    pub(super) fn select_tests(
        &mut self,
        s: &Select,
        scope: &Scope,
        names: &[String],
    ) -> R<Option<Rel>> {
        if matches!(s.distinct, Some(Distinct::On(_))) {
            return Ok(None);
        }
        let mut projection = s.projection.clone();
        let mut c = Collect { tests: Vec::new() };
        for p in &mut projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = p {
                let _ = e.visit(&mut c);
            }
        }
        let tests = c.tests;
        if tests.is_empty() {
            return Ok(None);
        }
        if tests.len() > MAX_TESTS {
            return full("more than three EXISTS/IN tests in the select list");
        }
        // IN can be unknown; EXISTS cannot.
        let arity: Vec<usize> = tests
            .iter()
            .map(|t| match existence(t) {
                Some((_, _, Some(_))) => 3,
                _ => 2,
            })
            .collect();
        let literals = [literal("TRUE"), literal("FALSE"), literal("NULL")];
        let mut rels = Vec::new();
        let combinations: usize = arity.iter().product();
        for mut n in 0..combinations {
            let mut values = Vec::new();
            let mut conds: Vec<Expr> = s.selection.iter().cloned().collect();
            for (t, a) in tests.iter().zip(&arity) {
                let v = n % a;
                n /= a;
                values.push(literals[v].clone());
                conds.push(holds_as(t, v));
            }
            let mut branch = s.clone();
            branch.distinct = None;
            branch.projection = projection.clone();
            for p in &mut branch.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = p {
                    let _ = e.visit(&mut Fill { values: &values });
                }
            }
            branch.selection = conds.into_iter().reduce(and);
            rels.push(Rel::Block(self.spj(
                &branch,
                scope,
                Some(names.to_vec()),
            )?));
        }
        self.features.insert("EXISTS/IN in the select list");
        Ok(Some(Rel::Union(rels)))
    }
}
