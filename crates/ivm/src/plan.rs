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
mod by_value;
mod kept;
mod output;
mod recursive;
mod rederive;
mod row_key;
mod sub_window;
mod windowed;

pub use aggregate::{
    agg_affected_rel, agg_apply_sql, agg_delta_sql, agg_fill_work_sql, agg_may_recompute,
    agg_recompute_sql, agg_rescans, agg_state_sql, agg_work_shape_sql,
};
pub use bag::{bag_delta_sql, bag_merge_sql, bag_state_sql, distinct_transitions_sql};
pub use by_value::{
    change_shape_sql, change_table, keep_change_sql, values_merge_sql, values_of,
    values_refill_sql, values_state_sql, values_table,
};
pub use output::{output_sql, output_view_sql, unpopulated_sql, user_view_sql};
pub use recursive::{
    absorb_sql, deleted_sql, derive_sql, rec_change, rec_table, refill_sql, Recursion,
};
pub use rederive::{overdelete_sql, remove_copies_sql, remove_sql};
pub use row_key::{fingerprint_sql, keyable, row_key, INTEGERS, KEY};
pub use sub_window::{
    win_change, win_table, window_change_sql, window_clear_sql, window_fill_sql, window_refill_sql,
    window_rows_sql, SubWindow,
};
pub use windowed::{
    windowed_clear_sql, windowed_fill_sql, windowed_state_sql, windowed_touched_rel,
    windowed_touched_sql, windowed_work_shape_sql,
};

pub use super::agg::{AggFn, AggKind};
pub use super::ops::{rel_cur, rel_delta};
use super::ops::{Exists, Guard, Tree};
use super::set_ops::SetOp;
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
    #[serde(default, deserialize_with = "crate::order::stored::order")]
    pub order_by: Option<crate::order::Order>,
    /// The definition's final LIMIT/OFFSET, applied with `order_by` by the output view over the
    /// whole result the storage keeps (see `order`).
    #[serde(default, deserialize_with = "crate::order::stored::limit")]
    pub limit: Option<crate::order::Limit>,
    /// For EXCEPT/INTERSECT maintained as a count of each side (see `set_ops`): `columns` and
    /// `types` end with the two counts, which the output turns into rows and hides.
    #[serde(default)]
    pub set_op: Option<SetOp>,
    /// For a view over `WITH RECURSIVE`: the recursive query, whose rows the view reads as a
    /// source of its own (see `plan::recursive`).
    #[serde(default)]
    pub recursion: Option<Recursion>,
    /// The window queries the view's query reads as FROM items, whose rows the view keeps as
    /// sources of its own (see `plan::sub_window`).
    #[serde(default)]
    pub windows: Vec<SubWindow>,
    /// A bag view whose storage rows carry the key `_mv_h` (see `plan::row_key`) that merges
    /// find them by. Views created before it find them by every column.
    #[serde(default)]
    pub row_key: bool,
    /// A bag view whose rows never repeat: its select list shows a declared key of every table
    /// it joins (see `compile::unique_rows`). Computing its rows from scratch then counts each
    /// once instead of grouping them by every column.
    #[serde(default)]
    pub unique_rows: bool,
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
    /// The rows of the view's recursive query, kept by the view itself: nothing to capture.
    Recursive,
    /// The rows of a window query the view reads as a FROM item, kept by the view itself.
    Window,
}

impl SourceKind {
    /// Rows the view keeps itself (no relation of the catalog, no log to read).
    pub fn kept(self) -> bool {
        matches!(self, SourceKind::Recursive | SourceKind::Window)
    }
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

impl Item {
    /// The alias itself, unquoted: the name FROM items and column references are built with.
    pub fn name(&self) -> String {
        super::text::unquoted(&self.alias)
    }
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
    /// Output expressions over the storage columns, in the order of the view's columns (or of
    /// a sub-aggregate's names). The view's own aggregate casts each to its column's type
    /// where it shows it (`output_sql`).
    #[serde(with = "outputs")]
    pub output: Vec<UserExpr>,
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
    /// `SELECT DISTINCT`: duplicates are removed within each partition, which every view
    /// column set of partition keys makes the same as removing them all (`compile::window`).
    #[serde(default)]
    pub distinct: bool,
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
/// The table a recompute that swaps builds the new contents in (see `program::recompute`).
pub fn storage_next(id: i64) -> String {
    format!("_duckmv.mv_{id}_next")
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

/// Aggregate outputs in the catalog: each expression's text. Catalogs of earlier versions
/// stored a top-level aggregate's outputs already cast and named, `CAST(e AS t) AS "n"`, which
/// the cast and name of the view's column now give when rendered: such an entry reads as `e`.
mod outputs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use sqlparser::ast::{Expr, SelectItem};
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    use crate::user_expr::UserExpr;

    pub fn serialize<S: Serializer>(v: &[UserExpr], s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<UserExpr>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|t| {
                read(t).ok_or_else(|| serde::de::Error::custom(format!("unreadable output: {t}")))
            })
            .collect()
    }

