//! The compiled form of a materialized view, stored as JSON in the catalog, and the pure
//! functions that turn it into the SQL a refresh runs. Compilation happens once, at CREATE;
//! a refresh only assembles these strings for the sources that actually have pending rows.
//!
//! Here: the plan's types and the relations (a block's rows now and its change). The storage of
//! each kind of view is rendered by its own file: `bag` (bag and DISTINCT views), `aggregate`
//! (grouped state, and aggregates read as relations), `output` (what users read).

use serde::{Deserialize, Serialize};

mod aggregate;
mod bag;
mod kept;
mod output;
mod rescan;
mod windowed;

pub use aggregate::{
    agg_affected_rel, agg_apply_sql, agg_delta_sql, agg_fill_work_sql, agg_may_recompute,
    agg_recompute_sql, agg_rescans, agg_state_sql, agg_work_shape_sql,
};
pub use bag::{bag_delta_sql, bag_merge_sql, bag_state_sql, distinct_transitions_sql};
pub use output::{output_sql, output_view_sql, unpopulated_sql, user_view_sql};
pub use windowed::{
    windowed_clear_sql, windowed_fill_sql, windowed_state_sql, windowed_touched_rel,
    windowed_touched_sql, windowed_work_shape_sql,
};

pub use super::agg::{AggFn, AggKind};
use super::outer::Tree;
use super::semi::{self, Exists, Guard};
use super::set_ops::SetOp;
use super::term::{self, Term};
use super::text::ident;
use super::user_expr::UserExpr;

/// Everything a refresh needs, decided at CREATE.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Plan {
    pub id: i64,
    /// User-visible output column names and their DuckDB types.
    pub columns: Vec<String>,
    pub types: Vec<String>,
    pub sources: Vec<Source>,
    pub body: Body,
    /// Human-readable maintenance strategy shown in `duckmv.views`.
    pub strategy: String,
    /// The definition's final ORDER BY over output positions, applied by the user-facing view
    /// (see `order`); the storage is maintained without it.
    #[serde(default)]
    pub order_by: Option<String>,
    /// The definition's final LIMIT/OFFSET, applied with `order_by` by the output view over the
    /// whole result the storage keeps (see `order`).
    #[serde(default)]
    pub limit: Option<String>,
    /// For EXCEPT/INTERSECT maintained as a count of each side (see `set_ops`): `columns` and
    /// `types` end with the two counts, which the output turns into rows and hides.
    #[serde(default)]
    pub set_op: Option<SetOp>,
}

impl Plan {
    /// How many of `columns` users see.
    fn visible(&self) -> usize {
        self.columns.len() - if self.set_op.is_some() { 2 } else { 0 }
    }
    /// The output column names users see.
    pub fn visible_columns(&self) -> &[String] {
        &self.columns[..self.visible()]
    }
    /// Their types.
    pub fn visible_types(&self) -> &[String] {
        &self.types[..self.visible()]
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Table,
    View,
}

/// A relation the view reads: a base table (captured by triggers) or another materialized view
/// (whose refresh writes our delta table).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Source {
    /// The attached database of a table outside the server's own (None: the server's). Such a
    /// table cannot be captured: DuckDB lets a transaction write only one database, and its
    /// writers would have to write our delta tables too.
    #[serde(default)]
    pub catalog: Option<String>,
    pub schema: String,
    pub name: String,
    pub kind: SourceKind,
    /// Id of the upstream materialized view, for `kind == View`.
    pub view_id: Option<i64>,
    pub columns: Vec<String>,
    /// SQL naming the current state (`"main"."t"`, or `_duckmv.out_3` for a view).
    pub relation: String,
    /// `_duckmv.d_<id>_<name>`, the view's pending part of the source's change log (see
    /// `capture`); None for full-recompute views, which capture nothing.
    pub delta: Option<String>,
    /// The change log the delta reads (`_duckmv.log_<n>`), set when the view is installed.
    #[serde(default)]
    pub log: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum Body {
    /// Recomputed from the defining query on every refresh.
    Full {
        query: String,
    },
    /// A bag of rows kept as (row, count); `distinct` shows each row once.
    Bag {
        rel: Rel,
        distinct: bool,
    },
    Aggregate(Aggregate),
    /// Window functions, recomputed per partition the change touches (see `plan::windowed`).
    Windowed(Windowed),
}

/// A select-project-join block or a UNION ALL of such relations.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum Rel {
    Block(Block),
    Union(Vec<Rel>),
    /// An aggregate used as a relation: a derived table, or the set IN/EXISTS tests.
    Agg(Box<SubAgg>),
}

