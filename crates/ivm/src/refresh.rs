//! REFRESH: apply pending deltas (incremental views) or recompute (full views, first
//! population, `duckmv.refresh_mode = full`, or a change too large for `auto`). Runs inside the
//! caller's transaction: the view's positions in its change logs move past the rows read in the
//! same transaction, so under snapshot isolation a refresh consumes exactly the changes it saw —
//! a writer that commits later keeps its rows for the next refresh, and nothing is applied twice
//! (see `capture`).
//!
//! Fixed costs are kept small: the plan comes from the [`ViewCache`], one prepared probe counts
//! every source's pending rows (and checks the cached plan is still the view's), and the
//! statements a refresh repeats go through [`Sql::exec_hot`] so DuckDB parses them once. DuckDB
//! 2.0 still plans each of them at every execution (it re-binds any prepared statement that
//! reads a table), so every statement a refresh runs costs its planning: fewer and smaller
//! statements are what lowers the fixed cost.

use std::sync::Arc;
use std::time::Instant;

use super::capture;
use super::catalog::{self, ViewRow};
use super::history::{pending_rows, Verdict};
use super::mode::{self, RefreshMode};
use super::plan::{self, Body, Plan};
use super::program::{self, Key, Replace};
use super::refresh_stats::{self, RefreshStats};
use super::text::{lit, split_name};
use super::view_cache::ViewCache;
use super::{IvmError, Outcome, Sql};

/// What the probe saw in this transaction.
struct Pending {
    populated: bool,
    /// Delta rows per source (0 for sources without a delta table).
    rows: Vec<u64>,
    /// Where each source's reader moves: the last position pending for it in this snapshot
    /// (None: no log, or nothing pending), or the log's end.
    ends: Vec<Option<i64>>,
    /// The change log of this view, when views read it: the refresh appends its change.
    downstream: Option<String>,
}

/// Refreshes the view called `name`. `cache` may hold its compiled plan; without one (tests)
/// the catalog is read every time.
pub fn refresh_named(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    name: &str,
    with_data: bool,
    mode: RefreshMode,
) -> Result<Outcome, IvmError> {
    let (view, pending) = lookup(db, cache, name)?;
    refresh_probed(db, cache, &view, &pending, with_data, mode)
}

/// `EXPLAIN REFRESH MATERIALIZED VIEW name`: what a refresh in this transaction would run, as
/// lines of text. Changes nothing.
pub fn explain_named(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    name: &str,
    mode: RefreshMode,
) -> Result<Vec<String>, IvmError> {
    let (view, pending) = lookup(db, cache, name)?;
    let plan = &view.plan;
    let downstream = pending.downstream.as_deref();
    let mut out = Vec::new();
    let program = match decide(db, cache, &view, &pending, true, mode)? {
        Decision::Nothing => {
            out.push("Nothing pending: the refresh changes nothing".to_string());
            return Ok(out);
        }
        Decision::Unpopulate => unreachable!("EXPLAIN REFRESH explains WITH DATA"),
        Decision::Recompute { populated, why } => {
            out.push(format!("Full refresh ({why})"));
            let replace = replace(cache, plan.id, populated);
            view.programs
                .get(plan, Key::Recompute { replace }, downstream)
        }
        Decision::Incremental { changed, lost, why } => {
            let pending: Vec<String> = plan
                .sources
                .iter()
                .zip(&pending.rows)
                .filter(|(_, r)| **r > 0)
                .map(|(s, r)| {
                    let noun = if *r == 1 { "row" } else { "rows" };
                    format!("{}.{} ({r} {noun})", s.schema, s.name)
                })
                .collect();
            out.push(format!(
                "Incremental refresh ({}; {why}); changes pending in {}",
                plan.strategy,
                pending.join(", ")
            ));
            view.programs
                .get(plan, Key::Incremental { changed, lost }, downstream)
        }
    };
    program::lines(&program.steps, 2, &mut out);
    Ok(out)
}

