//! Deletes under a recursive query (see `recursive`): delete and rederive for a set, copies taken
//! back for a bag.
//!
//! Over UNION (a set), a row of r may lose every derivation when a table r reads loses rows
//! (a delete, or an update's old row). Rule, three steps:
//!
//! 1. Over-delete: D is every row of r with a one-step derivation that uses a lost table row
//!    or a row of D. Its seed is `base` and `step` over r as stored, each term reading one
//!    table's lost rows ([`Reading::Lost`]); its step is `step` over D. There the tables are
//!    read as their rows now plus their lost rows, a superset of their rows before the change,
//!    so D may hold more than needed, never less; only its rows that r holds are kept, which
//!    also bounds it. A row of r outside D has, by induction on the height of its shortest
//!    derivation, a derivation that uses no lost row and no row of D: it holds after the
//!    change.
//! 2. D leaves r.
//! 3. What r then lacks is found as for inserts ([`super::derive_sql`]) from two more seeds:
//!    the rows of D that `base`, or `step` over r without D, derives from the tables as they
//!    are now ([`rederived`]); and the terms of the inserted rows read only those
//!    ([`Reading::Inserted`]), since a term of a table's whole change would pair an inserted
//!    row with a lost one that the old state of a later table still holds. Every row of the
//!    new r outside `r − D` has a shortest derivation whose first row outside `r − D` comes
//!    from one of these seeds.
//!
//! The change table holds D with −1 and what step 3 finds with +1: the view reads the
//! difference as its source's change.
//!
//! Over UNION ALL (a bag) the lost derivations are negative rows of the same fixpoint as the
//! inserted ones (see `recursive`), and r keeps one copy fewer of a row per derivation lost
//! ([`remove_copies_sql`]).

use super::{positional, Block, Plan, Recursion, Source};
use crate::ir::Stmt;
use crate::ir::{
    self, Cte, Expr, Fixpoint, From, GroupBy, Item, JoinKind, Name, Op, Query, Select,
};
use crate::ops::{block_cur_term, rel_delta};
use crate::plan::Rel;

/// Which rows of a changed table the terms of the change read.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Reading {
    /// Its inserted rows; the table itself as it is now.
    Inserted,
    /// Its lost rows; the table as its rows now plus the lost ones.
    Lost,
}

/// The plan's sources with each table flagged in `changed` read through CTEs (returned
/// beside them): its change as its inserted or its lost rows only, and for `Lost` its rows
/// with the lost ones added.
pub(super) fn narrowed(plan: &Plan, changed: &[bool], reading: Reading) -> (Vec<Source>, Vec<Cte>) {
    let mut sources = plan.sources.clone();
    let mut ctes = Vec::new();
    for (i, src) in sources.iter_mut().enumerate() {
        let (true, Some(delta)) = (changed[i], src.delta.clone()) else {
            continue;
        };
        let cols = |extra: Option<&str>| -> Vec<Item> {
            src.columns
                .iter()
                .map(String::as_str)
                .chain(extra)
                .map(|c| Item::Expr(ir::bare(c), None))
                .collect()
        };
        let sign = match reading {
            Reading::Inserted => Op::Gt,
            Reading::Lost => Op::Lt,
        };
        let kept = ir::bare("_mv_mult").bin(sign, Expr::Int(0));
        let change = |items| {
            Select::new(
                items,
                vec![From::Table {
                    name: Name::of(&delta),
                    alias: None,
                }],
            )
            .filtered([kept.clone()])
        };
        let name = format!(
            "_mv_{}{i}",
            if reading == Reading::Lost {
                "lost"
            } else {
                "ins"
            }
        );
        ctes.push(cte(&name, Query::select(change(cols(Some("_mv_mult"))))));
        if reading == Reading::Lost {
            let now = Select::new(
                cols(None),
                vec![From::Table {
                    name: Name::of(&src.relation),
                    alias: None,
                }],
            );
            let wide = format!("_mv_wide{i}");
            let rows =
                Query::union_all(vec![Query::select(now), Query::select(change(cols(None)))]);
            ctes.push(cte(&wide, rows));
            src.relation = wide;
        }
        src.delta = Some(name);
    }
    (sources, ctes)
}

fn cte(name: &str, query: Query) -> Cte {
    Cte {
        name: name.into(),
        query,
        materialized: false,
    }
}

/// `cols` of r cast to r's types, named as r's columns.
pub(super) fn typed(plan: &Plan, r: &Recursion, values: Vec<Expr>) -> Vec<Item> {
    values
        .into_iter()
        .zip(&r.types)
        .zip(&plan.sources[r.source].columns)
        .map(|((v, t), n)| Item::named(v.cast(t), n.clone()))
        .collect()
}

/// `alias.c` equals `other.c` (NULLs equal) for each of r's columns.
fn same_row(plan: &Plan, r: &Recursion, alias: &str, other: &str) -> Expr {
    ir::same_cols(alias, other, &plan.sources[r.source].columns)
}

