//! The compiled form of a materialized view, stored as JSON in the catalog, and the pure
//! functions that turn it into the SQL a refresh runs. Compilation happens once, at CREATE;
//! a refresh only assembles these strings for the sources that actually have pending rows.

use serde::{Deserialize, Serialize};

use super::agg::{self, StateCol};
pub use super::agg::{AggFn, AggKind};
use super::ir::{self, Aliased};
use super::outer::Tree;
use super::semi::{self, Exists, Guard};
use super::set_ops::SetOp;
use super::term::{self, Term};
use super::text::{ident, null_safe_eq};
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

/// Positional storage column names of bag and full views.
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
        Rel::Agg(sa) => sub_agg_sql(sa, &agg_state_from(sources, &sa.agg, ""), false),
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
        Rel::Agg(sa) => sub_agg_delta(sources, sa, changed),
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

// ---------------------------------------------------------------------------------------------
// Bag and DISTINCT views: storage (c1..cn, _mv_count)

fn cast_cols(types: &[String], src: &str) -> Vec<String> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("CAST({src}c{} AS {t}) AS c{}", i + 1, i + 1))
        .collect()
}

/// Rows and their counts of the current state (used to populate).
pub fn bag_state_sql(plan: &Plan, rel: &Rel) -> String {
    let cols = cast_cols(&plan.types, "_mv_i.");
    let group: Vec<String> = (1..=cols.len()).map(|i| i.to_string()).collect();
    format!(
        "SELECT {}, CAST(COUNT(*) AS BIGINT) AS _mv_count FROM ({}) AS _mv_i GROUP BY {}",
        cols.join(", "),
        rel_cur(&plan.sources, rel),
        group.join(", ")
    )
}

/// The consolidated change: one row per distinct changed row with its net count, zeros dropped.
pub fn bag_delta_sql(plan: &Plan, rel: &Rel, changed: &[bool]) -> Option<String> {
    let d = rel_delta(&plan.sources, rel, changed)?;
    let cols = cast_cols(&plan.types, "_mv_d.");
    let group: Vec<String> = (1..=cols.len()).map(|i| i.to_string()).collect();
    Some(format!(
        "SELECT {}, CAST(SUM(_mv_d._mv_mult) AS BIGINT) AS _mv_count FROM ({d}) AS _mv_d GROUP BY {} HAVING SUM(_mv_d._mv_mult) <> 0",
        cols.join(", "),
        group.join(", ")
    ))
}

/// Applies the consolidated change `source` (the work table, or the change itself as a
/// parenthesized query) to the storage, keyed NULL-safely on the row.
pub fn bag_merge_sql(plan: &Plan, source: &str) -> String {
    let cols = positional(plan.columns.len());
    let values: Vec<String> = cols.iter().map(|c| format!("_mv_d.{c}")).collect();
    format!(
        "MERGE INTO {s} AS _mv_s USING {w} AS _mv_d ON {on} \
         WHEN MATCHED AND _mv_s._mv_count + _mv_d._mv_count <= 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET _mv_count = _mv_s._mv_count + _mv_d._mv_count \
         WHEN NOT MATCHED AND _mv_d._mv_count > 0 THEN INSERT VALUES ({v}, _mv_d._mv_count)",
        s = storage(plan.id),
        w = source,
        on = null_safe_eq("_mv_s", "_mv_d", &cols),
        v = values.join(", ")
    )
}

/// The user-visible change of a DISTINCT view, computed from the work table before it is
/// applied: +1 for rows that appear, −1 for rows whose count drops to zero.
pub fn distinct_transitions_sql(plan: &Plan) -> String {
    let cols = positional(plan.columns.len());
    let sel: Vec<String> = cols.iter().map(|c| format!("_mv_d.{c}")).collect();
    format!(
        "SELECT {}, CASE WHEN _mv_s._mv_count IS NULL THEN 1 ELSE -1 END FROM {w} AS _mv_d \
         LEFT JOIN {s} AS _mv_s ON {on} \
         WHERE (_mv_s._mv_count IS NULL AND _mv_d._mv_count > 0) OR (_mv_s._mv_count + _mv_d._mv_count <= 0)",
        sel.join(", "),
        w = work(plan.id),
        s = storage(plan.id),
        on = null_safe_eq("_mv_s", "_mv_d", &cols)
    )
}