/// The view called `name` and what is pending for it in this transaction.
fn lookup(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    name: &str,
) -> Result<(Arc<ViewRow>, Pending), IvmError> {
    let (schema, n) = split_name(name);
    let cached = cache.and_then(|c| c.get(&schema, &n));
    match cached {
        Some(v) => match probe(db, &v) {
            Ok(Some(p)) => Ok((v, p)),
            Ok(None) => {
                cache.unwrap().forget(&schema, &n);
                load(db, cache, &schema, &n)
            }
            Err(e) => {
                cache.unwrap().forget(&schema, &n);
                Err(e)
            }
        },
        None => load(db, cache, &schema, &n),
    }
}

fn load(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    schema: &str,
    name: &str,
) -> Result<(Arc<ViewRow>, Pending), IvmError> {
    let view = catalog::find_view_unchecked(db, schema, name)?
        .ok_or_else(|| IvmError::NoSuchView(name.to_string()))?;
    let pending = probe(db, &view)?
        .ok_or_else(|| IvmError::Internal(format!("view {} vanished", view.id)))?;
    let view = Arc::new(view);
    if let Some(c) = cache {
        c.put(schema, name, view.clone());
    }
    Ok((view, pending))
}

/// Refreshes a view just read from the catalog (CREATE ... WITH DATA).
pub fn refresh(db: &mut dyn Sql, view: &ViewRow, with_data: bool) -> Result<Outcome, IvmError> {
    let pending = Pending {
        populated: view.populated,
        rows: vec![0; view.plan.sources.len()],
        ends: capture::log_ends(db, &view.plan)?,
        downstream: capture::downstream_log(db, view.plan.id)?,
    };
    let out = refresh_probed(
        db,
        None,
        view,
        &pending,
        with_data,
        RefreshMode::Incremental,
    )?;
    refresh_stats::record(db, out.stats.as_slice())?;
    Ok(out)
}

/// What a refresh does, decided from what is pending.
enum Decision {
    Unpopulate,
    Nothing,
    Recompute {
        populated: bool,
        why: String,
    },
    /// `lost`: a table the view's recursive query reads lost rows.
    Incremental {
        changed: Vec<bool>,
        lost: bool,
        why: String,
    },
}

fn decide(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    view: &ViewRow,
    pending: &Pending,
    with_data: bool,
    mode: RefreshMode,
) -> Result<Decision, IvmError> {
    let recompute = |populated, why: &str| Decision::Recompute {
        populated,
        why: why.to_string(),
    };
    if !with_data {
        return Ok(Decision::Unpopulate);
    }
    if !pending.populated {
        return Ok(recompute(false, "the view is not populated"));
    }
    if matches!(view.plan.body, Body::Full { .. }) {
        return Ok(recompute(true, &view.plan.strategy));
    }
    if mode == RefreshMode::Full {
        return Ok(recompute(true, "duckmv.refresh_mode = full"));
    }
    let changed: Vec<bool> = pending.rows.iter().map(|r| *r > 0).collect();
    if !changed.iter().any(|c| *c) {
        return Ok(Decision::Nothing);
    }
    let delta: Vec<u64> = pending
        .rows
        .iter()
        .zip(&changed)
        .filter(|(_, c)| **c)
        .map(|(r, _)| *r)
        .collect();
    let (flagged, lost) = with_recursion(db, &view.plan, &changed)?;
    let incremental = |why: String| Decision::Incremental {
        changed: flagged.clone(),
        lost,
        why,
    };
    if mode == RefreshMode::Incremental {
        return Ok(incremental("duckmv.refresh_mode = incremental".into()));
    }
    let total: u64 = delta.iter().sum();
    if let Some(c) = cache {
        match c.verdict(view.plan.id, total) {
            Verdict::Full(why) => return Ok(recompute(true, &format!("auto: {why}"))),
            Verdict::Incremental(why) => return Ok(incremental(format!("auto: {why}"))),
            Verdict::Unknown => {}
        }
    }
    if !mode::may_prefer_full(&delta) {
        return Ok(incremental(format!(
            "auto: {}, too few to recompute for",
            pending_rows(total)
        )));
    }
    let (base, kept) = base_rows(db, cache, &view.plan, &changed)?;
    let mut sizes = format!(
        "{} against {}",
        pending_rows(total),
        base.iter().sum::<u64>()
    );
    if let Some(k) = kept {
        sizes.push_str(&format!(", {k} kept"));
    }
    if mode::prefer_full(&view.plan, &delta, &base, kept) {
        let why = format!("auto: the change is large next to its tables ({sizes})");
        return Ok(recompute(true, &why));
    }
    Ok(incremental(format!(
        "auto: the change is small next to its tables ({sizes})"
    )))
}

