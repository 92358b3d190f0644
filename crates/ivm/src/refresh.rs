//! REFRESH: apply pending deltas (incremental views) or recompute (full views, first
//! population, `duckmv.refresh_mode = full`, or a change too large for `auto`). Runs inside the
//! caller's transaction: the view's positions in its change logs move past the rows read in the
//! same transaction, so under snapshot isolation a refresh consumes exactly the changes it saw —
//! a writer that commits later keeps its rows for the next refresh, and nothing is applied twice
//! (see `capture`).
//!
//! Fixed costs are kept small: the plan comes from the [`ViewCache`], one prepared probe counts
//! every source's pending rows (and checks the cached plan is still the view's), and the
//! statements a refresh repeats go through [`Sql::exec_hot`] so DuckDB plans them once.

use std::sync::Arc;
use std::time::Instant;

use super::capture;
use super::catalog::{self, ViewRow};
use super::mode::{self, RefreshMode};
use super::plan::{self, Body, Plan};
use super::text::{lit, split_name};
use super::view_cache::ViewCache;
use super::{IvmError, Outcome, Sql};

/// What the probe saw in this transaction.
struct Pending {
    populated: bool,
    /// Delta rows per source (0 for sources without a delta table).
    rows: Vec<u64>,
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
    let (schema, n) = split_name(name);
    let cached = cache.and_then(|c| c.get(&schema, &n));
    let (view, pending) = match cached {
        Some(v) => match probe(db, &v) {
            Ok(Some(p)) => (v, p),
            Ok(None) => {
                cache.unwrap().forget(&schema, &n);
                load(db, cache, &schema, &n)?
            }
            Err(e) => {
                cache.unwrap().forget(&schema, &n);
                return Err(e);
            }
        },
        None => load(db, cache, &schema, &n)?,
    };
    refresh_probed(db, cache, &view, &pending, with_data, mode)
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
        downstream: capture::downstream_log(db, view.plan.id)?,
    };
    refresh_probed(
        db,
        None,
        view,
        &pending,
        with_data,
        RefreshMode::Incremental,
    )
}

fn refresh_probed(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    view: &ViewRow,
    pending: &Pending,
    with_data: bool,
    mode: RefreshMode,
) -> Result<Outcome, IvmError> {
    if !with_data {
        return unpopulate(db, view, pending.populated, &pending.downstream);
    }
    if !pending.populated
        || matches!(view.plan.body, Body::Full { .. })
        || mode == RefreshMode::Full
    {
        return recompute(db, view, pending.populated, &pending.downstream);
    }
    let changed: Vec<bool> = pending.rows.iter().map(|r| *r > 0).collect();
    if !changed.iter().any(|c| *c) {
        return Ok(Outcome::default());
    }
    let delta: Vec<u64> = pending
        .rows
        .iter()
        .zip(&changed)
        .filter(|(_, c)| **c)
        .map(|(r, _)| *r)
        .collect();
    if mode == RefreshMode::Auto && mode::may_prefer_full(&delta) {
        let base = base_rows(db, cache, &view.plan, &changed)?;
        if mode::prefer_full(&view.plan, &delta, &base) {
            return recompute(db, view, true, &pending.downstream);
        }
    }
    incremental(db, view, &changed, &pending.downstream)
}