// ---------------------------------------------------------------------------------------------
// Aggregates: storage (_g1.._gk, _mv_count, s_i/n_i/m_i)

fn group_cols(a: &Aggregate) -> Vec<String> {
    (1..=a.groups).map(|i| format!("_g{i}")).collect()
}

/// ` GROUP BY rel._g1, …`, or nothing for an ungrouped aggregate.
fn group_by(a: &Aggregate, rel: &'static str) -> String {
    if a.groups == 0 {
        return String::new();
    }
    let keys: Vec<String> = group_cols(a)
        .into_iter()
        .map(|g| ir::col(rel, g).to_string())
        .collect();
    format!(" GROUP BY {}", keys.join(", "))
}

/// The aggregate state of the current base data; `only_recompute` restricts it to the groups
/// flagged in the work table (MIN/MAX whose extreme was deleted).
pub fn agg_state_sql(plan: &Plan, a: &Aggregate, only_recompute: bool) -> String {
    let filter = if only_recompute {
        format!(
            " WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE _mv_w._mv_rc AND {on})",
            w = work(plan.id),
            on = null_safe_eq("_mv_i", "_mv_w", &group_cols(a))
        )
    } else {
        String::new()
    };
    agg_state_from(&plan.sources, a, &filter)
}

/// The aggregate state of the current input rows (`_mv_i`) that pass `filter`.
fn agg_state_from(sources: &[Source], a: &Aggregate, filter: &str) -> String {
    let mut cols: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_i.{g}")).collect();
    cols.push("CAST(COUNT(*) AS BIGINT) AS _mv_count".to_string());
    for f in a.state_fns() {
        let ag = agg::of(f);
        let arg = f.arg.as_ref().map(|x| ir::col("_mv_i", x));
        for (c, e) in ag.state(f.slot).iter().zip(ag.rows_state(arg)) {
            cols.push(Aliased(&e, &c.name).to_string());
        }
    }
    let input = rel_cur(sources, &a.input_rel());
    format!(
        "SELECT {} FROM ({input}) AS _mv_i{filter}{}",
        cols.join(", "),
        group_by(a, "_mv_i")
    )
}

/// The consolidated change per group; MIN/MAX keep the extreme of the inserted values (`m_i`) and
/// of the deleted ones (`x_i`), which decides whether the group must be recomputed.
pub fn agg_delta_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<String> {
    agg_delta_from(&plan.sources, a, changed)
}

fn agg_delta_from(sources: &[Source], a: &Aggregate, changed: &[bool]) -> Option<String> {
    let d = rel_delta(sources, &a.input_rel(), changed)?;
    let mut cols: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_d.{g}")).collect();
    // COALESCE: an ungrouped aggregate over a change that no row survives still yields one row,
    // whose sums must add nothing.
    cols.push("CAST(COALESCE(SUM(_mv_d._mv_mult), 0) AS BIGINT) AS _mv_count".to_string());
    for f in a.state_fns() {
        let arg = f.arg.as_ref().map(|x| ir::col("_mv_d", x));
        let mult = ir::col("_mv_d", "_mv_mult");
        for (name, e) in agg::of(f).change_state(f.slot, arg, mult) {
            cols.push(Aliased(&e, &name).to_string());
        }
    }
    Some(format!(
        "SELECT {} FROM ({d}) AS _mv_d{}",
        cols.join(", "),
        group_by(a, "_mv_d")
    ))
}

/// The state columns of an aggregate's storage rows, after the group keys and `_mv_count`.
fn state_cols(a: &Aggregate) -> Vec<StateCol> {
    a.state_fns()
        .flat_map(|f| agg::of(f).state(f.slot))
        .collect()
}