/// The sources an incremental refresh reads the change of: the `changed` ones and, when the
/// plan's recursive or window query reads one of them, the source its rows are read as (what it gains or
/// loses is that source's change); and whether one of them lost rows, which the recursive
/// query then deletes and derives again (`plan::rederive`).
fn with_recursion(
    db: &mut dyn Sql,
    plan: &Plan,
    changed: &[bool],
) -> Result<(Vec<bool>, bool), IvmError> {
    let mut flagged = changed.to_vec();
    for w in &plan.windows {
        let reads = w.reads(plan.sources.len());
        flagged[w.source] = reads.iter().zip(changed).any(|(r, c)| *r && *c);
    }
    let Some(r) = &plan.recursion else {
        return Ok((flagged, false));
    };
    let Some(probe) = plan::deleted_sql(plan, r, changed) else {
        return Ok((flagged, false));
    };
    let rows = db.query_hot(&probe.to_string(), &[])?;
    flagged[r.source] = true;
    Ok((
        flagged,
        rows.first().and_then(|r| r[0].as_deref()) == Some("true"),
    ))
}

fn refresh_probed(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    view: &ViewRow,
    pending: &Pending,
    with_data: bool,
    mode: RefreshMode,
) -> Result<Outcome, IvmError> {
    let downstream = &pending.downstream;
    match decide(db, cache, view, pending, with_data, mode)? {
        Decision::Unpopulate => unpopulate(db, view, pending.populated, downstream),
        Decision::Nothing => Ok(Outcome::default()),
        Decision::Recompute { populated, why } => {
            let replace = replace(cache, view.plan.id, populated);
            let out = recompute(db, view, replace, pending, &why)?;
            match cache {
                Some(c) if populated => c.note_full(view.plan.id, out.ms, out.outcome.rows),
                Some(c) => c.note_population(view.plan.id, out.ms, out.outcome.rows),
                None => {}
            }
            Ok(out.outcome)
        }
        Decision::Incremental { changed, lost, why } => {
            let rows = pending.rows.iter().sum();
            let key = Key::Incremental { changed, lost };
            let out = incremental(db, view, key, pending, &why)?;
            if let Some(c) = cache {
                c.note_incremental(view.plan.id, rows, out.ms);
            }
            Ok(out.outcome)
        }
    }
}

