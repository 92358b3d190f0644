//! Compiles three changes to the bundled DuckDB 2.0.0 and links them in place of the original code
//! (a fix for a memory-corruption bug, a switch for planning without the tables' statistics, and
//! a record of the catalog entries a planning binds to);
//! and, with the same flags, duckmv's own C++ against DuckDB's internals (`src/engine/*.cpp`: the
//! functions `engine::native` registers, `engine::one_shot` and `engine::kept_plan`).
//!
//! The bug: `RowIdColumnData::Filter` (src/storage/table/row_id_column_data.cpp) hands a table
//! filter on the `rowid` column the number of *selected* rows as the vector's size, while the
//! selection's indexes run over the whole vector. The bloom-filter executor that a hash join pushes
//! into a scan sizes its hash buffer, once, by the size it is handed first, and then writes hashes
//! at the selection's indexes: past the end of the buffer when the first vector it saw had rows
//! taken out by deletes or another filter. A join on `rowid` gets a bloom filter (rather than the
//! exact prefix-range filter) when its row ids span more than 2^26, which is the case as soon as
//! the build side holds a row inserted by the open transaction (local row ids start far above the
//! stored ones). DuckDB joins on `rowid` for late materialization of `SELECT * … ORDER BY … LIMIT`,
//! for `WHERE rowid IN (SELECT …)`, and in duckmv's MERGE rewrite. Minimal SQL; without the fix the
//! server dies with SIGSEGV on every run (tests/soak.rs replays it):
//!
//! ```sql
//! CREATE TABLE t AS SELECT range AS id, range % 16 AS k FROM range(100000);
//! DELETE FROM t WHERE id % 3 = 0;
//! BEGIN;
//! INSERT INTO t VALUES (-1, 1);
//! SELECT * FROM t ORDER BY id LIMIT 5;
//! ```
//!
//! The fix passes the vector's full size.
//!
//! The switch: a plan `engine::kept_plan` keeps and runs again must not depend on the data it was
//! planned over. DuckDB's planner and several optimizers ask whether a column can be NULL
//! (`NotNullExpressionAnalyzer`), which reads the table's statistics, and fold the answer into the
//! plan: a column with no NULL today turns `IS NOT DISTINCT FROM` into `=` in a semi join (filter
//! pushdown), and lets the deliminator and the subquery planner drop NULL handling. The switch, a
//! flag of the planning thread (defined in kept_plan.cpp), makes that question answer "not known"
//! while kept_plan.cpp plans; join ordering still reads the statistics (its estimates only order
//! the joins).
//!
//! The record: a kept plan stays right while every catalog entry its binding looked up (tables,
//! views, functions, types, schemas) is the one a binding would find. DuckDB's binder hands each
//! entry it looks up to a callback of its `CatalogEntryRetriever`, which only DuckDB sets (for
//! the dependencies of a view or macro being created); the change sets it on a statement's first
//! binder, from a variable of the planning thread (defined in kept_plan.cpp), and every binder
//! under it inherits it.
//!
//! libduckdb-sys compiles DuckDB in unity files; each one that holds a changed file is compiled
//! again here, with the change and the same flags, into an archive linked whole before libduckdb's:
//! its definitions are present first, so the linker never takes the original member from
//! libduckdb's archive. An upgrade of the bundled DuckDB fails this build until each change is
//! looked at again.

use std::path::{Path, PathBuf};

/// A change to one DuckDB source file: the text to find (exactly once) and what it becomes.
struct Patch {
    /// The unity file of libduckdb-sys that includes the file.
    unity: &'static str,
    file: &'static str,
    find: &'static str,
    replace: &'static str,
    /// What to look at when `find` is no longer there.
    what: &'static str,
}

