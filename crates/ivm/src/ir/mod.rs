//! The typed SQL the engine generates, and its one renderer.
//!
//! Generated SQL is built from these values, never by editing text: an [`Expr`] (here) or a
//! [`Query`] (`query`) becomes a `sqlparser` AST ([`Expr::to_ast`], [`Query::to_ast`]) and is
//! printed by its `Display`. The conversion alone decides quoting (every engine name is a
//! quoted identifier) and parentheses (every compound operand is nested), so no caller reasons
//! about precedence.

use std::borrow::Cow;
use std::fmt;

mod fixpoint;
mod name;
mod order_by;
mod query;
mod shared;
mod stmt;

pub use fixpoint::Fixpoint;
pub use name::Name;
pub use order_by::{OrderBy, Sort};
pub use query::{ast_select, plain_query, Cte, From, GroupBy, Item, JoinKind, Query, Select};
pub use stmt::{Action, Stmt, When};

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    self, BinaryOperator, CaseWhen, CastKind, DataType, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart, Value,
};

/// An engine-generated expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `rel.name`, or `name` alone: a column the engine named (storage, work or change columns).
    Col {
        rel: Option<Cow<'static, str>>,
        name: String,
    },
    Int(i64),
    /// A string literal.
    Str(String),
    Bool(bool),
    Null,
    /// A scalar function (`coalesce`, `least`) or aggregate call; `distinct` and `filter`
    /// apply to aggregates.
    Call {
        name: &'static str,
        args: Vec<Expr>,
        distinct: bool,
        filter: Option<Box<Expr>>,
    },
    /// `count(*)`.
    CountStar,
    Bin(Box<Expr>, Op, Box<Expr>),
    IsNull(Box<Expr>),
    IsNotNull(Box<Expr>),
    /// `CASE WHEN c1 THEN r1 … ELSE otherwise END`.
    Case {
        whens: Vec<(Expr, Expr)>,
        otherwise: Box<Expr>,
    },
    /// `CAST(e AS BIGINT)`: the cast the engine's own state needs.
    BigInt(Box<Expr>),
    /// `CAST(e AS type)` to a column's DuckDB type, as DuckDB named it (an opaque type name).
    CastTo(Box<Expr>, String),
    /// `NOT e`.
    Not(Box<Expr>),
    /// `-e`.
    Neg(Box<Expr>),
    /// `[NOT] EXISTS (query)`.
    Exists {
        query: Box<Query>,
        negated: bool,
    },
    /// `(query)`: a scalar subquery.
    Scalar(Box<Query>),
    /// An expression of the user's, as the compiler kept it (a filter, a select item, an
    /// aggregate call kept whole).
    User(Box<ast::Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Lt,
    Gt,
    LtEq,
    GtEq,
    NotEq,
    And,
    Or,
    /// `IS NOT DISTINCT FROM`: equality with NULLs equal.
    Same,
    /// `<<`, `|` and `||`, which assemble a wide key from two hashes (see `plan::row_key`).
    ShiftLeft,
    BitOr,
    Concat,
}

/// A column of the relation aliased `rel`.
pub fn col(rel: impl Into<Cow<'static, str>>, name: impl Into<String>) -> Expr {
    Expr::Col {
        rel: Some(rel.into()),
        name: name.into(),
    }
}

/// An expression of the user's.
pub fn user(e: &ast::Expr) -> Expr {
    Expr::User(Box::new(e.clone()))
}

/// `c1 AND c2 AND …`; `TRUE` for no conjunct.
pub fn all(conds: impl IntoIterator<Item = Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or(Expr::Bool(true))
}

/// `c1 OR c2 OR …`; `FALSE` for no disjunct.
pub fn any(conds: impl IntoIterator<Item = Expr>) -> Expr {
    conds
        .into_iter()
        .reduce(Expr::or)
        .unwrap_or(Expr::Bool(false))
}

/// `EXISTS (query)`.
pub fn exists(query: Query) -> Expr {
    Expr::Exists {
        query: Box::new(query),
        negated: false,
    }
}

/// `a IS NOT DISTINCT FROM b AND …` over the columns `cols` of the relations aliased `left`
/// and `right`; `TRUE` when there are none (an ungrouped aggregate's single row).
pub fn same_cols(left: &str, right: &str, cols: &[String]) -> Expr {
    all(cols
        .iter()
        .map(|c| col(left.to_string(), c.clone()).bin(Op::Same, col(right.to_string(), c.clone()))))
}

/// An unqualified column (the select list over a single relation, e.g. a view's storage).
pub fn bare(name: impl Into<String>) -> Expr {
    Expr::Col {
        rel: None,
        name: name.into(),
    }
}

/// A plain function call.
pub fn call(name: &'static str, args: Vec<Expr>) -> Expr {
    Expr::Call {
        name,
        args,
        distinct: false,
        filter: None,
    }
}