/// One query: whether the view (this id, this name) exists in this transaction, whether it is
/// populated, how many delta rows each source has and where its log ends, and which views read
/// it — the whole cost of a refresh with nothing to do. None when the view is not there.
///
/// A UNION ALL of one row per source, tagged with its position: written as one scalar
/// subquery per source, DuckDB plans the cross product of them all, which for the six sources
/// of TPC-H Q5 took 20–22 ms against 5 ms for this form.
fn probe(db: &mut dyn Sql, view: &ViewRow) -> Result<Option<Pending>, IvmError> {
    let mut parts = vec![format!(
        "SELECT -1 AS _mv_i, CAST(populated AS BIGINT) AS _mv_n, \
         (SELECT log_table FROM _duckmv.change_logs WHERE source_view_id = {}) AS _mv_log, \
         CAST(NULL AS BIGINT) AS _mv_end \
         FROM _duckmv.views WHERE id = {} AND name = {} AND schema = {}",
        view.id,
        view.id,
        lit(&view.name),
        lit(&view.schema)
    )];
    for (i, s) in view.plan.sources.iter().enumerate() {
        parts.push(match (&s.delta, &s.log) {
            (Some(d), Some(log)) => capture::pending_and_end_sql(i, d, log),
            (Some(d), None) => format!("SELECT {i}, (SELECT count(*) FROM {d}), NULL, NULL"),
            (None, _) => continue,
        });
    }
    let rows = db.query_hot(&parts.join(" UNION ALL "), &[])?;
    let Some(view_row) = rows.iter().find(|r| r[0].as_deref() == Some("-1")) else {
        return Ok(None);
    };
    let n = view.plan.sources.len();
    Ok(Some(Pending {
        populated: view_row[1].as_deref() == Some("1"),
        downstream: view_row[2].clone(),
        rows: tagged_counts(&rows, n),
        ends: {
            let mut ends = vec![None; n];
            capture::ends_by_tag(&rows, 3, &mut ends);
            ends
        },
    }))
}

/// The counts of rows `(tag, count, …)` from a UNION ALL of branches tagged 0..n, by tag;
/// rows with other tags (the probe's −1) are left out.
fn tagged_counts(rows: &[Vec<Option<String>>], n: usize) -> Vec<u64> {
    let mut counts = vec![0; n];
    for row in rows {
        let number = |i: usize| row[i].as_deref().and_then(|v| v.parse::<u64>().ok());
        if let (Some(i), Some(c)) = (number(0), number(1)) {
            if let Some(slot) = counts.get_mut(i as usize) {
                *slot = c;
            }
        }
    }
    counts
}

/// Rows of each changed source (what a recompute would read), and for a keyed bag view the
/// rows its storage keeps (what a recompute would group again). Only a cost estimate: sizes
/// counted by a recent refresh are reused, which saves a statement per large refresh. One
/// UNION ALL branch per relation, as [`probe`] has, for the same reason.
fn base_rows(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    plan: &Plan,
    changed: &[bool],
) -> Result<(Vec<u64>, Option<u64>), IvmError> {
    let storage = plan::storage(plan.id);
    let keyed = mode::keyed_bag(plan);
    let mut rels: Vec<&str> = plan
        .sources
        .iter()
        .zip(changed)
        .filter(|(_, c)| **c)
        .map(|(s, _)| s.relation.as_str())
        .collect();
    if keyed {
        rels.push(&storage);
    }
    let mut sizes = match cache.and_then(|c| c.sizes(&rels)) {
        Some(sizes) => sizes,
        None => {
            let counts: Vec<String> = rels
                .iter()
                .enumerate()
                .map(|(i, r)| format!("SELECT {i} AS _mv_i, count(*) AS _mv_n FROM {r}"))
                .collect();
            let rows = db.query_hot(&counts.join(" UNION ALL "), &[])?;
            let sizes = tagged_counts(&rows, rels.len());
            if let Some(c) = cache {
                c.note_sizes(&rels, &sizes);
            }
            sizes
        }
    };
    let kept = if keyed { sizes.pop() } else { None };
    Ok((sizes, kept))
}

/// A refresh's outcome with how long its program took.
struct Timed {
    outcome: Outcome,
    ms: f64,
}

fn incremental(
    db: &mut dyn Sql,
    view: &ViewRow,
    key: Key,
    pending: &Pending,
    why: &str,
) -> Result<Timed, IvmError> {
    let plan = &view.plan;
    let downstream = &pending.downstream;
    let start = Instant::now();
    let program = view.programs.get(plan, key, downstream.as_deref());
    let rows = program::execute(db, &program.steps, &pending.ends)?;
    Ok(timed(view, &program, rows, start, why, pending))
}