/// Step 1: `INSERT INTO rd` the rows of D with −1, or None when r reads no changed table.
pub fn overdelete_sql(plan: &Plan, r: &Recursion, changed: &[bool]) -> Option<Stmt> {
    let names = &plan.sources[r.source].columns;
    let mut before = changed.to_vec();
    before[r.source] = false;
    let (mut sources, prelude) = narrowed(plan, &before, Reading::Lost);
    let parts: Vec<Query> = [&r.base, &r.step]
        .into_iter()
        .filter_map(|b| rel_delta(&sources, &Rel::Block(b.clone()), &before))
        .collect();
    if parts.is_empty() {
        return None;
    }
    let changes = positional(names.len())
        .into_iter()
        .map(|c| ir::col("_mv_s", c))
        .collect();
    let lost = ir::col("_mv_s", "_mv_mult").bin(Op::Lt, Expr::Int(0));
    let mut seed = Select::new(
        typed(plan, r, changes),
        vec![From::query(Query::union_all(parts), "_mv_s")],
    )
    .filtered([lost]);
    seed.distinct = true;
    sources[r.source].relation = "_mv_n".into();
    let derived = r.step.select.iter().map(|e| ir::user(e.ast())).collect();
    let step = block_cur_term(&sources, &r.step).select(typed(plan, r, derived));
    let mut held: Vec<Item> = names
        .iter()
        .map(|c| Item::Expr(ir::col("_mv_n", c.clone()), None))
        .collect();
    held.push(Item::named(Expr::Int(-1).big_int(), "_mv_mult"));
    let rec = From::table(Name::of(&super::rec_table(plan.id)), "_mv_o");
    let n = From::table(Name::of("_mv_n"), "_mv_n");
    let body = Select::new(
        held,
        vec![n.join(JoinKind::Inner, rec, same_row(plan, r, "_mv_o", "_mv_n"))],
    );
    let fixpoint = Fixpoint {
        prelude,
        name: "_mv_n".into(),
        columns: names.clone(),
        seed: Query::select(seed),
        step: Query::select(step),
        body: Query::select(body),
        all: false,
    };
    Some(Stmt::insert(
        Name::of(&super::rec_change(plan.id)),
        Query::Fixpoint(Box::new(fixpoint)),
    ))
}

/// Step 2: `DELETE FROM rec` the rows of D.
pub fn remove_sql(plan: &Plan, r: &Recursion) -> Stmt {
    let lost = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![From::table(Name::of(&super::rec_change(plan.id)), "_mv_d")],
    )
    .filtered([
        ir::col("_mv_d", "_mv_mult").bin(Op::Lt, Expr::Int(0)),
        same_row(plan, r, "_mv_d", "_mv_o"),
    ]);
    Stmt::Delete {
        from: Name::of(&super::rec_table(plan.id)),
        alias: Some("_mv_o".into()),
        filter: vec![ir::exists(Query::select(lost))],
    }
}

/// Step 3's rederived seed: the rows of D (the change table's negative rows) that `base`, or
/// `step` over r as stored, derives from the tables as they are now; columns `c1..cn` and
/// `_mv_mult` (1), as the terms of the change are. D's columns are renamed `_mv_d1..`, so
/// that the user's unqualified column names stay unambiguous.
pub(super) fn rederived(plan: &Plan, r: &Recursion) -> Vec<Query> {
    let names = &plan.sources[r.source].columns;
    let renamed: Vec<String> = (1..=names.len()).map(|i| format!("_mv_d{i}")).collect();
    let items = names
        .iter()
        .zip(&renamed)
        .map(|(c, to)| Item::named(ir::bare(c.clone()), to.clone()))
        .collect();
    let rd = From::Table {
        name: Name::of(&super::rec_change(plan.id)),
        alias: None,
    };
    let lost =
        Select::new(items, vec![rd]).filtered([ir::bare("_mv_mult").bin(Op::Lt, Expr::Int(0))]);
    let d = From::query(Query::select(lost), "_mv_x");
    let of = |b: &Block| {
        let mut term = block_cur_term(&plan.sources, b);
        term.from.push(d.clone());
        for (e, c) in b.select.iter().zip(&renamed) {
            term.conds
                .push(ir::user(e.ast()).bin(Op::Same, ir::col("_mv_x", c.clone())));
        }
        let mut items: Vec<Item> = b
            .select
            .iter()
            .zip(&b.names)
            .map(|(e, n)| Item::named(ir::user(e.ast()), n.clone()))
            .collect();
        items.push(Item::named(Expr::Int(1).big_int(), "_mv_mult"));
        Query::select(term.select(items))
    };
    vec![of(&r.base), of(&r.step)]
}

