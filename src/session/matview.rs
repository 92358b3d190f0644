//! Materialized views in a session: their commands (CREATE, REFRESH, EXPLAIN REFRESH, DROP,
//! ALTER … RENAME), and the checks that keep users from writing into views, internal state, or
//! the tables views depend on.

use crate::sqlstate::SqlState;

use super::capture_txn::CaptureTxn;
use super::context::Context;
use super::ivm_sql::{ConnSql, HotSql};
use super::reply::{Reply, SqlError};
use super::transaction::Tx;
use super::Out;
use crate::engine::Conn;
use crate::ivm;
use crate::sql::{self, Command, Lexed, Name};

fn ivm_err(e: ivm::IvmError) -> SqlError {
    SqlError::new(e.sqlstate(), e.to_string())
}

/// A relation's name as the IVM engine reads it: quoted, with PostgreSQL's `public` as DuckDB's
/// `main` (and `main` for a three-part name's missing schema).
fn display(n: &Name) -> String {
    let name = crate::sql::quote_ident(&n.name);
    let schema = match n.schema.as_deref() {
        Some(s) if s.eq_ignore_ascii_case("public") => Some("main".to_string()),
        Some(s) => Some(crate::sql::quote_ident(s)),
        None => None,
    };
    match (&n.catalog, schema) {
        (Some(c), Some(s)) => format!("{}.{s}.{name}", crate::sql::quote_ident(c)),
        (None, Some(s)) => format!("{s}.{name}"),
        _ => name,
    }
}

/// The session's `duckmv.refresh_mode`.
fn refresh_mode(ctx: &Context) -> Result<ivm::RefreshMode, SqlError> {
    let mode = ctx.settings.get("duckmv.refresh_mode").unwrap_or_default();
    ivm::RefreshMode::parse(&mode).map_err(ivm_err)
}

/// Runs a materialized-view command; returns its command tag.
pub fn run_command(
    ctx: &mut Context,
    tx: &mut Tx,
    cmd: &Command,
    text: &Lexed,
    out: &Out,
) -> Result<String, SqlError> {
    let outcome = match cmd {
        Command::CreateMatView {
            name,
            columns,
            query,
            with_data,
            if_not_exists,
            or_replace,
            refresh,
        } => {
            check_internal_name(name)?;
            // A policy that cannot be honoured fails before any work.
            let policy = refresh.as_deref().map(parse_policy).transpose()?;
            let lexed_query = text
                .after_keyword("AS")
                .unwrap_or_else(|| Lexed::new(query.as_str()));
            // The view's query runs with the creator's rights, now and at every refresh.
            ctx.guard(&lexed_query, crate::engine::StatementKind::Select)?;
            tx.capture.bump_at_end = true;
            tx.prepare_create(ctx, &lexed_query)?;
            if *or_replace {
                replace_existing(ctx, &mut tx.capture, name)?;
            }
            let v = ivm::CreateView {
                name: display(name),
                columns: columns.clone(),
                query: query.clone(),
                with_data: *with_data,
                if_not_exists: *if_not_exists,
            };
            let o = ivm::create_view(&mut ConnSql(&ctx.conn), &v).map_err(ivm_err)?;
            // `auto` weighs the first refreshes against what populating the view took.
            if let Some(s) = &o.stats {
                ctx.shared
                    .views
                    .note_population(s.view_id, s.duration_ms, o.rows);
            }
            if let Some(p) = policy.filter(|p| *p != ivm::RefreshPolicy::OnDemand) {
                ivm::set_refresh_policy(&mut ConnSql(&ctx.conn), &v.name, p).map_err(ivm_err)?;
            }
            // The new view is in this transaction's catalog, and its sources are tracked.
            reload_matviews(ctx, &mut tx.capture);
            let tag = if *with_data {
                format!("SELECT {}", o.rows)
            } else {
                "CREATE MATERIALIZED VIEW".into()
            };
            (o, tag)
        }
        Command::RefreshMatView { name, with_data } => {
            let mode = refresh_mode(ctx)?;
            let tag = "REFRESH MATERIALIZED VIEW".to_string();
            let target = Target {
                display: display(name),
                bare: name.name.to_ascii_lowercase(),
            };
            match refresh(ctx, tx, &target, *with_data, mode, IfMissing::Fail)? {
                Some(o) => (o, tag),
                None => return Ok(tag),
            }
        }
        Command::AlterMatViewOptions { name, refresh } => {
            let tag = "ALTER MATERIALIZED VIEW".to_string();
            let mut db = ConnSql(&ctx.conn);
            let target = display(name);
            let Some(policy) = refresh else {
                // Only parameters duckmv does not use: the view must exist all the same.
                if !ivm::is_materialized_view(&mut db, &target).map_err(ivm_err)? {
                    return Err(ivm_err(ivm::IvmError::NoSuchView(name.name.clone())));
                }
                return Ok(tag);
            };
            let policy = match policy {
                Some(text) => parse_policy(text)?,
                None => ivm::RefreshPolicy::OnDemand,
            };
            let o = ivm::set_refresh_policy(&mut db, &target, policy).map_err(ivm_err)?;
            reload_matviews(ctx, &mut tx.capture);
            (o, tag)
        }
        Command::ExplainRefresh { name } => {
            let mode = refresh_mode(ctx)?;
            let mut db = HotSql::new(&ctx.conn);
            let lines =
                ivm::explain_refresh(&mut db, Some(&ctx.shared.views), &display(name), mode)
                    .map_err(ivm_err)?;
            let rows = lines.iter().map(|l| super::reply::text_row(l)).collect();
            out.send(Reply::Rows(rows, 1));
            return Ok("EXPLAIN".into());
        }
        Command::DropMatView {
            names,
            if_exists,
            cascade,
        } => {
            let names: Vec<String> = names.iter().map(display).collect();
            let o = ivm::drop_views(&mut ConnSql(&ctx.conn), &names, *if_exists, *cascade)
                .map_err(ivm_err)?;
            reload_matviews(ctx, &mut tx.capture);
            (o, "DROP MATERIALIZED VIEW".into())
        }
        Command::RenameMatView { name, new_name } => {
            let o = ivm::rename_view(&mut ConnSql(&ctx.conn), &display(name), new_name)
                .map_err(ivm_err)?;
            reload_matviews(ctx, &mut tx.capture);
            (o, "ALTER MATERIALIZED VIEW".into())
        }
        _ => {
            return Err(SqlError::new(
                SqlState::INTERNAL_ERROR,
                "not a server command",
            ))
        }
    };
    for n in outcome.0.notices {
        out.send(Reply::Notice(SqlError::new(
            SqlState::SUCCESSFUL_COMPLETION,
            n,
        )));
    }
    Ok(outcome.1)
}

