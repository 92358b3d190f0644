//! GROUP BY and ungrouped aggregates: the input block (group keys `_g<i>`, then aggregate
//! arguments `_a<j>`), each aggregate call classified by `agg`, and the select list and
//! HAVING rewritten over the storage's state columns.

use super::reasons::Why;
use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    InTarget, Select, SelectItem, Value, Visit, VisitMut, VisitorMut,
};

use super::super::agg;
use super::super::ir;
use super::super::plan::{AggFn, AggKind, Aggregate};
use super::super::user_expr::{fill_holes, hole, hole_index, Hole, UserExpr};
use super::support::{aggregate_call, fn_name};
use super::{filter, full, select_tests, whole_call, Analyzer, BlockFrom, FnVisitor, Scope, R};

/// Aggregates a block refers to, with their state slots and argument columns.
#[derive(Default)]
struct AggCollector {
    aggs: Vec<(String, AggFn)>,
    args: Vec<Expr>,
    /// Whether MIN/MAX keep candidates (`agg::kept`).
    keep: bool,
    /// The DuckDB types of SUM/AVG and variance arguments (by their text), once asked; None
    /// on the first pass. SUM and AVG of floating-point values are kept whole, since a sum of
    /// doubles taken back by subtraction need not equal the sum of the rows left (0.1 + 0.7 -
    /// 0.7 is not 0.1) and the view must hold what its query computes; a variance keeps exact
    /// sums of squares, so its argument must be an integer (widened) or a decimal.
    types: Option<HashMap<String, String>>,
}

impl AggCollector {
    /// The position of input column `e` (`_a<position+1>`), added if it is new.
    fn input(&mut self, e: Expr) -> usize {
        let text = e.to_string();
        self.args
            .iter()
            .position(|x| x.to_string() == text)
            .unwrap_or_else(|| {
                self.args.push(e);
                self.args.len() - 1
            })
    }
}

