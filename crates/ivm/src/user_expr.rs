//! Expressions of the user's query as the plan keeps them: a `sqlparser` AST, not text.
//!
//! Select lists, filters, ON predicates, HAVING and guard templates are parsed once, at CREATE,
//! and stay typed: a refresh that needs their structure (the key equalities of a join
//! predicate) reads it from the tree, and holes in a template ([`hole`]) are filled by
//! replacing nodes, so nothing in the user's text can be mistaken for one. The catalog stores
//! each expression as its SQL text, the format plans have always had; a stored plan is parsed
//! back once, when it is loaded.

use std::fmt;
use std::ops::ControlFlow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, Ident, InTarget, Value, VisitMut, VisitorMut,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

/// One expression of the user's query (possibly with holes), in the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct UserExpr(Box<Expr>);

impl UserExpr {
    pub fn new(e: Expr) -> UserExpr {
        UserExpr(Box::new(e))
    }
    pub fn ast(&self) -> &Expr {
        &self.0
    }
    pub fn into_ast(self) -> Expr {
        *self.0
    }
    /// `TRUE`: the predicate of a join without ON, or an existence test without a filter.
    pub fn always() -> UserExpr {
        UserExpr::new(Expr::value(Value::Boolean(true)))
    }
    /// `(c1) AND (c2) AND …`, each conjunct parenthesized; None for no conjunct.
    pub fn all(conjuncts: impl IntoIterator<Item = Expr>) -> Option<UserExpr> {
        conjuncts
            .into_iter()
            .map(nested)
            .reduce(|l, r| binary(l, BinaryOperator::And, r))
            .map(UserExpr::new)
    }
    /// The expression with each hole of `kind` replaced by `value(i)`.
    pub fn filled(&self, kind: Hole, value: impl FnMut(usize) -> Expr) -> Expr {
        let mut e = self.ast().clone();
        fill_holes(&mut e, kind, value);
        e
    }
    /// This expression with the holes of `kind` replaced, kept as a plan expression.
    pub fn fill(&mut self, kind: Hole, value: impl FnMut(usize) -> Expr) {
        *self.0 = self.filled(kind, value);
    }
}

impl fmt::Display for UserExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for UserExpr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

impl<'de> Deserialize<'de> for UserExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UserExpr, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text)
            .map(UserExpr::new)
            .ok_or_else(|| serde::de::Error::custom(format!("unreadable expression: {text}")))
    }
}

/// Parses one expression as the compiler's dialect prints it.
pub fn parse(sql: &str) -> Option<Expr> {
    Parser::new(&GenericDialect {})
        .try_with_sql(sql)
        .ok()?
        .parse_expr()
        .ok()
}

/// Replaces each hole of `kind` in `e` by `value(i)`.
pub fn fill_holes(e: &mut Expr, kind: Hole, mut value: impl FnMut(usize) -> Expr) {
    rewrite(e, |x| {
        if let Some(i) = hole_index(kind, x) {
            *x = value(i);
        }
    });
}

/// Calls `f` on every node of `e` after its children, so `f` may replace the node (what it
/// puts there is not visited again).
pub fn rewrite(e: &mut Expr, f: impl FnMut(&mut Expr)) {
    let _ = VisitMut::visit(e, &mut PostVisit(f));
}

/// A column name in an expression: `alias.col` (by its alias), or `col` alone.
pub enum ColumnRef<'e> {
    Qualified(&'e str),
    Bare(&'e str),
}

/// Calls `on` with each column name of `e`, in order. False as soon as `on` is, or when `e`
/// holds a subquery (whose names have a scope of their own) or a name of three or more parts:
/// callers placing names on relations cannot place those.
pub fn each_column(e: &Expr, mut on: impl FnMut(ColumnRef) -> bool) -> bool {
    let flow = visit_expressions(e, |x: &Expr| {
        let placed = match x {
            Expr::Subquery(_)
            | Expr::Exists { .. }
            | Expr::In {
                target: InTarget::Subquery(_),
                ..
            } => false,
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                on(ColumnRef::Qualified(&parts[0].value))
            }
            Expr::CompoundIdentifier(_) => false,
            Expr::Identifier(id) => on(ColumnRef::Bare(&id.value)),
            _ => true,
        };
        match placed {
            true => ControlFlow::Continue(()),
            false => ControlFlow::Break(()),
        }
    });
    !flow.is_break()
}

/// What a hole stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hole {
    /// The `i`th existence test of a guard holds (`semi::Guard`).
    Test,
    /// The value of the `i`th existence test of a select list (`compile::select_tests`).
    SelectTest,
    /// The value of the `i`th aggregate of an aggregate query, until the compiler puts its
    /// expression over the state columns there (never stored).
    Aggregate,
    /// Input column `i` of the operator keeping the expression: `_a<i+1>` of an aggregate, in a
    /// call kept whole (`agg::whole`), or `_i<i+1>` of window functions (`plan::windowed`).
    Input,
}