/// A view to refresh: as the engine names it, and its bare lower-cased name (as the views that
/// read it name it).
pub struct Target {
    pub display: String,
    pub bare: String,
}

/// How a refresh treats a view that is not there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    /// 42P01, as `REFRESH MATERIALIZED VIEW` of an unknown name.
    Fail,
    /// Nothing to do: immediate maintenance of a view the server's policies still list but
    /// this transaction does not see (another session dropped it, or has not committed it).
    Skip,
}

/// Whether `cmd` is a REFRESH with nothing to do, for a session with no transaction open: it is
/// answered at once, without the BEGIN and COMMIT that are most of such a refresh's cost.
pub fn is_idle_noop_refresh(ctx: &Context, capture: &CaptureTxn, cmd: &Command) -> bool {
    let Command::RefreshMatView {
        name,
        with_data: true,
    } = cmd
    else {
        return false;
    };
    matches!(refresh_mode(ctx), Ok(m) if m != ivm::RefreshMode::Full)
        && capture.refresh_is_noop_now(&display(name))
}

/// Refreshes a view in this transaction, as `REFRESH MATERIALIZED VIEW` does; None when there
/// was nothing to do. Immediate views reading it are maintained in the same transaction.
pub fn refresh(
    ctx: &mut Context,
    tx: &mut Tx,
    target: &Target,
    with_data: bool,
    mode: ivm::RefreshMode,
    missing: IfMissing,
) -> Result<Option<ivm::Outcome>, SqlError> {
    let name = &target.display;
    if with_data && mode != ivm::RefreshMode::Full && tx.capture.refresh_is_noop(name) {
        return Ok(None);
    }
    let lock = ctx.shared.refresh_lock(name);
    let mut o = {
        let _guard = lock.lock();
        let mut db = HotSql::new(&ctx.conn);
        match ivm::refresh_view_cached(&mut db, &ctx.shared.views, name, with_data, mode) {
            Err(ivm::IvmError::NoSuchView(_)) if missing == IfMissing::Skip => return Ok(None),
            r => r.map_err(ivm_err)?,
        }
    };
    tx.capture
        .after_refresh(name, &target.bare, with_data, o.downstream, o.stats.take());
    super::notify::refreshed(&mut tx.notes, name, o.rows);
    if o.rows > 0 {
        super::immediate::maintain(ctx, tx, std::slice::from_ref(&target.bare))?;
    }
    Ok(Some(o))
}

