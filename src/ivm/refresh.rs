//! REFRESH: apply pending deltas (incremental views) or recompute (full views, first
//! population). Runs inside the caller's transaction: the delta rows read are deleted in the
//! same transaction, so under snapshot isolation a refresh consumes exactly the changes it saw —
//! a writer that commits later keeps its rows for the next refresh, and nothing is applied twice.

use std::time::Instant;

use super::capture;
use super::catalog::{self, ViewRow};
use super::plan::{self, Body, Plan};
use super::{IvmError, Outcome, Sql};

/// Refreshes a view; `with_data = false` empties it and marks it unpopulated.
pub fn refresh(db: &mut dyn Sql, view: &ViewRow, with_data: bool) -> Result<Outcome, IvmError> {
    if !with_data {
        return unpopulate(db, view);
    }
    if !view.populated || matches!(view.plan.body, Body::Full { .. }) {
        return recompute(db, view);
    }
    incremental(db, view)
}

/// Which sources have pending delta rows: one cheap query, and the whole cost of a refresh
/// with nothing to do.
fn probe(db: &mut dyn Sql, plan: &Plan) -> Result<Vec<bool>, IvmError> {
    let probes: Vec<String> = plan
        .sources
        .iter()
        .map(|s| match &s.delta {
            Some(d) => format!("EXISTS (SELECT 1 FROM {d})"),
            None => "FALSE".to_string(),
        })
        .collect();
    if probes.is_empty() {
        return Ok(Vec::new());
    }
    let rows = db.query(&format!("SELECT {}", probes.join(", ")))?;
    let row = rows.into_iter().next().unwrap_or_default();
    Ok(row.iter().map(|v| v.as_deref() == Some("true")).collect())
}

fn incremental(db: &mut dyn Sql, view: &ViewRow) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    let changed = probe(db, plan)?;
    if !changed.iter().any(|c| *c) {
        return Ok(Outcome::default());
    }
    let start = Instant::now();
    let downstream = catalog::downstream_deltas(db, plan.id)?;
    let work = plan::work(plan.id);
    let mut rows = 0u64;
    match &plan.body {
        Body::Bag { rel, distinct } => {
            if let Some(delta) = plan::bag_delta_sql(plan, rel, &changed) {
                db.exec(&format!("INSERT INTO {work} {delta}"))?;
                for d in &downstream {
                    let change = if *distinct {
                        plan::distinct_transitions_sql(plan)
                    } else {
                        let cols = plan::positional(plan.columns.len()).join(", ");
                        format!("SELECT {cols}, _mv_count FROM {work}")
                    };
                    db.exec(&format!("INSERT INTO {d} {change}"))?;
                }
                rows += db.exec(&plan::bag_merge_sql(plan))?;
            }
        }
        Body::Aggregate(a) => {
            if let Some(fill) = plan::agg_fill_work_sql(plan, a, &changed) {
                db.exec(&fill)?;
                let affected = plan::agg_affected_rel(plan, a);
                for d in &downstream {
                    db.exec(&format!(
                        "INSERT INTO {d} SELECT *, -1 FROM ({})",
                        plan::output_sql(plan, &affected)
                    ))?;
                }
                rows += db.exec(&plan::agg_apply_sql(plan, a))?;
                if plan::agg_has_extremes(a) {
                    let rc = db.query(&format!(
                        "SELECT EXISTS (SELECT 1 FROM {work} WHERE _mv_rc)"
                    ))?;
                    if rc.first().and_then(|r| r[0].as_deref()) == Some("true") {
                        for sql in plan::agg_recompute_sql(plan, a) {
                            rows += db.exec(&sql)?;
                        }
                    }
                }
                for d in &downstream {
                    db.exec(&format!(
                        "INSERT INTO {d} SELECT *, 1 FROM ({})",
                        plan::output_sql(plan, &affected)
                    ))?;
                }
            }
        }
        Body::Full { .. } => unreachable!("full views are recomputed"),
    }
    db.exec(&format!("DELETE FROM {work}"))?;
    for (s, c) in plan.sources.iter().zip(&changed) {
        if let (Some(d), true) = (&s.delta, c) {
            db.exec(&format!("DELETE FROM {d}"))?;
        }
    }
    catalog::record_refresh(db, plan.id, start.elapsed().as_secs_f64() * 1000.0, rows)?;
    Ok(Outcome {
        notices: Vec::new(),
        rows,
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

/// Recomputes the storage from scratch and marks the view populated. Downstream views get the
/// old rows with −1 and the new rows with +1.
fn recompute(db: &mut dyn Sql, view: &ViewRow) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    let start = Instant::now();
    let downstream = catalog::downstream_deltas(db, plan.id)?;
    let out = plan::output_view(plan.id);
    let storage = plan::storage(plan.id);
    if view.populated {
        for d in &downstream {
            db.exec(&format!("INSERT INTO {d} SELECT *, -1 FROM {out}"))?;
        }
    }
    let mut rows = db.exec(&format!("DELETE FROM {storage}"))?;
    rows += db.exec(&format!("INSERT INTO {storage} {}", state_sql(plan)))?;
    capture::clear(db, plan)?;
    for d in &downstream {
        db.exec(&format!("INSERT INTO {d} SELECT *, 1 FROM {out}"))?;
    }
    if !view.populated {
        catalog::set_populated(db, plan.id, true)?;
        catalog::create_user_view(
            db,
            &view.schema,
            &view.name,
            &format!("SELECT * FROM {out}"),
        )?;
    }
    catalog::record_refresh(db, plan.id, start.elapsed().as_secs_f64() * 1000.0, rows)?;
    Ok(Outcome {
        notices: Vec::new(),
        rows,
    })
}

/// `REFRESH ... WITH NO DATA`: empties the storage; reading the view fails until the next refresh.
fn unpopulate(db: &mut dyn Sql, view: &ViewRow) -> Result<Outcome, IvmError> {
    let plan = &view.plan;
    if view.populated {
        let out = plan::output_view(plan.id);
        for d in &catalog::downstream_deltas(db, plan.id)? {
            db.exec(&format!("INSERT INTO {d} SELECT *, -1 FROM {out}"))?;
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
    })
}