    /// One stored output: an expression, or an earlier version's cast and named one.
    pub(super) fn read(text: &str) -> Option<UserExpr> {
        let item = Parser::new(&GenericDialect {})
            .try_with_sql(text)
            .ok()?
            .parse_select_item();
        match item {
            Ok(SelectItem::UnnamedExpr(e)) => Some(UserExpr::new(e)),
            Ok(SelectItem::ExprWithAlias {
                expr: Expr::Cast { expr, .. },
                ..
            }) => Some(UserExpr::new(*expr)),
            // A cast to a DuckDB type the parser does not know: the earlier format is exactly
            // `CAST(` e ` AS ` type `) AS "` name `"`, and no type name holds ` AS `.
            _ => {
                let inner = text.strip_prefix("CAST(")?;
                let inner = &inner[..inner.rfind(") AS \"")?];
                crate::user_expr::parse(&inner[..inner.rfind(" AS ")?]).map(UserExpr::new)
            }
        }
    }
}

/// The relation's column names.
pub fn rel_names(rel: &Rel) -> &[String] {
    match rel {
        Rel::Block(b) => &b.names,
        Rel::Agg(sa) => &sa.names,
        Rel::Union(parts) => parts.first().map(rel_names).unwrap_or(&[]),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ir::{self, Expr, From};
    use crate::ops::{block_terms, Term};

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

    /// A FROM item reading source `i` under `alias` (quoted as the compiler quotes it).
    pub(crate) fn item(alias: &str, i: usize) -> Item {
        Item {
            alias: format!("\"{alias}\""),
            from: ItemFrom::Source(i),
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
    fn outputs_of_earlier_catalogs_read_without_their_cast_and_name() {
        let read = |t: &str| outputs::read(t).map(|e| e.to_string());
        assert_eq!(
            read(r#"CAST(_g1 AS INTEGER) AS "col1""#).as_deref(),
            Some("_g1")
        );
        assert_eq!(
            read(r#"CAST("s_1" + "_mv_count" AS STRUCT(a INTEGER)) AS "x y""#).as_deref(),
            Some(r#""s_1" + "_mv_count""#)
        );
        assert_eq!(
            read("CAST(s_1 AS BIGINT)").as_deref(),
            Some("CAST(s_1 AS BIGINT)")
        );
        assert_eq!(read("a AND").as_deref(), None);
    }

    /// A term's FROM items as (relation, alias): a table's name, or `old <name>` for a
    /// table's state before the change (its rows now and its change with the sign flipped).
    fn relations(t: &Term) -> Vec<(String, String)> {
        t.from
            .iter()
            .map(|f| {
                let alias = f.alias().unwrap_or_default().to_string();
                match f {
                    From::Table { name, .. } => (name.0.join("."), alias),
                    From::Query { query, .. } => {
                        let read: Vec<String> = query
                            .froms()
                            .iter()
                            .filter_map(|f| match f {
                                From::Table { name, .. } => Some(name.0.join(".")),
                                _ => None,
                            })
                            .collect();
                        (format!("old {}", read.join("+")), alias)
                    }
                    other => (format!("{other:?}"), alias),
                }
            })
            .collect()
    }

    fn block_of(rel: &Rel) -> &Block {
        match rel {
            Rel::Block(b) => b,
            _ => unreachable!(),
        }
    }

    fn terms(sources: &[Source], b: &Block, changed: &[bool]) -> Vec<Term> {
        block_terms(sources, &b.items, b.filter.as_ref(), &[], &[], changed)
    }

    #[test]
    fn join_delta_skips_terms_of_unchanged_inputs() {
        let sources = [src("a"), src("b")];
        let join = join();
        let b = block_of(&join);
        assert_eq!(rel_delta(&sources, &join, &[false, false]), None);
        let one = terms(&sources, b, &[false, true]);
        let pair = |r: &str, a: &str| (r.to_string(), a.to_string());
        assert_eq!(one.len(), 1);
        assert_eq!(
            relations(&one[0]),
            [pair("main.a", "a"), pair("_duckmv.d_1_b", "b")]
        );
        assert_eq!(one[0].mult, [ir::col("b", "_mv_mult")]);
        // Telescoping: Δa × (b before the change) + (a now) × Δb, two terms and no negated one.
        let both = terms(&sources, b, &[true, true]);
        let shapes: Vec<_> = both.iter().map(relations).collect();
        assert_eq!(
            shapes,
            [
                vec![
                    pair("_duckmv.d_1_a", "a"),
                    pair("old main.b+_duckmv.d_1_b", "b")
                ],
                vec![pair("main.a", "a"), pair("_duckmv.d_1_b", "b")],
            ]
        );
        assert!(both.iter().all(|t| t.mult.first() != Some(&Expr::Int(-1))));
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
        let read: Vec<bool> = ["_duckmv.d_1_a", "_duckmv.d_1_b"]
            .iter()
            .map(|t| d.froms().iter().any(|f| f.is_table(t)))
            .collect();
        assert_eq!(read, [true, false]);
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
        let guard = crate::ops::block_cur_term(&sources, &b).conds[1].to_string();
        assert!(!guard.contains("__mv_ex_"), "{guard}");
        let test = r#"EXISTS (SELECT 1 FROM "main"."b" AS "b" WHERE (b.k = a.k))"#;
        assert!(guard.contains(&format!("({test}) OR (a.k = 0)")), "{guard}");
        // Stored again, it is the same text.
        let again: serde_json::Value = serde_json::to_value(&b).unwrap();
        assert_eq!(again["filter"], "(a.k > 1) AND (a.k < 9)");
        assert_eq!(again["guards"][0]["template"], "(__mv_ex_0__) OR (a.k = 0)");
    }
}