/// A `refresh` storage parameter's policy, or 22023.
fn parse_policy(text: &str) -> Result<ivm::RefreshPolicy, SqlError> {
    ivm::RefreshPolicy::parse(text).map_err(ivm_err)
}

/// CREATE OR REPLACE MATERIALIZED VIEW drops the view it replaces first (the new one gets a new
/// id, so cached plans of the old one cannot be used for it). Views that read it keep it from
/// being replaced, as they keep it from being dropped; a table or plain view is not replaced.
fn replace_existing(ctx: &Context, capture: &mut CaptureTxn, name: &Name) -> Result<(), SqlError> {
    let n = display(name);
    let mut db = ConnSql(&ctx.conn);
    if !ivm::is_materialized_view(&mut db, &n).map_err(ivm_err)? {
        if ivm::relation_exists(&mut db, &n).map_err(ivm_err)? {
            let mut e = SqlError::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("\"{}\" is not a materialized view", name.name),
            );
            e.hint = Some("Drop it first, or choose another name.".into());
            return Err(e);
        }
        return Ok(());
    }
    let deps = ivm::dependents(&mut db, &n).map_err(ivm_err)?;
    if !deps.is_empty() {
        let object = format!("materialized view {}", name.name);
        let hint = "Drop the dependent materialized views first.";
        return Err(dependents_error("replace", &object, &deps, hint));
    }
    ivm::drop_views(&mut db, &[n], false, false).map_err(ivm_err)?;
    reload_matviews(ctx, capture);
    Ok(())
}

/// 2BP01 for a DROP or REPLACE of `object` that materialized views `deps` read, with one line
/// of detail per view, as PostgreSQL lists dependent objects.
fn dependents_error(verb: &str, object: &str, deps: &[String], hint: &str) -> SqlError {
    let mut e = SqlError::new(
        SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
        format!("cannot {verb} {object} because other objects depend on it"),
    );
    let lines: Vec<String> = deps
        .iter()
        .map(|d| format!("materialized view {d} depends on {object}"))
        .collect();
    e.detail = Some(lines.join("\n"));
    e.hint = Some(hint.into());
    e
}

fn check_internal_name(n: &Name) -> Result<(), SqlError> {
    if n.schema
        .as_deref()
        .is_some_and(|s| s.eq_ignore_ascii_case("_duckmv"))
    {
        return Err(SqlError::new(
            SqlState::INSUFFICIENT_PRIVILEGE,
            "permission denied for schema _duckmv: it holds duckmv's internal state",
        ));
    }
    Ok(())
}