/// `name(DISTINCT arg)`.
pub fn call_distinct(name: &'static str, arg: Expr) -> Expr {
    Expr::Call {
        name,
        args: vec![arg],
        distinct: true,
        filter: None,
    }
}

/// `coalesce(e, 0)`.
pub fn or_zero(e: Expr) -> Expr {
    call("coalesce", vec![e, Expr::Int(0)])
}

/// `CASE WHEN cond THEN then ELSE otherwise END`.
pub fn case(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::Case {
        whens: vec![(cond, then)],
        otherwise: Box::new(otherwise),
    }
}

impl Expr {
    pub fn bin(self, op: Op, right: Expr) -> Expr {
        Expr::Bin(Box::new(self), op, Box::new(right))
    }
    pub fn eq(self, right: Expr) -> Expr {
        self.bin(Op::Eq, right)
    }
    pub fn and(self, right: Expr) -> Expr {
        self.bin(Op::And, right)
    }
    pub fn or(self, right: Expr) -> Expr {
        self.bin(Op::Or, right)
    }
    pub fn is_null(self) -> Expr {
        Expr::IsNull(Box::new(self))
    }
    pub fn is_not_null(self) -> Expr {
        Expr::IsNotNull(Box::new(self))
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
    #[allow(clippy::should_implement_trait)]
    pub fn neg(self) -> Expr {
        Expr::Neg(Box::new(self))
    }
    pub fn big_int(self) -> Expr {
        Expr::BigInt(Box::new(self))
    }
    /// `CAST(self AS ty)`, `ty` a DuckDB type name.
    pub fn cast(self, ty: &str) -> Expr {
        Expr::CastTo(Box::new(self), ty.to_string())
    }
    /// Restricts an aggregate call to the rows where `cond` holds.
    pub fn filter(self, cond: Expr) -> Expr {
        match self {
            Expr::Call {
                name,
                args,
                distinct,
                ..
            } => Expr::Call {
                name,
                args,
                distinct,
                filter: Some(Box::new(cond)),
            },
            other => other,
        }
    }

    /// The `sqlparser` AST of this expression: the one place quoting and parentheses are
    /// decided.
    pub fn to_ast(&self) -> ast::Expr {
        match self {
            Expr::Col { rel: None, name } => ast::Expr::Identifier(quoted(name)),
            Expr::Col { rel: Some(r), name } => {
                ast::Expr::CompoundIdentifier(vec![quoted(r), quoted(name)])
            }
            Expr::Int(i) if *i < 0 => ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr: Box::new(Expr::Int(-i).to_ast()),
            },
            Expr::Int(i) => ast::Expr::value(Value::Number(i.to_string(), false)),
            Expr::Str(s) => ast::Expr::value(Value::SingleQuotedString(s.clone())),
            Expr::Bool(b) => ast::Expr::value(Value::Boolean(*b)),
            Expr::Null => ast::Expr::value(Value::Null),
            Expr::Call {
                name,
                args,
                distinct,
                filter,
            } => function(name, args, *distinct, filter.as_deref()),
            Expr::CountStar => ast::Expr::Function(ast::Function {
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)],
                    clauses: vec![],
                }),
                ..plain_function("count")
            }),
            Expr::Bin(l, Op::Same, r) => {
                ast::Expr::IsNotDistinctFrom(Box::new(nested(l)), Box::new(nested(r)))
            }
            Expr::Bin(l, op, r) => ast::Expr::BinaryOp {
                left: Box::new(nested(l)),
                op: binary(*op),
                right: Box::new(nested(r)),
            },
            Expr::IsNull(e) => ast::Expr::IsNull(Box::new(nested(e))),
            Expr::IsNotNull(e) => ast::Expr::IsNotNull(Box::new(nested(e))),
            Expr::Case { whens, otherwise } => ast::Expr::Case {
                case_token: AttachedToken::empty(),
                end_token: AttachedToken::empty(),
                operand: None,
                conditions: whens
                    .iter()
                    .map(|(c, r)| CaseWhen {
                        condition: c.to_ast(),
                        result: r.to_ast(),
                    })
                    .collect(),
                else_result: Some(Box::new(otherwise.to_ast())),
            },
            Expr::Not(e) => ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr: Box::new(nested(e)),
            },
            Expr::Neg(e) => ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr: Box::new(nested(e)),
            },
            Expr::Exists { query, negated } => ast::Expr::Exists {
                subquery: Box::new(query.to_ast()),
                negated: *negated,
            },
            Expr::Scalar(q) => ast::Expr::Subquery(Box::new(q.to_ast())),
            Expr::User(e) => (**e).clone(),
            Expr::BigInt(e) => ast::Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(e.to_ast()),
                data_type: DataType::BigInt(None),
                format: None,
            },
            Expr::CastTo(e, ty) => ast::Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(e.to_ast()),
                // The type as DuckDB printed it, one token: it is not an identifier to quote.
                data_type: DataType::Custom(
                    ObjectName(vec![ObjectNamePart::Identifier(Ident::new(ty.clone()))]),
                    Vec::new(),
                ),
                format: None,
            },
        }
    }
}

