//! The compiler's part for existence tests: `[NOT] EXISTS (…)` and `x [NOT] IN (SELECT …)`
//! conjuncts of WHERE become existence filters of the block; tests under AND/OR/NOT or inside
//! other expressions become guards, whose holes stand for the tests (see `semi`).

use super::reasons::Why;
use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    BinaryOperator, CaseWhen, Expr, InTarget, Query, Select, SelectItem, SetExpr, UnaryOperator,
    Value, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

use super::super::ops::{Exists, Guard};
use super::super::plan::{Block, Rel};
use super::super::text::ident;
use super::super::user_expr::{binary, hole, nested, Hole, UserExpr};
use super::from::column_of;
use super::{full, Analyzer, BlockFrom, Item, ItemFrom, Scope, Stop, R};

impl Analyzer<'_> {
    /// WHERE: top-level conjuncts that are existence tests become filters of the block; the
    /// rest is the ordinary predicate.
    pub(super) fn where_clause(
        &mut self,
        w: &Expr,
        scope: &Scope,
        out: &mut BlockFrom,
        preds: &mut Vec<Expr>,
    ) -> R<()> {
        for c in crate::user_expr::conjuncts(w) {
            match existence(c) {
                Some((subquery, anti, lhs)) => {
                    let e = self.exists(subquery, anti, lhs, false, scope, out)?;
                    out.exists.push(e);
                }
                None if has_existence(c) => {
                    let mut exists = Vec::new();
                    let template = self.guard(c, false, scope, out, &mut exists)?;
                    out.guards.push(Guard {
                        template: UserExpr::new(template),
                        exists,
                    });
                }
                None => {
                    self.check_expr(c, false)?;
                    preds.push(c.clone());
                }
            }
        }
        Ok(())
    }

    /// A conjunct combining existence tests with AND, OR and NOT: each test becomes a
    /// placeholder for "it holds" (see `semi::Guard`). `negated`: under an odd number of NOTs,
    /// where IN's "unknown" would no longer act as false.
    fn guard(
        &mut self,
        e: &Expr,
        negated: bool,
        scope: &Scope,
        out: &BlockFrom,
        exists: &mut Vec<Exists>,
    ) -> R<Expr> {
        if let Some((subquery, anti, lhs)) = existence(e) {
            // Under NOT, IN's "unknown" no longer acts as false: use its three-valued value.
            let exact = negated || is_negation(e);
            return self.test_value(subquery, anti, lhs, exact, scope, out, exists);
        }
        if !has_existence(e) {
            self.check_expr(e, false)?;
            return Ok(Expr::Nested(Box::new(e.clone())));
        }
        match e {
            Expr::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::And | BinaryOperator::Or) =>
            {
                Ok(Expr::BinaryOp {
                    left: Box::new(self.guard(left, negated, scope, out, exists)?),
                    op: op.clone(),
                    right: Box::new(self.guard(right, negated, scope, out, exists)?),
                })
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => Ok(Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: Box::new(self.guard(expr, !negated, scope, out, exists)?),
            }),
            Expr::Nested(inner) => Ok(Expr::Nested(Box::new(
                self.guard(inner, negated, scope, out, exists)?,
            ))),
            _ => self.valued(e, scope, out, exists),
        }
    }

    /// An expression holding existence tests somewhere other than under AND/OR/NOT (CASE,
    /// comparisons of booleans, …): each test becomes its exact value — two-valued for EXISTS,
    /// three-valued for IN — so the expression means what it meant.
    fn valued(
        &mut self,
        e: &Expr,
        scope: &Scope,
        out: &BlockFrom,
        exists: &mut Vec<Exists>,
    ) -> R<Expr> {
        struct Replace<'s, 'a> {
            an: &'s mut Analyzer<'a>,
            scope: &'s Scope,
            out: &'s BlockFrom,
            exists: &'s mut Vec<Exists>,
            error: Option<Stop>,
        }
        impl VisitorMut for Replace<'_, '_> {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                let Some((q, anti, lhs)) = existence(e) else {
                    return ControlFlow::Continue(());
                };
                let (q, lhs) = (q.clone(), lhs.cloned());
                match self.an.test_value(
                    &q,
                    anti,
                    lhs.as_ref(),
                    true,
                    self.scope,
                    self.out,
                    self.exists,
                ) {
                    Ok(v) => {
                        *e = v;
                        ControlFlow::Continue(())
                    }
                    Err(err) => {
                        self.error = Some(err);
                        ControlFlow::Break(())
                    }
                }
            }
        }
        let mut x = e.clone();
        let mut r = Replace {
            an: self,
            scope,
            out,
            exists,
            error: None,
        };
        let _ = x.visit(&mut r);
        if let Some(err) = r.error {
            return Err(err);
        }
        self.check_expr(&x, false)?;
        Ok(Expr::Nested(Box::new(x)))
    }

    /// The value of one existence test, with its filters pushed onto `exists`. `exact`: IN
    /// (subquery) as SQL's three-valued `x IN S` — true when some y = x, unknown when none
    /// does but x or some y is NULL, false otherwise — from two counts; otherwise IN holds
    /// when some y = x and NOT IN when no y matches or is unknown (unknown as false, right for
    /// a test whose result only AND and OR see).
    #[allow(clippy::too_many_arguments)]
    fn test_value(
        &mut self,
        subquery: &Query,
        anti: bool,
        lhs: Option<&Expr>,
        exact: bool,
        scope: &Scope,
        out: &BlockFrom,
        exists: &mut Vec<Exists>,
    ) -> R<Expr> {
        let placeholder = |i: usize| hole(Hole::Test, i);
        if lhs.is_none() || !exact {
            exists.push(self.exists(subquery, anti, lhs, false, scope, out)?);
            return Ok(placeholder(exists.len() - 1));
        }
        exists.push(self.exists(subquery, false, lhs, false, scope, out)?);
        let matched = exists.len() - 1;
        exists.push(self.exists(subquery, false, lhs, true, scope, out)?);
        let unknown = exists.len() - 1;
        let when = |condition: Expr, result: Value| CaseWhen {
            condition,
            result: Expr::value(result),
        };
        // CASE WHEN matched THEN TRUE WHEN unknown THEN NULL ELSE FALSE END
        let case = Expr::Nested(Box::new(Expr::Case {
            case_token: AttachedToken::empty(),
            end_token: AttachedToken::empty(),
            operand: None,
            conditions: vec![
                when(placeholder(matched), Value::Boolean(true)),
                when(placeholder(unknown), Value::Null),
            ],
            else_result: Some(Box::new(Expr::value(Value::Boolean(false)))),
        }));
        let value = if anti {
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: Box::new(case),
            }
        } else {
            case
        };
        // Parenthesized: it replaces an operand of whatever surrounds the test (`… IS NULL`).
        Ok(Expr::Nested(Box::new(value)))
    }

    /// The existence filter of `[NOT] EXISTS (q)` or `lhs [NOT] IN (q)`.
    /// `wide`: the IN predicate also matches when either side is NULL (a non-anti test of
    /// "x IN S is not false").
    fn exists(
        &mut self,
        q: &Query,
        anti: bool,
        lhs: Option<&Expr>,
        wide: bool,
        scope: &Scope,
        outer: &BlockFrom,
    ) -> R<Exists> {
        let inner_scope = self.query_scope(q, scope)?;
        let SetExpr::Select(s) = q.body.as_ref() else {
            return full(Why::SetOperationInExistence);
        };
        let rewritten = self.scalar_subqueries(s, &inner_scope)?;
        let s = rewritten.as_ref().unwrap_or(s);
        self.check_select(s)?;
        let (items, mut preds, y) = if self.is_aggregate(s) {
            // The aggregate is a relation of its own, tested like a table.
            let (rel, names) = self.sub_aggregate(s, &inner_scope, false)?;
            self.subquery_count += 1;
            let alias = ident(&format!("_mv_q{}", self.subquery_count));
            let y = match names.as_slice() {
                [y] => Some(column_of(&alias, y)),
                _ => None,
            };
            let item = Item {
                alias,
                from: ItemFrom::Sub(Box::new(rel)),
            };
            (vec![item], Vec::new(), y)
        } else {
            let mut from = self.from(s, &inner_scope)?;
            if !from.exists.is_empty() || !from.guards.is_empty() {
                from = self.nest(s, from, &inner_scope)?;
            }
            let y = match s.projection.as_slice() {
                [SelectItem::UnnamedExpr(e)] | [SelectItem::ExprWithAlias { expr: e, .. }] => {
                    if lhs.is_some() {
                        self.check_expr(e, false)?;
                    }
                    Some(e.clone())
                }
                _ => None,
            };
            let preds = from.filter.into_iter().map(UserExpr::into_ast).collect();
            (from.items, preds, y)
        };
        if let Some(x) = lhs {
            let Some(y) = y else {
                return full(Why::InSubqueryNotOneColumn);
            };
            self.check_expr(x, false)?;
            let (x, named) = qualify(x, outer)?;
            if items
                .iter()
                .any(|it| named.contains(&it.alias.trim_matches('"').to_lowercase()))
            {
                return full(Why::InSubqueryReusesTableName);
            }
            // In a WHERE conjunct, unknown counts as false: `x IN S` holds iff some y = x;
            // `x NOT IN S` holds iff no y equals x or is NULL, and x is not NULL (or S is empty).
            let (x, y) = (nested(x), nested(y));
            let equal = binary(x.clone(), BinaryOperator::Eq, y.clone());
            preds.push(if anti || wide {
                let null = |e: Expr| Expr::IsNull(Box::new(e));
                let or = |l, r| binary(l, BinaryOperator::Or, r);
                or(or(equal, null(y)), null(x))
            } else {
                equal
            });
            self.features.insert(if anti { "NOT IN" } else { "IN" });
        } else {
            self.features
                .insert(if anti { "NOT EXISTS" } else { "EXISTS" });
        }
        Ok(Exists {
            items,
            filter: UserExpr::all(preds).unwrap_or_else(UserExpr::always),
            anti,
        })
    }
}

