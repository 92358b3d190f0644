-- PostgreSQL's catalog as views and macros over DuckDB's own catalog
-- (duckdb_tables(), duckdb_columns(), ...), in schema duckmv, which every
-- session has on its search path before DuckDB's pg_catalog.
--
-- OIDs: built-in types, namespaces and system relations use PostgreSQL's
-- real OIDs; user objects use DuckDB's catalog oids (stable while the server
-- runs, and joinable across these views). Objects DuckDB has no oid for
-- (the indexes behind PRIMARY KEY/UNIQUE, constraints, defaults) get a hash
-- of their table's oid and position, in ranges above DuckDB's counters.
-- The oid-typed columns of pg_type, pg_namespace, pg_class, pg_attribute,
-- pg_index and pg_constraint are UINTEGER, which the wire describes as
-- PostgreSQL's `oid` (26; arrays of them `_oid`, 1028), as drivers expect.
--
-- Schema `main` is shown as `public` (oid 2200); the internal schemas
-- `_duckmv` and `duckmv` never appear. Materialized views (DuckDB views
-- listed in _duckmv.views) have relkind 'm'.
--
-- Idempotent: every statement is CREATE OR REPLACE. Placeholders in {{...}}
-- are filled in by compat::install.

CREATE SCHEMA IF NOT EXISTS duckmv;

-- ---------------------------------------------------------------- helpers

CREATE OR REPLACE MACRO duckmv._nsp_name(s) AS CASE WHEN s = 'main' THEN 'public' ELSE s END;
CREATE OR REPLACE MACRO duckmv._nsp_oid(s, o) AS CASE WHEN s = 'main' THEN 2200 ELSE o END::INTEGER;
CREATE OR REPLACE MACRO duckmv._hidden(s) AS s IN ('_duckmv', 'duckmv', 'pg_catalog', 'information_schema');
CREATE OR REPLACE MACRO duckmv._user_db(d) AS d = current_database();
-- The database name a client sees: the one it connected to (each session sets the variable),
-- never the internal catalog name the file is attached under.
CREATE OR REPLACE MACRO duckmv._client_db() AS coalesce(getvariable('duckmv_database'), current_database());
-- The role the client logged in as: current_user, session_user, and the owner of everything
-- (the server has one role per session, not PostgreSQL's role catalog).
CREATE OR REPLACE MACRO duckmv._session_role() AS coalesce(getvariable('duckmv_user'), '{{role}}');

-- DuckDB type (duckdb_columns().data_type) -> PostgreSQL type OID:
-- duckmv._scalar_oid, _array_oid, _list_oid and _type_oid, generated from the
-- wire's mapping (src/compat/type_oids.rs).
{{type_oid_macros}}

-- atttypmod: numeric(p,s) as PostgreSQL encodes it, else -1.
CREATE OR REPLACE MACRO duckmv._typmod(t, p, s) AS (CASE
    WHEN t LIKE 'DECIMAL%' THEN ((p << 16) | s) + 4 ELSE -1
END)::INTEGER;

-- Hash-based oids for objects DuckDB gives no oid.
CREATE OR REPLACE MACRO duckmv._index_oid(table_oid, idx) AS (1000000000 + hash(table_oid, idx, 'i') % 500000000)::INTEGER;
CREATE OR REPLACE MACRO duckmv._constraint_oid(table_oid, idx) AS (1500000000 + hash(table_oid, idx, 'c') % 500000000)::INTEGER;
CREATE OR REPLACE MACRO duckmv._attrdef_oid(table_oid, attnum) AS (1500000000 + hash(table_oid, attnum, 'd') % 500000000)::INTEGER;

-- ------------------------------------------------------------------ types

-- Built-in types with their PostgreSQL OIDs. fmt is format_type()'s name.
CREATE OR REPLACE VIEW duckmv._builtin_types AS
SELECT oid::INTEGER AS oid, typname, typlen::SMALLINT AS typlen, typbyval, typcategory,
       typarray::INTEGER AS typarray, fmt,
       (CASE WHEN typname IN ('text', 'varchar', 'bpchar') THEN 100 WHEN typname = 'name' THEN 950 ELSE 0 END)::INTEGER AS typcollation,
       (CASE WHEN typcategory = 'P' THEN 'p' ELSE 'b' END) AS typtype
FROM (VALUES
    (16, 'bool', 1, true, 'B', 1000, 'boolean'),
    (17, 'bytea', -1, false, 'U', 1001, 'bytea'),
    (18, 'char', 1, true, 'Z', 1002, '"char"'),
    (19, 'name', 64, false, 'S', 1003, 'name'),
    (20, 'int8', 8, true, 'N', 1016, 'bigint'),
    (21, 'int2', 2, true, 'N', 1005, 'smallint'),
    (22, 'int2vector', -1, false, 'A', 1006, 'int2vector'),
    (23, 'int4', 4, true, 'N', 1007, 'integer'),
    (24, 'regproc', 4, true, 'N', 1008, 'regproc'),
    (25, 'text', -1, false, 'S', 1009, 'text'),
    (26, 'oid', 4, true, 'N', 1028, 'oid'),
    (27, 'tid', 6, false, 'U', 1010, 'tid'),
    (28, 'xid', 4, true, 'U', 1011, 'xid'),
    (29, 'cid', 4, true, 'U', 1012, 'cid'),
    (30, 'oidvector', -1, false, 'A', 1013, 'oidvector'),
    (114, 'json', -1, false, 'U', 199, 'json'),
    (142, 'xml', -1, false, 'U', 143, 'xml'),
    (194, 'pg_node_tree', -1, false, 'Z', 0, 'pg_node_tree'),
    (600, 'point', 16, false, 'G', 1017, 'point'),
    (650, 'cidr', -1, false, 'I', 651, 'cidr'),
    (700, 'float4', 4, true, 'N', 1021, 'real'),
    (701, 'float8', 8, true, 'N', 1022, 'double precision'),
    (705, 'unknown', -2, false, 'X', 0, 'unknown'),
    (790, 'money', 8, true, 'N', 791, 'money'),
    (829, 'macaddr', 6, false, 'U', 1040, 'macaddr'),
    (869, 'inet', -1, false, 'I', 1041, 'inet'),
    (1033, 'aclitem', 16, false, 'U', 1034, 'aclitem'),
    (1042, 'bpchar', -1, false, 'S', 1014, 'character'),
    (1043, 'varchar', -1, false, 'S', 1015, 'character varying'),
    (1082, 'date', 4, true, 'D', 1182, 'date'),
    (1083, 'time', 8, true, 'D', 1183, 'time without time zone'),
    (1114, 'timestamp', 8, true, 'D', 1115, 'timestamp without time zone'),
    (1184, 'timestamptz', 8, true, 'D', 1185, 'timestamp with time zone'),
    (1186, 'interval', 16, false, 'T', 1187, 'interval'),
    (1266, 'timetz', 12, false, 'D', 1270, 'time with time zone'),
    (1560, 'bit', -1, false, 'V', 1561, 'bit'),
    (1562, 'varbit', -1, false, 'V', 1563, 'bit varying'),
    (1700, 'numeric', -1, false, 'N', 1231, 'numeric'),
    (1790, 'refcursor', -1, false, 'U', 2201, 'refcursor'),
    (2202, 'regprocedure', 4, true, 'N', 2207, 'regprocedure'),
    (2203, 'regoper', 4, true, 'N', 2208, 'regoper'),
    (2204, 'regoperator', 4, true, 'N', 2209, 'regoperator'),
    (2205, 'regclass', 4, true, 'N', 2210, 'regclass'),
    (2206, 'regtype', 4, true, 'N', 2211, 'regtype'),
    (2249, 'record', -1, false, 'P', 2287, 'record'),
    (2275, 'cstring', -2, false, 'P', 1263, 'cstring'),
    (2276, 'any', 4, true, 'P', 0, '"any"'),
    (2277, 'anyarray', -1, false, 'P', 0, 'anyarray'),
    (2278, 'void', 4, true, 'P', 0, 'void'),
    (2279, 'trigger', 4, true, 'P', 0, 'trigger'),
    (2281, 'internal', 8, true, 'P', 0, 'internal'),
    (2283, 'anyelement', 4, true, 'P', 0, 'anyelement'),
    (2950, 'uuid', 16, false, 'U', 2951, 'uuid'),
    (3220, 'pg_lsn', 8, true, 'U', 3221, 'pg_lsn'),
    (3614, 'tsvector', -1, false, 'U', 3643, 'tsvector'),
    (3615, 'tsquery', -1, false, 'U', 3645, 'tsquery'),
    (3802, 'jsonb', -1, false, 'U', 3807, 'jsonb'),
    (4072, 'jsonpath', -1, false, 'U', 4073, 'jsonpath'),
    (4089, 'regnamespace', 4, true, 'N', 4090, 'regnamespace'),
    (4096, 'regrole', 4, true, 'N', 4097, 'regrole')
) AS t(oid, typname, typlen, typbyval, typcategory, typarray, fmt);

-- Every type: the built-ins, their array types, and users' ENUM types.
CREATE OR REPLACE VIEW duckmv._types AS
SELECT oid, typname, 11 AS typnamespace, typlen, typbyval, typtype, typcategory,
       0 AS typelem, typarray, typcollation, fmt, typname || 'in' AS typinput, typname || 'out' AS typoutput
FROM duckmv._builtin_types
UNION ALL
SELECT typarray, '_' || typname, 11, -1, false, 'b', 'A', oid, 0, typcollation, fmt || '[]', 'array_in', 'array_out'
FROM duckmv._builtin_types WHERE typarray <> 0
UNION ALL
SELECT type_oid::INTEGER, type_name, duckmv._nsp_oid(schema_name, schema_oid), 4, true, 'e', 'E', 0, 0, 0,
       type_name, 'enum_in', 'enum_out'
FROM duckdb_types()
WHERE duckmv._user_db(database_name) AND NOT internal AND logical_type = 'ENUM' AND NOT duckmv._hidden(schema_name);

CREATE OR REPLACE VIEW duckmv.pg_type AS
SELECT oid::UINTEGER AS oid, typname, typnamespace::UINTEGER AS typnamespace, 10::UINTEGER AS typowner,
       typlen::SMALLINT AS typlen, typbyval, typtype, typcategory, false AS typispreferred,
       true AS typisdefined, ',' AS typdelim, 0::UINTEGER AS typrelid, 0 AS typsubscript,
       typelem::UINTEGER AS typelem, typarray::UINTEGER AS typarray, typinput, typoutput,
       typname || 'recv' AS typreceive, typname || 'send' AS typsend, '-' AS typmodin, '-' AS typmodout,
       '-' AS typanalyze,
       (CASE WHEN typlen = 8 OR typlen = -1 THEN 'd' WHEN typlen = 2 THEN 's' WHEN typlen = 1 THEN 'c' ELSE 'i' END) AS typalign,
       (CASE WHEN typlen = -1 THEN 'x' ELSE 'p' END) AS typstorage,
       false AS typnotnull, 0::UINTEGER AS typbasetype, -1 AS typtypmod, 0 AS typndims,
       typcollation::UINTEGER AS typcollation, NULL::VARCHAR AS typdefaultbin, NULL::VARCHAR AS typdefault,
       NULL::VARCHAR[] AS typacl
FROM duckmv._types;

CREATE OR REPLACE VIEW duckmv.pg_enum AS
SELECT duckmv._constraint_oid(type_oid, i)::INTEGER AS oid, type_oid::INTEGER AS enumtypid,
       i::FLOAT AS enumsortorder, labels[i] AS enumlabel
FROM (SELECT type_oid, labels, unnest(range(1, len(labels) + 1)) AS i
      FROM duckdb_types()
      WHERE duckmv._user_db(database_name) AND NOT internal AND logical_type = 'ENUM' AND NOT duckmv._hidden(schema_name));

CREATE OR REPLACE VIEW duckmv.pg_range AS
SELECT 0 AS rngtypid, 0 AS rngsubtype, 0 AS rngmultitypid, 0 AS rngcollation, 0 AS rngsubopc,
       '-' AS rngcanonical, '-' AS rngsubdiff
WHERE false;

-- format_type(oid, p_typmod) as PostgreSQL prints it.
CREATE OR REPLACE MACRO duckmv.format_type(p_type, p_typmod) AS (
    SELECT CASE
        WHEN __t.fmt IN ('numeric', 'numeric[]') AND p_typmod >= 4 THEN
            'numeric(' || ((p_typmod - 4) >> 16) || ',' || ((p_typmod - 4) & 65535) || ')' || CASE WHEN __t.fmt = 'numeric[]' THEN '[]' ELSE '' END
        WHEN __t.fmt IN ('character varying', 'character') AND p_typmod >= 4 THEN __t.fmt || '(' || (p_typmod - 4) || ')'
        ELSE __t.fmt
    END
    FROM duckmv._types __t WHERE __t.oid = p_type
);

-- -------------------------------------------------------------- namespaces

CREATE OR REPLACE VIEW duckmv.pg_namespace AS
SELECT oid::UINTEGER AS oid, nspname, nspowner::UINTEGER AS nspowner, NULL::VARCHAR[] AS nspacl
FROM (VALUES (11, 'pg_catalog', 10), (13183, 'information_schema', 10)) AS n(oid, nspname, nspowner)
UNION ALL
SELECT duckmv._nsp_oid(schema_name, oid)::UINTEGER, duckmv._nsp_name(schema_name), 10::UINTEGER, NULL::VARCHAR[]
FROM duckdb_schemas()
WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name);

