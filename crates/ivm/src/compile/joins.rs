//! The compiler's part for join chains with outer joins: LEFT/RIGHT/FULL joins become one
//! `ItemFrom::Tree` item; a `SEMI JOIN`/`ANTI JOIN` in the chain becomes an existence filter of
//! the block (see `existence` for the tests written in WHERE).

use super::reasons::Why;
use sqlparser::ast::{Expr, JoinConstraint, JoinOperator, TableWithJoins};

use super::super::ops::{Exists, Kind, Tree};
use super::super::user_expr::UserExpr;
use super::{full, Analyzer, BlockFrom, Item, ItemFrom, Scope, R};

/// Joins the existing flat path handles (their ON predicates join the block's filter).
pub(super) fn is_inner(op: &JoinOperator) -> bool {
    matches!(
        op,
        JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
    )
}

fn constraint(op: &JoinOperator) -> Option<&JoinConstraint> {
    match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::CrossJoin(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c)
        | JoinOperator::Semi(c)
        | JoinOperator::LeftSemi(c)
        | JoinOperator::Anti(c)
        | JoinOperator::LeftAnti(c) => Some(c),
        _ => None,
    }
}

impl Analyzer<'_> {
    /// One table and the items it reads, as a leaf (with its visible columns).
    fn leaf(&mut self, f: &sqlparser::ast::TableFactor, scope: &Scope) -> R<(Item, Vec<String>)> {
        let mut tmp = BlockFrom::default();
        self.factor(f, scope, &mut tmp)?;
        let item = tmp.items.pop().expect("factor adds one item");
        let cols = tmp.columns.pop().unwrap_or_default();
        Ok((item, cols))
    }

    /// A join's ON predicate (TRUE for a cross join).
    fn on(&self, op: &JoinOperator) -> R<UserExpr> {
        match constraint(op) {
            Some(JoinConstraint::On(e)) => {
                self.check_expr(e, false)?;
                Ok(UserExpr::new(Expr::Nested(Box::new(e.clone()))))
            }
            Some(JoinConstraint::None) => Ok(UserExpr::always()),
            Some(JoinConstraint::Natural) => full(Why::NaturalJoin),
            Some(_) => full(Why::JoinUsing),
            None => full(Why::ThisKindOfJoin),
        }
    }

    /// The tree node of an inner or outer join, and whether its sides are swapped (a RIGHT
    /// join is stored as a LEFT join). `filtered`: a SEMI/ANTI JOIN came before.
    fn join_kind(&mut self, op: &JoinOperator, filtered: bool) -> R<(Kind, bool)> {
        let (kind, swapped, feature) = match op {
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_) => {
                (Kind::Inner, false, "inner join")
            }
            JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => (Kind::Left, false, "left join"),
            // The joins before are the non-preserved side: one joined table, counted and
            // padded as a whole. A SEMI/ANTI JOIN before would filter the padded rows.
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) if filtered => {
                return full(Why::RightJoinAfterSemiOrAnti)
            }
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) => {
                (Kind::Left, true, "right join")
            }
            JoinOperator::FullOuter(_) if filtered => return full(Why::FullJoinAfterSemiOrAnti),
            JoinOperator::FullOuter(_) => (Kind::Full, false, "full join"),
            _ => return full(Why::ThisKindOfJoin),
        };
        self.features.insert(feature);
        Ok((kind, swapped))
    }

    /// A left-deep join chain containing outer or semi/anti joins.
    pub(super) fn chain(
        &mut self,
        twj: &TableWithJoins,
        scope: &Scope,
        out: &mut BlockFrom,
    ) -> R<()> {
        let (first, cols) = self.leaf(&twj.relation, scope)?;
        let mut visible = vec![(first.alias.clone(), cols)];
        let mut tree = Tree::Leaf(first);
        let mut filtered = false;
        for j in &twj.joins {
            let on = self.on(&j.join_operator)?;
            let semi = match &j.join_operator {
                JoinOperator::Semi(_) | JoinOperator::LeftSemi(_) => Some(false),
                JoinOperator::Anti(_) | JoinOperator::LeftAnti(_) => Some(true),
                _ => None,
            };
            if let Some(anti) = semi {
                // A filter on the rows to its left: it commutes with the joins that follow as
                // long as those keep every left row (inner and LEFT joins).
                let (item, _) = self.leaf(&j.relation, scope)?;
                out.exists.push(Exists {
                    items: vec![item],
                    filter: on,
                    anti,
                });
                self.features
                    .insert(if anti { "anti join" } else { "semi join" });
                filtered = true;
                continue;
            }
            let (item, cols) = self.leaf(&j.relation, scope)?;
            let right = Tree::Leaf(item.clone());
            let (kind, swapped) = self.join_kind(&j.join_operator, filtered)?;
            let (l, r) = if swapped {
                (right, tree)
            } else {
                (tree, right)
            };
            visible.push((item.alias.clone(), cols));
            tree = Tree::Join {
                kind,
                left: Box::new(l),
                right: Box::new(r),
                on,
            };
        }
        let all: Vec<String> = visible.iter().flat_map(|(_, c)| c.clone()).collect();
        let alias = visible
            .iter()
            .map(|(a, _)| a.clone())
            .collect::<Vec<_>>()
            .join(",");
        out.items.push(Item {
            alias,
            from: ItemFrom::Tree(Box::new(tree)),
        });
        out.columns.push(all);
        out.visible.extend(visible);
        Ok(())
    }
}