impl Analyzer<'_> {
    /// A subquery `SELECT … FROM x WHERE … AND <tests>` whose own WHERE holds existence tests:
    /// `x` filtered by those tests becomes a derived table under x's alias (same columns), so
    /// the outer test reads a relation whose change is known. Only when the tests refer to
    /// nothing outside the subquery (DuckDB binds them on their own) and x is one table or
    /// subquery. Over a comma join, x is the item the tests refer to alone.
    fn nest(&mut self, s: &Select, mut from: BlockFrom, scope: &Scope) -> R<BlockFrom> {
        let probe = super::probe::Probe::new(scope);
        if from.items.len() != s.from.len() {
            return full(Why::NestedExistenceOverJoin);
        }
        let conjuncts = s
            .selection
            .as_ref()
            .map(crate::user_expr::conjuncts)
            .unwrap_or_default();
        let tests = super::correlated::and_all(
            conjuncts
                .iter()
                .filter(|c| has_existence(c))
                .map(|c| Expr::Nested(Box::new((*c).clone())))
                .collect(),
        );
        let mut alone = |t: &sqlparser::ast::TableWithJoins| match &tests {
            Some(tests) => {
                let sql = probe.star(&t.relation, tests.clone()).to_string();
                t.joins.is_empty() && self.db.binds_alone(&sql)
            }
            None => false,
        };
        let Some(i) = s.from.iter().position(&mut alone) else {
            return full(if s.from.len() == 1 {
                Why::NestedExistenceOuter
            } else {
                Why::NestedExistenceOverJoin
            });
        };
        let item = from.items[i].clone();
        if matches!(item.from, ItemFrom::Tree(_)) {
            return full(Why::NestedExistenceOverJoin);
        }
        let alias = item.alias.clone();
        let columns = from.columns[i].clone();
        let block = Block {
            items: vec![item],
            select: columns
                .iter()
                .map(|c| UserExpr::new(column_of(&alias, c)))
                .collect(),
            names: columns.clone(),
            filter: None,
            exists: from.exists,
            guards: from.guards,
        };
        from.items[i] = Item {
            alias,
            from: ItemFrom::Sub(Box::new(Rel::Block(block))),
        };
        from.columns[i] = columns;
        Ok(BlockFrom {
            items: from.items,
            columns: from.columns,
            filter: from.filter,
            exists: Vec::new(),
            guards: Vec::new(),
            visible: from.visible,
        })
    }
}

