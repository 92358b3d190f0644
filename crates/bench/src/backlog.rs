//! A small refresh beside another view's backlog. Views over one table share its change log,
//! and a view refreshed less often leaves its rows there. V1 is refreshed after a few changed
//! `lineitem` rows, first with every view over `lineitem` up to date, then while the others
//! have not read a large change yet: V1 reads the same few rows both times, so a refresh whose
//! cost followed its own change takes the same time, and one that read the whole log slows
//! down by the backlog.

use serde::Serialize;
use tokio_postgres::Client;

use crate::data::Sizes;
use crate::error::BenchError;
use crate::measure::{exec, scalar, scalar_i64, timed};
use crate::stats::{median, ms, ratio};
use crate::views::{self, View};

/// Refreshes timed per series.
const SAMPLES: usize = 11;

#[derive(Debug, Clone, Serialize)]
pub struct Backlog {
    /// The view refreshed.
    pub view: String,
    /// Rows of the log its refreshes share with the views behind, during the second series.
    pub log_rows: i64,
    /// REFRESH after a few changed rows, every view up to date.
    pub quiet_ms: Vec<f64>,
    /// The same, the other views behind by a large change.
    pub backlog_ms: Vec<f64>,
    /// Median with the backlog over median without.
    pub ratio: Option<f64>,
}

/// The two series for `view` (a view of `lineitem`), `others` being the views behind in the
/// second; None when there is no other view of `lineitem` to fall behind.
pub async fn measure(
    client: &Client,
    sizes: &Sizes,
    view: &View,
    others: &[View],
) -> Result<Option<Backlog>, BenchError> {
    if others.is_empty() {
        return Ok(None);
    }
    let refresh = |v: &View| format!("REFRESH MATERIALIZED VIEW {}", v.name);
    for v in others.iter().chain(std::iter::once(view)) {
        exec(client, &refresh(v)).await?;
    }
    // About 15 orders' lines per round at any scale.
    let every = (sizes.orders / 15).max(1);
    let quiet_ms = series(client, view, every, 0).await?;
    // Every tenth order's lines, updated to what they were: the log holds them twice (old and
    // new), for every view of `lineitem`; V1 reads its share at once.
    exec(
        client,
        "UPDATE lineitem SET l_quantity = l_quantity WHERE l_orderkey % 10 = 3",
    )
    .await?;
    exec(client, &refresh(view)).await?;
    let log_rows = log_rows(client).await?;
    let backlog_ms = series(client, view, every, SAMPLES as u64 + 1).await?;
    for v in others {
        exec(client, &refresh(v)).await?;
    }
    // Every view read its share of the shared log once, whenever it came.
    for v in others.iter().chain(std::iter::once(view)) {
        let differ = scalar_i64(client, &views::oracle_sql(v)).await?;
        if differ != 0 {
            return Err(BenchError::Server(format!(
                "{} differs from its query in {differ} rows after the backlog",
                v.name
            )));
        }
    }
    let ratio = ratio(median(&backlog_ms), median(&quiet_ms));
    Ok(Some(Backlog {
        view: view.name.into(),
        log_rows,
        quiet_ms,
        backlog_ms,
        ratio,
    }))
}

/// The rows of the log of `lineitem`.
async fn log_rows(client: &Client) -> Result<i64, BenchError> {
    let table = scalar(
        client,
        "SELECT log_table FROM _duckmv.change_logs WHERE source_name = 'lineitem' \
         AND source_view_id IS NULL",
    )
    .await?
    .unwrap_or_default();
    if table.is_empty() {
        return Ok(0);
    }
    scalar_i64(client, &format!("SELECT count(*) FROM {table}")).await
}

/// `SAMPLES` rounds of a few changed `lineitem` rows and a timed REFRESH of `view`, after a
/// CHECKPOINT (so that the server's own, in a quiet moment, does not land inside one series
/// and not the other) and an untimed round.
async fn series(
    client: &Client,
    view: &View,
    every: u64,
    offset: u64,
) -> Result<Vec<f64>, BenchError> {
    // Refused while another transaction writes; then the series goes on without it.
    let _ = exec(client, "CHECKPOINT").await;
    let mut out = Vec::new();
    for i in 0..=SAMPLES as u64 {
        exec(
            client,
            &format!(
                "UPDATE lineitem SET l_quantity = l_quantity + 1 \
                 WHERE l_orderkey % {every} = {}",
                (i + offset) % every
            ),
        )
        .await?;
        let d = timed(client, &format!("REFRESH MATERIALIZED VIEW {}", view.name)).await?;
        if i > 0 {
            out.push(ms(d));
        }
    }
    Ok(out)
}
