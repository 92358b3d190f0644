//! `ORDER BY` of a generated query: by all columns or by expressions, each with its direction.

use serde::{Deserialize, Serialize};
use sqlparser::ast;

use super::Expr;

/// `ORDER BY ALL [options]` or `ORDER BY e [options], …`.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderBy {
    All(Sort),
    Exprs(Vec<(Expr, Sort)>),
}

/// `[ASC | DESC] [NULLS FIRST | LAST]`, each None when not written. Stored in plans (a view's
/// final ORDER BY, see `order`), hence serde.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sort {
    pub asc: Option<bool>,
    pub nulls_first: Option<bool>,
}

impl Sort {
    fn to_ast(self) -> ast::OrderByOptions {
        ast::OrderByOptions {
            sort: self.asc.map(|asc| match asc {
                true => ast::OrderBySort::Asc,
                false => ast::OrderBySort::Desc,
            }),
            nulls_first: self.nulls_first,
        }
    }
}

impl OrderBy {
    pub(super) fn to_ast(&self) -> ast::OrderBy {
        let kind = match self {
            OrderBy::All(sort) => ast::OrderByKind::All(sort.to_ast()),
            OrderBy::Exprs(items) => ast::OrderByKind::Expressions(
                items
                    .iter()
                    .map(|(e, sort)| ast::OrderByExpr {
                        expr: e.to_ast(),
                        options: sort.to_ast(),
                        with_fill: None,
                    })
                    .collect(),
            ),
        };
        ast::OrderBy {
            kind,
            interpolate: None,
        }
    }
}
