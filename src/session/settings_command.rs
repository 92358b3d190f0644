//! SET, SHOW, RESET, DISCARD ALL and DEALLOCATE, answered by the server: the session's
//! PostgreSQL settings (reported back with ParameterStatus) and its prepared statements.

use std::collections::HashMap;
use std::rc::Rc;

use super::context::Context;
use super::exec::Portal;
use super::reply::{Reply, SqlError};
use super::statement::Statement;
use super::transaction::Txn;
use super::Out;
use crate::sql::Command;
use crate::sqlstate::SqlState;

/// The session's prepared statements and portals, by name.
pub type Prepared<'a> = (
    &'a mut HashMap<String, Rc<Statement>>,
    &'a mut HashMap<String, Portal>,
);

/// SET / SHOW / RESET / DISCARD / DEALLOCATE answered by the server.
/// Returns the command tag; None when `cmd` is not one of them.
pub fn run(
    cmd: &Command,
    ctx: &mut Context,
    txn: Txn,
    (statements, portals): Prepared,
    out: &Out,
) -> Option<Result<String, SqlError>> {
    Some(match cmd {
        Command::Set { name, value } => {
            if let Some((k, v)) = ctx.settings.set(name, value.as_deref()) {
                out.send(Reply::ParameterStatus(k, v));
            }
            let zone = value
                .as_deref()
                .filter(|_| name.eq_ignore_ascii_case("timezone"));
            if let Some(notice) = zone.and_then(crate::compat::zone_notice) {
                out.send(Reply::Notice(SqlError::new(
                    SqlState::SUCCESSFUL_COMPLETION,
                    notice,
                )));
            }
            Ok("SET".into())
        }
        Command::Reset { name: Some(name) } => {
            if let Some((k, v)) = ctx.settings.set(name, None) {
                out.send(Reply::ParameterStatus(k, v));
            }
            Ok("RESET".into())
        }
        Command::Reset { name: None } => {
            for (k, v) in ctx.settings.reset_all() {
                out.send(Reply::ParameterStatus(k, v));
            }
            Ok("RESET".into())
        }
        Command::Show { name } => {
            let value = if name == "transaction isolation level" {
                Some("serializable".to_string())
            } else {
                ctx.settings.get(name)
            };
            let row = super::reply::text_row(&value.unwrap_or_default());
            out.send(Reply::Rows(vec![row], 1));
            Ok("SHOW".into())
        }
        Command::TransactionMode => Ok("SET".into()),
        Command::DiscardAll => {
            if matches!(txn, Txn::Block | Txn::Failed) {
                return Some(Err(SqlError::new(
                    SqlState::ACTIVE_SQL_TRANSACTION,
                    "DISCARD ALL cannot run inside a transaction block",
                )));
            }
            statements.clear();
            portals.clear();
            // DISCARD ALL includes UNLISTEN *, as in PostgreSQL.
            ctx.notify.unlisten(None);
            for (k, v) in ctx.settings.reset_all() {
                out.send(Reply::ParameterStatus(k, v));
            }
            Ok("DISCARD ALL".into())
        }
        Command::Deallocate { name: Some(n) } => {
            if statements.remove(n).is_none() {
                if let Err(e) = ctx
                    .conn
                    .exec(&format!("DEALLOCATE {}", crate::sql::quote_ident(n)))
                {
                    return Some(Err(e.into()));
                }
            }
            Ok("DEALLOCATE".into())
        }
        Command::Deallocate { name: None } => {
            statements.clear();
            Ok("DEALLOCATE ALL".into())
        }
        _ => return None,
    })
}
