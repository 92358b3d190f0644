-- What BI tools, loaders and admin tools read besides the core catalog
-- (catalog.sql, installed first): statistics and activity views, catalogs of
-- features duckmv lacks, and the text functions their generated SQL calls.
-- Same conventions as catalog.sql: schema duckmv, oid columns UINTEGER,
-- CREATE OR REPLACE throughout. {{pg_keywords}} is filled in by compat::install.

-- ------------------------------------------------------------- statistics

-- DuckDB keeps no per-table access counters: they read 0 and the times NULL.
-- n_live_tup is DuckDB's row estimate, which tools show as the row count.
CREATE OR REPLACE VIEW duckmv.pg_stat_user_tables AS
SELECT c.oid AS relid, n.nspname AS schemaname, c.relname,
       0::BIGINT AS seq_scan, NULL::TIMESTAMPTZ AS last_seq_scan, 0::BIGINT AS seq_tup_read,
       0::BIGINT AS idx_scan, NULL::TIMESTAMPTZ AS last_idx_scan, 0::BIGINT AS idx_tup_fetch,
       0::BIGINT AS n_tup_ins, 0::BIGINT AS n_tup_upd, 0::BIGINT AS n_tup_del, 0::BIGINT AS n_tup_hot_upd,
       0::BIGINT AS n_tup_newpage_upd, c.reltuples::BIGINT AS n_live_tup, 0::BIGINT AS n_dead_tup,
       0::BIGINT AS n_mod_since_analyze, 0::BIGINT AS n_ins_since_vacuum,
       NULL::TIMESTAMPTZ AS last_vacuum, NULL::TIMESTAMPTZ AS last_autovacuum,
       NULL::TIMESTAMPTZ AS last_analyze, NULL::TIMESTAMPTZ AS last_autoanalyze,
       0::BIGINT AS vacuum_count, 0::BIGINT AS autovacuum_count, 0::BIGINT AS analyze_count,
       0::BIGINT AS autoanalyze_count
FROM duckmv.pg_class c JOIN duckmv.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm', 'p') AND c.relnamespace <> 11;

CREATE OR REPLACE VIEW duckmv.pg_statio_user_tables AS
SELECT relid, schemaname, relname, 0::BIGINT AS heap_blks_read, 0::BIGINT AS heap_blks_hit,
       0::BIGINT AS idx_blks_read, 0::BIGINT AS idx_blks_hit, NULL::BIGINT AS toast_blks_read,
       NULL::BIGINT AS toast_blks_hit, NULL::BIGINT AS tidx_blks_read, NULL::BIGINT AS tidx_blks_hit
FROM duckmv.pg_stat_user_tables;

CREATE OR REPLACE MACRO duckmv.pg_stat_get_numscans(o) AS 0::BIGINT;

-- The file of a relation with storage is named by its oid (relfilenode).
CREATE OR REPLACE MACRO duckmv.pg_relation_filenode(r) AS (
    SELECT __c.relfilenode FROM duckmv.pg_class __c
    WHERE __c.oid = duckmv.to_regclass(r) AND __c.relkind IN ('r', 'i', 'm', 'S'));

-- --------------------------------------------------------------- activity

-- Locks are DuckDB's own and not visible; no session waits on a PostgreSQL lock.
CREATE OR REPLACE VIEW duckmv.pg_locks AS
SELECT ''::VARCHAR AS locktype, 0::UINTEGER AS database, 0::UINTEGER AS relation, 0 AS page,
       0::SMALLINT AS tuple, NULL::VARCHAR AS virtualxid, NULL::BIGINT AS transactionid,
       0::UINTEGER AS classid, 0::UINTEGER AS objid, 0::SMALLINT AS objsubid,
       NULL::VARCHAR AS virtualtransaction, 0 AS pid, ''::VARCHAR AS mode, false AS granted,
       false AS fastpath, NULL::TIMESTAMPTZ AS waitstart
WHERE false;

-- The asking session only: duckmv authenticates without GSSAPI.
CREATE OR REPLACE VIEW duckmv.pg_stat_gssapi AS
SELECT duckmv.pg_backend_pid() AS pid, false AS gss_authenticated, NULL::VARCHAR AS principal,
       false AS encrypted, false AS credentials_delegated;

CREATE OR REPLACE VIEW duckmv.pg_stat_progress_cluster AS
SELECT 0 AS pid, 0::UINTEGER AS datid, ''::VARCHAR AS datname, 0::UINTEGER AS relid, ''::VARCHAR AS command,
       ''::VARCHAR AS phase, 0::UINTEGER AS cluster_index_relid, 0::BIGINT AS heap_tuples_scanned,
       0::BIGINT AS heap_tuples_written, 0::BIGINT AS heap_blks_total, 0::BIGINT AS heap_blks_scanned,
       0::BIGINT AS index_rebuild_count
WHERE false;

-- pg_settings is a view over this set-returning function in PostgreSQL.
CREATE OR REPLACE MACRO duckmv.pg_show_all_settings() AS TABLE SELECT * FROM duckmv.pg_settings;
CREATE OR REPLACE MACRO duckmv.pg_is_wal_replay_paused() AS false;

-- ------------------------------------------------- catalogs, mostly empty

CREATE OR REPLACE VIEW duckmv.pg_rules AS
SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS tablename, ''::VARCHAR AS rulename, ''::VARCHAR AS definition
WHERE false;

