//! Aggregate calls kept whole (see `agg::whole`): any deterministic aggregate without an
//! incremental rule of its own, with any arguments, ORDER BY, WITHIN GROUP, FILTER or
//! DISTINCT. Each column the call reads becomes an input column of the aggregate, and the call
//! keeps a hole in its place, so the refresh evaluates the call over the aggregate's input.

use super::reasons::Why;
use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, VisitMut,
    VisitorMut,
};

use super::super::user_expr::{hole, Hole, UserExpr};
use super::support::{aggregate_call, fn_name};

/// The call with every column it reads replaced by the input-column hole `register` gives it.
pub(super) fn kept_whole(
    f: &Function,
    aggregates: &HashSet<String>,
    mut register: impl FnMut(Expr) -> usize,
) -> Result<UserExpr, String> {
    let name = fn_name(&f.name);
    if let FunctionArguments::List(list) = &f.args {
        let star = |a: &FunctionArg| {
            matches!(
                a,
                FunctionArg::Unnamed(
                    FunctionArgExpr::Wildcard | FunctionArgExpr::QualifiedWildcard(_)
                )
            )
        };
        if list.args.iter().any(star) {
            return Err(Why::WholeCallStar.with(&name));
        }
    }
    let mut call = f.clone();
    let mut columns = Columns {
        aggregates,
        register: &mut register,
        reason: None,
    };
    let _ = VisitMut::visit(&mut call.args, &mut columns);
    let _ = VisitMut::visit(&mut call.filter, &mut columns);
    let _ = VisitMut::visit(&mut call.within_group, &mut columns);
    match columns.reason {
        Some(r) => Err(r),
        None => Ok(UserExpr::new(Expr::Function(call))),
    }
}

struct Columns<'x, F> {
    aggregates: &'x HashSet<String>,
    register: &'x mut F,
    reason: Option<String>,
}

impl<F: FnMut(Expr) -> usize> VisitorMut for Columns<'_, F> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let why = match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                *e = hole(Hole::Input, (self.register)(e.clone()));
                return ControlFlow::Continue(());
            }
            // A lambda's parameters are not columns (the generic dialect reads DuckDB's
            // `x -> e` as an arrow operator).
            Expr::Lambda(_)
            | Expr::BinaryOp {
                op: BinaryOperator::Arrow,
                ..
            } => Why::LambdaInAggregate,
            Expr::Function(g) if aggregate_call(self.aggregates, g) => Why::NestedAggregate,
            _ => return ControlFlow::Continue(()),
        };
        self.reason = Some(why.into());
        ControlFlow::Break(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user_expr::parse;

    fn whole(sql: &str) -> Result<(String, Vec<String>), String> {
        let Some(Expr::Function(f)) = parse(sql) else {
            panic!("not a call: {sql}");
        };
        let aggregates: HashSet<String> = ["string_agg", "sum"].map(String::from).into();
        let mut columns: Vec<String> = Vec::new();
        let call = kept_whole(&f, &aggregates, |c| {
            columns.push(c.to_string());
            columns.len() - 1
        })?;
        Ok((call.to_string(), columns))
    }

    #[test]
    fn every_column_of_the_call_becomes_an_input() {
        let (call, columns) = whole("string_agg(upper(t.name), ', ' ORDER BY k DESC)").unwrap();
        assert_eq!(columns, ["t.name", "k"]);
        assert_eq!(
            call,
            "string_agg(upper(__mv_in_0__), ', ' ORDER BY __mv_in_1__ DESC)"
        );
        let (call, columns) = whole("quantile_cont(v, 0.5) FILTER (WHERE g > 1)").unwrap();
        assert_eq!(columns, ["v", "g"]);
        assert!(call.ends_with("FILTER (WHERE __mv_in_1__ > 1)"), "{call}");
    }

    #[test]
    fn lambdas_nested_aggregates_and_stars_are_refused() {
        let lambda = whole("string_agg(list_reduce(l, (a, b) -> a + b), ',')");
        assert_eq!(lambda, Err("a lambda in an aggregate".into()));
        assert_eq!(
            whole("string_agg(sum(v), ',')"),
            Err(Why::NestedAggregate.into())
        );
        assert!(whole("count(DISTINCT *)").is_err());
    }
}