impl Analyzer<'_> {
    /// GROUP BY / ungrouped aggregation over a select-project-join input; existence tests in
    /// the select list (`count(*) FILTER (WHERE EXISTS …)`, `sum(CASE WHEN x IN … THEN …)`)
    /// make the input a union of copies (see `select_tests`), aggregated as one.
    ///
    /// `keep`: whether MIN/MAX keep candidates (`agg::kept`). The view's own aggregate does;
    /// one read as a relation recomputes its touched groups anyway (`plan::rescan`).
    pub(super) fn aggregate(&mut self, s: &Select, scope: &Scope, keep: bool) -> R<Aggregate> {
        if let Some(s) = self.scalar_subqueries(s, scope)? {
            return self.aggregate(&s, scope, keep);
        }
        self.check_select(s)?;
        if s.distinct.is_some() {
            return full(Why::DistinctWithAggregates);
        }
        let Some(copies) = select_tests::copies(s)? else {
            return self.aggregate_block(s, scope, keep);
        };
        let mut first: Option<Aggregate> = None;
        let mut inputs = Vec::new();
        for (copy, values) in copies {
            let a = self.aggregate_block(&copy, scope, keep)?;
            let mut input = a.input.clone();
            select_tests::fill(&mut input, &values);
            inputs.push(input);
            match &first {
                None => first = Some(a),
                // Copies differ only in their filters (the tests are placeholders until
                // `fill`), so they compile alike; this only guards that.
                Some(f)
                    if format!("{:?}", (f.groups, &f.aggs, &f.output, &f.having))
                        == format!("{:?}", (a.groups, &a.aggs, &a.output, &a.having))
                        && f.input.names == a.input.names => {}
                Some(_) => return full(Why::ExistenceInDifferingAggregates),
            }
        }
        let mut a = first.expect("at least two copies");
        a.input = inputs.remove(0);
        a.copies = inputs;
        self.features.insert("EXISTS/IN in the select list");
        Ok(a)
    }

    fn aggregate_block(&mut self, s: &Select, scope: &Scope, keep: bool) -> R<Aggregate> {
        let from = self.from(s, scope)?;
        let groups = self.group_keys(s, &from.columns)?;
        let keys: Vec<String> = groups.iter().map(Expr::to_string).collect();
        let mut state = self.aggregate_state(s, &keys, keep, None)?;
        // Classified again knowing the types of the arguments that depend on them.
        let moments = state.0.aggs.iter().any(|(_, f)| agg::is_moment(f.kind));
        let types = self.arg_types(&from, &state.0)?;
        if moments || types.values().any(|t| floating(t)) {
            state = self.aggregate_state(s, &keys, keep, Some(types))?;
        }
        let (col, outputs, having) = state;
        let ngroups = groups.len();
        let mut select: Vec<UserExpr> = groups.into_iter().map(UserExpr::new).collect();
        select.extend(col.args.iter().cloned().map(UserExpr::new));
        let mut names: Vec<String> = (1..=ngroups).map(|i| format!("_g{i}")).collect();
        names.extend((1..=col.args.len()).map(|i| format!("_a{i}")));
        let input = from.into_block(select, names);
        Ok(Aggregate {
            input,
            groups: ngroups,
            aggs: col.aggs.into_iter().map(|(_, f)| f).collect(),
            output: outputs,
            having,
            copies: Vec::new(),
        })
    }

    /// The aggregates of the select list and HAVING, and both rewritten over their state.
    fn aggregate_state(
        &self,
        s: &Select,
        keys: &[String],
        keep: bool,
        types: Option<HashMap<String, String>>,
    ) -> R<(AggCollector, Vec<UserExpr>, Option<UserExpr>)> {
        let mut col = AggCollector {
            keep,
            types,
            ..AggCollector::default()
        };
        let mut outputs = Vec::new();
        for item in &s.projection {
            let e = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => return full(Why::StarInAnAggregateQuery),
            };
            outputs.push(UserExpr::new(self.rewrite_over_state(e, keys, &mut col)?));
        }
        let having = match &s.having {
            Some(h) => Some(UserExpr::new(self.rewrite_over_state(h, keys, &mut col)?)),
            None => None,
        };
        Ok((col, outputs, having))
    }

    /// The types of the arguments (by their text) of the SUM/AVG and variance states of
    /// `col`, asked of DuckDB over the block's FROM (its filters may be placeholders of copies).
    fn arg_types(&mut self, from: &BlockFrom, col: &AggCollector) -> R<HashMap<String, String>> {
        let typed =
            |f: &AggFn| matches!(f.kind, AggKind::Sum | AggKind::Avg) || agg::is_moment(f.kind);
        let asked: Vec<&Expr> = col
            .args
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let name = format!("_a{}", i + 1);
                col.aggs
                    .iter()
                    .any(|(_, f)| typed(f) && f.arg.as_deref() == Some(&name))
            })
            .map(|(_, e)| e)
            .filter(|e| resolves(e, &from.visible))
            .collect();
        if asked.is_empty() {
            return Ok(HashMap::new());
        }
        let t = |sources: &[crate::plan::Source]| {
            super::super::ops::Term::cur(super::super::ops::items_cur(sources, &from.items))
        };
        let items = asked.iter().enumerate().map(|(i, e)| {
            // A select-list test is a placeholder until its copy is filled; NULL types alike.
            let mut e = UserExpr::new((*e).clone());
            e.fill(Hole::SelectTest, |_| Expr::value(Value::Null));
            ir::Item::Expr(ir::user(e.ast()), Some(format!("_sum{}", i + 1)))
        });
        let rows = self.describe_term(t, items.collect())?;
        Ok(asked
            .iter()
            .zip(&rows)
            .map(|(e, r)| {
                let t = r.get(1).cloned().flatten().unwrap_or_default();
                (e.to_string(), t.to_uppercase())
            })
            .collect())
    }

    /// The GROUP BY keys, each once: positional and alias keys refer to the select list,
    /// GROUP BY ALL to the select items [`Analyzer::group_by_all`] names.
    fn group_keys(&self, s: &Select, columns: &[Vec<String>]) -> R<Vec<Expr>> {
        let group_exprs: Vec<Expr> = match &s.group_by {
            GroupByExpr::Expressions(e, mods) if mods.is_empty() => e.clone(),
            GroupByExpr::All(mods) if mods.is_empty() => self.group_by_all(s)?,
            _ => return full(Why::GroupByModifiers),
        };
        let mut groups: Vec<Expr> = Vec::new();
        for g in &group_exprs {
            if matches!(g, Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_)) {
                return full(Why::GroupingSetsCubeRollup);
            }
            self.check_expr(g, false)?;
            let resolved = match g {
                Expr::Value(v) => Self::position_key(s, &v.value)?,
                Expr::Identifier(i)
                    if !columns
                        .iter()
                        .flatten()
                        .any(|c| c.eq_ignore_ascii_case(&i.value)) =>
                {
                    super::support::aliased(s, &i.value).unwrap_or(g).clone()
                }
                _ => g.clone(),
            };
            if !groups.iter().any(|k| k.to_string() == resolved.to_string()) {
                groups.push(resolved);
            }
        }
        Ok(groups)
    }

    /// Rewrites a select-list or HAVING expression of an aggregate query over the storage
    /// columns: aggregate calls become their state expression, group keys become `_g<i>`.
    fn rewrite_over_state(&self, e: &Expr, groups: &[String], col: &mut AggCollector) -> R<Expr> {
        self.check_expr(e, true)?;
        let mut e = e.clone();
        let mut rw = StateRewriter {
            an: self,
            groups,
            col,
            reason: None,
        };
        let _ = VisitMut::visit(&mut e, &mut rw);
        if let Some(r) = rw.reason {
            return full(r);
        }
        // Every column reference left must be a storage column; anything else is an
        // expression over the grouped rows we cannot map onto the state.
        let mut stray = false;
        let _ = e.visit(&mut FnVisitor(|x: &Expr| match x {
            Expr::Identifier(i)
                if !(i.value.starts_with("_g") || hole_index(Hole::Aggregate, x).is_some()) =>
            {
                stray = true
            }
            Expr::CompoundIdentifier(_) => stray = true,
            _ => {}
        }));
        if stray {
            return full(Why::NonKeyOverGroups);
        }
        // The placeholders become each aggregate's value over its state columns.
        let values: Vec<Expr> = col
            .aggs
            .iter()
            .map(|(_, f)| match agg::of(f).value(f.slot) {
                v @ ir::Expr::Col { .. } => v.to_ast(),
                v => Expr::Nested(Box::new(v.to_ast())),
            })
            .collect();
        fill_holes(&mut e, Hole::Aggregate, |i| values[i].clone());
        Ok(e)
    }
}

