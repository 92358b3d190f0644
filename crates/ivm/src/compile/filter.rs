//! `FILTER (WHERE …)` on an aggregate, rewritten into its argument.

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{CaseWhen, Expr, InTarget, Value, Visit};

use super::FnVisitor;
use crate::agg::AggKind;

/// `agg(x) FILTER (WHERE c)` as `agg(CASE WHEN c THEN x END)`: every maintained aggregate skips
/// NULL arguments, so the two are equal; `count(*)` counts `CASE WHEN c THEN 1 END`. None when
/// `c` tests a subquery (the argument is computed in the input's select list, where the
/// analysis of subqueries does not reach).
pub fn filtered(kind: AggKind, arg: Option<Expr>, cond: &Expr) -> Option<(AggKind, Option<Expr>)> {
    let mut subquery = false;
    let _ = cond.visit(&mut FnVisitor(|x: &Expr| {
        let in_subquery =
            matches!(x, Expr::In { target, .. } if matches!(target, InTarget::Subquery(_)));
        if in_subquery || matches!(x, Expr::Subquery(_) | Expr::Exists { .. }) {
            subquery = true;
        }
    }));
    if subquery {
        return None;
    }
    let (kind, value) = match (kind, arg) {
        (AggKind::CountStar, _) | (_, None) => (
            AggKind::Count,
            Expr::Value(Value::Number("1".into(), false).into()),
        ),
        (k, Some(e)) => (k, e),
    };
    let case = Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: cond.clone(),
            result: value,
        }],
        else_result: None,
    };
    Some((kind, Some(case)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn expr(sql: &str) -> Expr {
        Parser::new(&GenericDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn the_condition_moves_into_the_argument() {
        let (k, arg) = filtered(AggKind::Sum, Some(expr("v")), &expr("k > 1")).unwrap();
        assert_eq!(
            (k, arg.unwrap().to_string()),
            (AggKind::Sum, "CASE WHEN k > 1 THEN v END".into())
        );
        let (k, arg) = filtered(AggKind::CountStar, None, &expr("g IS NULL")).unwrap();
        assert_eq!(
            (k, arg.unwrap().to_string()),
            (AggKind::Count, "CASE WHEN g IS NULL THEN 1 END".into())
        );
    }

    #[test]
    fn a_condition_over_a_subquery_is_refused() {
        for c in [
            "k IN (SELECT k FROM u)",
            "EXISTS (SELECT 1)",
            "v > (SELECT max(w) FROM u)",
        ] {
            assert_eq!(
                filtered(AggKind::Sum, Some(expr("v")), &expr(c)),
                None,
                "{c}"
            );
        }
    }
}