/// One query: whether the view (this id, this name) exists in this transaction, whether it is
/// populated, how many delta rows each source has, and which views read it — the whole cost of
/// a refresh with nothing to do. None when the view is not there.
fn probe(db: &mut dyn Sql, view: &ViewRow) -> Result<Option<Pending>, IvmError> {
    let mut cols = vec!["populated".to_string()];
    for s in &view.plan.sources {
        cols.push(match &s.delta {
            Some(d) => format!("(SELECT count(*) FROM {d})"),
            None => "0".to_string(),
        });
    }
    cols.push(format!(
        "(SELECT log_table FROM _duckmv.change_logs WHERE source_view_id = {})",
        view.id
    ));
    let sql = format!(
        "SELECT {} FROM _duckmv.views WHERE id = {} AND name = {} AND schema = {}",
        cols.join(", "),
        view.id,
        lit(&view.name),
        lit(&view.schema)
    );
    let rows = db.query_hot(&sql, &[])?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let n = view.plan.sources.len();
    Ok(Some(Pending {
        populated: row[0].as_deref() == Some("true"),
        downstream: row[n + 1].clone(),
        rows: row[1..=n]
            .iter()
            .map(|v| v.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0))
            .collect(),
    }))
}

/// Rows of each changed source (what a recompute would read). Only a cost estimate: sizes
/// counted by a recent refresh are reused, which saves a statement per large refresh.
fn base_rows(
    db: &mut dyn Sql,
    cache: Option<&ViewCache>,
    plan: &Plan,
    changed: &[bool],
) -> Result<Vec<u64>, IvmError> {
    let rels: Vec<&str> = plan
        .sources
        .iter()
        .zip(changed)
        .filter(|(_, c)| **c)
        .map(|(s, _)| s.relation.as_str())
        .collect();
    if let Some(sizes) = cache.and_then(|c| c.sizes(&rels)) {
        return Ok(sizes);
    }
    let counts: Vec<String> = rels
        .iter()
        .map(|r| format!("(SELECT count(*) FROM {r})"))
        .collect();
    let rows = db.query_hot(&format!("SELECT {}", counts.join(", ")), &[])?;
    let sizes: Vec<u64> = rows
        .into_iter()
        .next()
        .unwrap_or_default()
        .iter()
        .map(|v| v.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0))
        .collect();
    if let Some(c) = cache {
        c.note_sizes(&rels, &sizes);
    }
    Ok(sizes)
}

fn incremental(
    db: &mut dyn Sql,
    view: &ViewRow,
    changed: &[bool],
    downstream: &Option<String>,
) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    let start = Instant::now();
    let work = plan::work(plan.id);
    let mut rows = 0u64;
    match &plan.body {
        Body::Bag { rel, distinct } => {
            if let Some(delta) = plan::bag_delta_sql(plan, rel, changed) {
                if downstream.is_none() {
                    // Nobody needs the change kept: merge it straight from the deltas.
                    let merge = plan::bag_merge_sql(plan, &format!("({delta})"));
                    rows += db.exec_hot(&merge, &[])?;
                    return finish(db, plan, changed, start, rows, false, false);
                }
                db.exec_hot(&format!("INSERT INTO {work} {delta}"), &[])?;
                if let Some(d) = downstream {
                    let change = if *distinct {
                        plan::distinct_transitions_sql(plan)
                    } else {
                        let cols = plan::positional(plan.columns.len()).join(", ");
                        format!("SELECT {cols}, _mv_count FROM {work}")
                    };
                    db.exec_hot(&capture::append_sql(d, &change), &[])?;
                }
                rows += db.exec_hot(&plan::bag_merge_sql(plan, &work), &[])?;
            }
        }
        Body::Aggregate(a) => {
            if downstream.is_none() && a.groups > 0 && !plan::agg_may_recompute(a) {
                // Sums and counts need neither the old state nor a recompute flag: one MERGE
                // from the deltas.
                if let Some(delta) = plan::agg_delta_sql(plan, a, changed) {
                    let merge = plan::agg_apply_sql(plan, a, &format!("({delta})"));
                    rows += db.exec_hot(&merge, &[])?;
                }
                return finish(db, plan, changed, start, rows, false, false);
            }
            if let Some(fill) = plan::agg_fill_work_sql(plan, a, changed) {
                db.exec_hot(&fill, &[])?;
                let affected = plan::agg_affected_rel(plan, a);
                if let Some(d) = downstream {
                    let old = format!("SELECT *, -1 FROM ({})", plan::output_sql(plan, &affected));
                    db.exec_hot(&capture::append_sql(d, &old), &[])?;
                }
                rows += db.exec_hot(&plan::agg_apply_sql(plan, a, &work), &[])?;
                if plan::agg_may_recompute(a) {
                    let rc = db.query_hot(
                        &format!("SELECT EXISTS (SELECT 1 FROM {work} WHERE _mv_rc)"),
                        &[],
                    )?;
                    if rc.first().and_then(|r| r[0].as_deref()) == Some("true") {
                        for sql in plan::agg_recompute_sql(plan, a) {
                            rows += db.exec_hot(&sql, &[])?;
                        }
                    }
                }
                if let Some(d) = downstream {
                    let new = format!("SELECT *, 1 FROM ({})", plan::output_sql(plan, &affected));
                    db.exec_hot(&capture::append_sql(d, &new), &[])?;
                }
            }
        }
        Body::Full { .. } => unreachable!("full views are recomputed"),
    }
    finish(db, plan, changed, start, rows, true, downstream.is_some())
}