/// Whether `e` holds an EXISTS or IN (subquery) anywhere.
fn has_existence(e: &Expr) -> bool {
    use sqlparser::ast::Visit;
    let mut found = false;
    let _ = e.visit(&mut super::FnVisitor(|x: &Expr| {
        if matches!(
            x,
            Expr::Exists { .. }
                | Expr::In {
                    target: InTarget::Subquery(_),
                    ..
                }
        ) {
            found = true;
        }
    }));
    found
}

/// Whether the existence test `e` is written as `NOT …` (a NOT around IN).
fn is_negation(e: &Expr) -> bool {
    match e {
        Expr::Nested(inner) => is_negation(inner),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            ..
        } => true,
        _ => false,
    }
}

/// `(subquery, anti, IN's left operand)` when the conjunct is an existence test.
pub(super) fn existence(e: &Expr) -> Option<(&Query, bool, Option<&Expr>)> {
    match e {
        Expr::Exists { subquery, negated } => Some((subquery, *negated, None)),
        Expr::In {
            expr,
            target: InTarget::Subquery(subquery),
            negated,
            global: false,
        } => {
            let SetExpr::Select(_) = subquery.body.as_ref() else {
                return None;
            };
            Some((subquery, *negated, Some(expr)))
        }
        Expr::Nested(inner) => existence(inner),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => match existence(expr) {
            Some((q, anti, None)) => Some((q, !anti, None)),
            Some((q, anti, Some(x))) => Some((q, !anti, Some(x))),
            None => None,
        },
        _ => None,
    }
}