/// A grouped or ungrouped aggregate read as a relation. It has no storage: its change is
/// computed, per refresh, for the groups the change of its input touches — their rows now
/// (aggregated from the current input) and before (now minus the input's change). Only
/// COUNT, SUM and AVG of exact types, whose state can be taken back.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct SubAgg {
    pub agg: Aggregate,
    /// Output column names, in the order of `agg.output`.
    pub names: Vec<String>,
}

/// `SELECT select[i] AS names[i] FROM items WHERE filter AND exists…`. Items are comma-joined
/// (inner join ON predicates are part of `filter`); outer joins live inside `ItemFrom::Tree`
/// items, semi/anti joins in `exists`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Block {
    pub items: Vec<Item>,
    pub select: Vec<UserExpr>,
    pub names: Vec<String>,
    pub filter: Option<UserExpr>,
    #[serde(default)]
    pub exists: Vec<Exists>,
    /// WHERE conjuncts that combine existence tests with AND/OR/NOT.
    #[serde(default)]
    pub guards: Vec<Guard>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Item {
    /// Quoted alias, as the user's expressions refer to it.
    pub alias: String,
    pub from: ItemFrom,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum ItemFrom {
    Source(usize),
    Sub(Box<Rel>),
    /// A join chain with outer joins; its leaves keep their own aliases.
    Tree(Box<Tree>),
}

/// GROUP BY (or ungrouped) aggregation over a block whose select list is the group keys
/// `_g1.._gk` followed by the aggregate arguments `_a1.._am`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Aggregate {
    pub input: Block,
    pub groups: usize,
    /// The aggregates, in the order the compiler's aggregate holes numbered them;
    /// several may share one state slot (SUM and AVG of one argument).
    pub aggs: Vec<AggFn>,
    /// Output expressions over the storage columns, already cast and aliased.
    pub output: Vec<String>,
    /// HAVING, rewritten over the storage columns.
    pub having: Option<UserExpr>,
    /// When the select list tests EXISTS/IN, `input` is the copy for the first combination of
    /// the tests' values and these the copies for the others; the aggregate reads their UNION
    /// ALL. Empty otherwise.
    #[serde(default)]
    pub copies: Vec<Block>,
}

/// `SELECT select FROM input QUALIFY qualify` where every window function partitions by the
/// `keys` first columns of `input` (`_p1.._pk`, at least these); `select` and `qualify` read
/// the columns after them (`_i1.._im`) through input holes.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Windowed {
    pub input: Block,
    pub keys: usize,
    pub select: Vec<UserExpr>,
    pub qualify: Option<UserExpr>,
    /// The window functions' names, for the strategy.
    pub functions: Vec<String>,
}

impl Aggregate {
    /// The relation the aggregate reads.
    pub fn input_rel(&self) -> Rel {
        if self.copies.is_empty() {
            return Rel::Block(self.input.clone());
        }
        let all = std::iter::once(&self.input).chain(&self.copies);
        Rel::Union(all.cloned().map(Rel::Block).collect())
    }

    /// One aggregate per state slot: the ones whose state columns the storage holds.
    pub fn state_fns(&self) -> impl Iterator<Item = &AggFn> {
        self.aggs
            .iter()
            .enumerate()
            .filter(|(i, f)| !self.aggs[..*i].iter().any(|g| g.slot == f.slot))
            .map(|(_, f)| f)
    }
}

pub fn storage(id: i64) -> String {
    format!("_duckmv.mv_{id}")
}
pub fn work(id: i64) -> String {
    format!("_duckmv.w_{id}")
}
pub fn output_view(id: i64) -> String {
    format!("_duckmv.out_{id}")
}

/// Positional storage column names of bag, window and full views.
pub fn positional(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("c{i}")).collect()
}

// ---------------------------------------------------------------------------------------------
// Relations: current state and delta