const PATCHES: [Patch; 3] = [
    Patch {
        unity: "ub_src_storage_table.cpp",
        file: "src/storage/table/row_id_column_data.cpp",
        find: "ColumnSegment::FilterSelection(sel, result, filter_state, count, count);",
        replace: "ColumnSegment::FilterSelection(sel, result, filter_state, max_count, count);",
        what: "whether the rowid filter fix still applies",
    },
    Patch {
        unity: "ub_src_planner.cpp",
        file: "src/planner/expression_nullability.cpp",
        find: "auto stats = table->GetStatistics(context, column_index.GetPrimaryIndex());",
        replace: "extern thread_local bool duckmv_plan_without_statistics;\n\
                  \t\tif (duckmv_plan_without_statistics) {\n\
                  \t\t\treturn false;\n\
                  \t\t}\n\
                  \t\tauto stats = table->GetStatistics(context, column_index.GetPrimaryIndex());",
        what:
            "where the planner asks a table whether a column can be NULL (kept_plan.cpp's switch)",
    },
    Patch {
        unity: "ub_src_planner.cpp",
        file: "src/planner/binder.cpp",
        find: "\tIncreaseDepth();\n\tif (parent) {\n",
        replace: "\tIncreaseDepth();\n\
                  \textern thread_local catalog_entry_callback_t *duckmv_catalog_lookups;\n\
                  \tif (!parent && duckmv_catalog_lookups) {\n\
                  \t\tentry_retriever.SetCallback(*duckmv_catalog_lookups);\n\
                  \t}\n\
                  \tif (parent) {\n",
        what: "where a statement's first binder is made (kept_plan.cpp's record of the catalog \
               entries a plan was bound to)",
    },
];
/// duckmv's own C++ (see `engine::native` and `engine::one_shot`), built with the same flags.
const NATIVE: [&str; 6] = [
    "src/engine/native.hpp",
    "src/engine/one_shot.cpp",
    "src/engine/kept_plan.cpp",
    "src/engine/utc_timestamptz.cpp",
    "src/engine/pg_bytea.cpp",
    "src/engine/pg_round.cpp",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for file in NATIVE {
        println!("cargo:rerun-if-changed={file}");
    }
    // libduckdb-sys publishes <sources>/duckdb/src/include.
    let include = PathBuf::from(
        std::env::var("DEP_DUCKDB_INCLUDE").expect("libduckdb-sys publishes DEP_DUCKDB_INCLUDE"),
    );
    let duckdb = include
        .parent()
        .and_then(Path::parent)
        .expect("include dir is <sources>/duckdb/src/include")
        .to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    let units: Vec<PathBuf> = unities()
        .into_iter()
        .map(|u| apply(u, &duckdb, &out))
        .collect();

    // The flags libduckdb-sys's bundled build uses (build_bundled_cc.rs), for the extensions
    // duckmv enables (core_functions always, json by feature).
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .files(&units)
        .files(NATIVE.iter().filter(|f| f.ends_with(".cpp")))
        .include(&duckdb)
        .define("DUCKDB_EXTENSION_CORE_FUNCTIONS_LINKED", Some("1"))
        .define("DUCKDB_EXTENSION_JSON_LINKED", Some("1"))
        .define("DUCKDB_EXTENSION_AUTOINSTALL_DEFAULT", "1")
        .define("DUCKDB_EXTENSION_AUTOLOAD_DEFAULT", "1")
        .define("NDEBUG", None)
        .flag_if_supported("-std=c++17")
        .warnings(false)
        .flag_if_supported("-w")
        .opt_level(3)
        .cargo_metadata(false);
    for dir in include_dirs(&duckdb) {
        build.include(duckdb.join(dir));
    }
    build.compile("duckmv_duckdb_fixes");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static:+whole-archive=duckmv_duckdb_fixes");
}

/// The unity files that hold a changed file, each once.
fn unities() -> Vec<&'static str> {
    let mut unities: Vec<&str> = PATCHES.iter().map(|p| p.unity).collect();
    unities.sort_unstable();
    unities.dedup();
    unities
}

/// Writes each changed file of `unity` with its changes, and the unity file again with the
/// changed files in place of the originals; returns the unity file to compile.
fn apply(unity: &str, duckdb: &Path, out: &Path) -> PathBuf {
    let patches: Vec<&Patch> = PATCHES.iter().filter(|p| p.unity == unity).collect();
    let mut files: Vec<&str> = patches.iter().map(|p| p.file).collect();
    files.sort_unstable();
    files.dedup();
    for file in &files {
        let mut text = std::fs::read_to_string(duckdb.join(file)).expect("read the DuckDB source");
        for patch in patches.iter().filter(|p| p.file == *file) {
            assert_eq!(
                text.matches(patch.find).count(),
                1,
                "the bundled DuckDB changed {}: check {}",
                patch.file,
                patch.what
            );
            text = text.replace(patch.find, patch.replace);
        }
        std::fs::write(out.join(changed_name(file)), text).unwrap();
    }

    let original = std::fs::read_to_string(duckdb.join(unity)).expect("read the unity file");
    let mut patched = String::new();
    let mut replaced = 0;
    for line in original.lines() {
        let included = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|l| l.strip_suffix('"'));
        match included {
            Some(f) if files.contains(&f) => {
                let changed = out.join(changed_name(f));
                patched.push_str(&format!("#include \"{}\"\n", changed.display()));
                replaced += 1;
            }
            Some(path) => {
                patched.push_str(&format!("#include \"{}\"\n", duckdb.join(path).display()))
            }
            None => patched.push_str(&format!("{line}\n")),
        }
    }
    assert_eq!(
        replaced,
        files.len(),
        "{unity} no longer includes {files:?}"
    );
    let patched_unity = out.join(unity);
    std::fs::write(&patched_unity, patched).unwrap();
    patched_unity
}

/// Where a changed file is written: its path with `/` as `_`, so that two files of one name
/// in different directories stay apart.
fn changed_name(file: &str) -> String {
    file.replace('/', "_")
}

/// The include directories of DuckDB's base and of the linked extensions, from its manifest.
fn include_dirs(duckdb: &Path) -> Vec<String> {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(duckdb.join("manifest.json")).expect("read DuckDB's manifest"),
    )
    .expect("parse DuckDB's manifest");
    let dirs = |v: &serde_json::Value| -> Vec<String> {
        v["include_dirs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut all = dirs(&manifest["base"]);
    for ext in ["core_functions", "json"] {
        all.extend(dirs(&manifest["extensions"][ext]));
    }
    all.sort();
    all.dedup();
    all
}
