//! Every aggregator against its definition, without SQL or DuckDB: a small evaluator runs the
//! aggregator's expressions on random groups and random changes, and the state it combines
//! (or the recompute it asks for) must give the value of the aggregate over the rows after the
//! change. Invertible aggregators must also give back the state before it.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{of, AggFn, AggKind, Aggregator};
use crate::ir::{col, Expr, Op};

#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    Null,
    Int(i64),
    Real(f64),
    Bool(bool),
}

impl V {
    fn num(self) -> Option<f64> {
        match self {
            V::Int(i) => Some(i as f64),
            V::Real(r) => Some(r),
            _ => None,
        }
    }
    /// As a condition: integers read as booleans, non-zero true (the generated arguments are
    /// integers; `count_if` reads them as conditions).
    fn truth(self) -> bool {
        matches!(self, V::Bool(true)) || matches!(self, V::Int(i) if i != 0)
    }
}

/// Column values by (alias, name); one row.
type Row = HashMap<(Option<Cow<'static, str>>, String), V>;

fn scalar(e: &Expr, row: &Row) -> V {
    match e {
        Expr::Col { rel, name } => *row.get(&(rel.clone(), name.clone())).unwrap_or(&V::Null),
        Expr::Int(i) => V::Int(*i),
        Expr::Bool(b) => V::Bool(*b),
        Expr::Null => V::Null,
        Expr::BigInt(e) => scalar(e, row),
        Expr::CastTo(e, ty) if ty == "DOUBLE" => match scalar(e, row) {
            V::Int(i) => V::Real(i as f64),
            other => other,
        },
        Expr::IsNull(e) => V::Bool(scalar(e, row) == V::Null),
        Expr::IsNotNull(e) => V::Bool(scalar(e, row) != V::Null),
        Expr::Case { whens, otherwise } => whens
            .iter()
            .find(|(c, _)| scalar(c, row).truth())
            .map(|(_, r)| scalar(r, row))
            .unwrap_or_else(|| scalar(otherwise, row)),
        Expr::Bin(l, op, r) => binary(scalar(l, row), *op, scalar(r, row)),
        Expr::Call { name, args, .. } => {
            let vals: Vec<V> = args.iter().map(|a| scalar(a, row)).collect();
            let present = vals.iter().copied().filter(|v| *v != V::Null);
            match *name {
                "coalesce" => vals
                    .iter()
                    .copied()
                    .find(|v| *v != V::Null)
                    .unwrap_or(V::Null),
                "least" => present
                    .min_by(|a, b| a.num().partial_cmp(&b.num()).unwrap())
                    .unwrap_or(V::Null),
                "greatest" => present
                    .max_by(|a, b| a.num().partial_cmp(&b.num()).unwrap())
                    .unwrap_or(V::Null),
                other => panic!("{other}() is an aggregate or unknown here"),
            }
        }
        Expr::CountStar => panic!("count(*) outside an aggregate"),
        Expr::User(e) => panic!("{e}: the user's SQL is evaluated by DuckDB"),
        other => panic!("{other}: not an aggregator's expression"),
    }
}

fn binary(l: V, op: Op, r: V) -> V {
    match op {
        Op::And => V::Bool(l.truth() && r.truth()),
        Op::Or => V::Bool(l.truth() || r.truth()),
        Op::Same => V::Bool(l == r),
        _ if l == V::Null || r == V::Null => V::Null,
        Op::Eq => V::Bool(l.num() == r.num()),
        Op::NotEq => V::Bool(l.num() != r.num()),
        Op::Lt => V::Bool(l.num() < r.num()),
        Op::Gt => V::Bool(l.num() > r.num()),
        Op::LtEq => V::Bool(l.num() <= r.num()),
        Op::GtEq => V::Bool(l.num() >= r.num()),
        Op::Div => V::Real(l.num().unwrap() / r.num().unwrap()),
        Op::ShiftLeft | Op::BitOr | Op::Concat => panic!("{op:?}: keys are not an aggregator's"),
        Op::Add | Op::Sub | Op::Mul => {
            let (V::Int(a), V::Int(b)) = (l, r) else {
                panic!("{l:?} {op:?} {r:?}")
            };
            V::Int(match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                _ => a * b,
            })
        }
    }
}