pub fn item_cur(sources: &[Source], item: &Item) -> String {
    term::item_cur(sources, item)
}

/// The FROM/WHERE of a block over current data.
pub fn block_cur_term(sources: &[Source], b: &Block) -> Term {
    let mut t = Term::cur(term::items_cur(sources, &b.items));
    t.conds.extend(b.filter.iter().map(UserExpr::to_string));
    t.conds
        .extend(b.exists.iter().map(|e| semi::cond_cur(sources, e)));
    t.conds
        .extend(b.guards.iter().map(|g| semi::guard_cur(sources, g)));
    t
}

fn block_sql(b: &Block, t: &Term, mult: bool) -> String {
    let mut cols: Vec<String> = b
        .select
        .iter()
        .zip(&b.names)
        .map(|(e, n)| format!("{e} AS {}", ident(n)))
        .collect();
    if cols.is_empty() {
        // `SELECT count(*) FROM t` needs no column of t, but SQL needs one.
        cols.push("1 AS _mv_one".into());
    }
    if mult {
        cols.push(format!("{} AS _mv_mult", t.mult_sql()));
    }
    format!(
        "SELECT {} FROM {}{}",
        cols.join(", "),
        t.from,
        t.where_sql()
    )
}

/// The relation's column names.
pub fn rel_names(rel: &Rel) -> &[String] {
    match rel {
        Rel::Block(b) => &b.names,
        Rel::Agg(sa) => &sa.names,
        Rel::Union(parts) => parts.first().map(rel_names).unwrap_or(&[]),
    }
}

/// The relation's current rows.
pub fn rel_cur(sources: &[Source], rel: &Rel) -> String {
    match rel {
        Rel::Block(b) => block_sql(b, &block_cur_term(sources, b), false),
        Rel::Agg(sa) => {
            aggregate::sub_agg_sql(sa, &aggregate::agg_state_from(sources, &sa.agg, ""), false)
        }
        Rel::Union(parts) => parts
            .iter()
            .map(|p| format!("({})", rel_cur(sources, p)))
            .collect::<Vec<_>>()
            .join(" UNION ALL "),
    }
}