impl Hole {
    fn prefix(self) -> &'static str {
        match self {
            Hole::Test => "__mv_ex_",
            Hole::SelectTest => "__mv_sel_",
            Hole::Aggregate => "__mv_agg_",
            Hole::Input => "__mv_in_",
        }
    }
}

/// The node standing for hole `i` of `kind` until [`UserExpr::fill`]: an unquoted identifier
/// in the reserved `__mv_` space, kept as such in the stored text. The compiler recomputes
/// queries that use such a name themselves, so no user name is taken for a hole.
pub fn hole(kind: Hole, i: usize) -> Expr {
    Expr::Identifier(Ident::new(format!("{}{i}__", kind.prefix())))
}

/// `Some(i)` when `e` is hole `i` of `kind`.
pub fn hole_index(kind: Hole, e: &Expr) -> Option<usize> {
    let Expr::Identifier(id) = e else {
        return None;
    };
    if id.quote_style.is_some() {
        return None;
    }
    let n = id.value.strip_prefix(kind.prefix())?.strip_suffix("__")?;
    n.parse().ok()
}

/// `(e)`, unless `e` is already a single token or parenthesized.
pub fn nested(e: Expr) -> Expr {
    match e {
        e @ (Expr::Nested(_) | Expr::Identifier(_) | Expr::CompoundIdentifier(_)) => e,
        e => Expr::Nested(Box::new(e)),
    }
}

/// The two sides of `e` when it is `left = right`.
pub fn equality(e: &Expr) -> Option<(&Expr, &Expr)> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => Some((left, right)),
        _ => None,
    }
}

/// `l op r`, operands as given (callers parenthesize with [`nested`]).
/// The conjuncts of `e` (its operands of top-level AND, through any parentheses), each without
/// its own outer parentheses.
pub fn conjuncts(e: &Expr) -> Vec<&Expr> {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match e {
            Expr::Nested(inner) => walk(inner, out),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                walk(left, out);
                walk(right, out);
            }
            other => out.push(other),
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

pub fn binary(l: Expr, op: BinaryOperator, r: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(l),
        op,
        right: Box::new(r),
    }
}

/// Calls a closure on every expression after its children, so it may replace the node.
struct PostVisit<F>(F);
impl<F: FnMut(&mut Expr)> VisitorMut for PostVisit<F> {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        (self.0)(e);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(sql: &str) -> UserExpr {
        UserExpr::new(parse(sql).unwrap())
    }

    #[test]
    fn conjuncts_split_and_through_parentheses_only() {
        let e = parse("(a = 1 AND (b > 2 AND c)) AND (d OR e) AND (f)").unwrap();
        let parts: Vec<Expr> = conjuncts(&e).into_iter().cloned().collect();
        let want: Vec<Expr> = ["a = 1", "b > 2", "c", "d OR e", "f"]
            .iter()
            .map(|p| parse(p).unwrap())
            .collect();
        assert_eq!(parts, want);
    }

    #[test]
    fn stored_as_text_and_read_back_as_the_same_tree() {
        let e = expr("(t.k = u.k) AND (coalesce(x, 0) > 2)");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#""(t.k = u.k) AND (coalesce(x, 0) > 2)""#);
        let back: UserExpr = serde_json::from_str(&json).unwrap();
        assert_eq!(back, e);
        assert!(serde_json::from_str::<UserExpr>(r#""a AND""#).is_err());
    }

    #[test]
    fn conjunctions_parenthesize_each_part() {
        let parts = ["a = 1 OR b = 2", "c"].map(|s| parse(s).unwrap());
        let all = UserExpr::all(parts).unwrap();
        let Expr::BinaryOp { left, op, right } = all.ast() else {
            panic!("not a conjunction: {all}");
        };
        assert_eq!(*op, BinaryOperator::And);
        assert!(matches!(left.as_ref(), Expr::Nested(_)));
        assert!(matches!(right.as_ref(), Expr::Identifier(_)));
        assert_eq!(UserExpr::all(Vec::new()), None);
    }

    #[test]
    fn holes_are_filled_by_kind_and_position_only() {
        let template = UserExpr::new(binary(
            hole(Hole::Test, 1),
            BinaryOperator::Or,
            binary(
                hole(Hole::SelectTest, 0),
                BinaryOperator::And,
                // A quoted name spelled like a hole is the user's column, not a hole.
                Expr::Identifier(Ident::with_quote('"', "__mv_ex_0__")),
            ),
        ));
        let filled = template.filled(Hole::Test, |i| Expr::value(Value::Boolean(i == 1)));
        let Expr::BinaryOp { left, right, .. } = &filled else {
            panic!("shape changed");
        };
        assert_eq!(**left, Expr::value(Value::Boolean(true)));
        assert_eq!(right.to_string(), r#"__mv_sel_0__ AND "__mv_ex_0__""#);
    }
}
