//! `WITH RECURSIVE name(columns) AS ((seed) UNION [ALL] (step)) body`: the rows `step` derives from
//! the rows found so far, starting from `seed`, until it derives none that is new. A refresh of
//! a view over a recursive query runs one to find the rows a change adds (`plan::recursive`).

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{self, SetExpr, SetOperator, SetQuantifier};

use super::query::{plain_query, table_alias};
use super::{Cte, Query};

#[derive(Clone, Debug, PartialEq)]
pub struct Fixpoint {
    /// Plain CTEs before the recursive one, which its terms and the body may read.
    pub prelude: Vec<Cte>,
    pub name: String,
    pub columns: Vec<String>,
    pub seed: Query,
    pub step: Query,
    pub body: Query,
    /// `UNION ALL`: every derivation is a row (a recursive query over UNION ALL, whose
    /// iteration ends because its input has no cycle).
    pub all: bool,
}

impl Fixpoint {
    /// The WITH clause and the body it precedes.
    pub(super) fn to_ast(&self) -> (ast::With, SetExpr) {
        let nested = |q: &Query| Box::new(SetExpr::Query(Box::new(q.to_ast())));
        // UNION: a row found twice is kept once, so the iteration ends.
        let union = SetExpr::SetOperation {
            left: nested(&self.seed),
            op: SetOperator::Union,
            set_quantifier: if self.all {
                SetQuantifier::All
            } else {
                SetQuantifier::None
            },
            right: nested(&self.step),
        };
        let cte = ast::Cte {
            alias: ast::TableAlias {
                explicit: false,
                ..table_alias(&self.name, &self.columns)
            },
            query: Box::new(plain_query(union)),
            from: None,
            materialized: None,
            closing_paren_token: AttachedToken::empty(),
        };
        let with = ast::With {
            with_token: AttachedToken::empty(),
            recursive: true,
            cte_tables: self.prelude.iter().map(Cte::to_ast).chain([cte]).collect(),
        };
        (with, self.body.set_expr())
    }
}