/// An aggregate expression over rows (the GROUP BY of one group).
fn aggregate(e: &Expr, rows: &[Row]) -> V {
    let Expr::Call {
        name,
        args,
        distinct,
        filter,
    } = e
    else {
        return match e {
            Expr::BigInt(inner) => aggregate(inner, rows),
            Expr::CountStar => V::Int(rows.len() as i64),
            Expr::Call { .. } => unreachable!(),
            // coalesce(sum(...), 0) and the like: an aggregate inside a scalar call.
            other => panic!("not an aggregate: {other}"),
        };
    };
    if *name == "coalesce" {
        let inner = aggregate(&args[0], rows);
        return if inner == V::Null {
            scalar(&args[1], &Row::new())
        } else {
            inner
        };
    }
    let mut vals: Vec<V> = rows
        .iter()
        .filter(|r| filter.as_ref().is_none_or(|f| scalar(f, r).truth()))
        .map(|r| scalar(&args[0], r))
        .filter(|v| *v != V::Null)
        .collect();
    if *distinct {
        vals.sort_by(|a, b| a.num().partial_cmp(&b.num()).unwrap());
        vals.dedup();
    }
    let nums = vals.iter().map(|v| v.num().unwrap());
    match *name {
        "count" => V::Int(vals.len() as i64),
        _ if vals.is_empty() => V::Null,
        "count_if" => V::Int(vals.iter().filter(|v| v.truth()).count() as i64),
        "sum" => V::Int(nums.sum::<f64>() as i64),
        "avg" => V::Real(nums.sum::<f64>() / vals.len() as f64),
        "min" => vals
            .iter()
            .copied()
            .min_by(|a, b| a.num().partial_cmp(&b.num()).unwrap())
            .unwrap(),
        "max" => vals
            .iter()
            .copied()
            .max_by(|a, b| a.num().partial_cmp(&b.num()).unwrap())
            .unwrap(),
        other => panic!("unknown aggregate {other}"),
    }
}

/// A row of the input: the argument `_a1` (with a sign for change rows).
fn input(rel: &'static str, arg: Option<i64>, mult: i64) -> Row {
    let mut r = Row::new();
    r.insert(
        (Some(rel.into()), "_a1".into()),
        arg.map_or(V::Null, V::Int),
    );
    r.insert((Some(rel.into()), "_mv_mult".into()), V::Int(mult));
    r
}

/// The storage row of a group: `_mv_count` and the state columns, under alias `rel` (and
/// unqualified, for `value`).
fn stored(a: &dyn Aggregator, slot: usize, values: &[Option<i64>], rel: &'static str) -> Row {
    let rows: Vec<Row> = values.iter().map(|v| input("i", *v, 1)).collect();
    let arg = Some(col("i", "_a1"));
    let mut out = Row::new();
    let count = V::Int(values.len() as i64);
    out.insert((Some(rel.into()), "_mv_count".into()), count);
    out.insert((None, "_mv_count".into()), count);
    for (c, e) in a.state(slot).iter().zip(a.rows_state(arg)) {
        let v = aggregate(&e, &rows);
        out.insert((Some(rel.into()), c.name.clone()), v);
        out.insert((None, c.name.clone()), v);
    }
    out
}

/// A tiny deterministic generator (xorshift), so a failure replays.
struct Gen(u64);
impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn values(&mut self, max_len: u64) -> Vec<Option<i64>> {
        let len = self.next(max_len + 1);
        (0..len)
            .map(|_| (self.next(5) > 0).then(|| self.next(7) as i64 - 3))
            .collect()
    }
}

