//! Match counts per join key. When the predicate linking a row to the other side of an outer or
//! semi join is a conjunction of equalities between the two sides plus conditions on the other
//! side alone, a row's match count depends only on its key. The change of "has a match" is then
//! found by grouping the changed rows of the other side by key (a few rows), counting the other
//! side only for those keys, and joining the result to the preserved side by key: hash joins
//! over small inputs, instead of a correlated count per candidate row that DuckDB decorrelates
//! into a plan over the whole preserved side.

use sqlparser::ast::Expr as Ast;

use crate::ir::{
    self, user, Cte, Expr, From, GroupBy, Item as SelItem, JoinKind, Name, Query, Select,
};
use crate::ops::Term;
use crate::plan::{Item, ItemFrom, Source};
use crate::user_expr::{each_column, equality, ColumnRef};

/// One side of the predicate: its alias (as the plan quotes it) and its columns (for
/// unqualified names); None when they are not known (a join tree), which leaves every
/// unqualified name unplaced.
pub struct Side<'a> {
    pub alias: &'a str,
    pub columns: Option<&'a [String]>,
}

/// The predicate split: `pairs` are (preserved-side expression, other-side expression) whose
/// equality the predicate requires; `filter` holds the conjuncts on the other side alone.
#[derive(Debug, PartialEq)]
pub struct Keys {
    pub pairs: Vec<(Expr, Expr)>,
    pub filter: Vec<Expr>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Owner {
    None,
    P,
    O,
    Mixed,
}

fn join(a: Owner, b: Owner) -> Owner {
    match (a, b) {
        (Owner::None, x) | (x, Owner::None) => x,
        (x, y) if x == y => x,
        _ => Owner::Mixed,
    }
}

fn unquote(alias: &str) -> &str {
    alias.trim_matches('"')
}

/// Which side an expression reads. `inner_first`: an unqualified name found on both sides means
/// the other side (a subquery's own table shadows the outer one); otherwise it is ambiguous.
/// None when a name cannot be placed or the expression holds a subquery.
fn owner(e: &Ast, p: &Side, o: &Side, inner_first: bool) -> Option<Owner> {
    let mut own = Owner::None;
    let placed = each_column(e, |c| {
        let side = match c {
            ColumnRef::Qualified(a) => {
                if a.eq_ignore_ascii_case(unquote(p.alias)) {
                    Some(Owner::P)
                } else if a.eq_ignore_ascii_case(unquote(o.alias)) {
                    Some(Owner::O)
                } else {
                    None
                }
            }
            ColumnRef::Bare(name) => {
                let has = |c: &[String]| c.iter().any(|c| c.eq_ignore_ascii_case(name));
                match (p.columns.map(has), o.columns.map(has)) {
                    (Some(_), Some(true)) if inner_first => Some(Owner::O),
                    (Some(true), Some(false)) => Some(Owner::P),
                    (Some(false), Some(true)) => Some(Owner::O),
                    _ => None,
                }
            }
        };
        side.map(|s| own = join(own, s)).is_some()
    });
    placed.then_some(own)
}

/// Splits `pred` into key pairs and other-side conditions; None when some conjunct reads the
/// preserved side other than through an equality with the other side (or cannot be placed).
pub fn split(pred: &Ast, p: &Side, o: &Side, inner_first: bool) -> Option<Keys> {
    let parts: Vec<Ast> = crate::user_expr::conjuncts(pred)
        .into_iter()
        .cloned()
        .collect();
    let mut keys = Keys {
        pairs: Vec::new(),
        filter: Vec::new(),
    };
    for c in parts {
        match owner(&c, p, o, inner_first)? {
            Owner::O | Owner::None => keys.filter.push(user(&c)),
            Owner::P => return None,
            Owner::Mixed => keys.pairs.push(pair(&c, p, o, inner_first)?),
        }
    }
    (!keys.pairs.is_empty()).then_some(keys)
}

/// The equalities between the two sides among `pred`'s conjuncts, as (preserved-side,
/// other-side) pairs; other conjuncts, and those that cannot be placed, are left out. Every
/// pair holds for any two rows the predicate matches, whatever else it says.
pub fn equalities(pred: &Ast, p: &Side, o: &Side, inner_first: bool) -> Vec<(Expr, Expr)> {
    crate::user_expr::conjuncts(pred)
        .into_iter()
        .filter_map(|c| pair(c, p, o, inner_first))
        .collect()
}

/// Conjunct `c` as an equality between the two sides, (preserved-side, other-side); None for
/// any other conjunct or one that cannot be placed.
fn pair(c: &Ast, p: &Side, o: &Side, inner_first: bool) -> Option<(Expr, Expr)> {
    let (left, right) = equality(c)?;
    match (
        owner(left, p, o, inner_first)?,
        owner(right, p, o, inner_first)?,
    ) {
        (Owner::P, Owner::O) => Some((user(left), user(right))),
        (Owner::O, Owner::P) => Some((user(right), user(left))),
        _ => None,
    }
}

/// The name of key column `i` of a per-key query.
pub fn key(i: usize) -> String {
    format!("_mv_k{i}")
}

/// The key columns `_mv_k0…`, unqualified.
fn key_cols(keys: &Keys) -> Vec<Expr> {
    (0..keys.pairs.len()).map(|i| ir::bare(key(i))).collect()
}

/// `o1 AS _mv_k0, o2 AS _mv_k1, …`: the other side's key expressions as key columns.
fn key_columns(keys: &Keys) -> Vec<SelItem> {
    keys.pairs
        .iter()
        .enumerate()
        .map(|(i, (_, o))| SelItem::named(o.clone(), key(i)))
        .collect()
}

/// The net change of matching rows per key, keys whose net change is zero left out (their count
/// cannot cross zero): columns `_mv_k0…` and `_mv_kd`.
fn delta_by_key(keys: &Keys, dq: &[Term]) -> Query {
    let net = || ir::call("sum", vec![ir::bare("_mv_m")]);
    let mut items: Vec<SelItem> = key_cols(keys)
        .into_iter()
        .map(|k| SelItem::Expr(k, None))
        .collect();
    items.push(SelItem::named(net(), "_mv_kd"));
    let mut s = Select::new(items, vec![From::query(changed_keys(keys, dq), "_mv_u")]);
    s.group_by = GroupBy::Exprs(key_cols(keys));
    s.having = vec![net().bin(ir::Op::NotEq, Expr::Int(0))];
    Query::select(s)
}

/// The key (`_mv_k0…`) and multiplicity (`_mv_m`) of every changed row of the other side that
/// passes its own conditions.
fn changed_keys(keys: &Keys, dq: &[Term]) -> Query {
    Query::union_all(
        dq.iter()
            .map(|t| {
                let mut items = key_columns(keys);
                items.push(SelItem::named(t.mult(), "_mv_m"));
                let s = t.select(items).filtered(keys.filter.iter().cloned());
                Query::select(s)
            })
            .collect(),
    )
}

/// Current match counts (`_mv_kn`) for the keys of the query `wanted` (columns `_mv_k0…`),
/// reading only the rows of the other side (`o_cur`, a FROM item under its alias) with such a
/// key.
fn count_by_key(keys: &Keys, o_cur: From, wanted: Query) -> Query {
    let on = ir::all(
        keys.pairs
            .iter()
            .enumerate()
            .map(|(i, (_, o))| o.clone().eq(ir::col("_mv_w", key(i)))),
    );
    let mut items = key_columns(keys);
    items.push(SelItem::named(Expr::CountStar, "_mv_kn"));
    let from = o_cur.join(JoinKind::Semi, From::query(wanted, "_mv_w"), on);
    let mut s = Select::new(items, vec![from]).filtered(keys.filter.iter().cloned());
    s.group_by = GroupBy::All;
    Query::select(s)
}

/// `p_from` (a FROM item of the preserved side) joined to the per-key change and the current
/// counts for those keys: each row of the preserved side whose key changed gets `now` (its
/// count now) and `delta` (the net change), as expressions over the join.
pub struct Joined {
    pub from: From,
    pub now: Expr,
    pub delta: Expr,
}

/// `o_cur` gives the other side as a FROM item under its alias, given the query of the keys
/// to count (columns `_mv_k0…`), which it may use to read less. The per-key change is computed
/// once (a materialized CTE): the keys to count are its keys, and a change that is itself
/// computed (an aggregate's) is not recomputed for them.
pub fn join_changed(
    keys: &Keys,
    p_from: From,
    o_cur: impl FnOnce(Query) -> From,
    dq: &[Term],
    tag: u64,
) -> Joined {
    let (d, q) = (format!("_mv_dk{tag}"), format!("_mv_dq{tag}"));
    let wanted = Query::select(Select::new(
        key_cols(keys)
            .into_iter()
            .map(|k| SelItem::Expr(k, None))
            .collect(),
        vec![From::table(Name(vec![q.clone()]), q.clone())],
    ));
    let counts = count_by_key(keys, o_cur(wanted.clone()), wanted);
    let on_n = ir::all(
        (0..keys.pairs.len()).map(|i| ir::col("_mv_n", key(i)).eq(ir::col(q.clone(), key(i)))),
    );
    let per_key = Select::new(
        vec![
            SelItem::StarOf(q.clone()),
            SelItem::named(ir::or_zero(ir::col("_mv_n", "_mv_kn")), "_mv_kn"),
        ],
        vec![From::table(Name(vec![q.clone()]), q.clone()).join(
            JoinKind::Left,
            From::query(counts, "_mv_n"),
            on_n,
        )],
    );
    let per_key = Query::With {
        ctes: vec![Cte {
            name: q,
            query: delta_by_key(keys, dq),
            materialized: true,
        }],
        body: Box::new(Query::select(per_key)),
    };
    let on_d = ir::all(
        keys.pairs
            .iter()
            .enumerate()
            .map(|(i, (p, _))| p.clone().eq(ir::col(d.clone(), key(i)))),
    );
    Joined {
        from: p_from.join(JoinKind::Inner, From::query(per_key, d.clone()), on_d),
        now: ir::col(d.clone(), "_mv_kn"),
        delta: ir::col(d, "_mv_kd"),
    }
}

/// A leaf as one side of a join predicate (a table's columns let unqualified names be placed).
pub fn side<'a>(sources: &'a [Source], item: &'a Item) -> Side<'a> {
    Side {
        alias: &item.alias,
        columns: match &item.from {
            ItemFrom::Source(i) => Some(&sources[*i].columns),
            ItemFrom::Sub(rel) => Some(crate::plan::rel_names(rel)),
            ItemFrom::Tree(_) => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_sql(pred: &str, p: &Side, o: &Side, inner_first: bool) -> Option<Keys> {
        split(&crate::user_expr::parse(pred).unwrap(), p, o, inner_first)
    }

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equalities_become_keys_and_other_side_conditions_filters() {
        let (pc, oc) = (cols(&["id", "name"]), cols(&["customer_id", "amount"]));
        let p = Side {
            alias: "\"c\"",
            columns: Some(&pc),
        };
        let o = Side {
            alias: "\"o\"",
            columns: Some(&oc),
        };
        let k = split_sql("(o.customer_id = c.id) AND (o.amount > 50)", &p, &o, true).unwrap();
        let e = |sql: &str| user(&crate::user_expr::parse(sql).unwrap());
        assert_eq!(k.pairs, vec![(e("c.id"), e("o.customer_id"))]);
        assert_eq!(k.filter, vec![e("o.amount > 50")]);
        // Unqualified names resolve by column lists.
        let k = split_sql("(customer_id = id)", &p, &o, false).unwrap();
        assert_eq!(k.pairs, vec![(e("id"), e("customer_id"))]);
    }

    #[test]
    fn other_shapes_are_not_keyed() {
        let (pc, oc) = (cols(&["id"]), cols(&["id", "amount"]));
        let p = Side {
            alias: "c",
            columns: Some(&pc),
        };
        let o = Side {
            alias: "o",
            columns: Some(&oc),
        };
        for pred in [
            "o.id < c.id",
            "o.id = c.id OR o.amount IS NULL",
            "o.id = c.id AND c.id > 3",
            "o.amount > 3",
            "x = c.id",
            "o.id = (SELECT 1)",
        ] {
            assert_eq!(split_sql(pred, &p, &o, true), None, "{pred}");
        }
        // An unqualified name on both sides is ambiguous in a join's ON.
        assert_eq!(split_sql("id = o.amount", &p, &o, false), None);
        // Inside EXISTS it is the subquery's own column: here a condition on o alone.
        assert_eq!(
            split_sql("id = c.id AND id = 3", &p, &o, true)
                .unwrap()
                .filter
                .len(),
            1
        );
    }
}