/// Whether a GROUP BY key and an expression name the same column, one of them qualified
/// (`g` and `t.g`): DuckDB accepted the query, so the unqualified name is unambiguous.
fn same_column(group: &str, e: &Expr) -> bool {
    let last = |s: &str| {
        s.rsplit('.')
            .next()
            .unwrap_or("")
            .trim_matches('"')
            .to_lowercase()
    };
    let simple = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '"')
    };
    if !simple(group) {
        return false;
    }
    match e {
        Expr::Identifier(i) => group.contains('.') && last(group) == i.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => {
            !group.contains('.')
                && parts
                    .last()
                    .is_some_and(|p| last(group) == p.value.to_lowercase())
        }
        _ => false,
    }
}

/// Whether a DuckDB type name is a floating-point type.
fn floating(ty: &str) -> bool {
    ty.starts_with("FLOAT") || ty.starts_with("DOUBLE") || ty.starts_with("REAL")
}

/// Whether every column `e` reads is one of the block's `visible` (quoted alias, columns) and
/// it holds no subquery (select-list tests are placeholders): only then can DuckDB type it
/// over the block's FROM alone (a failed statement would end the writer's transaction).
fn resolves(e: &Expr, visible: &[(String, Vec<String>)]) -> bool {
    let has = |cols: &Vec<String>, c: &Ident| cols.iter().any(|x| x.eq_ignore_ascii_case(&c.value));
    let mut ok = true;
    let _ = e.visit(&mut FnVisitor(|x: &Expr| match x {
        Expr::Identifier(c) => {
            ok &= hole_index(Hole::SelectTest, x).is_some()
                || visible.iter().any(|(_, cols)| has(cols, c))
        }
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let (c, a) = (&parts[parts.len() - 1], &parts[parts.len() - 2]);
            ok &= visible.iter().any(|(alias, cols)| {
                alias.trim_matches('"').eq_ignore_ascii_case(&a.value) && has(cols, c)
            })
        }
        Expr::CompoundIdentifier(_) | Expr::Subquery(_) | Expr::Exists { .. } => ok = false,
        Expr::In { target, .. } if !matches!(target, InTarget::List(_)) => ok = false,
        _ => {}
    }));
    ok
}