/// Empties the work table (when used), consumes the deltas read, and records the refresh.
fn finish(
    db: &mut dyn Sql,
    plan: &Plan,
    changed: &[bool],
    start: Instant,
    rows: u64,
    used_work: bool,
    downstream: bool,
) -> Result<Outcome, IvmError> {
    if used_work {
        db.exec_hot(&format!("DELETE FROM {}", plan::work(plan.id)), &[])?;
    }
    capture::advance(db, plan, changed)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    catalog::record_refresh(db, plan.id, ms, rows, "incremental")?;
    Ok(Outcome {
        notices: Vec::new(),
        rows,
        downstream,
    })
}

/// The SQL computing a view's storage rows from the current base data.
pub fn state_sql(plan: &Plan) -> String {
    match &plan.body {
        Body::Full { query } => format!("SELECT * FROM ({query}) AS _mv_q"),
        Body::Bag { rel, .. } => plan::bag_state_sql(plan, rel),
        Body::Aggregate(a) => plan::agg_state_sql(plan, a, false),
    }
}

/// Recomputes a populated view from its sources, consuming what its logs hold for it.
pub fn recompute_now(db: &mut dyn Sql, view: &ViewRow) -> Result<Outcome, IvmError> {
    let downstream = capture::downstream_log(db, view.plan.id)?;
    recompute(db, view, true, &downstream)
}

/// Recomputes the storage from scratch and marks the view populated. Downstream views get the
/// old rows with −1 and the new rows with +1.
fn recompute(
    db: &mut dyn Sql,
    view: &ViewRow,
    populated: bool,
    downstream: &Option<String>,
) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    let start = Instant::now();
    let out = plan::output_view(plan.id);
    let storage = plan::storage(plan.id);
    if populated {
        if let Some(d) = downstream {
            db.exec_hot(
                &capture::append_sql(d, &format!("SELECT *, -1 FROM {out}")),
                &[],
            )?;
        }
    }
    let mut rows = db.exec_hot(&format!("DELETE FROM {storage}"), &[])?;
    rows += db.exec_hot(&format!("INSERT INTO {storage} {}", state_sql(plan)), &[])?;
    capture::clear(db, plan)?;
    if let Some(d) = downstream {
        db.exec_hot(
            &capture::append_sql(d, &format!("SELECT *, 1 FROM {out}")),
            &[],
        )?;
    }
    if !populated {
        catalog::set_populated(db, plan.id, true)?;
        catalog::create_user_view(
            db,
            &view.schema,
            &view.name,
            &format!("SELECT * FROM {out}"),
        )?;
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    catalog::record_refresh(db, plan.id, ms, rows, "full")?;
    Ok(Outcome {
        notices: Vec::new(),
        rows,
        downstream: downstream.is_some(),
    })
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
    })
}