/// Checks one aggregator over `trials` random (group, change) pairs; returns how many were
/// decided by combining (not by a recompute).
fn check(f: AggFn, trials: usize) -> usize {
    let a = of(&f);
    let slot = f.slot;
    let mut g = Gen(0x9e3779b97f4a7c15 ^ slot as u64);
    let mut combined = 0;
    for trial in 0..trials {
        let old = g.values(4);
        let inserted = g.values(3);
        // Deleted rows are rows of the group: some of the old ones or of the inserted ones.
        let mut pool: Vec<Option<i64>> = old.iter().chain(&inserted).copied().collect();
        let mut deleted = Vec::new();
        for _ in 0..g.next(3) {
            if !pool.is_empty() {
                deleted.push(pool.remove(g.next(pool.len() as u64) as usize));
            }
        }
        let mut new = old.clone();
        new.extend(&inserted);
        for d in &deleted {
            let i = new.iter().position(|v| v == d).unwrap();
            new.remove(i);
        }
        let change: Vec<Row> = inserted
            .iter()
            .map(|v| input("d", *v, 1))
            .chain(deleted.iter().map(|v| input("d", *v, -1)))
            .collect();
        let mut env = stored(a, slot, &old, "s");
        for (name, e) in a.change_state(slot, Some(col("d", "_a1")), col("d", "_mv_mult")) {
            env.insert((Some("d".into()), name), aggregate(&e, &change));
        }
        let want = a.value(slot);
        let truth = scalar(&want, &stored(a, slot, &new, "n"));
        let recompute = a.recompute_when(slot, "s", "d").is_some_and(|c| {
            let mut env = env.clone();
            if old.is_empty() {
                // A new group: the LEFT JOIN to the storage finds nothing.
                env.retain(|(rel, _), _| rel.as_deref() != Some("s"));
            }
            scalar(&c, &env).truth()
        });
        if recompute || new.is_empty() {
            continue;
        }
        combined += 1;
        let state = if old.is_empty() {
            a.insert(slot, "d")
        } else {
            a.combine(slot, "s", "d")
        };
        let mut after = Row::new();
        for (c, e) in a.state(slot).iter().zip(&state) {
            after.insert((None, c.name.clone()), scalar(e, &env));
        }
        after.insert((None, "_mv_count".into()), V::Int(new.len() as i64));
        let got = scalar(&want, &after);
        assert_eq!(
            got, truth,
            "{f:?} trial {trial}: {old:?} +{inserted:?} -{deleted:?}"
        );
        if a.invertible() && !old.is_empty() {
            check_before(a, slot, &old, &new, &env);
        }
    }
    combined
}

/// The state before, taken back from the state after and the change.
fn check_before(
    a: &dyn Aggregator,
    slot: usize,
    old: &[Option<i64>],
    new: &[Option<i64>],
    env: &Row,
) {
    let now = stored(a, slot, new, "n");
    let mut before = Row::new();
    before.insert((None, "_mv_count".into()), V::Int(old.len() as i64));
    for c in a.state(slot) {
        let key = |rel: &'static str| (Some(Cow::Borrowed(rel)), c.name.clone());
        let take = |rel: &'static str, r: &Row| r.get(&key(rel)).copied().unwrap_or(V::Null);
        let n = take("n", &now);
        let d = take("d", env);
        let zero = |v: V| if v == V::Null { V::Int(0) } else { v };
        before.insert((None, c.name.clone()), binary(zero(n), Op::Sub, zero(d)));
    }
    let want = scalar(&a.value(slot), &stored(a, slot, old, "o"));
    assert_eq!(
        scalar(&a.value(slot), &before),
        want,
        "taking back {old:?} from {new:?}"
    );
}

fn agg(kind: AggKind) -> AggFn {
    AggFn {
        kind,
        arg: (kind != AggKind::CountStar).then(|| "_a1".into()),
        slot: 1,
        distinct: false,
        call: None,
        kept: false,
        by_value: false,
    }
}