/// Over UNION ALL: `DELETE FROM rec` one copy of a row per derivation it lost (the change
/// table's negative rows), the copies picked by row id.
pub fn remove_copies_sql(plan: &Plan, r: &Recursion) -> Stmt {
    let names = &plan.sources[r.source].columns;
    let cols = |rel: &'static str| -> Vec<Expr> {
        names.iter().map(|c| ir::col(rel, c.clone())).collect()
    };
    let mut lost_items: Vec<Item> = names
        .iter()
        .map(|c| Item::Expr(ir::bare(c.clone()), None))
        .collect();
    let lost_count = ir::call("sum", vec![ir::bare("_mv_mult")]).neg();
    lost_items.push(Item::named(lost_count, "_mv_k"));
    let mut lost = Select::new(
        lost_items,
        vec![From::table(Name::of(&super::rec_change(plan.id)), "_mv_d")],
    )
    .filtered([ir::bare("_mv_mult").bin(Op::Lt, Expr::Int(0))]);
    lost.group_by = GroupBy::Exprs(names.iter().map(|c| ir::bare(c.clone())).collect());
    let ids = ir::call("list", vec![ir::col("_mv_c", "rowid")]);
    let first_k = ir::call(
        "list_slice",
        vec![ids, Expr::Int(1), ir::col("_mv_l", "_mv_k")],
    );
    let rec = From::table(Name::of(&super::rec_table(plan.id)), "_mv_c");
    let joined = rec.join(
        JoinKind::Inner,
        From::query(Query::select(lost), "_mv_l"),
        same_row(plan, r, "_mv_c", "_mv_l"),
    );
    let mut picked = Select::new(
        vec![Item::named(ir::call("unnest", vec![first_k]), "_mv_id")],
        vec![joined],
    );
    let mut keys = cols("_mv_l");
    keys.push(ir::col("_mv_l", "_mv_k"));
    picked.group_by = GroupBy::Exprs(keys);
    let hit = Select::new(
        vec![Item::Expr(Expr::Int(1), None)],
        vec![From::query(Query::select(picked), "_mv_p")],
    )
    .filtered([ir::col("_mv_p", "_mv_id").eq(ir::col("_mv_o", "rowid"))]);
    Stmt::Delete {
        from: Name::of(&super::rec_table(plan.id)),
        alias: Some("_mv_o".into()),
        filter: vec![ir::exists(Query::select(hit))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::tests::compiled;

    /// Over UNION, the over-delete reads each changed table's lost rows and its rows with the
    /// lost ones added, and keeps only rows r holds; the gain that follows reads the inserted
    /// rows only and the rows taken out. Over UNION ALL nothing is over-deleted: the lost
    /// derivations are negative rows of the gain, and copies are taken out by row id.
    #[test]
    fn deletes_over_delete_then_rederive_or_take_copies_back() {
        let q = "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM t UNION SELECT r.a, t.dst FROM \
                 r, t WHERE r.b = t.src) SELECT a, b FROM r";
        let c = compiled(q, 2);
        let plan = &c.plan;
        let r = plan.recursion.as_ref().unwrap();
        let t = plan.sources.iter().position(|s| s.name == "t").unwrap();
        let mut changed = vec![false; plan.sources.len()];
        changed[t] = true;
        changed[r.source] = true;
        let over = overdelete_sql(plan, r, &changed).unwrap().to_string();
        for part in [
            &format!("\"_mv_lost{t}\" AS (SELECT"),
            &format!("\"_mv_wide{t}\" AS ((SELECT"),
            "JOIN \"_duckmv\".\"rec_9\" AS \"_mv_o\"",
            "CAST(-1 AS BIGINT)",
        ] {
            assert!(over.contains(part), "{part} not in {over}");
        }
        assert!(!over.contains("_mv_ins"), "{over}");
        let gain = super::super::derive_sql(plan, r, &changed, true)
            .unwrap()
            .to_string();
        assert!(
            gain.contains(&format!("\"_mv_ins{t}\" AS (SELECT")),
            "{gain}"
        );
        assert!(!gain.contains("_mv_lost"), "{gain}");
        assert!(gain.contains("AS \"_mv_d1\""), "{gain}");
        let insert_only = super::super::derive_sql(plan, r, &changed, false)
            .unwrap()
            .to_string();
        assert!(!insert_only.contains("_mv_ins"), "{insert_only}");
        let removed = remove_sql(plan, r).to_string();
        assert!(
            removed.starts_with("DELETE FROM \"_duckmv\".\"rec_9\""),
            "{removed}"
        );

        let all = q.replace("UNION SELECT", "UNION ALL SELECT");
        let c = compiled(&all, 2);
        let plan = &c.plan;
        let r = plan.recursion.as_ref().unwrap();
        let gain = super::super::derive_sql(plan, r, &changed, true)
            .unwrap()
            .to_string();
        assert!(
            !gain.contains("_mv_ins") && !gain.contains("_mv_d1"),
            "{gain}"
        );
        assert!(gain.contains("\"r\".\"_mv_mult\""), "{gain}");
        let copies = remove_copies_sql(plan, r).to_string();
        assert!(copies.contains("list_slice"), "{copies}");
    }
}