/// A sub-aggregate's rows from state rows `state` (`_mv_count`, `n_i`, …, plus `_mv_mult`
/// when `mult`): output expressions under their names, HAVING applied. A grouped aggregate
/// has no row for a group without input rows; an ungrouped one always has its one row.
fn sub_agg_sql(sa: &SubAgg, state: &str, mult: bool) -> String {
    let a = &sa.agg;
    let mut cols: Vec<String> = a
        .output
        .iter()
        .zip(&sa.names)
        .map(|(e, n)| format!("{e} AS {}", ident(n)))
        .collect();
    if mult {
        cols.push("_mv_mult".into());
    }
    let mut conds = Vec::new();
    if a.groups > 0 {
        conds.push("_mv_count > 0".to_string());
    }
    conds.extend(a.having.iter().map(|h| format!("({h})")));
    format!(
        "SELECT {} FROM ({state}) AS _mv_s{}",
        cols.join(", "),
        term::where_sql(&conds)
    )
}

/// A sub-aggregate's change: for each group its input's change touches, the group's row now
/// (+1) and before (−1), the state before being the state now minus the change's.
fn sub_agg_delta(sources: &[Source], sa: &SubAgg, changed: &[bool]) -> Option<String> {
    let a = &sa.agg;
    let d = agg_delta_from(sources, a, changed)?;
    let keys = group_cols(a);
    // The change is read twice (which groups, and their states): computed once.
    let (now, on) = if keys.is_empty() {
        (agg_state_from(sources, a, ""), "TRUE".to_string())
    } else {
        let touched = format!(
            " WHERE EXISTS (SELECT 1 FROM _mv_dd AS _mv_w WHERE {})",
            null_safe_eq("_mv_i", "_mv_w", &keys)
        );
        (
            agg_state_from(sources, a, &touched),
            null_safe_eq("_mv_n", "_mv_d", &keys),
        )
    };
    let mut cols: Vec<String> = keys
        .iter()
        .map(|k| format!("coalesce(_mv_n.{k}, _mv_d.{k}) AS {k}"))
        .collect();
    let count = StateCol {
        name: "_mv_count".into(),
        zero_when_empty: true,
    };
    for c in std::iter::once(count).chain(state_cols(a)) {
        let (now, change) = (ir::col("_mv_n", &c.name), ir::col("_mv_d", &c.name));
        // A group the input no longer has: counts 0, sums NULL.
        let now_value = if c.zero_when_empty {
            ir::or_zero(now.clone())
        } else {
            now.clone()
        };
        let before = ir::or_zero(now) - ir::or_zero(change);
        let now_side = ir::col("_mv_sg", "_mv_mult").eq(ir::Expr::Int(1));
        let e = ir::case(now_side, now_value, before);
        cols.push(Aliased(&e, &c.name).to_string());
    }
    cols.push("_mv_sg._mv_mult".into());
    let state = format!(
        "WITH _mv_dd AS MATERIALIZED ({d}) \
         SELECT {} FROM ({now}) AS _mv_n FULL JOIN _mv_dd AS _mv_d ON {on}, \
         (VALUES (1), (-1)) AS _mv_sg(_mv_mult)",
        cols.join(", ")
    );
    Some(sub_agg_sql(sa, &state, true))
}

/// Fills the work table: the consolidated change plus `_mv_rc`, true for groups whose current
/// MIN/MAX was among the deleted values (they are recomputed from the base data).
pub fn agg_fill_work_sql(plan: &Plan, a: &Aggregate, changed: &[bool]) -> Option<String> {
    let delta = agg_delta_sql(plan, a, changed)?;
    let rc: Vec<String> = a
        .state_fns()
        .filter_map(|f| agg::of(f).recompute_when(f.slot, "_mv_s", "_mv_d"))
        .map(|c| format!("({c})"))
        .collect();
    let rc = if rc.is_empty() {
        "FALSE".to_string()
    } else {
        format!("COALESCE({}, FALSE)", rc.join(" OR "))
    };
    Some(format!(
        "INSERT INTO {w} SELECT _mv_d.*, {rc} FROM ({delta}) AS _mv_d LEFT JOIN {s} AS _mv_s ON {on}",
        w = work(plan.id),
        s = storage(plan.id),
        on = null_safe_eq("_mv_s", "_mv_d", &group_cols(a))
    ))
}