/// A refresh's outcome and how long it took since `start`, with what `duckmv.views` will say
/// about it.
fn timed(
    view: &ViewRow,
    program: &program::Program,
    rows: u64,
    start: Instant,
    why: &str,
    pending: &Pending,
) -> Timed {
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let stats = RefreshStats::now(view.plan.id, ms, rows, program.mode, why);
    let outcome = Outcome {
        notices: Vec::new(),
        rows,
        downstream: pending.downstream.is_some(),
        stats: Some(stats),
    };
    Timed { outcome, ms }
}

/// How a recompute replaces the stored rows: by a swap when the view's last full refresh (as
/// this server saw it) replaced many.
fn replace(cache: Option<&ViewCache>, id: i64, populated: bool) -> Replace {
    if !populated {
        Replace::Nothing
    } else if cache.is_some_and(|c| c.replaces_many(id)) {
        Replace::Swap
    } else {
        Replace::Delete
    }
}

/// The SQL computing a view's storage rows from the current base data, named as the storage
/// names its columns (it is typed from this query). A full view's definition is read as the
/// user wrote it: DuckDB may accept what the parser does not.
pub fn state_sql(plan: &Plan) -> String {
    match &plan.body {
        Body::Full { query } => {
            let cols = plan::positional(plan.columns.len()).join(", ");
            format!("SELECT * FROM ({query}) AS _mv_q({cols})")
        }
        Body::Bag { rel, .. } => plan::bag_state_sql(plan, rel).to_string(),
        Body::Aggregate(a) => plan::agg_state_sql(plan, a, false).to_string(),
        Body::Windowed(w) => plan::windowed_state_sql(plan, w).to_string(),
    }
}

/// Recomputes a populated view from its sources, consuming what its logs hold for it.
pub fn recompute_now(db: &mut dyn Sql, view: &ViewRow) -> Result<Outcome, IvmError> {
    let pending = Pending {
        populated: true,
        rows: vec![0; view.plan.sources.len()],
        ends: capture::log_ends(db, &view.plan)?,
        downstream: capture::downstream_log(db, view.plan.id)?,
    };
    let why = "the view's definition was upgraded";
    let out = recompute(db, view, Replace::Delete, &pending, why)?.outcome;
    refresh_stats::record(db, out.stats.as_slice())?;
    Ok(out)
}

/// Recomputes the storage from scratch and marks the view populated. Downstream views get the
/// old rows with −1 and the new rows with +1.
fn recompute(
    db: &mut dyn Sql,
    view: &ViewRow,
    replace: Replace,
    pending: &Pending,
    why: &str,
) -> Result<Timed, IvmError> {
    let plan = &view.plan;
    let downstream = &pending.downstream;
    let start = Instant::now();
    let key = Key::Recompute { replace };
    let program = view.programs.get(plan, key, downstream.as_deref());
    let rows = program::execute(db, &program.steps, &pending.ends)?;
    if replace == Replace::Nothing {
        catalog::set_populated(db, plan.id, true)?;
        catalog::create_user_view(db, &view.schema, &view.name, &plan::user_view_sql(plan))?;
    }
    Ok(timed(view, &program, rows, start, why, pending))
}

/// `REFRESH ... WITH NO DATA`: empties the storage; reading the view fails until the next refresh.
fn unpopulate(
    db: &mut dyn Sql,
    view: &ViewRow,
    populated: bool,
    downstream: &Option<String>,
) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    if populated {
        let out = plan::output_view(plan.id);
        if let Some(d) = downstream {
            db.exec(&capture::append_sql(d, &format!("SELECT *, -1 FROM {out}")))?;
        }
    }
    let rows = db.exec(&format!("DELETE FROM {}", plan::storage(plan.id)))?;
    capture::clear(db, plan)?;
    catalog::set_populated(db, plan.id, false)?;
    catalog::create_user_view(
        db,
        &view.schema,
        &view.name,
        &plan::unpopulated_sql(plan, &view.name),
    )?;
    Ok(Outcome {
        notices: Vec::new(),
        rows,
        downstream: populated && downstream.is_some(),
        stats: None,
    })
}