/// `a + b`, `a - b`, `a * b` build the operator nodes.
macro_rules! arithmetic {
    ($($trait:ident $method:ident $op:ident),*) => {$(
        impl std::ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, right: Expr) -> Expr {
                self.bin(Op::$op, right)
            }
        }
    )*};
}
arithmetic!(Add add Add, Sub sub Sub, Mul mul Mul);

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_ast().fmt(f)
    }
}

/// `expr AS "name"`, a select-list item.
pub struct Aliased<'a>(pub &'a Expr, pub &'a str);

impl fmt::Display for Aliased<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} AS {}", self.0, quoted(self.1))
    }
}

fn quoted(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

/// Operands that are themselves operators are wrapped in parentheses: any expression but a
/// name, a literal, a call, a CASE, a cast or a subquery, whoever built it.
fn nested(e: &Expr) -> ast::Expr {
    paren(e.to_ast())
}

/// `e`, parenthesized unless it is a single operand already.
pub fn paren(e: ast::Expr) -> ast::Expr {
    use ast::Expr as A;
    match e {
        e @ (A::Identifier(_)
        | A::CompoundIdentifier(_)
        | A::Value(_)
        | A::Function(_)
        | A::Case { .. }
        | A::Cast { .. }
        | A::Nested(_)
        | A::Subquery(_)
        | A::Exists { .. }) => e,
        A::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } if matches!(*expr, A::Value(_)) => A::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        },
        e => A::Nested(Box::new(e)),
    }
}

fn binary(op: Op) -> BinaryOperator {
    match op {
        Op::Add => BinaryOperator::Plus,
        Op::Sub => BinaryOperator::Minus,
        Op::Mul => BinaryOperator::Multiply,
        Op::Div => BinaryOperator::Divide,
        Op::Eq => BinaryOperator::Eq,
        Op::Lt => BinaryOperator::Lt,
        Op::Gt => BinaryOperator::Gt,
        Op::LtEq => BinaryOperator::LtEq,
        Op::GtEq => BinaryOperator::GtEq,
        Op::NotEq => BinaryOperator::NotEq,
        Op::And => BinaryOperator::And,
        Op::Or => BinaryOperator::Or,
        Op::ShiftLeft => BinaryOperator::PGBitwiseShiftLeft,
        Op::BitOr => BinaryOperator::BitwiseOr,
        Op::Concat => BinaryOperator::StringConcat,
        Op::Same => unreachable!("IS NOT DISTINCT FROM has its own node"),
    }
}

fn plain_function(name: &str) -> ast::Function {
    ast::Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::None,
        within_group: vec![],
        filter: None,
        null_treatment: None,
        over: None,
    }
}

fn function(name: &str, args: &[Expr], distinct: bool, filter: Option<&Expr>) -> ast::Expr {
    ast::Expr::Function(ast::Function {
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: distinct.then_some(ast::DuplicateTreatment::Distinct),
            args: args
                .iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a.to_ast())))
                .collect(),
            clauses: vec![],
        }),
        filter: filter.map(|c| Box::new(c.to_ast())),
        ..plain_function(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compound_operands_are_parenthesized() {
        let e = (col("s", "n_1") + col("d", "n_1")) * Expr::Int(2);
        assert_eq!(e.to_string(), r#"("s"."n_1" + "d"."n_1") * 2"#);
        let e = col("s", "a").eq(Expr::Null.is_null());
        assert_eq!(e.to_string(), r#""s"."a" = (NULL IS NULL)"#);
    }

    #[test]
    fn names_are_quoted_and_aggregates_filtered() {
        let e = call("min", vec![col("d", r#"we"ird"#)])
            .filter(col("d", "_mv_mult").bin(Op::Gt, Expr::Int(0)));
        assert_eq!(
            e.to_string(),
            r#"min("d"."we""ird") FILTER (WHERE "d"."_mv_mult" > 0)"#
        );
        let e = Expr::Call {
            name: "count",
            args: vec![bare("x")],
            distinct: true,
            filter: None,
        };
        assert_eq!(
            e.big_int().to_string(),
            r#"CAST(count(DISTINCT "x") AS BIGINT)"#
        );
        assert_eq!(
            case(bare("n").eq(Expr::Int(0)), Expr::Null, bare("s")).to_string(),
            r#"CASE WHEN "n" = 0 THEN NULL ELSE "s" END"#
        );
    }
}