-- ------------------------------------------------------------- relations

-- Indexes: DuckDB's own (CREATE INDEX) and the ones PostgreSQL would create
-- for PRIMARY KEY and UNIQUE constraints (DuckDB lists those only as
-- constraints). cols are column names, attnums 1-based (0: an expression).
CREATE OR REPLACE VIEW duckmv._indexes AS
WITH raw AS (
    SELECT index_oid::INTEGER AS oid, index_name AS name, table_oid::INTEGER AS table_oid, table_name,
           schema_name, schema_oid, is_unique, false AS is_primary, -1 AS constraint_index,
           list_transform(string_split(regexp_replace(expressions, '^\[|\]$', '', 'g'), ', '),
                          lambda x: trim(x, '''"')) AS cols
    FROM duckdb_indexes()
    WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name)
    UNION ALL
    SELECT duckmv._index_oid(table_oid, constraint_index),
           CASE WHEN constraint_type = 'PRIMARY KEY' THEN table_name || '_pkey' ELSE constraint_name END,
           table_oid::INTEGER, table_name, schema_name, schema_oid, true,
           constraint_type = 'PRIMARY KEY', constraint_index, constraint_column_names
    FROM duckdb_constraints()
    WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name)
      AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
)
SELECT raw.*,
       (SELECT list(coalesce(dc.column_index, 0)::SMALLINT ORDER BY u.pos)
        FROM (SELECT unnest(raw.cols) AS col, unnest(range(1, len(raw.cols) + 1)) AS pos) u
        LEFT JOIN duckdb_columns() dc ON dc.table_oid = raw.table_oid AND dc.column_name = u.col) AS attnums
FROM raw;

CREATE OR REPLACE VIEW duckmv._matviews AS SELECT name, schema FROM _duckmv.views;

-- A few of pg_catalog's own relations, so 'pg_class'::regclass and
-- pg_description.classoid joins resolve.
CREATE OR REPLACE VIEW duckmv._system_relations AS
SELECT oid::INTEGER AS oid, relname FROM (VALUES
    (1247, 'pg_type'), (1249, 'pg_attribute'), (1255, 'pg_proc'), (1259, 'pg_class'),
    (1262, 'pg_database'), (2601, 'pg_am'), (2604, 'pg_attrdef'), (2606, 'pg_constraint'),
    (2609, 'pg_description'), (2610, 'pg_index'), (2615, 'pg_namespace'), (3456, 'pg_collation'),
    (1260, 'pg_authid'), (1213, 'pg_tablespace'), (2611, 'pg_inherits'), (3079, 'pg_extension'),
    (2620, 'pg_trigger'), (2618, 'pg_rewrite'), (2617, 'pg_operator')
) AS r(oid, relname);

CREATE OR REPLACE VIEW duckmv._relations AS
SELECT table_oid::INTEGER AS oid, table_name AS relname, duckmv._nsp_oid(schema_name, schema_oid) AS relnamespace,
       'r' AS relkind, 2 AS relam, column_count AS relnatts, check_constraint_count AS relchecks,
       (index_count > 0 OR has_primary_key) AS relhasindex, estimated_size AS reltuples,
       comment, 'p' AS relpersistence
FROM duckdb_tables()
WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name)
UNION ALL
SELECT v.view_oid::INTEGER, v.view_name, duckmv._nsp_oid(v.schema_name, v.schema_oid),
       CASE WHEN m.name IS NULL THEN 'v' ELSE 'm' END, CASE WHEN m.name IS NULL THEN 0 ELSE 2 END,
       v.column_count, 0, false, 0, v.comment, 'p'
FROM duckdb_views() v LEFT JOIN duckmv._matviews m ON m.name = v.view_name AND m.schema = v.schema_name
WHERE duckmv._user_db(v.database_name) AND NOT v.internal AND NOT duckmv._hidden(v.schema_name)
UNION ALL
SELECT i.oid, i.name, duckmv._nsp_oid(i.schema_name, i.schema_oid), 'i', 403, len(i.cols), 0, false, 0, NULL, 'p'
FROM duckmv._indexes i
UNION ALL
SELECT sequence_oid::INTEGER, sequence_name, duckmv._nsp_oid(schema_name, schema_oid), 'S', 0, 3, 0, false, 1,
       comment, CASE WHEN temporary THEN 't' ELSE 'p' END
FROM duckdb_sequences()
WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name)
UNION ALL
SELECT oid, relname, 11, 'r', 2, 0, 0, false, 0, NULL, 'p' FROM duckmv._system_relations;

CREATE OR REPLACE VIEW duckmv.pg_class AS
SELECT oid::UINTEGER AS oid, relname, relnamespace::UINTEGER AS relnamespace, 0::UINTEGER AS reltype,
       0::UINTEGER AS reloftype, 10::UINTEGER AS relowner, relam::UINTEGER AS relam,
       oid::UINTEGER AS relfilenode, 0::UINTEGER AS reltablespace,
       0 AS relpages, reltuples::FLOAT AS reltuples, 0 AS relallvisible, 0::UINTEGER AS reltoastrelid,
       relhasindex, false AS relisshared, relpersistence, relkind, relnatts::SMALLINT AS relnatts,
       relchecks::SMALLINT AS relchecks, false AS relhasrules, false AS relhastriggers,
       false AS relhassubclass, false AS relrowsecurity, false AS relforcerowsecurity,
       true AS relispopulated, 'd' AS relreplident, false AS relispartition, 0 AS relrewrite,
       0 AS relfrozenxid, 0 AS relminmxid, NULL::VARCHAR[] AS relacl, NULL::VARCHAR[] AS reloptions,
       NULL::VARCHAR AS relpartbound
FROM duckmv._relations;

-- Columns of tables, views and materialized views, and index key columns.
CREATE OR REPLACE VIEW duckmv._columns AS
SELECT c.table_oid::INTEGER AS attrelid, c.column_name AS attname, duckmv._type_oid(c.data_type) AS atttypid,
       c.column_index::SMALLINT AS attnum, NOT c.is_nullable AS attnotnull,
       duckmv._typmod(c.data_type, c.numeric_precision, c.numeric_scale) AS atttypmod,
       c.column_default, c.comment, c.data_type, c.schema_name, c.table_name
FROM duckdb_columns() c
WHERE duckmv._user_db(c.database_name) AND NOT duckmv._hidden(c.schema_name);

CREATE OR REPLACE VIEW duckmv.pg_attribute AS
WITH cols AS (
    SELECT attrelid, attname, atttypid, attnum, attnotnull, atttypmod, column_default IS NOT NULL AS atthasdef
    FROM duckmv._columns
    UNION ALL
    SELECT i.oid, k.col, coalesce(c.atttypid, 25), k.pos::SMALLINT, false, coalesce(c.atttypmod, -1), false
    FROM (SELECT oid, table_oid, unnest(cols) AS col, unnest(range(1, len(cols) + 1)) AS pos FROM duckmv._indexes) k
    JOIN duckmv._indexes i ON i.oid = k.oid
    LEFT JOIN duckmv._columns c ON c.attrelid = k.table_oid AND c.attname = k.col
)
SELECT cols.attrelid::UINTEGER AS attrelid, cols.attname, cols.atttypid::UINTEGER AS atttypid,
       coalesce(t.typlen, -1)::SMALLINT AS attlen, cols.attnum::SMALLINT AS attnum, 0 AS attcacheoff,
       cols.atttypmod::INTEGER AS atttypmod,
       (CASE WHEN t.typcategory = 'A' THEN 1 ELSE 0 END)::SMALLINT AS attndims,
       coalesce(t.typbyval, false) AS attbyval,
       (CASE WHEN coalesce(t.typlen, -1) IN (8, -1) THEN 'd' WHEN t.typlen = 2 THEN 's' WHEN t.typlen = 1 THEN 'c' ELSE 'i' END) AS attalign,
       (CASE WHEN coalesce(t.typlen, -1) = -1 THEN (CASE WHEN cols.atttypid = 1700 THEN 'm' ELSE 'x' END) ELSE 'p' END) AS attstorage,
       '' AS attcompression, cols.attnotnull, cols.atthasdef, false AS atthasmissing, '' AS attidentity,
       '' AS attgenerated, false AS attisdropped, true AS attislocal, 0 AS attinhcount,
       -1 AS attstattarget, coalesce(t.typcollation, 0)::UINTEGER AS attcollation,
       NULL::VARCHAR[] AS attacl, NULL::VARCHAR[] AS attoptions, NULL::VARCHAR[] AS attfdwoptions,
       NULL::VARCHAR AS attmissingval
FROM cols LEFT JOIN duckmv._types t ON t.oid = cols.atttypid;

CREATE OR REPLACE VIEW duckmv.pg_attrdef AS
SELECT duckmv._attrdef_oid(attrelid, attnum) AS oid, attrelid AS adrelid, attnum AS adnum, column_default AS adbin
FROM duckmv._columns WHERE column_default IS NOT NULL;

CREATE OR REPLACE VIEW duckmv.pg_index AS
SELECT oid::UINTEGER AS indexrelid, table_oid::UINTEGER AS indrelid, len(cols)::SMALLINT AS indnatts,
       len(cols)::SMALLINT AS indnkeyatts, is_unique AS indisunique, false AS indnullsnotdistinct,
       is_primary AS indisprimary, false AS indisexclusion, true AS indimmediate,
       false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready,
       true AS indislive, false AS indisreplident, attnums AS indkey,
       list_transform(attnums, lambda x: 0) AS indcollation,
       list_transform(attnums, lambda x: 1978) AS indclass,
       list_transform(attnums, lambda x: 0)::SMALLINT[] AS indoption,
       NULL::VARCHAR AS indexprs, NULL::VARCHAR AS indpred
FROM duckmv._indexes;

CREATE OR REPLACE VIEW duckmv._constraints AS
SELECT duckmv._constraint_oid(c.table_oid, c.constraint_index) AS oid,
       CASE WHEN c.constraint_type = 'PRIMARY KEY' THEN c.table_name || '_pkey' ELSE c.constraint_name END AS conname,
       duckmv._nsp_oid(c.schema_name, c.schema_oid) AS connamespace,
       CASE c.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u' WHEN 'FOREIGN KEY' THEN 'f' ELSE 'c' END AS contype,
       c.table_oid::INTEGER AS conrelid,
       CASE WHEN c.constraint_type IN ('PRIMARY KEY', 'UNIQUE') THEN duckmv._index_oid(c.table_oid, c.constraint_index) ELSE 0 END AS conindid,
       coalesce((SELECT t.table_oid FROM duckdb_tables() t
                 WHERE t.database_name = c.database_name AND t.schema_name = c.schema_name
                   AND t.table_name = c.referenced_table), 0)::INTEGER AS confrelid,
       list_transform(c.constraint_column_indexes, lambda x: x + 1)::SMALLINT[] AS conkey,
       c.referenced_column_names, c.referenced_table,
       CASE c.constraint_type
           WHEN 'PRIMARY KEY' THEN 'PRIMARY KEY (' || array_to_string(c.constraint_column_names, ', ') || ')'
           WHEN 'UNIQUE' THEN 'UNIQUE (' || array_to_string(c.constraint_column_names, ', ') || ')'
           WHEN 'CHECK' THEN 'CHECK (' || c.expression || ')'
           ELSE c.constraint_text
       END AS condef
FROM duckdb_constraints() c
WHERE duckmv._user_db(c.database_name) AND NOT duckmv._hidden(c.schema_name)
  AND c.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK');

CREATE OR REPLACE VIEW duckmv.pg_constraint AS
SELECT c.oid::UINTEGER AS oid, c.conname, c.connamespace::UINTEGER AS connamespace, c.contype,
       false AS condeferrable, false AS condeferred, true AS convalidated, c.conrelid::UINTEGER AS conrelid,
       0::UINTEGER AS contypid, c.conindid::UINTEGER AS conindid, 0::UINTEGER AS conparentid,
       c.confrelid::UINTEGER AS confrelid,
       CASE WHEN c.contype = 'f' THEN 'a' ELSE ' ' END AS confupdtype,
       CASE WHEN c.contype = 'f' THEN 'a' ELSE ' ' END AS confdeltype,
       CASE WHEN c.contype = 'f' THEN 's' ELSE ' ' END AS confmatchtype,
       true AS conislocal, 0 AS coninhcount, false AS connoinherit, c.conkey,
       CASE WHEN c.contype = 'f' THEN
           (SELECT list(coalesce(dc.column_index, 0)::SMALLINT ORDER BY u.pos)
            FROM (SELECT unnest(c.referenced_column_names) AS col,
                         unnest(range(1, len(c.referenced_column_names) + 1)) AS pos) u
            LEFT JOIN duckdb_columns() dc ON dc.table_oid = c.confrelid AND dc.column_name = u.col)
       END AS confkey,
       NULL::INTEGER[] AS conpfeqop, NULL::INTEGER[] AS conppeqop, NULL::INTEGER[] AS conffeqop,
       NULL::SMALLINT[] AS confdelsetcols, NULL::INTEGER[] AS conexclop,
       CASE WHEN c.contype = 'c' THEN c.condef END AS conbin
FROM duckmv._constraints c;

-- ----------------------------------------------------- the rest of pg_catalog

CREATE OR REPLACE VIEW duckmv.pg_description AS
SELECT oid AS objoid, 1259 AS classoid, 0 AS objsubid, comment AS description
FROM duckmv._relations WHERE comment IS NOT NULL AND comment <> ''
UNION ALL
SELECT attrelid, 1259, attnum::INTEGER, comment FROM duckmv._columns WHERE comment IS NOT NULL AND comment <> '';

CREATE OR REPLACE VIEW duckmv.pg_shdescription AS
SELECT 0 AS objoid, 0 AS classoid, NULL::VARCHAR AS description WHERE false;

CREATE OR REPLACE VIEW duckmv.pg_database AS
SELECT database_oid::INTEGER AS oid, duckmv._client_db() AS datname, 10 AS datdba, 6 AS encoding, 'c' AS datlocprovider,
       false AS datistemplate, true AS datallowconn, -1 AS datconnlimit, 0 AS datfrozenxid, 0 AS datminmxid,
       1663 AS dattablespace, 'C' AS datcollate, 'C' AS datctype, NULL::VARCHAR AS daticulocale,
       NULL::VARCHAR AS daticurules, NULL::VARCHAR AS datcollversion, NULL::VARCHAR[] AS datacl
FROM duckdb_databases() WHERE duckmv._user_db(database_name);

CREATE OR REPLACE VIEW duckmv.pg_roles AS
SELECT duckmv._session_role() AS rolname, true AS rolsuper, true AS rolinherit, true AS rolcreaterole, true AS rolcreatedb,
       true AS rolcanlogin, true AS rolreplication, -1 AS rolconnlimit, '********' AS rolpassword,
       NULL::TIMESTAMPTZ AS rolvaliduntil, true AS rolbypassrls, NULL::VARCHAR[] AS rolconfig, 10 AS oid;

CREATE OR REPLACE VIEW duckmv.pg_authid AS
SELECT 10 AS oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication,
       rolbypassrls, rolconnlimit, NULL::VARCHAR AS rolpassword, rolvaliduntil
FROM duckmv.pg_roles;

CREATE OR REPLACE VIEW duckmv.pg_user AS
SELECT rolname AS usename, 10 AS usesysid, true AS usecreatedb, true AS usesuper, true AS userepl,
       true AS usebypassrls, '********' AS passwd, NULL::TIMESTAMPTZ AS valuntil, NULL::VARCHAR[] AS useconfig
FROM duckmv.pg_roles;

CREATE OR REPLACE VIEW duckmv.pg_auth_members AS
SELECT 0 AS oid, 0 AS roleid, 0 AS member, 0 AS grantor, false AS admin_option WHERE false;

CREATE OR REPLACE VIEW duckmv.pg_am AS
SELECT oid::INTEGER AS oid, amname, amhandler, amtype FROM (VALUES
    (2, 'heap', 'heap_tableam_handler', 't'), (403, 'btree', 'bthandler', 'i'),
    (405, 'hash', 'hashhandler', 'i'), (783, 'gist', 'gisthandler', 'i'),
    (2742, 'gin', 'ginhandler', 'i'), (4000, 'spgist', 'spghandler', 'i'), (3580, 'brin', 'brinhandler', 'i')
) AS a(oid, amname, amhandler, amtype);

CREATE OR REPLACE VIEW duckmv.pg_tablespace AS
SELECT oid::INTEGER AS oid, spcname, 10 AS spcowner, NULL::VARCHAR[] AS spcacl, NULL::VARCHAR[] AS spcoptions
FROM (VALUES (1663, 'pg_default'), (1664, 'pg_global')) AS t(oid, spcname);

CREATE OR REPLACE VIEW duckmv.pg_collation AS
SELECT oid::INTEGER AS oid, collname, 11 AS collnamespace, 10 AS collowner, collprovider, true AS collisdeterministic,
       -1 AS collencoding, collcollate, collctype, NULL::VARCHAR AS colliculocale, NULL::VARCHAR AS collicurules,
       NULL::VARCHAR AS collversion
FROM (VALUES (100, 'default', 'd', NULL, NULL), (950, 'C', 'c', 'C', 'C'), (951, 'POSIX', 'c', 'POSIX', 'POSIX'))
    AS c(oid, collname, collprovider, collcollate, collctype);

CREATE OR REPLACE VIEW duckmv.pg_extension AS
SELECT 13500 AS oid, 'plpgsql' AS extname, 10 AS extowner, 11 AS extnamespace, false AS extrelocatable,
       '1.0' AS extversion, NULL::INTEGER[] AS extconfig, NULL::VARCHAR[] AS extcondition;

CREATE OR REPLACE VIEW duckmv.pg_proc AS
SELECT function_oid::INTEGER AS oid, function_name AS proname, duckmv._nsp_oid(schema_name, 0) AS pronamespace,
       10 AS proowner, 0 AS prolang, 0 AS procost, 0 AS prorows, 0 AS provariadic, '-' AS prosupport,
       CASE WHEN function_type = 'aggregate' THEN 'a' ELSE 'f' END AS prokind, false AS prosecdef,
       false AS proleakproof, false AS proisstrict, function_type = 'table_macro' AS proretset,
       'v' AS provolatile, 'u' AS proparallel, len(parameters)::SMALLINT AS pronargs, 0::SMALLINT AS pronargdefaults,
       25 AS prorettype, list_transform(parameters, lambda p: 25) AS proargtypes, NULL::INTEGER[] AS proallargtypes,
       NULL::VARCHAR[] AS proargmodes, parameters AS proargnames, NULL::VARCHAR AS proargdefaults,
       NULL::INTEGER[] AS protrftypes, macro_definition AS prosrc, NULL::VARCHAR AS probin,
       NULL::VARCHAR AS prosqlbody, NULL::VARCHAR[] AS proconfig, NULL::VARCHAR[] AS proacl
FROM duckdb_functions()
WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name) AND NOT internal;

CREATE OR REPLACE VIEW duckmv.pg_language AS
SELECT oid::INTEGER AS oid, lanname FROM (VALUES (12, 'internal'), (13, 'c'), (14, 'sql'), (13576, 'plpgsql')) AS l(oid, lanname);

-- Catalogs of features duckmv does not have: present, empty.
CREATE OR REPLACE VIEW duckmv.pg_inherits AS
SELECT 0 AS inhrelid, 0 AS inhparent, 0 AS inhseqno, false AS inhdetachpending WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_trigger AS
SELECT 0 AS oid, 0 AS tgrelid, 0 AS tgparentid, '' AS tgname, 0 AS tgfoid, 0::SMALLINT AS tgtype, 'O' AS tgenabled,
       false AS tgisinternal, 0 AS tgconstrrelid, 0 AS tgconstrindid, 0 AS tgconstraint, false AS tgdeferrable,
       false AS tginitdeferred, 0::SMALLINT AS tgnargs, NULL::SMALLINT[] AS tgattr, NULL::BLOB AS tgargs,
       NULL::VARCHAR AS tgqual, NULL::VARCHAR AS tgoldtable, NULL::VARCHAR AS tgnewtable
WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_rewrite AS
SELECT 0 AS oid, '' AS rulename, 0 AS ev_class, '1' AS ev_type, 'O' AS ev_enabled, false AS is_instead,
       NULL::VARCHAR AS ev_qual, NULL::VARCHAR AS ev_action WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_policy AS
SELECT 0 AS oid, '' AS polname, 0 AS polrelid, '*' AS polcmd, true AS polpermissive, NULL::INTEGER[] AS polroles,
       NULL::VARCHAR AS polqual, NULL::VARCHAR AS polwithcheck WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_statistic_ext AS
SELECT 0 AS oid, 0 AS stxrelid, '' AS stxname, 0 AS stxnamespace, 10 AS stxowner, -1 AS stxstattarget,
       NULL::SMALLINT[] AS stxkeys, NULL::VARCHAR[] AS stxkind, NULL::VARCHAR AS stxexprs WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_publication AS
SELECT 0 AS oid, '' AS pubname, 10 AS pubowner, false AS puballtables, true AS pubinsert, true AS pubupdate,
       true AS pubdelete, true AS pubtruncate, false AS pubviaroot WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_publication_namespace AS
SELECT 0 AS oid, 0 AS pnpubid, 0 AS pnnspid WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_publication_rel AS
SELECT 0 AS oid, 0 AS prpubid, 0 AS prrelid, NULL::VARCHAR AS prqual, NULL::SMALLINT[] AS prattrs WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_partitioned_table AS
SELECT 0 AS partrelid, 'h' AS partstrat, 0::SMALLINT AS partnatts, 0 AS partdefid,
       NULL::SMALLINT[] AS partattrs, NULL::INTEGER[] AS partclass, NULL::INTEGER[] AS partcollation,
       NULL::VARCHAR AS partexprs WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_sequence AS
SELECT sequence_oid::INTEGER AS seqrelid, 20 AS seqtypid, start_value AS seqstart, increment_by AS seqincrement,
       max_value AS seqmax, min_value AS seqmin, 1 AS seqcache, cycle AS seqcycle
FROM duckdb_sequences() WHERE duckmv._user_db(database_name) AND NOT duckmv._hidden(schema_name);
CREATE OR REPLACE VIEW duckmv.pg_opclass AS
SELECT 1978 AS oid, 403 AS opcmethod, 'int4_ops' AS opcname, 11 AS opcnamespace, 10 AS opcowner,
       1976 AS opcfamily, 23 AS opcintype, true AS opcdefault, 0 AS opckeytype;
CREATE OR REPLACE VIEW duckmv.pg_foreign_table AS
SELECT 0 AS ftrelid, 0 AS ftserver, NULL::VARCHAR[] AS ftoptions WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_foreign_server AS
SELECT 0 AS oid, '' AS srvname WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_event_trigger AS
SELECT 0 AS oid, '' AS evtname, '' AS evtevent WHERE false;
CREATE OR REPLACE VIEW duckmv.pg_settings AS
SELECT name, setting, NULL::VARCHAR AS unit, 'duckmv' AS category, name AS short_desc, NULL::VARCHAR AS extra_desc,
       'user' AS context, 'string' AS vartype, 'default' AS source, NULL::VARCHAR AS min_val, NULL::VARCHAR AS max_val,
       NULL::VARCHAR[] AS enumvals, setting AS boot_val, setting AS reset_val, NULL::VARCHAR AS sourcefile,
       NULL::INTEGER AS sourceline, false AS pending_restart
FROM (VALUES {{settings}}) AS s(name, setting);


-- -------------------------------------------------------------- functions

CREATE OR REPLACE MACRO duckmv.version() AS {{version}};
-- A CASE over pg_settings' rows rather than a subquery: clients call it inside
-- table functions' arguments (Grafana: generate_series(...current_setting(...)...)),
-- where DuckDB allows no subquery.
CREATE OR REPLACE MACRO duckmv.pg_current_setting(p_name) AS {{settings_case}},
    (p_name, p_missing_ok) AS {{settings_case}};
-- set_config() returns the value without storing it: session parameters
-- live in the server (SET), and clients call this to save/restore a
-- setting around a query (asyncpg turns jit off for its introspection).
CREATE OR REPLACE MACRO duckmv.set_config(p_name, p_value, p_local) AS p_value;
CREATE OR REPLACE MACRO duckmv.pg_current_schema() AS 'public';
CREATE OR REPLACE MACRO duckmv.pg_current_schemas(implicit) AS
    CASE WHEN implicit THEN ['pg_catalog', 'public'] ELSE ['public'] END;
CREATE OR REPLACE MACRO duckmv.pg_backend_pid() AS coalesce(getvariable('duckmv_backend_pid'), 0)::INTEGER;
CREATE OR REPLACE MACRO duckmv.pg_get_userbyid(role_oid) AS duckmv._session_role();
CREATE OR REPLACE MACRO duckmv.pg_encoding_to_char(e) AS CASE WHEN e = 6 THEN 'UTF8' WHEN e = 0 THEN 'SQL_ASCII' ELSE '' END;
CREATE OR REPLACE MACRO duckmv.pg_char_to_encoding(e) AS CASE WHEN upper(e) IN ('UTF8', 'UTF-8', 'UNICODE') THEN 6 ELSE -1 END;
CREATE OR REPLACE MACRO duckmv.getdatabaseencoding() AS 'UTF8';
CREATE OR REPLACE MACRO duckmv.pg_client_encoding() AS 'UTF8';
CREATE OR REPLACE MACRO duckmv.pg_table_is_visible(p_rel) AS coalesce(
    (SELECT __c.relnamespace IN (11, 2200) FROM duckmv._relations __c WHERE __c.oid = p_rel), false);
CREATE OR REPLACE MACRO duckmv.pg_type_is_visible(p_type) AS coalesce(
    (SELECT __t.typnamespace IN (11, 2200) FROM duckmv._types __t WHERE __t.oid = p_type), false);
CREATE OR REPLACE MACRO duckmv.pg_function_is_visible(f) AS true;
CREATE OR REPLACE MACRO duckmv.pg_collation_is_visible(c) AS true;
CREATE OR REPLACE MACRO duckmv.has_table_privilege(t, p) AS true,
    (u, t, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_schema_privilege(s, p) AS true,
    (u, s, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_database_privilege(d, p) AS true,
    (u, d, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_column_privilege(t, c, p) AS true,
    (u, t, c, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_any_column_privilege(t, p) AS true,
    (u, t, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_function_privilege(f, p) AS true,
    (u, f, p) AS true;
CREATE OR REPLACE MACRO duckmv.has_sequence_privilege(s, p) AS true,
    (u, s, p) AS true;
CREATE OR REPLACE MACRO duckmv.pg_has_role(r, p) AS true,
    (u, r, p) AS true;
CREATE OR REPLACE MACRO duckmv.pg_relation_is_publishable(r) AS false;
CREATE OR REPLACE MACRO duckmv.pg_get_statisticsobjdef_columns(o) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_ruledef(o) AS NULL::VARCHAR,
    (o, pretty) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_triggerdef(o) AS NULL::VARCHAR,
    (o, pretty) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_functiondef(o) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_function_arguments(o) AS ''::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_function_result(o) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_serial_sequence(t, c) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_partkeydef(o) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.pg_get_expr(e, rel) AS e,
    (e, rel, pretty) AS e;
CREATE OR REPLACE MACRO duckmv.pg_get_constraintdef(p_con) AS (SELECT __k.condef FROM duckmv._constraints __k WHERE __k.oid = p_con),
    (p_con, p_pretty) AS (SELECT __k.condef FROM duckmv._constraints __k WHERE __k.oid = p_con);
CREATE OR REPLACE MACRO duckmv.pg_get_indexdef(p_index) AS (
    SELECT 'CREATE ' || CASE WHEN __i.is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX ' || __i.name || ' ON '
           || duckmv._nsp_name(__i.schema_name) || '.' || __i.table_name || ' USING btree ('
           || array_to_string(__i.cols, ', ') || ')'
    FROM duckmv._indexes __i WHERE __i.oid = p_index),
    (p_index, p_col, p_pretty) AS (
    SELECT CASE WHEN p_col = 0 THEN
               'CREATE ' || CASE WHEN __i.is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX ' || __i.name || ' ON '
               || duckmv._nsp_name(__i.schema_name) || '.' || __i.table_name || ' USING btree ('
               || array_to_string(__i.cols, ', ') || ')'
           ELSE __i.cols[p_col] END
    FROM duckmv._indexes __i WHERE __i.oid = p_index);
CREATE OR REPLACE MACRO duckmv.pg_get_viewdef(p_view) AS (
    SELECT coalesce(
        (SELECT ' ' || __m.definition FROM _duckmv.views __m WHERE __m.name = __v.view_name AND __m.schema = __v.schema_name),
        ' ' || regexp_replace(__v.sql, '^CREATE (OR REPLACE )?(TEMPORARY )?VIEW .*? AS ', ''))
    FROM duckdb_views() __v WHERE __v.view_oid = p_view),
    (p_view, p_pretty) AS (
    SELECT coalesce(
        (SELECT ' ' || __m.definition FROM _duckmv.views __m WHERE __m.name = __v.view_name AND __m.schema = __v.schema_name),
        ' ' || regexp_replace(__v.sql, '^CREATE (OR REPLACE )?(TEMPORARY )?VIEW .*? AS ', ''))
    FROM duckdb_views() __v WHERE __v.view_oid = p_view);
CREATE OR REPLACE MACRO duckmv.obj_description(p_obj) AS (SELECT __d.description FROM duckmv.pg_description __d WHERE __d.objoid = p_obj AND __d.objsubid = 0),
    (p_obj, p_cat) AS (SELECT __d.description FROM duckmv.pg_description __d WHERE __d.objoid = p_obj AND __d.objsubid = 0);
CREATE OR REPLACE MACRO duckmv.shobj_description(o, cat) AS NULL::VARCHAR;
CREATE OR REPLACE MACRO duckmv.col_description(p_rel, p_attnum) AS (SELECT __d.description FROM duckmv.pg_description __d WHERE __d.objoid = p_rel AND __d.objsubid = p_attnum);
CREATE OR REPLACE MACRO duckmv.pg_total_relation_size(r) AS 0::BIGINT;
CREATE OR REPLACE MACRO duckmv.pg_relation_size(r) AS 0::BIGINT;
CREATE OR REPLACE MACRO duckmv.pg_table_size(r) AS 0::BIGINT;
CREATE OR REPLACE MACRO duckmv.pg_indexes_size(r) AS 0::BIGINT;
CREATE OR REPLACE MACRO duckmv.pg_database_size(d) AS 0::BIGINT;
CREATE OR REPLACE MACRO duckmv.array_upper(a, d) AS CASE WHEN len(a) = 0 THEN NULL ELSE len(a) END;
CREATE OR REPLACE MACRO duckmv.array_lower(a, d) AS CASE WHEN len(a) = 0 THEN NULL ELSE 1 END;
-- to_char of dates and timestamps: PostgreSQL's template patterns as strftime's, longest
-- first (HH24 before HH, Month before Mon); FM (no padding) as strftime's `-`. to_date and
-- to_timestamp with a template read them with strptime (compat::rewrite::functions).
CREATE OR REPLACE MACRO duckmv._pg_datetime_format(f) AS
    replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(f, '%', '%%'), 'FMHH24', '%-H'), 'FMHH12', '%-I'), 'FMHH', '%-I'), 'FMMI', '%-M'), 'FMSS', '%-S'), 'FMMM', '%-m'), 'FMDD', '%-d'), 'FM', ''), 'HH24', '%H'), 'HH12', '%I'), 'HH', '%I'), 'MI', '%M'), 'SS', '%S'), 'MS', '%g'), 'US', '%f'), 'YYYY', '%Y'), 'YY', '%y'), 'Month', '%B'), 'Mon', '%b'), 'MM', '%m'), 'Day', '%A'), 'Dy', '%a'), 'DDD', '%j'), 'DD', '%d'), 'AM', '%p'), 'PM', '%p');
CREATE OR REPLACE MACRO duckmv.to_char(v, f) AS strftime(v, duckmv._pg_datetime_format(f));
-- date_bin is DuckDB's time_bucket with an origin.
CREATE OR REPLACE MACRO duckmv.date_bin(stride, source, origin) AS time_bucket(stride, source, origin);
-- An interval's hours, minutes and seconds in microseconds (DuckDB keeps months, days and
-- microseconds apart, as PostgreSQL does).
CREATE OR REPLACE MACRO duckmv._interval_us(i) AS
    date_part('hour', i) * 3600000000 + date_part('minute', i) * 60000000 + date_part('microseconds', i);
CREATE OR REPLACE MACRO duckmv.justify_hours(i) AS
    to_months(12 * date_part('year', i) + date_part('month', i))
    + to_days(date_part('day', i) + duckmv._interval_us(i) // 86400000000)
    + to_microseconds(duckmv._interval_us(i) % 86400000000);
CREATE OR REPLACE MACRO duckmv.justify_days(i) AS
    to_months(12 * date_part('year', i) + date_part('month', i) + date_part('day', i) // 30)
    + to_days(date_part('day', i) % 30) + to_microseconds(duckmv._interval_us(i));
CREATE OR REPLACE MACRO duckmv.make_interval(years := 0, months := 0, weeks := 0, days := 0, hours := 0,
    mins := 0, secs := 0) AS
    to_months(12 * years + months) + to_days(7 * weeks + days)
    + to_microseconds(CAST(round((hours * 3600.0 + mins * 60.0 + secs) * 1000000) AS BIGINT));
-- json functions PostgreSQL has: json_typeof in PostgreSQL's words, json_object_keys as rows.
CREATE OR REPLACE MACRO duckmv.json_typeof(j) AS CASE json_type(j)
    WHEN 'OBJECT' THEN 'object' WHEN 'ARRAY' THEN 'array' WHEN 'VARCHAR' THEN 'string'
    WHEN 'BOOLEAN' THEN 'boolean' WHEN 'NULL' THEN 'null' ELSE 'number' END;
CREATE OR REPLACE MACRO duckmv.json_object_keys(j) AS unnest(json_keys(j));
CREATE OR REPLACE MACRO duckmv.array_remove(a, e) AS list_filter(a, lambda x: x IS DISTINCT FROM e);
CREATE OR REPLACE MACRO duckmv.btrim(s) AS trim(s), (s, c) AS trim(s, c);
-- initcap: the first letter or digit of each run of letters and digits upper-cased, the rest of
-- the run lower-cased (DuckDB has no initcap). \pL and \pN: letters and digits of any script.
CREATE OR REPLACE MACRO duckmv.initcap(s) AS array_to_string(list_transform(
    regexp_extract_all(s, '[\pL\pN]+|[^\pL\pN]+'), lambda w: upper(w[1]) || lower(w[2:])), '');
CREATE OR REPLACE MACRO duckmv.txid_current() AS 1::BIGINT;
CREATE OR REPLACE MACRO duckmv.pg_is_in_recovery() AS false;
-- information_schema._pg_expandarray(a): PostgreSQL's set-returning function
-- as a list of (x, n); the rewriter wraps calls in unnest().
CREATE OR REPLACE MACRO duckmv._pg_expandarray(a) AS list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': i});

-- regclass / regtype / regnamespace: casts of names resolve to oids, casts of
-- oids to names (the rewriter picks the direction from the operand).
CREATE OR REPLACE MACRO duckmv._ident(s) AS
    CASE WHEN s LIKE '"%"' THEN replace(s[2:-2], '""', '"') ELSE lower(s) END;
CREATE OR REPLACE MACRO duckmv.to_regclass(p_name) AS (CASE
    WHEN regexp_full_match(trim(p_name::VARCHAR), '\d+') THEN trim(p_name::VARCHAR)::INTEGER
    ELSE (SELECT __c.oid FROM duckmv._relations __c JOIN duckmv.pg_namespace __n ON __n.oid = __c.relnamespace
          WHERE __c.relname = duckmv._ident(string_split(trim(p_name::VARCHAR), '.')[-1])
            AND CASE WHEN len(string_split(trim(p_name::VARCHAR), '.')) > 1
                     THEN __n.nspname = duckmv._ident(string_split(trim(p_name::VARCHAR), '.')[-2])
                     ELSE __n.oid IN (11, 2200) END
          ORDER BY __n.oid LIMIT 1)
END)::INTEGER;
CREATE OR REPLACE MACRO duckmv.regclass_in(p_name) AS coalesce(duckmv.to_regclass(p_name),
    error('relation "' || p_name || '" does not exist'))::INTEGER;
CREATE OR REPLACE MACRO duckmv.regclass_out(p_obj) AS (
    SELECT CASE WHEN __c.relnamespace IN (11, 2200) THEN __c.relname ELSE __n.nspname || '.' || __c.relname END
    FROM duckmv._relations __c JOIN duckmv.pg_namespace __n ON __n.oid = __c.relnamespace WHERE __c.oid = p_obj);
CREATE OR REPLACE MACRO duckmv._type_alias1(s) AS CASE
    WHEN s IN ('integer', 'int') THEN 'int4' WHEN s = 'smallint' THEN 'int2' WHEN s = 'bigint' THEN 'int8'
    WHEN s = 'boolean' THEN 'bool' WHEN s = 'real' THEN 'float4' WHEN s IN ('double precision', 'float') THEN 'float8'
    WHEN s IN ('character varying', 'varchar') THEN 'varchar' WHEN s IN ('character', 'char') THEN 'bpchar'
    WHEN s = 'decimal' THEN 'numeric' WHEN s = 'timestamp without time zone' THEN 'timestamp'
    WHEN s = 'timestamp with time zone' THEN 'timestamptz' WHEN s = 'time without time zone' THEN 'time'
    WHEN s = 'time with time zone' THEN 'timetz' WHEN s = '"char"' THEN 'char'
    ELSE s END;
CREATE OR REPLACE MACRO duckmv._type_alias(s) AS CASE
    WHEN s LIKE '%[]' THEN '_' || duckmv._type_alias1(s[1:-3]) ELSE duckmv._type_alias1(s) END;
CREATE OR REPLACE MACRO duckmv.to_regtype(p_name) AS (CASE
    WHEN regexp_full_match(trim(p_name::VARCHAR), '\d+') THEN trim(p_name::VARCHAR)::INTEGER
    ELSE (SELECT __t.oid FROM duckmv._types __t
          WHERE __t.typname = duckmv._type_alias(duckmv._ident(regexp_replace(trim(p_name::VARCHAR), '^pg_catalog\.', '')))
             OR __t.fmt = duckmv._ident(regexp_replace(trim(p_name::VARCHAR), '^pg_catalog\.', ''))
          ORDER BY __t.oid LIMIT 1)
END)::INTEGER;
CREATE OR REPLACE MACRO duckmv.regtype_in(r) AS coalesce(duckmv.to_regtype(r),
    error('type "' || r || '" does not exist'))::INTEGER;
CREATE OR REPLACE MACRO duckmv.regtype_out(o) AS CASE WHEN o IS NULL THEN NULL WHEN o = 0 THEN '-'
    ELSE coalesce(duckmv.format_type(o, NULL), o::VARCHAR) END;
CREATE OR REPLACE MACRO duckmv.to_regnamespace(p_name) AS (CASE
    WHEN regexp_full_match(trim(p_name::VARCHAR), '\d+') THEN trim(p_name::VARCHAR)::INTEGER
    ELSE (SELECT __n.oid FROM duckmv.pg_namespace __n WHERE __n.nspname = duckmv._ident(trim(p_name::VARCHAR)))
END)::INTEGER;
CREATE OR REPLACE MACRO duckmv.regnamespace_in(r) AS coalesce(duckmv.to_regnamespace(r),
    error('schema "' || r || '" does not exist'))::INTEGER;
CREATE OR REPLACE MACRO duckmv.regnamespace_out(p_obj) AS (SELECT __n.nspname FROM duckmv.pg_namespace __n WHERE __n.oid = p_obj);
CREATE OR REPLACE MACRO duckmv.regrole_in(r) AS 10;
CREATE OR REPLACE MACRO duckmv.regrole_out(o) AS CASE WHEN o = 10 THEN duckmv._session_role() ELSE o::VARCHAR END;
CREATE OR REPLACE MACRO duckmv.regproc_in(r) AS regexp_replace(trim(r::VARCHAR), '^pg_catalog\.', '');

CREATE OR REPLACE VIEW duckmv.pg_stat_activity AS
SELECT (SELECT oid FROM duckmv.pg_database) AS datid, duckmv._client_db() AS datname, duckmv.pg_backend_pid() AS pid,
       10 AS usesysid, duckmv._session_role() AS usename, '' AS application_name, NULL::VARCHAR AS client_addr,
       -1 AS client_port, NULL::TIMESTAMPTZ AS backend_start, NULL::TIMESTAMPTZ AS query_start,
       'active' AS state, current_query() AS query, 'client backend' AS backend_type;

-- Views PostgreSQL defines over the catalogs.
CREATE OR REPLACE VIEW duckmv.pg_tables AS
SELECT n.nspname AS schemaname, c.relname AS tablename, duckmv._session_role() AS tableowner, NULL::VARCHAR AS tablespace,
       c.relhasindex AS hasindexes, false AS hasrules, false AS hastriggers, false AS rowsecurity
FROM duckmv.pg_class c JOIN duckmv.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p');

CREATE OR REPLACE VIEW duckmv.pg_views AS
SELECT n.nspname AS schemaname, c.relname AS viewname, duckmv._session_role() AS viewowner,
       duckmv.pg_get_viewdef(c.oid) AS definition
FROM duckmv.pg_class c JOIN duckmv.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'v';

CREATE OR REPLACE VIEW duckmv.pg_matviews AS
SELECT CASE WHEN v.schema = 'main' THEN 'public' ELSE v.schema END AS schemaname,
       v.name AS matviewname,
       duckmv._session_role() AS matviewowner,
       NULL::VARCHAR AS tablespace,
       false AS hasindexes,
       v.populated AS ispopulated,
       v.definition AS definition
FROM _duckmv.views v;

CREATE OR REPLACE VIEW duckmv.pg_indexes AS
SELECT n.nspname AS schemaname, i.table_name AS tablename, i.name AS indexname, NULL::VARCHAR AS tablespace,
       duckmv.pg_get_indexdef(i.oid) AS indexdef
FROM duckmv._indexes i JOIN duckmv.pg_namespace n ON n.oid = duckmv._nsp_oid(i.schema_name, i.schema_oid);


-- ------------------------------------------------------ information_schema

CREATE OR REPLACE VIEW duckmv.information_schema_schemata AS
SELECT duckmv._client_db() AS catalog_name, nspname AS schema_name, duckmv._session_role() AS schema_owner,
       NULL::VARCHAR AS default_character_set_catalog, NULL::VARCHAR AS default_character_set_schema,
       NULL::VARCHAR AS default_character_set_name, NULL::VARCHAR AS sql_path
FROM duckmv.pg_namespace;

CREATE OR REPLACE VIEW duckmv.information_schema_tables AS
SELECT duckmv._client_db() AS table_catalog, n.nspname AS table_schema, c.relname AS table_name,
       CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'BASE TABLE' END AS table_type,
       NULL::VARCHAR AS self_referencing_column_name, NULL::VARCHAR AS reference_generation,
       NULL::VARCHAR AS user_defined_type_catalog, NULL::VARCHAR AS user_defined_type_schema,
       NULL::VARCHAR AS user_defined_type_name,
       CASE c.relkind WHEN 'v' THEN 'NO' ELSE 'YES' END AS is_insertable_into, 'NO' AS is_typed,
       NULL::VARCHAR AS commit_action
FROM duckmv._relations c JOIN duckmv.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v') AND c.relnamespace <> 11;

CREATE OR REPLACE VIEW duckmv.information_schema_views AS
SELECT table_catalog, table_schema, table_name, duckmv.pg_get_viewdef(c.oid) AS view_definition,
       'NONE' AS check_option, 'NO' AS is_updatable, 'NO' AS is_insertable_into,
       'NO' AS is_trigger_updatable, 'NO' AS is_trigger_deletable, 'NO' AS is_trigger_insertable_into
FROM duckmv.information_schema_tables t
JOIN duckmv._relations c ON c.relname = t.table_name AND c.relkind = 'v'
WHERE t.table_type = 'VIEW';

CREATE OR REPLACE VIEW duckmv.information_schema_columns AS
SELECT duckmv._client_db() AS table_catalog, n.nspname AS table_schema, r.relname AS table_name,
       a.attname AS column_name, a.attnum::INTEGER AS ordinal_position, a.column_default,
       CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS is_nullable,
       CASE WHEN t.typcategory = 'A' THEN 'ARRAY' WHEN t.typtype = 'e' THEN 'USER-DEFINED' ELSE t.fmt END AS data_type,
       NULL::INTEGER AS character_maximum_length, NULL::INTEGER AS character_octet_length,
       CASE WHEN a.atttypid = 1700 AND a.atttypmod >= 4 THEN (a.atttypmod - 4) >> 16
            WHEN a.atttypid = 21 THEN 16 WHEN a.atttypid = 23 THEN 32 WHEN a.atttypid = 20 THEN 64
            WHEN a.atttypid = 700 THEN 24 WHEN a.atttypid = 701 THEN 53 END AS numeric_precision,
       CASE WHEN a.atttypid IN (1700, 700, 701) THEN 2 WHEN a.atttypid IN (21, 23, 20) THEN 2 END AS numeric_precision_radix,
       CASE WHEN a.atttypid = 1700 AND a.atttypmod >= 4 THEN (a.atttypmod - 4) & 65535
            WHEN a.atttypid IN (21, 23, 20) THEN 0 END AS numeric_scale,
       NULL::INTEGER AS datetime_precision, NULL::VARCHAR AS interval_type, NULL::INTEGER AS interval_precision,
       NULL::VARCHAR AS character_set_catalog, NULL::VARCHAR AS character_set_schema,
       NULL::VARCHAR AS character_set_name, NULL::VARCHAR AS collation_catalog, NULL::VARCHAR AS collation_schema,
       NULL::VARCHAR AS collation_name, NULL::VARCHAR AS domain_catalog, NULL::VARCHAR AS domain_schema,
       NULL::VARCHAR AS domain_name, duckmv._client_db() AS udt_catalog, 'pg_catalog' AS udt_schema,
       t.typname AS udt_name, NULL::VARCHAR AS scope_catalog, NULL::VARCHAR AS scope_schema,
       NULL::VARCHAR AS scope_name, NULL::INTEGER AS maximum_cardinality, a.attnum::VARCHAR AS dtd_identifier,
       'NO' AS is_self_referencing, 'NO' AS is_identity, NULL::VARCHAR AS identity_generation,
       NULL::VARCHAR AS identity_start, NULL::VARCHAR AS identity_increment, NULL::VARCHAR AS identity_maximum,
       NULL::VARCHAR AS identity_minimum, NULL::VARCHAR AS identity_cycle, 'NEVER' AS is_generated,
       NULL::VARCHAR AS generation_expression, CASE WHEN r.relkind = 'r' THEN 'YES' ELSE 'NO' END AS is_updatable
FROM duckmv._columns a
JOIN duckmv._relations r ON r.oid = a.attrelid AND r.relkind IN ('r', 'v')
JOIN duckmv.pg_namespace n ON n.oid = r.relnamespace
LEFT JOIN duckmv._types t ON t.oid = a.atttypid;

CREATE OR REPLACE VIEW duckmv.information_schema_table_constraints AS
SELECT duckmv._client_db() AS constraint_catalog, n.nspname AS constraint_schema, c.conname AS constraint_name,
       duckmv._client_db() AS table_catalog, n.nspname AS table_schema, r.relname AS table_name,
       CASE c.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' WHEN 'f' THEN 'FOREIGN KEY' ELSE 'CHECK' END AS constraint_type,
       'NO' AS is_deferrable, 'NO' AS initially_deferred, 'YES' AS enforced, NULL::VARCHAR AS nulls_distinct
FROM duckmv._constraints c JOIN duckmv._relations r ON r.oid = c.conrelid
JOIN duckmv.pg_namespace n ON n.oid = r.relnamespace;

CREATE OR REPLACE VIEW duckmv.information_schema_key_column_usage AS
SELECT duckmv._client_db() AS constraint_catalog, n.nspname AS constraint_schema, k.conname AS constraint_name,
       duckmv._client_db() AS table_catalog, n.nspname AS table_schema, r.relname AS table_name,
       a.attname AS column_name, k.pos::INTEGER AS ordinal_position, NULL::INTEGER AS position_in_unique_constraint
FROM (SELECT conname, conrelid, unnest(conkey) AS attnum, unnest(range(1, len(conkey) + 1)) AS pos
      FROM duckmv._constraints WHERE contype IN ('p', 'u', 'f')) k
JOIN duckmv._relations r ON r.oid = k.conrelid
JOIN duckmv.pg_namespace n ON n.oid = r.relnamespace
JOIN duckmv._columns a ON a.attrelid = k.conrelid AND a.attnum = k.attnum;
