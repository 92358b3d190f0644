//! EXISTS and IN (subquery) in the select list (`SELECT k, EXISTS (…) AS has_b FROM a`): the
//! block becomes a UNION ALL of copies, one per combination of the tests' values (two for
//! EXISTS; three for IN, whose value may be unknown). Each copy keeps the rows where the tests
//! have those values and shows the values as constants, so it is an ordinary block with
//! existence filters, maintained as such: a row whose test flips leaves one copy and enters
//! another.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, Select, SelectItem, UnaryOperator, Value, VisitMut, VisitorMut,
};

use super::super::plan::{Block, Rel};
use super::super::user_expr::{hole, Hole};
use super::existence::existence;
use super::{full, Analyzer, Scope, R};

/// Tests beyond this many would multiply the copies (3^n) past what is worth maintaining.
const MAX_TESTS: usize = 3;

/// Replaces each outermost existence test with a placeholder, recording the test.
struct Collect {
    tests: Vec<Expr>,
}

impl VisitorMut for Collect {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if existence(e).is_some() {
            self.tests.push(e.clone());
            *e = hole(Hole::SelectTest, self.tests.len() - 1);
        }
        ControlFlow::Continue(())
    }
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

/// One copy of a block: the SELECT with its extra WHERE, and the values of its tests.
pub(super) type TestCopy = (Select, Vec<Value>);

/// Copies of `s`, one per combination of the values of the existence tests in its select
/// list, each with WHERE keeping the rows where the tests have those values, and the values
/// (SQL literals) that [`fill`] puts in place of the tests once the copy is compiled — so
/// every copy compiles to the same shape. None when the select list tests nothing.
pub(super) fn copies(s: &Select) -> R<Option<Vec<TestCopy>>> {
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
    let mut out = Vec::new();
    let combinations: usize = arity.iter().product();
    for mut n in 0..combinations {
        let mut values = Vec::new();
        let mut conds: Vec<Expr> = s.selection.iter().cloned().collect();
        for (t, a) in tests.iter().zip(&arity) {
            let v = n % a;
            n /= a;
            values.push([Value::Boolean(true), Value::Boolean(false), Value::Null][v].clone());
            conds.push(holds_as(t, v));
        }
        let mut copy = s.clone();
        copy.projection = projection.clone();
        copy.selection = conds.into_iter().reduce(and);
        out.push((copy, values));
    }
    Ok(Some(out))
}

/// Puts a copy's test values in place of the holes in its compiled select list.
pub(super) fn fill(block: &mut Block, values: &[Value]) {
    for e in &mut block.select {
        e.fill(Hole::SelectTest, |i| Expr::value(values[i].clone()));
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
        let Some(copies) = copies(s)? else {
            return Ok(None);
        };
        let mut rels = Vec::new();
        for (mut copy, values) in copies {
            copy.distinct = None;
            let mut block = self.spj(&copy, scope, Some(names.to_vec()))?;
            fill(&mut block, &values);
            rels.push(Rel::Block(block));
        }
        self.features.insert("EXISTS/IN in the select list");
        Ok(Some(Rel::Union(rels)))
    }
}