/// Checks run before DuckDB executes a statement.
pub fn check_statement(
    ctx: &Context,
    tx: &mut Tx,
    cmd: &Command,
    out: &Out,
) -> Result<(), SqlError> {
    match cmd {
        // Write targets were checked once, when the statement was prepared.
        Command::Passthrough => {}
        Command::DropRelation { names, cascade } => {
            for n in names {
                check_internal_name(n)?;
                if ctx.shared.is_matview(&n.name) {
                    let mut e = SqlError::new(
                        SqlState::WRONG_OBJECT_TYPE,
                        format!("\"{}\" is not a table or view", n.name),
                    );
                    e.hint =
                        Some("Use DROP MATERIALIZED VIEW to remove a materialized view.".into());
                    return Err(e);
                }
                // No view reads it: nothing to ask the catalog (see `Shared::is_tracked`).
                if !ctx.shared.is_tracked(&n.name) {
                    continue;
                }
                let deps =
                    ivm::dependents(&mut ConnSql(&ctx.conn), &display(n)).map_err(ivm_err)?;
                if deps.is_empty() {
                    continue;
                }
                if !*cascade {
                    let hint = "Use DROP ... CASCADE to drop the dependent objects too.";
                    return Err(dependents_error("drop", &n.name, &deps, hint));
                }
                if !in_server_database(n) {
                    // The views live in the server's database; DuckDB lets one transaction
                    // write only one database.
                    let mut e = SqlError::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        format!(
                            "cannot drop {} and materialized view {} in one transaction: they are in different databases",
                            n.name,
                            deps.join(", ")
                        ),
                    );
                    e.hint = Some("DROP MATERIALIZED VIEW first, then the table.".into());
                    return Err(e);
                }
                for d in &deps {
                    out.send(Reply::Notice(SqlError::new(
                        SqlState::SUCCESSFUL_COMPLETION,
                        format!("drop cascades to materialized view {d}"),
                    )));
                }
                ivm::drop_views(&mut ConnSql(&ctx.conn), &deps, true, true).map_err(ivm_err)?;
                reload_matviews(ctx, &mut tx.capture);
            }
        }
        Command::AlterRelation { name } => {
            check_internal_name(name)?;
            if ctx.shared.is_matview(&name.name) {
                return Err(SqlError::new(
                    SqlState::WRONG_OBJECT_TYPE,
                    format!(
                        "\"{}\" is a materialized view: use ALTER MATERIALIZED VIEW",
                        name.name
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// ALTER TABLE of a table materialized views read, run by the IVM engine so the views stay
/// correct across it (see `ivm::alter_table`): its command tag, or None for any other statement.
pub fn alter_tracked(
    ctx: &Context,
    tx: &mut Tx,
    cmd: &Command,
    text: &Lexed,
    out: &Out,
) -> Result<Option<String>, SqlError> {
    let Command::AlterRelation { name } = cmd else {
        return Ok(None);
    };
    let table = display(name);
    if !ctx.shared.is_tracked(&name.name) {
        return Ok(None);
    }
    if ivm::dependents(&mut ConnSql(&ctx.conn), &table)
        .map_err(ivm_err)?
        .is_empty()
    {
        return Ok(None);
    }
    let change = match sql::alter::alter_op(text.text()) {
        sql::alter::AlterOp::InPlace => ivm::ColumnChange::InPlace,
        sql::alter::AlterOp::RenameTable => ivm::ColumnChange::RenameTable,
        sql::alter::AlterOp::Other { renamed, dropped } => {
            ivm::ColumnChange::Rebuild { renamed, dropped }
        }
    };
    let cascade = text.has_kw("CASCADE");
    let duck_sql = crate::compat::rewrite(text).unwrap_or_else(|| text.text().to_string());
    let o = ivm::alter_table(&mut ConnSql(&ctx.conn), &table, &duck_sql, &change, cascade)
        .map_err(ivm_err)?;
    reload_matviews(ctx, &mut tx.capture);
    for n in o.notices {
        out.send(Reply::Notice(SqlError::new(
            SqlState::SUCCESSFUL_COMPLETION,
            n,
        )));
    }
    Ok(Some(sql::command_tag(
        text,
        crate::engine::StatementKind::Alter,
        0,
        false,
    )))
}

/// Writes into a materialized view (42809) or into internal state (42501).
pub fn check_writes(ctx: &Context, text: &Lexed) -> Result<(), SqlError> {
    // The name set is a cheap first test; the catalog says whether this schema's is one.
    let replaced = sql::replaced_relation(text).filter(|n| {
        ctx.shared.is_matview(&n.name)
            && ivm::is_materialized_view(&mut ConnSql(&ctx.conn), &display(n)).unwrap_or(true)
    });
    if let Some(n) = replaced {
        let mut e = SqlError::new(
            SqlState::WRONG_OBJECT_TYPE,
            format!("\"{}\" is a materialized view", n.name),
        );
        e.hint = Some(
            "Use CREATE OR REPLACE MATERIALIZED VIEW, or DROP MATERIALIZED VIEW first.".into(),
        );
        return Err(e);
    }
    check_write_targets(ctx, &sql::write_targets(text))?;
    if touches_internal_schema(text) {
        return Err(SqlError::new(
            SqlState::INSUFFICIENT_PRIVILEGE,
            "permission denied for schema _duckmv: it holds duckmv's internal state",
        ));
    }
    Ok(())
}

/// Writes into a materialized view (42809) or into internal state (42501), by target.
pub fn check_write_targets(ctx: &Context, targets: &[Name]) -> Result<(), SqlError> {
    for t in targets {
        check_internal_name(t)?;
        if ctx.shared.is_matview(&t.name) {
            return Err(SqlError::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("cannot change materialized view \"{}\"", t.name),
            ));
        }
    }
    Ok(())
}

/// DDL aimed at the internal schema (CREATE/DROP/ALTER ... _duckmv.x).
fn touches_internal_schema(text: &Lexed) -> bool {
    if !matches!(
        text.first_word(),
        Some("CREATE" | "DROP" | "ALTER" | "COMMENT")
    ) {
        return false;
    }
    text.tokens().windows(2).any(|w| {
        matches!(w[0].kind, sql::lex::Tok::Word | sql::lex::Tok::Ident)
            && w[0].text.eq_ignore_ascii_case("_duckmv")
            && w[1].is_punct(".")
    })
}

/// After a command changed the catalog: the capture lock's epoch moves at the transaction's
/// end, and the server's caches are read again (see `Shared::reload_catalog`).
pub fn reload_matviews(ctx: &Context, capture: &mut CaptureTxn) {
    capture.bump_at_end = true;
    capture.catalog_reread = true;
    ctx.shared.reload_catalog(&ctx.conn);
}

/// For an upsert or MERGE whose target a materialized view reads: the plain
/// statements to run instead (DuckDB refuses both on tables with capture
/// triggers). None for every other statement.
pub fn rewrite_for_capture(
    ctx: &Context,
    text: &Lexed,
) -> Result<Option<sql::upsert::Rewrite>, SqlError> {
    let toks = text.tokens();
    let merge = toks.first().is_some_and(|t| t.is_kw("MERGE"));
    let or_replace = toks.get(1).is_some_and(|t| t.is_kw("OR"))
        && toks.get(2).is_some_and(|t| t.is_kw("REPLACE"));
    let candidate = merge
        || toks.first().is_some_and(|t| t.is_kw("INSERT"))
            && (or_replace || text.has_kw("CONFLICT"));
    if !candidate {
        return Ok(None);
    }
    let Some(target) = sql::write_targets(text).into_iter().next() else {
        return Ok(None);
    };
    // Tables of other attached databases have no capture triggers: DuckDB runs these itself.
    if !in_server_database(&target) || !ctx.shared.is_tracked(&target.name) {
        return Ok(None);
    }
    let deps = ivm::dependents(&mut ConnSql(&ctx.conn), &display(&target)).map_err(ivm_err)?;
    if deps.is_empty() {
        return Ok(None);
    }
    let conn = &ctx.conn;
    let mut columns = |_: &str| table_columns(conn, &target);
    let refuse = |what: &str| {
        let mut e = SqlError::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!(
                "{what} is not supported on table {}, which materialized view {} reads",
                target.name, deps[0]
            ),
        );
        e.hint = Some(if merge {
            "Write each clause as UPDATE SET col = …, INSERT [(cols)] VALUES (…), DELETE or DO NOTHING."
                .into()
        } else {
            "Use INSERT … ON CONFLICT (key columns) DO UPDATE SET …".into()
        });
        e
    };
    match sql::upsert::rewrite(text.text(), &mut columns) {
        Some(r) => r.map(Some).map_err(|r| SqlError::new(r.code, r.message)),
        // What the parser cannot read here is DuckDB's own syntax (UPDATE or INSERT without a
        // column list, INSERT BY NAME, THEN ERROR) or a mistake; DuckDB cannot run either on a
        // table with capture triggers.
        None if merge => Err(refuse("this form of MERGE")),
        None if or_replace => Err(refuse("INSERT OR REPLACE")),
        None => Ok(None),
    }
}

/// Whether `n` names a relation of the server's own database (not of another attached one).
fn in_server_database(n: &Name) -> bool {
    n.catalog
        .as_deref()
        .is_none_or(|c| c.eq_ignore_ascii_case(crate::engine::CATALOG))
}

/// The columns of `table`, in order, from the database and schema it names.
fn table_columns(conn: &Conn, table: &Name) -> Result<Vec<String>, String> {
    use ivm::Sql;
    let lit = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let db = table
        .catalog
        .as_deref()
        .map(lit)
        .unwrap_or_else(|| "current_database()".into());
    let schema = match table.schema.as_deref() {
        None => "main",
        Some(s) if s.eq_ignore_ascii_case("public") => "main",
        Some(s) => s,
    };
    let q = format!(
        "SELECT column_name FROM information_schema.columns WHERE lower(table_catalog) = lower({db}) \
         AND lower(table_schema) = lower({}) AND lower(table_name) = lower({}) ORDER BY ordinal_position",
        lit(schema),
        lit(&table.name)
    );
    let rows = ConnSql(conn).query(&q).map_err(|e| e.message)?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect())
}
