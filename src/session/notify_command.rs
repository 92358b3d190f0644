//! LISTEN, UNLISTEN, NOTIFY and `SELECT pg_notify(channel, payload)` in a session: LISTEN and
//! UNLISTEN change the session's subscriptions at once (see `notify::Listener::listen`); a
//! notification joins the transaction's queue and is delivered when it commits.

use super::context::Context;
use super::reply::{Reply, SqlError};
use super::transaction::Tx;
use super::Out;
use crate::sql::notify::{Arg, NotifyCommand};
use crate::sqlstate::SqlState;
use crate::types::ParamValue;

/// Runs the command with the portal's bound `params`; returns its command tag.
pub fn run(
    ctx: &Context,
    tx: &mut Tx,
    cmd: &NotifyCommand,
    params: &[ParamValue],
    out: &Out,
) -> Result<&'static str, SqlError> {
    match cmd {
        NotifyCommand::Listen(channel) => {
            ctx.notify.listen(channel);
            Ok("LISTEN")
        }
        NotifyCommand::Unlisten(channel) => {
            ctx.notify.unlisten(channel.as_deref());
            Ok("UNLISTEN")
        }
        NotifyCommand::Notify { channel, payload } => {
            queue(tx, channel.clone(), payload.clone())?;
            Ok("NOTIFY")
        }
        NotifyCommand::PgNotify {
            channel, payload, ..
        } => {
            // A NULL channel is an empty one (refused); a NULL payload an empty payload.
            let channel = text(channel, params)?.unwrap_or_default();
            let payload = text(payload, params)?.unwrap_or_default();
            queue(tx, channel, payload)?;
            out.send(Reply::Rows(vec![super::reply::text_row("")], 1));
            Ok("SELECT 1")
        }
    }
}

fn queue(tx: &mut Tx, channel: String, payload: String) -> Result<(), SqlError> {
    super::notify::check(&channel, &payload)?;
    tx.notes.push(channel, payload);
    Ok(())
}

/// An argument's text; None for NULL.
fn text(arg: &Arg, params: &[ParamValue]) -> Result<Option<String>, SqlError> {
    match arg {
        Arg::Text(t) => Ok(Some(t.clone())),
        Arg::Null => Ok(None),
        Arg::Param(n) => match params.get(n - 1) {
            Some(ParamValue::Text(t)) => Ok(Some(t.clone())),
            Some(ParamValue::Null) => Ok(None),
            Some(_) => Err(SqlError::new(
                SqlState::UNDEFINED_FUNCTION,
                "function pg_notify takes text arguments",
            )),
            None => Err(SqlError::new(
                SqlState::PROTOCOL_VIOLATION,
                format!("there is no parameter ${n}"),
            )),
        },
    }
}