/// The work table's shape (used once, at CREATE): the delta with every source changed.
pub fn agg_work_shape_sql(plan: &Plan, a: &Aggregate) -> Option<String> {
    let all = vec![true; plan.sources.len()];
    let delta = agg_delta_sql(plan, a, &all)?;
    Some(format!(
        "SELECT _mv_d.*, FALSE AS _mv_rc FROM ({delta}) AS _mv_d LIMIT 0"
    ))
}

fn agg_combine(a: &Aggregate) -> Vec<(String, String)> {
    let mut out = vec![(
        "_mv_count".to_string(),
        "_mv_s._mv_count + _mv_d._mv_count".to_string(),
    )];
    for f in a.state_fns() {
        let ag = agg::of(f);
        let combined = ag.combine(f.slot, "_mv_s", "_mv_d");
        for (c, e) in ag.state(f.slot).into_iter().zip(combined) {
            out.push((ir::bare(c.name).to_string(), e.to_string()));
        }
    }
    out
}

/// Applies the change `source` (as for [`bag_merge_sql`]) to the storage. Grouped: MERGE keyed NULL-safely on the group, groups
/// whose count reaches 0 disappear. Ungrouped: the single row is updated in place.
pub fn agg_apply_sql(plan: &Plan, a: &Aggregate, source: &str) -> String {
    let set: Vec<String> = agg_combine(a)
        .into_iter()
        .map(|(c, e)| format!("{c} = {e}"))
        .collect();
    if a.groups == 0 {
        return format!(
            "UPDATE {} AS _mv_s SET {} FROM {} AS _mv_d",
            storage(plan.id),
            set.join(", "),
            source
        );
    }
    let mut values: Vec<String> = group_cols(a).iter().map(|g| format!("_mv_d.{g}")).collect();
    values.push("_mv_d._mv_count".to_string());
    for f in a.state_fns() {
        values.extend(
            agg::of(f)
                .insert(f.slot, "_mv_d")
                .iter()
                .map(|e| e.to_string()),
        );
    }
    format!(
        "MERGE INTO {s} AS _mv_s USING {w} AS _mv_d ON {on} \
         WHEN MATCHED AND _mv_s._mv_count + _mv_d._mv_count <= 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET {set} \
         WHEN NOT MATCHED AND _mv_d._mv_count > 0 THEN INSERT VALUES ({v})",
        s = storage(plan.id),
        w = source,
        on = null_safe_eq("_mv_s", "_mv_d", &group_cols(a)),
        set = set.join(", "),
        v = values.join(", ")
    )
}

/// Whether a change can leave groups to recompute (a deleted MIN/MAX, a distinct count).
pub fn agg_may_recompute(a: &Aggregate) -> bool {
    a.state_fns().any(|f| {
        agg::of(f)
            .recompute_when(f.slot, "_mv_s", "_mv_d")
            .is_some()
    })
}

/// Statements recomputing the flagged groups from the base data.
pub fn agg_recompute_sql(plan: &Plan, a: &Aggregate) -> Vec<String> {
    let s = storage(plan.id);
    if a.groups == 0 {
        return vec![
            format!("DELETE FROM {s}"),
            format!("INSERT INTO {s} {}", agg_state_sql(plan, a, false)),
        ];
    }
    vec![
        format!(
            "DELETE FROM {s} AS _mv_s WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE _mv_w._mv_rc AND {on})",
            w = work(plan.id),
            on = null_safe_eq("_mv_s", "_mv_w", &group_cols(a))
        ),
        format!("INSERT INTO {s} {}", agg_state_sql(plan, a, true)),
    ]
}