struct StateRewriter<'x, 'a> {
    an: &'x Analyzer<'a>,
    groups: &'x [String],
    col: &'x mut AggCollector,
    reason: Option<String>,
}

impl StateRewriter<'_, '_> {
    /// Classifies an aggregate call; returns its index (its hole) or a reason it is not
    /// maintainable.
    fn aggregate(&mut self, f: &sqlparser::ast::Function) -> Result<usize, String> {
        let name = fn_name(&f.name);
        let simple = f.within_group.is_empty() && f.null_treatment.is_none();
        let (Some((kind, distinct_ok)), FunctionArguments::List(list), true) =
            (agg::kind_of(&name), &f.args, simple)
        else {
            return self.whole(f);
        };
        let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
        // `arg_min(a, b)` has two arguments, kept as one struct (`agg::arg`).
        let arity = if agg::is_arg(kind) { 2 } else { 1 };
        if (distinct && !distinct_ok) || !list.clauses.is_empty() || list.args.len() != arity {
            return self.whole(f);
        }
        let mut args = Vec::new();
        for a in &list.args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    if self.nests_an_aggregate(e) {
                        return Err(Why::NestedAggregate.into());
                    }
                    args.push(e.clone());
                }
                FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if kind == AggKind::Count => {}
                _ => return self.whole(f),
            }
        }
        let (kind, arg) = match <[Expr; 2]>::try_from(args) {
            Ok([arg, by]) => (kind, Some(agg::arg::keyed(arg, by))),
            Err(mut one) => match one.pop() {
                Some(e) => (kind, Some(e)),
                None => (AggKind::CountStar, None),
            },
        };
        let (kind, arg) = match &f.filter {
            None => (kind, arg),
            Some(cond) => filter::filtered(kind, arg, cond)
                .ok_or_else(|| Why::FilterTestsSubquery.with(&name))?,
        };
        let Some(arg) = self.typed_arg(kind, distinct, arg) else {
            return self.whole(f);
        };
        let text = arg.as_ref().map(Expr::to_string).unwrap_or_default();
        let key = format!("{kind:?}:{distinct}:{text}");
        if let Some(pos) = self.col.aggs.iter().position(|(k, _)| *k == key) {
            return Ok(pos);
        }
        let by_value = self.col.keep && distinct && self.by_value(kind, arg.as_ref());
        let arg_col = arg.map(|a| format!("_a{}", self.col.input(a) + 1));
        // SUM and AVG of one argument keep the same state (the sum and the non-null count).
        let sum_like = |k: AggKind, d: bool| !d && matches!(k, AggKind::Sum | AggKind::Avg);
        let shared = self
            .col
            .aggs
            .iter()
            .find(|(_, f)| {
                sum_like(kind, distinct) && sum_like(f.kind, f.distinct) && f.arg == arg_col
            })
            .map(|(_, f)| f.slot);
        let slot = shared
            .unwrap_or_else(|| self.col.aggs.iter().map(|(_, f)| f.slot).max().unwrap_or(0) + 1);
        self.col.aggs.push((
            key,
            AggFn {
                kind,
                arg: arg_col,
                slot,
                distinct,
                call: None,
                kept: self.col.keep
                    && (matches!(kind, AggKind::Min | AggKind::Max) || agg::is_arg(kind)),
                by_value,
            },
        ));
        Ok(self.col.aggs.len() - 1)
    }

    /// Whether `e` calls an aggregate (an aggregate's argument may not).
    fn nests_an_aggregate(&self, e: &Expr) -> bool {
        let mut nested = false;
        let _ = e.visit(&mut FnVisitor(|x: &Expr| {
            if let Expr::Function(g) = x {
                nested |= aggregate_call(&self.an.aggregates, g);
            }
        }));
        nested
    }

    /// The argument of a SUM/AVG or variance as its state needs it, by its type; None when
    /// the call must be kept whole instead (floating-point, or a type a variance cannot keep
    /// exact sums of squares of). On the first pass, types are unknown and arguments as they
    /// are.
    fn typed_arg(&self, kind: AggKind, distinct: bool, arg: Option<Expr>) -> Option<Option<Expr>> {
        let Some(types) = &self.col.types else {
            return Some(arg);
        };
        let ty = arg.as_ref().and_then(|a| types.get(&a.to_string()));
        // A distinct sum is recomputed per touched group in a view's own storage, but an
        // aggregate read as a relation takes its old row back (`ops::rescan`), and two sums
        // of the same doubles in different orders need not be equal: kept whole there too.
        let sum = (!distinct || !self.col.keep) && matches!(kind, AggKind::Sum | AggKind::Avg);
        if sum && ty.is_some_and(|t| floating(t)) {
            return None;
        }
        if !agg::is_moment(kind) {
            return Some(arg);
        }
        match ty.map(String::as_str) {
            // Integers up to 64 bits: their values and squares fit HUGEINT.
            Some(t) if crate::plan::INTEGERS.contains(&t) => {
                Some(arg.map(|a| ir::user(&a).cast("HUGEINT").to_ast()))
            }
            Some(t) if t.starts_with("DECIMAL") => Some(arg),
            _ => None,
        }
    }

    /// Whether a distinct `kind(DISTINCT arg)` is kept by value (`agg::by_value`): COUNT, SUM
    /// and AVG, but not sums of floating-point values, whose sums taken back drift.
    fn by_value(&self, kind: AggKind, arg: Option<&Expr>) -> bool {
        let ty = |a: &Expr| self.col.types.as_ref()?.get(&a.to_string());
        match kind {
            AggKind::Count => true,
            AggKind::Sum | AggKind::Avg => !arg.and_then(ty).is_some_and(|t| floating(t)),
            _ => false,
        }
    }

    /// A call without a rule of its own, kept whole: its groups are recomputed when touched.
    fn whole(&mut self, f: &sqlparser::ast::Function) -> Result<usize, String> {
        let col = &mut *self.col;
        let call = whole_call::kept_whole(f, &self.an.aggregates, |c| col.input(c))?;
        let key = format!("Whole:{call}");
        if let Some(pos) = self.col.aggs.iter().position(|(k, _)| *k == key) {
            return Ok(pos);
        }
        let slot = self.col.aggs.iter().map(|(_, f)| f.slot).max().unwrap_or(0) + 1;
        let whole = AggFn {
            kind: AggKind::Whole,
            arg: None,
            slot,
            distinct: false,
            call: Some(call),
            kept: false,
            by_value: false,
        };
        self.col.aggs.push((key, whole));
        Ok(self.col.aggs.len() - 1)
    }
}

impl VisitorMut for StateRewriter<'_, '_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            if aggregate_call(&self.an.aggregates, f) {
                match self.aggregate(f) {
                    Ok(i) => *e = hole(Hole::Aggregate, i),
                    Err(r) => {
                        self.reason = Some(r);
                        return ControlFlow::Break(());
                    }
                }
                return ControlFlow::Continue(());
            }
        }
        let text = e.to_string();
        if let Some(i) = self
            .groups
            .iter()
            .position(|g| *g == text || same_column(g, e))
        {
            *e = Expr::Identifier(Ident::new(format!("_g{}", i + 1)));
        }
        ControlFlow::Continue(())
    }
}
