-- DBeaver 24.2 (PostgreSQL plugin, org.jkiss.dbeaver.ext.postgresql): connect and navigator-expansion queries built in PostgreDataSource/PostgreExecutionContext/PostgreDatabase/PostgreSchema/PostgreTableReal/PostgreViewBase with default connection settings; JDBC-bound names and oids are written as literals or sub-selects.
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='duckmv'
=====
select * from pg_catalog.pg_settings where name='standard_conforming_strings'
=====
SELECT version()
=====
SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1
=====
SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1
=====
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description
FROM pg_catalog.pg_type t
LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem 
LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid
WHERE t.typname IS NOT NULL
AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')
=====
SELECT * FROM pg_catalog.pg_enum
=====
SELECT current_schema(),session_user
=====
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname
=====
SHOW search_path
=====
SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,  pg_catalog.pg_get_partkeydef(c.oid) as partition_key 
FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass
WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public') AND c.relkind not in ('i','I','c')
=====
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid
WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public')
ORDER BY a.attnum
=====
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid
WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.oid=(SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items')
ORDER BY a.attnum
=====
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then "substring"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy
FROM pg_catalog.pg_constraint c
INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid
LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass
WHERE t.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public')
ORDER BY c.oid
=====
SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans
FROM pg_catalog.pg_index i
INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid
INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid
LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid
WHERE  i.indrelid=(SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items') ORDER BY c.relname
=====
SELECT p.oid as poid,p.*,pg_catalog.pg_get_expr(p.proargdefaults, 0) as arg_defaults,d.description
FROM pg_catalog.pg_proc p
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=p.oid and d.classoid='pg_proc'::regclass  AND d.objsubid = 0
WHERE p.pronamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public')
ORDER BY p.proname
=====
SELECT pg_get_viewdef((SELECT oid FROM pg_catalog.pg_class WHERE relname = 'cheap'), true)
=====
select pg_catalog.pg_total_relation_size((SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items')) as total_rel_size,pg_catalog.pg_relation_size((SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items')) as rel_size
=====
SELECT x.oid,x.*,p.pronamespace as func_schema_id,d.description
FROM pg_catalog.pg_trigger x
LEFT OUTER JOIN pg_catalog.pg_proc p ON p.oid=x.tgfoid 
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=x.oid AND d.objsubid=0 
WHERE x.tgrelid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items') AND NOT x.tgisinternal
=====
SELECT r.oid,r.*, pg_get_ruledef(r.oid) AS definition
FROM pg_rewrite r
WHERE r.ev_class=(SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items') AND r.rulename <> '_RETURN'::name
=====
SELECT i.inhrelid relid, pc.relnamespace parent_ns, pc.oid parent_oid, i.inhseqno
FROM pg_catalog.pg_inherits i, pg_class rc, pg_class pc
WHERE rc.oid=i.inhrelid AND rc.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public') AND pc.oid=i.inhparent
=====
SELECT a.oid,a.*,pd.description FROM pg_catalog.pg_roles a 
left join pg_catalog.pg_shdescription pd on a.oid = pd.objoid
ORDER BY a.rolname
=====
SELECT am.oid,am.* FROM pg_catalog.pg_am am 
ORDER BY am.oid
=====
select description from pg_shdescription join pg_database on objoid = pg_database.oid where datname = 'duckmv'
