//! Window functions over a select-project-join block (see `plan::windowed`): the PARTITION BY
//! keys every window shares become the input's `_p` columns, by which a refresh recomputes only
//! the touched partitions; every column the select list and QUALIFY read becomes an input
//! column `_i`, and the expressions keep holes in their place, evaluated over the input.

use super::reasons::Why;
use std::collections::BTreeSet;

use sqlparser::ast::{BinaryOperator, Distinct, Expr, Select, Visit, WindowType};

use super::super::plan::Windowed;
use super::super::user_expr::{hole, rewrite, Hole, UserExpr};
use super::support::fn_name;
use super::{full, Analyzer, FnVisitor, Scope, R};

impl Analyzer<'_> {
    /// Whether the select list or QUALIFY of `s` calls a window function.
    pub(super) fn has_window(&self, s: &Select) -> bool {
        let mut found = false;
        let mut see = FnVisitor(|e: &Expr| {
            found |= matches!(e, Expr::Function(f) if f.over.is_some());
        });
        let _ = s.projection.visit(&mut see);
        let _ = s.qualify.visit(&mut see);
        found
    }

    pub(super) fn windowed(&mut self, s: &Select, scope: &Scope) -> R<Windowed> {
        let distinct = match &s.distinct {
            None => false,
            Some(Distinct::Distinct) => true,
            Some(_) => return full(Why::DistinctOn),
        };
        let s = &super::named_window::inline(s)?;
        let mut plain = s.clone();
        plain.qualify = None;
        self.check_select(&plain)?;
        let from = self.from(s, scope)?;
        let proj = self.projection(s, &from, true)?;
        let mut exprs: Vec<Expr> = proj.iter().map(|(e, _)| e.clone()).collect();
        let mut qualify = s.qualify.clone();
        if let Some(q) = &mut qualify {
            self.check_windowed(q)?;
            let is_column = |name: &str| {
                from.columns
                    .iter()
                    .flatten()
                    .any(|c| c.eq_ignore_ascii_case(name))
            };
            aliases_to_expressions(q, &proj, is_column);
        }
        let (mut keys, functions) = partition_keys(exprs.iter().chain(&qualify))?;
        if distinct && !keys.iter().all(|k| selected(k, &exprs)) {
            return full(Why::DistinctWithWindowFunctions);
        }
        if keys.is_empty() {
            // No PARTITION BY (or none the windows share): the whole input is one partition,
            // under a constant key, and any change to it recomputes every row of the view.
            keys.push(Expr::value(sqlparser::ast::Value::Number(
                "0".into(),
                false,
            )));
            self.features.insert(WHOLE_INPUT);
        }
        let mut inputs: Vec<Expr> = Vec::new();
        let mut register = |e: &Expr| {
            let text = e.to_string();
            let at = inputs.iter().position(|x| x.to_string() == text);
            at.unwrap_or_else(|| {
                inputs.push(e.clone());
                inputs.len() - 1
            })
        };
        for e in exprs.iter_mut().chain(&mut qualify) {
            columns_to_holes(e, &mut register)?;
        }
        let mut names: Vec<String> = (1..=keys.len()).map(|i| format!("_p{i}")).collect();
        names.extend((1..=inputs.len()).map(|i| format!("_i{i}")));
        let nkeys = keys.len();
        let select: Vec<UserExpr> = keys.into_iter().chain(inputs).map(UserExpr::new).collect();
        Ok(Windowed {
            input: from.into_block(select, names),
            keys: nkeys,
            select: exprs.into_iter().map(UserExpr::new).collect(),
            qualify: qualify.map(UserExpr::new),
            functions: functions.into_iter().collect(),
            distinct,
        })
    }
}

impl Analyzer<'_> {
    /// Whether `s` is a `SELECT DISTINCT` over windows whose shared PARTITION BY keys are not
    /// all among its columns: rows of two partitions may then be equal, so duplicates cannot
    /// be removed partition by partition, and the query is kept as a window subquery under the
    /// DISTINCT instead (`top`). A select list with `*` is left to [`Analyzer::windowed`].
    pub(super) fn distinct_over_hidden_keys(&self, s: &Select) -> bool {
        if !matches!(s.distinct, Some(Distinct::Distinct)) {
            return false;
        }
        let Ok(s) = super::named_window::inline(s) else {
            return false;
        };
        let exprs: Option<Vec<Expr>> = s
            .projection
            .iter()
            .map(|p| super::support::item_expr(p).cloned())
            .collect();
        let Some(exprs) = exprs else {
            return false;
        };
        match partition_keys(exprs.iter().chain(&s.qualify)) {
            Ok((keys, _)) => !keys.is_empty() && !keys.iter().all(|k| selected(k, &exprs)),
            Err(_) => false,
        }
    }
}