/// The relation's change as signed rows (its columns plus `_mv_mult`), or None when it provably
/// has none because every source it reads is unchanged. Joins use inclusion–exclusion over the
/// post-change states: one term per non-empty subset of changed inputs, sign (−1)^(|S|−1).
pub fn rel_delta(sources: &[Source], rel: &Rel, changed: &[bool]) -> Option<String> {
    match rel {
        Rel::Block(b) => {
            let terms = semi::block_terms(
                sources,
                &b.items,
                b.filter.as_ref(),
                &b.exists,
                &b.guards,
                changed,
            );
            if terms.is_empty() {
                None
            } else {
                Some(
                    terms
                        .iter()
                        .map(|t| format!("({})", block_sql(b, t, true)))
                        .collect::<Vec<_>>()
                        .join(" UNION ALL "),
                )
            }
        }
        Rel::Agg(sa) => aggregate::sub_agg_delta(sources, sa, changed),
        Rel::Union(parts) => {
            let ds: Vec<String> = parts
                .iter()
                .filter_map(|p| rel_delta(sources, p, changed))
                .map(|d| format!("({d})"))
                .collect();
            if ds.is_empty() {
                None
            } else {
                Some(ds.join(" UNION ALL "))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn sql(e: &str) -> UserExpr {
        UserExpr::new(crate::user_expr::parse(e).unwrap())
    }

    /// A table `main.name` with `columns`, its change in `_duckmv.d_1_<name>`.
    pub(crate) fn source(name: &str, columns: &[&str]) -> Source {
        Source {
            catalog: None,
            schema: "main".into(),
            name: name.into(),
            kind: SourceKind::Table,
            view_id: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            relation: format!("\"main\".\"{name}\""),
            delta: Some(format!("_duckmv.d_1_{name}")),
            log: None,
        }
    }

    fn src(name: &str) -> Source {
        source(name, &["k"])
    }

    fn join() -> Rel {
        Rel::Block(Block {
            items: vec![
                Item {
                    alias: "\"a\"".into(),
                    from: ItemFrom::Source(0),
                },
                Item {
                    alias: "\"b\"".into(),
                    from: ItemFrom::Source(1),
                },
            ],
            select: vec![sql("a.k")],
            names: vec!["c1".into()],
            filter: Some(sql("(a.k = b.k)")),
            exists: Vec::new(),
            guards: Vec::new(),
        })
    }

    #[test]
    fn join_delta_skips_terms_of_unchanged_inputs() {
        let sources = [src("a"), src("b")];
        assert_eq!(rel_delta(&sources, &join(), &[false, false]), None);
        let one = rel_delta(&sources, &join(), &[false, true]).unwrap();
        assert_eq!(
            one,
            "(SELECT a.k AS \"c1\", CAST(\"b\"._mv_mult AS BIGINT) AS _mv_mult FROM \"main\".\"a\" AS \"a\", \
             _duckmv.d_1_b AS \"b\" WHERE (a.k = b.k))"
        );
        // Telescoping: Δa × (b before the change) + (a now) × Δb, two terms and no negated one.
        let both = rel_delta(&sources, &join(), &[true, true]).unwrap();
        let old_b = "(SELECT \"k\", CAST(1 AS BIGINT) AS _mv_mult FROM \"main\".\"b\" \
                     UNION ALL SELECT \"k\", -_mv_mult FROM _duckmv.d_1_b) AS \"b\"";
        assert!(
            both.contains(&format!("_duckmv.d_1_a AS \"a\", {old_b}")),
            "{both}"
        );
        assert!(
            both.contains("\"main\".\"a\" AS \"a\", _duckmv.d_1_b AS \"b\""),
            "{both}"
        );
        assert!(!both.contains("-1 AS BIGINT"), "{both}");
    }

    #[test]
    fn union_delta_keeps_only_changed_branches() {
        let sources = [src("a"), src("b")];
        let branch = |i: usize| {
            Rel::Block(Block {
                items: vec![Item {
                    alias: "\"x\"".into(),
                    from: ItemFrom::Source(i),
                }],
                select: vec![sql("k")],
                names: vec!["c1".into()],
                filter: None,
                exists: Vec::new(),
                guards: Vec::new(),
            })
        };
        let u = Rel::Union(vec![branch(0), branch(1)]);
        let d = rel_delta(&sources, &u, &[true, false]).unwrap();
        assert!(d.contains("d_1_a") && !d.contains("d_1_b"), "{d}");
    }

    /// A block as catalogs of earlier versions stored it, expressions as text, with a guard
    /// whose test is a hole: it loads as a tree, and the test lands where the hole was.
    #[test]
    fn stored_blocks_load_with_typed_expressions() {
        let json = r#"{"items":[{"alias":"\"a\"","from":{"Source":0}}],
            "select":["\"a\".\"k\""],"names":["c1"],"filter":"(a.k > 1) AND (a.k < 9)",
            "guards":[{"template":"(__mv_ex_0__) OR (a.k = 0)",
                       "exists":[{"items":[{"alias":"\"b\"","from":{"Source":1}}],
                                  "filter":"(b.k = a.k)","anti":false}]}]}"#;
        let b: Block = serde_json::from_str(json).unwrap();
        assert!(
            matches!(b.select[0].ast(), sqlparser::ast::Expr::CompoundIdentifier(p) if p.len() == 2)
        );
        assert!(matches!(
            b.filter.as_ref().map(UserExpr::ast),
            Some(sqlparser::ast::Expr::BinaryOp {
                op: sqlparser::ast::BinaryOperator::And,
                ..
            })
        ));
        let sources = [src("a"), src("b")];
        let guard = semi::guard_cur(&sources, &b.guards[0]);
        assert!(!guard.contains("__mv_ex_"), "{guard}");
        let test = "(EXISTS (SELECT 1 FROM \"main\".\"b\" AS \"b\" WHERE (b.k = a.k)))";
        assert!(guard.contains(&format!("{test})) OR (a.k = 0)")), "{guard}");
        // Stored again, it is the same text.
        let again: serde_json::Value = serde_json::to_value(&b).unwrap();
        assert_eq!(again["filter"], "(a.k > 1) AND (a.k < 9)");
        assert_eq!(again["guards"][0]["template"], "(__mv_ex_0__) OR (a.k = 0)");
    }
}