/// The storage rows of the groups present in the work table (for the user-visible change fed to
/// downstream views).
pub fn agg_affected_rel(plan: &Plan, a: &Aggregate) -> String {
    if a.groups == 0 {
        return storage(plan.id);
    }
    format!(
        "(SELECT * FROM {s} AS _mv_x WHERE EXISTS (SELECT 1 FROM {w} AS _mv_w WHERE {on}))",
        s = storage(plan.id),
        w = work(plan.id),
        on = null_safe_eq("_mv_x", "_mv_w", &group_cols(a))
    )
}

// ---------------------------------------------------------------------------------------------
// Output: what users see, computed from the storage

/// The user-visible rows computed from `rel` (the storage, or part of it).
pub fn output_sql(plan: &Plan, rel: &str) -> String {
    let positional_cols = || -> String {
        positional(plan.columns.len())
            .iter()
            .zip(&plan.columns)
            .map(|(c, n)| format!("_mv_s.{c} AS {}", ident(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &plan.body {
        Body::Full { .. } | Body::Bag { distinct: true, .. } => {
            format!("SELECT {} FROM {rel} AS _mv_s", positional_cols())
        }
        Body::Bag {
            distinct: false, ..
        } => format!(
            "SELECT {} FROM {rel} AS _mv_s, range(_mv_s._mv_count) AS _mv_r(_mv_n)",
            positional_cols()
        ),
        Body::Aggregate(a) => {
            let mut sql = format!("SELECT {} FROM {rel} AS _mv_s", a.output.join(", "));
            if let Some(h) = &a.having {
                sql.push_str(&format!(" WHERE {h}"));
            }
            match &plan.set_op {
                Some(op) => set_op_rows(plan, op, &sql),
                None => sql,
            }
        }
    }
}

/// The rows of an EXCEPT/INTERSECT view from its counts per row (`grouped`): each group's row
/// as many times as the operation keeps it.
fn set_op_rows(plan: &Plan, op: &SetOp, grouped: &str) -> String {
    let cols: Vec<String> = plan
        .visible_columns()
        .iter()
        .map(|c| format!("_mv_o.{}", ident(c)))
        .collect();
    format!(
        "SELECT {} FROM ({grouped}) AS _mv_o, range(CAST({} AS BIGINT)) AS _mv_r(_mv_n)",
        cols.join(", "),
        op.times("_mv_o")
    )
}

/// Body of the user-facing view of a populated materialized view: the output rows, in the
/// definition's order when it has one.
pub fn user_view_sql(plan: &Plan) -> String {
    let out = output_view(plan.id);
    match &plan.order_by {
        Some(order) => format!("SELECT * FROM {out} {order}"),
        None => format!("SELECT * FROM {out}"),
    }
}

/// Body of the user-facing view while the materialized view is unpopulated: reading it fails
/// like PostgreSQL's (the server maps the message to 55000), even for `count(*)`.
pub fn unpopulated_sql(plan: &Plan, name: &str) -> String {
    let cols: Vec<String> = plan
        .visible_columns()
        .iter()
        .zip(plan.visible_types())
        .map(|(n, t)| format!("CAST(NULL AS {t}) AS {}", ident(n)))
        .collect();
    let msg = format!(
        "materialized view \"{}\" has not been populated",
        name.replace('"', "\"\"")
    );
    format!(
        "SELECT {} FROM (SELECT 1) AS _mv_u(x) WHERE error({})",
        cols.join(", "),
        super::text::lit(&msg)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(e: &str) -> UserExpr {
        UserExpr::new(crate::user_expr::parse(e).unwrap())
    }

    fn src(name: &str) -> Source {
        Source {
            catalog: None,
            schema: "main".into(),
            name: name.into(),
            kind: SourceKind::Table,
            view_id: None,
            columns: vec!["k".into()],
            relation: format!("\"main\".\"{name}\""),
            delta: Some(format!("_duckmv.d_1_{name}")),
            log: None,
        }
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