/// The strategy's word for windows without a PARTITION BY key in common.
const WHOLE_INPUT: &str = "one partition (a change recomputes every row)";

/// The PARTITION BY keys every window function of `exprs` shares (each once, in the order of
/// the first window), none when they share none, and the functions' names.
fn partition_keys<'e>(exprs: impl Iterator<Item = &'e Expr>) -> R<(Vec<Expr>, BTreeSet<String>)> {
    let mut partitions: Vec<Vec<Expr>> = Vec::new();
    let mut functions = BTreeSet::new();
    let mut named = false;
    for e in exprs {
        let _ = e.visit(&mut FnVisitor(|x: &Expr| {
            let Expr::Function(f) = x else { return };
            match &f.over {
                Some(WindowType::WindowSpec(spec)) if spec.window_name.is_none() => {
                    functions.insert(fn_name(&f.name));
                    partitions.push(spec.partition_by.clone());
                }
                Some(_) => named = true,
                None => {}
            }
        }));
    }
    if named {
        return full(Why::NamedWindow);
    }
    let Some((first, rest)) = partitions.split_first() else {
        return full(Why::UnfoundWindowFunction);
    };
    let mut keys: Vec<Expr> = Vec::new();
    for k in first {
        let text = k.to_string();
        let shared = rest.iter().all(|p| p.iter().any(|x| x.to_string() == text));
        if shared && !keys.iter().any(|x| x.to_string() == text) {
            keys.push(k.clone());
        }
    }
    Ok((keys, functions))
}

/// Whether the partition key `k` is one of the view's columns as written. Under DISTINCT, two
/// rows of different partitions then differ in that column, so removing duplicates within each
/// partition removes them all, and a refresh may still recompute partitions alone.
fn selected(k: &Expr, exprs: &[Expr]) -> bool {
    let text = k.to_string().to_lowercase();
    exprs.iter().any(|e| e.to_string().to_lowercase() == text)
}

/// QUALIFY may name a select-list alias that is not a column: the aliased expression, since
/// QUALIFY is evaluated over the input here, not over the select list.
fn aliases_to_expressions(
    q: &mut Expr,
    proj: &[(Expr, Option<String>)],
    is_column: impl Fn(&str) -> bool,
) {
    rewrite(q, |x| {
        let Expr::Identifier(i) = x else { return };
        if is_column(&i.value) {
            return;
        }
        let aliased = proj.iter().find(|(_, a)| {
            a.as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case(&i.value))
        });
        if let Some((e, _)) = aliased {
            *x = e.clone();
        }
    });
}

/// Replaces every column `e` reads by the input hole `register` gives it.
fn columns_to_holes(e: &mut Expr, register: &mut impl FnMut(&Expr) -> usize) -> R<()> {
    let mut lambda = false;
    rewrite(e, |x| match x {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            *x = hole(Hole::Input, register(x));
        }
        // The generic dialect reads DuckDB's `x -> e` as an arrow operator; its parameters
        // are not columns.
        Expr::Lambda(_)
        | Expr::BinaryOp {
            op: BinaryOperator::Arrow,
            ..
        } => lambda = true,
        _ => {}
    });
    if lambda {
        return full(Why::LambdaWithWindows);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::compile::tests::compiled;
    use crate::plan::Body;

    fn windowed(q: &str, ncols: usize) -> crate::plan::Windowed {
        match compiled(q, ncols).plan.body {
            Body::Windowed(w) => w,
            other => panic!("not windowed: {other:?}"),
        }
    }

    #[test]
    fn shared_partition_keys_become_the_input_keys() {
        let w = windowed(
            "SELECT k, rank() OVER (PARTITION BY g, k ORDER BY v), \
             sum(v) OVER (PARTITION BY k, g) FROM t",
            3,
        );
        assert_eq!(w.keys, 2);
        let keys: Vec<String> = w.input.select[..2].iter().map(|e| e.to_string()).collect();
        assert_eq!(keys, ["g", "k"]);
        assert_eq!(w.functions, ["rank", "sum"]);
        // Columns are read through input holes, each once.
        assert_eq!(w.select[0].to_string(), "__mv_in_0__");
        let names: Vec<&str> = w.input.names.iter().map(String::as_str).collect();
        assert_eq!(names, ["_p1", "_p2", "_i1", "_i2", "_i3"]);
    }

    #[test]
    fn qualify_reads_select_aliases_as_their_expressions() {
        let w = windowed(
            "SELECT k, row_number() OVER (PARTITION BY g ORDER BY v, k) AS rn FROM t QUALIFY rn <= 2",
            2,
        );
        let q = w.qualify.expect("a QUALIFY").to_string();
        assert!(
            q.starts_with("row_number() OVER (PARTITION BY __mv_in_"),
            "{q}"
        );
        assert!(q.ends_with("<= 2"), "{q}");
    }
}
