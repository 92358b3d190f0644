-- Grafana 12 PostgreSQL data source: the backend's pgx health-check ping and schema-browser queries (pkg/tsdb/grafana-postgresql-datasource/schema.go) and the query editor's metadata queries (postgresMetaQuery.ts: version, TimescaleDB probe, schemas, tables, columns for a bare and a schema-qualified table name).
-- ping
=====
SELECT current_setting('server_version_num')::int/100 as version
=====
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'
=====
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name
=====
SELECT
    CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1
=====
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1
=====
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('items'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('items'))[1]
          AND quote_ident(table_name) = (parse_ident('items'))[2]
        ELSE quote_ident(table_name) = 'items'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
=====
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('public.items'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('public.items'))[1]
          AND quote_ident(table_name) = (parse_ident('public.items'))[2]
        ELSE quote_ident(table_name) = 'public.items'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
=====
SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name
=====
SELECT table_name FROM information_schema.tables
		 WHERE table_schema = 'public' AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name
=====
SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = 'public' AND table_name = 'items'
		 ORDER BY ordinal_position
=====
SELECT 'name' AS col_name, "name"::text AS val FROM (SELECT DISTINCT "name" FROM "public"."items" WHERE "name" IS NOT NULL ORDER BY "name" LIMIT 100) sub_0 UNION ALL SELECT 'code' AS col_name, "code"::text AS val FROM (SELECT DISTINCT "code" FROM "public"."items" WHERE "code" IS NOT NULL ORDER BY "code" LIMIT 100) sub_1