CREATE OR REPLACE VIEW duckmv.pg_conversion AS
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS conname, 0::UINTEGER AS connamespace, 10::UINTEGER AS conowner,
       0 AS conforencoding, 0 AS contoencoding, ''::VARCHAR AS conproc, false AS condefault
WHERE false;

CREATE OR REPLACE VIEW duckmv.pg_foreign_data_wrapper AS
SELECT 0::UINTEGER AS oid, ''::VARCHAR AS fdwname, 10::UINTEGER AS fdwowner, 0::UINTEGER AS fdwhandler,
       0::UINTEGER AS fdwvalidator, NULL::VARCHAR[] AS fdwacl, NULL::VARCHAR[] AS fdwoptions
WHERE false;

CREATE OR REPLACE VIEW duckmv.pg_seclabels AS
SELECT 0::UINTEGER AS objoid, 0::UINTEGER AS classoid, 0 AS objsubid, ''::VARCHAR AS objtype,
       0::UINTEGER AS objnamespace, ''::VARCHAR AS objname, ''::VARCHAR AS provider, ''::VARCHAR AS label
WHERE false;

-- The dependencies PostgreSQL records for constraints: the index behind a
-- PRIMARY KEY or UNIQUE constraint belongs to it (deptype 'i'; admin tools
-- find constraint indexes this way), and a constraint depends on its
-- table's columns ('a'). Views and sequences record none here.
CREATE OR REPLACE VIEW duckmv.pg_depend AS
SELECT 1259::UINTEGER AS classid, conindid::UINTEGER AS objid, 0 AS objsubid, 2606::UINTEGER AS refclassid,
       oid::UINTEGER AS refobjid, 0 AS refobjsubid, 'i' AS deptype
FROM duckmv._constraints WHERE conindid <> 0
UNION ALL
SELECT 2606::UINTEGER, oid::UINTEGER, 0, 1259::UINTEGER, conrelid::UINTEGER, unnest(conkey)::INTEGER, 'a'
FROM duckmv._constraints;

-- Every relation's owner holds every privilege on it, granted by itself.
CREATE OR REPLACE VIEW duckmv.information_schema_table_privileges AS
SELECT duckmv._session_role() AS grantor, duckmv._session_role() AS grantee, t.table_catalog, t.table_schema, t.table_name,
       p.privilege_type, 'YES' AS is_grantable,
       CASE WHEN p.privilege_type = 'SELECT' THEN 'YES' ELSE 'NO' END AS with_hierarchy
FROM duckmv.information_schema_tables t,
     (VALUES ('INSERT'), ('SELECT'), ('UPDATE'), ('DELETE'), ('TRUNCATE'), ('REFERENCES'), ('TRIGGER'))
         AS p(privilege_type);

CREATE OR REPLACE VIEW duckmv.information_schema_role_table_grants AS
SELECT * FROM duckmv.information_schema_table_privileges;

-- ---------------------------------------------------------- text functions

-- quote_ident: quoted unless a lower-case name that is no keyword
-- PostgreSQL reserves in any way (the list comes from compat::pg_keywords).
CREATE OR REPLACE MACRO duckmv.quote_ident(s) AS CASE
    WHEN s IS NULL THEN NULL
    WHEN regexp_full_match(s::VARCHAR, '[a-z_][a-z0-9_]*') AND NOT list_contains({{pg_keywords}}, s::VARCHAR)
        THEN s::VARCHAR
    ELSE '"' || replace(s::VARCHAR, '"', '""') || '"'
END;
-- A literal with a backslash gets the E'' form, as PostgreSQL writes it.
CREATE OR REPLACE MACRO duckmv.quote_literal(s) AS CASE
    WHEN s IS NULL THEN NULL
    WHEN contains(s::VARCHAR, '\') THEN 'E''' || replace(replace(s::VARCHAR, '\', '\\'), '''', '''''') || ''''
    ELSE '''' || replace(s::VARCHAR, '''', '''''') || ''''
END;
CREATE OR REPLACE MACRO duckmv.quote_nullable(s) AS coalesce(duckmv.quote_literal(s), 'NULL');
-- parse_ident('a."B".c') = [a, B, c]: dots split, quotes keep case.
CREATE OR REPLACE MACRO duckmv._parse_ident(s) AS list_transform(
    regexp_extract_all(s, '"(?:[^"]|"")*"|[^."]+'),
    lambda p: CASE WHEN p[1] = '"' THEN replace(p[2:-2], '""', '"') ELSE lower(trim(p)) END);
CREATE OR REPLACE MACRO duckmv.parse_ident(s) AS duckmv._parse_ident(s),
    (s, strict) AS duckmv._parse_ident(s);
-- substring(s FROM 'pattern'), which the rewriter sends here: the first
-- parenthesized group's match (the whole match without one), NULL for none.
CREATE OR REPLACE MACRO duckmv._substring_group(s, p) AS
    CASE WHEN regexp_matches(s, p) THEN regexp_extract(s, p, 1) END;
CREATE OR REPLACE MACRO duckmv._substring_match(s, p) AS
    CASE WHEN regexp_matches(s, p) THEN regexp_extract(s, p, 0) END;
CREATE OR REPLACE MACRO duckmv.bpchar(s) AS s::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_function_identity_arguments(o) AS ''::VARCHAR;