#[test]
fn counts_sums_and_averages_combine_without_recompute() {
    for kind in [
        AggKind::CountStar,
        AggKind::Count,
        AggKind::Sum,
        AggKind::Avg,
        AggKind::CountIf,
    ] {
        let f = agg(kind);
        assert!(of(&f).recompute_when(1, "s", "d").is_none(), "{kind:?}");
        assert!(check(f, 400) > 300, "{kind:?}: too few trials combined");
    }
}

#[test]
fn extremes_combine_or_ask_for_a_recompute() {
    for kind in [AggKind::Min, AggKind::Max] {
        let combined = check(agg(kind), 400);
        // Most changes do not delete the extreme; a test that always recomputes proves nothing.
        assert!(combined > 100, "{kind:?}: only {combined} combined");
    }
}

#[test]
fn state_columns_of_stored_kinds_keep_their_names() {
    // The storage and work tables of existing views have these columns.
    let names = |k| {
        let f = agg(k);
        of(&f)
            .state(f.slot)
            .into_iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
    };
    assert!(names(AggKind::CountStar).is_empty());
    assert_eq!(names(AggKind::Count), ["n_1"]);
    assert_eq!(names(AggKind::Sum), ["s_1", "n_1"]);
    assert_eq!(names(AggKind::Avg), ["s_1", "n_1"]);
    assert_eq!(names(AggKind::CountIf), ["t_1", "n_1"]);
    assert_eq!(names(AggKind::Min), ["m_1"]);
    let f = agg(AggKind::Max);
    let change: Vec<String> = of(&f)
        .change_state(1, Some(col("d", "_a1")), col("d", "_mv_mult"))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(change, ["m_1", "x_1"]);
}

/// A group's rows whose arguments are 1, 1, 2 and NULL.
fn one_one_two_null() -> Vec<Row> {
    [Some(1), Some(1), Some(2), None]
        .iter()
        .map(|v| input("i", *v, 1))
        .collect()
}

#[test]
fn distinct_aggregates_count_each_value_once_and_recompute_touched_groups() {
    let rows = one_one_two_null();
    for (kind, want) in [
        (AggKind::Count, V::Int(2)),
        (AggKind::Sum, V::Int(3)),
        (AggKind::Avg, V::Real(1.5)),
        (AggKind::Min, V::Int(1)),
    ] {
        let f = AggFn {
            distinct: true,
            ..agg(kind)
        };
        let state = of(&f).rows_state(Some(col("i", "_a1")));
        assert_eq!(aggregate(&state[0], &rows), want, "{kind:?}(DISTINCT)");
        if kind != AggKind::Min {
            // Whether a changed row adds or removes a distinct value only the group knows.
            assert_eq!(
                check(f, 200),
                0,
                "{kind:?}(DISTINCT) combined a touched group"
            );
        }
    }
}

#[test]
fn distinct_aggregates_kept_by_value_keep_count_and_sum_state() {
    let rows = one_one_two_null();
    for (kind, names, want) in [
        (AggKind::Count, vec!["n_1"], vec![V::Int(2)]),
        (AggKind::Sum, vec!["s_1", "n_1"], vec![V::Int(3), V::Int(2)]),
        (AggKind::Avg, vec!["s_1", "n_1"], vec![V::Int(3), V::Int(2)]),
    ] {
        let f = AggFn {
            distinct: true,
            by_value: true,
            ..agg(kind)
        };
        let a = of(&f);
        assert!(a.by_value().is_some() && a.invertible(), "{kind:?}");
        let state: Vec<String> = a.state(1).into_iter().map(|c| c.name).collect();
        assert_eq!(state, names, "{kind:?}(DISTINCT)");
        let got: Vec<V> = a
            .rows_state(Some(col("i", "_a1")))
            .iter()
            .map(|e| aggregate(e, &rows))
            .collect();
        assert_eq!(got, want, "{kind:?}(DISTINCT) state of rows");
        assert!(a.recompute_when(1, "s", "d").is_none(), "{kind:?}");
    }
}