/// Qualifies the bare column names of IN's left operand with the outer alias that has them,
/// so that moving it inside the subquery cannot capture a right-side column of the same name.
/// Also returns the aliases the operand names (lowercase, unquoted): the subquery must not
/// reuse one, or the moved operand would bind to the subquery's row instead.
fn qualify(x: &Expr, outer: &BlockFrom) -> R<(Expr, Vec<String>)> {
    struct Q<'a> {
        outer: &'a BlockFrom,
        unresolved: bool,
        aliases: Vec<String>,
    }
    impl VisitorMut for Q<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(i) => {
                    let owners: Vec<&String> = self
                        .outer
                        .visible
                        .iter()
                        .filter(|(_, cols)| cols.iter().any(|c| c.eq_ignore_ascii_case(&i.value)))
                        .map(|(a, _)| a)
                        .collect();
                    match owners.as_slice() {
                        [a] => {
                            self.aliases.push(a.trim_matches('"').to_lowercase());
                            *e = column_of(a, &i.value);
                        }
                        _ => self.unresolved = true,
                    }
                }
                Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                    self.aliases
                        .push(parts[parts.len() - 2].value.to_lowercase());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut x = x.clone();
    let mut q = Q {
        outer,
        unresolved: false,
        aliases: Vec::new(),
    };
    let _ = VisitMut::visit(&mut x, &mut q);
    if q.unresolved {
        return full(Why::UnresolvedInOperand);
    }
    Ok((x, q.aliases))
}
