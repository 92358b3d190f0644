//! `arg_min(a, b)` and `arg_max(a, b)` (also `min_by`, `max_by`, `argmin`, `argmax`): the
//! `a` of the row with the least (greatest) `b`, rows where either is NULL left out. Such a
//! call is `min` (`max`) of the struct `{v: b, a: a}` — NULL where `b` or `a` is — and the
//! extreme's field `a`: structs compare field by field, so the extreme struct has the extreme
//! `b`, and it is maintained as MIN/MAX are (`kept` in a view's own storage, `extreme` in an
//! aggregate read as a relation). Among rows tied on `b` the struct order picks the least
//! (greatest) `a`; DuckDB's own call picks the first row it reads, which its query does not
//! fix either.

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{BinaryOperator, CaseWhen, DictionaryField, Expr as Ast, Ident, Value};

use crate::ir::{call, Expr};

/// The struct field holding the ordering value.
pub const BY: &str = "v";
/// The struct field holding the argument shown.
pub const ARG: &str = "a";

/// `CASE WHEN b IS NULL OR a IS NULL THEN NULL ELSE {'v': b, 'a': a} END`: the value
/// `min`/`max` keep for `arg_min(a, b)`/`arg_max(a, b)`.
pub fn keyed(arg: Ast, by: Ast) -> Ast {
    let null = |e: &Ast| Ast::IsNull(Box::new(e.clone()));
    let either = Ast::BinaryOp {
        left: Box::new(null(&by)),
        op: BinaryOperator::Or,
        right: Box::new(null(&arg)),
    };
    let field = |name: &str, value: Ast| DictionaryField {
        key: Ident::with_quote('\'', name),
        value: Box::new(value),
    };
    Ast::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: either,
            result: Ast::Value(Value::Null.into()),
        }],
        else_result: Some(Box::new(Ast::Dictionary(vec![
            field(BY, by),
            field(ARG, arg),
        ]))),
    }
}

/// What the aggregate shows of its kept value `e`: the value itself, or its `field`.
pub fn shown(e: Expr, field: Option<&'static str>) -> Expr {
    match field {
        None => e,
        Some(f) => call("struct_extract", vec![e, Expr::Str(f.to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_orders_by_the_value_first() {
        let e = keyed(
            Ast::Identifier(Ident::new("x")),
            Ast::Identifier(Ident::new("y")),
        );
        assert_eq!(
            e.to_string(),
            "CASE WHEN y IS NULL OR x IS NULL THEN NULL ELSE {'v': y, 'a': x} END"
        );
    }
}
