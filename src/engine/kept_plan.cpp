// A statement planned once and run again and again: the plan of a refresh's statement, kept by
// the session's connection.
//
// Why: DuckDB 2.0 plans a prepared statement again at every run when it reads a table ("the
// optimizer may have folded the table's current state into the plan"), and planning is most of a
// small refresh: 5–14 ms for each MERGE of the TPC-H views at SF 1, against the changes it
// applies. The state a plan can hold comes from the statistics of the tables, read in two ways:
// the statistics propagation (which prunes filters, joins and whole subtrees the current values
// rule out, and hands aggregates and joins the value ranges their perfect-hash forms rely on, as
// does compressed materialization), the row-group pruner and partitioned execution (which splits
// on the current value ranges) are optimizers, switched off here; and the planner and other
// optimizers ask a table whether a column can be NULL (filter pushdown then turns a semi join's
// `IS NOT DISTINCT FROM` into `=`, which loses the NULL keys that arrive later), which duckmv's copy
// of DuckDB's nullability analysis (build.rs) answers with "not known" while this file plans. A plan made so
// depends on nothing but the catalog: the rest of the optimizer rewrites the query by its form, and
// cardinality estimates only order joins. Such a plan stays right for any data, so it may be run
// again while the catalog is as it was (DuckDB's own check of the catalog's identity and version,
// as for any prepared statement), and after DDL that left every catalog entry its binding looked
// up as it was (the entries are recorded while it plans, through duckmv's copy of the binder).
// Its join order, though, was chosen for the tables' sizes then: it is made again once a table it
// scans has grown or shrunk fourfold (past one row group).
//
// A statement whose binding asks for a new plan at every run (a function whose value is fixed per
// query, such as now(), folded into the plan; a scan that cannot be cached) is not kept.
//
// DuckDB's PREPARE keeps no physical plan of such a statement: its optimizer marks the prepared
// statement for a new plan at every run before it plans, and the physical planner then skips it.
// An optimizer extension that runs after the built-in optimizers lifts that mark again, for the
// plannings made here alone (a flag of the planning thread), so the statement is prepared with
// its plan; DuckDB's EXECUTE then checks the catalog and the parameters' types before it reuses
// the plan, as for any prepared statement. A statement whose binding asked for a new plan at
// every run has no plan to keep (PREPARE drops it) and is left to be planned at each run.
//
// Only DuckDB's own planning code runs (its PREPARE), so a kept plan is made as DuckDB makes any
// prepared statement's.
//
// The optimizers are switched off through the database's setting, the only place DuckDB reads
// them from, for the time of one planning, under one lock for every connection so that two
// plannings never restore each other's setting. Another connection planning meanwhile plans
// without them too: its plan is right, and made again at its next run anyway.

#include "native.hpp"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/catalog/catalog_entry.hpp"
#include "duckdb/catalog/catalog_entry/schema_catalog_entry.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/catalog/catalog_entry_retriever.hpp"
#include "duckdb/common/enums/optimizer_type.hpp"
#include "duckdb/common/exception/binder_exception.hpp"
#include "duckdb/execution/operator/scan/physical_table_scan.hpp"
#include "duckdb/execution/physical_plan_generator.hpp"
#include "duckdb/function/table/table_scan.hpp"
#include "duckdb/main/attached_database.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/client_data.hpp"
#include "duckdb/main/config.hpp"
#include "duckdb/main/database_manager.hpp"
#include "duckdb/main/prepared_statement.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "duckdb/optimizer/optimizer_extension.hpp"
#include "duckdb/parser/sql_statement.hpp"
#include "duckdb/parser/statement/execute_statement.hpp"
#include "duckdb/planner/operator/logical_prepare.hpp"
#include "duckdb/storage/data_table.hpp"
#include "duckdb/storage/storage_info.hpp"
#include "duckdb/transaction/transaction.hpp"

#include <mutex>

namespace duckdb {
// Defined with external linkage in prepared_statement_data.cpp: whether a catalog is still the
// one (and at the version) a plan was made against.
bool CheckCatalogIdentity(ClientContext &context, const Identifier &catalog_name,
                          const StatementProperties::CatalogIdentity catalog_identity);
// Read by duckmv's copy of DuckDB's expression_nullability.cpp (build.rs): while set, this
// thread's planning takes no column for NULL-free from the table's statistics.
thread_local bool duckmv_plan_without_statistics = false;
// Read by duckmv's copy of DuckDB's binder.cpp (build.rs): while set, every catalog entry the
// bindings of this thread look up is handed to it.
thread_local catalog_entry_callback_t *duckmv_catalog_lookups = nullptr;
} // namespace duckdb

namespace {

// The optimizers whose output depends on the data when the plan is made.
const duckdb::OptimizerType DATA_DEPENDENT[] = {
    duckdb::OptimizerType::STATISTICS_PROPAGATION,
    duckdb::OptimizerType::COMPRESSED_MATERIALIZATION,
    duckdb::OptimizerType::ROW_GROUP_PRUNER,
    duckdb::OptimizerType::PARTITIONED_EXECUTION,
};

std::mutex planning_lock;

// Set while this thread prepares a statement to keep its plan.
thread_local bool keeping = false;

// What a lookup found: an entry's address and oid (an ALTER or a CREATE OR REPLACE makes a new
// entry with a new oid), or nothing. Only compared, never followed: the entry may be gone.
struct Found {
	const duckdb::CatalogEntry *entry = nullptr;
	duckdb::idx_t oid = 0;

	bool operator==(const Found &other) const {
		return entry == other.entry && oid == other.oid;
	}
};

Found FoundOf(const duckdb::CatalogEntry *entry) {
	return entry ? Found {entry, entry->oid} : Found {};
}

// What `name` finds for a lookup of `type` in `context`'s transaction, through the session's
// search path for the parts it leaves out.
Found Find(duckdb::ClientContext &context, duckdb::CatalogType type, duckdb::QualifiedName name) {
	return FoundOf(duckdb::Catalog::GetEntry(context, duckdb::EntryLookupInfo(type, std::move(name)),
	                                         duckdb::OnEntryNotFound::RETURN_NULL)
	                   .get());
}

// A catalog entry a plan was bound to, and what its name found when the plan was made: with its
// catalog left out and with its name alone. A table made since in a schema or catalog searched
// first changes what one of them finds.
struct Dependency {
	duckdb::CatalogType type;
	duckdb::Identifier catalog;
	duckdb::Identifier schema;
	duckdb::Identifier name;
	Found entry;
	Found by_schema;
	Found by_name;
};

// A kept plan: its prepared statement (which holds its name in the connection), the catalog
// entries its binding looked up (None when one could not be named: then any change of the
// catalog makes it plan again), and the rows of the tables it scans when it was made.
struct KeptPlan {
	duckdb::unique_ptr<duckdb::PreparedStatement> prepared;
	duckdb::unique_ptr<duckdb::vector<Dependency>> dependencies;
	duckdb::vector<duckdb::idx_t> scanned_rows;
};

// Statements that read or write rows: others (DDL, settings, transactions) gain nothing from a
// kept plan, and some change what the plan was made against.
bool ReadsOrWritesRows(duckdb::StatementType type) {
	switch (type) {
	case duckdb::StatementType::SELECT_STATEMENT:
	case duckdb::StatementType::INSERT_STATEMENT:
	case duckdb::StatementType::UPDATE_STATEMENT:
	case duckdb::StatementType::DELETE_STATEMENT:
	case duckdb::StatementType::MERGE_INTO_STATEMENT:
		return true;
	default:
		return false;
	}
}

// After the built-in optimizers, in a planning of this file's: the prepared statement keeps its
// plan.
void KeepThePlan(duckdb::OptimizerExtensionInput &input, duckdb::unique_ptr<duckdb::LogicalOperator> &plan) {
	if (keeping && plan->type == duckdb::LogicalOperatorType::LOGICAL_PREPARE) {
		plan->Cast<duckdb::LogicalPrepare>().prepared->properties.always_require_rebind = false;
	}
}

// For its lifetime, this thread plans to keep: the data-dependent optimizers are off for the
// database (restored after; one such planning at a time), the nullability question answers "not
// known", and the plan is kept.
class KeptPlanning {
public:
	explicit KeptPlanning(duckdb::DBConfig &config_p)
	    : guard(planning_lock), config(config_p), before(config.GetDisabledOptimizers()) {
		auto off = before;
		for (auto type : DATA_DEPENDENT) {
			off.insert(type);
		}
		config.SetDisabledOptimizers(off);
		keeping = true;
		duckdb::duckmv_plan_without_statistics = true;
	}
	~KeptPlanning() {
		keeping = false;
		duckdb::duckmv_plan_without_statistics = false;
		config.SetDisabledOptimizers(before);
	}

private:
	std::lock_guard<std::mutex> guard;
	duckdb::DBConfig &config;
	duckdb::set<duckdb::OptimizerType> before;
};

class LookupRecord;

// The record of this thread's planning, while it plans.
thread_local LookupRecord *recording = nullptr;

// For its lifetime, records the catalog entries this thread's bindings look up: the tables,
// views, functions, types and schemas a plan made now depends on. The callback the binders
// inherit goes through `recording` rather than holding the record, so that a binder DuckDB kept
// past the planning would record nothing rather than write into a record that is gone.
class LookupRecord {
public:
	explicit LookupRecord(duckdb::ClientContext &context_p)
	    : context(context_p), callback([](duckdb::CatalogEntry &entry) {
		      if (recording) {
			      recording->Add(entry);
		      }
	      }) {
		recording = this;
		duckdb::duckmv_catalog_lookups = &callback;
	}
	~LookupRecord() {
		duckdb::duckmv_catalog_lookups = nullptr;
		recording = nullptr;
	}
	LookupRecord(const LookupRecord &) = delete;
	LookupRecord &operator=(const LookupRecord &) = delete;

	// What was recorded; NULL when an entry could not be named.
	duckdb::unique_ptr<duckdb::vector<Dependency>> Take() {
		if (!complete) {
			return nullptr;
		}
		return duckdb::make_uniq<duckdb::vector<Dependency>>(std::move(entries));
	}

private:
	void Add(duckdb::CatalogEntry &entry) {
		for (auto &known : entries) {
			if (known.entry.entry == &entry) {
				return;
			}
		}
		try {
			Dependency dependency {entry.type, entry.ParentCatalog().GetName(), duckdb::Identifier(),
			                       entry.name, Found {&entry, entry.oid}, Found {}, Found {}};
			if (entry.type != duckdb::CatalogType::SCHEMA_ENTRY) {
				dependency.schema = entry.ParentSchema().name;
				dependency.by_schema = Find(context, entry.type,
				                            duckdb::QualifiedName(duckdb::Identifier::InvalidCatalog(),
				                                                  dependency.schema, dependency.name));
				dependency.by_name = Find(context, entry.type, duckdb::QualifiedName(dependency.name));
			}
			entries.push_back(std::move(dependency));
		} catch (...) {
			complete = false;
		}
	}

	duckdb::ClientContext &context;
	duckdb::catalog_entry_callback_t callback;
	duckdb::vector<Dependency> entries;
	bool complete = true;
};

// Prepares `parsed` with its plan kept; `*dependencies` gets the catalog entries it was bound to.
duckdb::unique_ptr<duckdb::PreparedStatement> PrepareKept(duckdb::Connection &conn,
                                                         const duckdb::SQLStatement &parsed,
                                                         duckdb::unique_ptr<duckdb::vector<Dependency>> &dependencies) {
	KeptPlanning planning(duckdb::DBConfig::GetConfig(*conn.context));
	LookupRecord record(*conn.context);
	auto prepared = conn.Prepare(parsed.Copy());
	dependencies = record.Take();
	return prepared;
}

// Whether a binding in `context` would find the entry `dependency` names as the plan's binding
// did: its qualified name gives the very entry, and its name with the catalog left out and alone
// find what they found then.
bool StillBound(duckdb::ClientContext &context, const Dependency &dependency) {
	if (dependency.type == duckdb::CatalogType::SCHEMA_ENTRY) {
		return FoundOf(duckdb::Catalog::GetSchema(context, dependency.catalog, dependency.name,
		                                          duckdb::OnEntryNotFound::RETURN_NULL)
		                   .get()) == dependency.entry;
	}
	auto qualified = duckdb::QualifiedName(dependency.catalog, dependency.schema, dependency.name);
	auto by_schema =
	    duckdb::QualifiedName(duckdb::Identifier::InvalidCatalog(), dependency.schema, dependency.name);
	return Find(context, dependency.type, qualified) == dependency.entry &&
	       Find(context, dependency.type, by_schema) == dependency.by_schema &&
	       Find(context, dependency.type, duckdb::QualifiedName(dependency.name)) == dependency.by_name;
}

// The identity DuckDB's check compares for the catalog `name`, as `context`'s transaction sees it.
duckdb::StatementProperties::CatalogIdentity CurrentIdentity(duckdb::ClientContext &context,
                                                             const duckdb::Identifier &name) {
	auto database = duckdb::DatabaseManager::Get(context).GetDatabase(context, name);
	if (!database) {
		throw duckdb::BinderException("database %s is no longer attached", name);
	}
	duckdb::Transaction::Get(context, *database);
	auto &catalog = database->GetCatalog();
	return {catalog.GetOid(), catalog.GetCatalogVersion(context)};
}

// Marks the plan as made against the catalogs as they are now, so that DuckDB's check at its run
// passes: after DDL that left every entry it was bound to as it was.
void Recertify(duckdb::ClientContext &context, duckdb::PreparedStatementData &data) {
	for (auto &it : data.properties.read_databases) {
		it.second = CurrentIdentity(context, it.first);
	}
	for (auto &it : data.properties.modified_databases) {
		it.second.identity = CurrentIdentity(context, it.first);
	}
}

// The planned data of a prepared statement of `context`, NULL when it no longer holds it.
duckdb::shared_ptr<duckdb::PreparedStatementData> PlannedData(duckdb::ClientContext &context,
                                                              const duckdb::PreparedStatement &prepared) {
	auto &held = duckdb::ClientData::Get(context).prepared_statements;
	auto entry = held.find(duckdb::Identifier(prepared.GetName()));
	return entry == held.end() ? nullptr : entry->second;
}

// Every operator of a physical plan under `op`, `op` first.
void CollectOperators(const duckdb::PhysicalOperator &op,
                      duckdb::vector<duckdb::const_reference<duckdb::PhysicalOperator>> &out) {
	out.push_back(op);
	for (auto &child : op.GetChildren()) {
		CollectOperators(child.get(), out);
	}
}

// A table of at most one row group is small whatever its rows: a change log swings between empty
// and a batch's rows at every refresh, and planning again at each swing would cost more than the
// join orders it could change.
const duckdb::idx_t SMALL_TABLE_ROWS = DEFAULT_ROW_GROUP_SIZE;
// How far a scanned table may grow or shrink from its rows when the plan was made before the
// plan is made again.
const duckdb::idx_t SIZE_FACTOR = 4;

// The rows of each table the plan scans, in the order of its scans, as the join order's estimates
// count them. The tables must be those the plan was bound to (its catalog check passed).
duckdb::vector<duckdb::idx_t> ScannedRows(duckdb::PhysicalPlan &plan) {
	duckdb::vector<duckdb::const_reference<duckdb::PhysicalOperator>> ops;
	CollectOperators(plan.Root(), ops);
	duckdb::vector<duckdb::idx_t> rows;
	for (auto &op : ops) {
		if (op.get().type != duckdb::PhysicalOperatorType::TABLE_SCAN) {
			continue;
		}
		auto *bind = dynamic_cast<const duckdb::TableScanBindData *>(
		    op.get().Cast<duckdb::PhysicalTableScan>().bind_data.get());
		if (bind && bind->table.IsDuckTable()) {
			rows.push_back(bind->table.GetStorage().GetTotalRows());
		}
	}
	return rows;
}

// Whether a scanned table has grown or shrunk past what the plan's join order was chosen for.
// The plan still answers right (it holds nothing the data said), but a join whose build side was
// an empty change log materializes that log whole once it holds a backlog of other views' rows.
bool SizesMoved(const duckdb::vector<duckdb::idx_t> &then, const duckdb::vector<duckdb::idx_t> &now) {
	if (then.size() != now.size()) {
		return true;
	}
	for (duckdb::idx_t i = 0; i < then.size(); i++) {
		auto a = duckdb::MaxValue(then[i], SMALL_TABLE_ROWS);
		auto b = duckdb::MaxValue(now[i], SMALL_TABLE_ROWS);
		if (a > b * SIZE_FACTOR || b > a * SIZE_FACTOR) {
			return true;
		}
	}
	return false;
}

// Drops the filters the plan's hash joins pushed into its table scans at its last run (the build
// side's key range, its row ids), which point into that run's join state. A plan made for one run
// starts without them. A kept plan kept them, and DuckDB frees a join's state when it builds the
// pipelines again but clears the join's filters only when the join's build starts; a scan whose
// pipeline DuckDB initializes when it schedules it copied the stale filters first, and the server
// died in that scan's zone-map check (tests/soak.rs, about one run in fifteen).
void ClearRuntimeFilters(duckdb::PhysicalPlan &plan) {
	duckdb::vector<duckdb::const_reference<duckdb::PhysicalOperator>> ops;
	CollectOperators(plan.Root(), ops);
	for (auto &op : ops) {
		if (op.get().type != duckdb::PhysicalOperatorType::TABLE_SCAN) {
			continue;
		}
		auto &filters = op.get().Cast<duckdb::PhysicalTableScan>().dynamic_filters;
		if (!filters) {
			continue;
		}
		for (auto &pusher : ops) {
			filters->ClearFilters(pusher.get());
		}
	}
}

} // namespace

// Registers the optimizer extension that keeps plans, once per database (before any planning
// of this file's). NULL, or an error message (free with duckdb_free).
extern "C" char *duckmv_register_kept_plans(duckdb_connection connection) {
	return duckmv::Guarded([&]() {
		duckdb::OptimizerExtension extension;
		extension.optimize_function = KeepThePlan;
		duckdb::OptimizerExtension::Register(duckdb::DBConfig::GetConfig(duckmv::ContextOf(connection)),
		                                     std::move(extension));
	});
}

// Plans a parsed statement (left as it is) on `connection` to be run again without planning.
// Returns the kept plan (free with duckmv_destroy_kept_plan), or NULL: with `*out_error` NULL when
// the statement must be planned at every run, with the message (free with duckdb_free) when
// planning failed.
extern "C" void *duckmv_keep_plan(duckdb_connection connection, const void *statement, char **out_error) {
	*out_error = nullptr;
	try {
		auto &conn = *reinterpret_cast<duckdb::Connection *>(connection);
		auto &parsed = *static_cast<const duckdb::SQLStatement *>(statement);
		if (!ReadsOrWritesRows(parsed.type)) {
			return nullptr;
		}
		duckdb::unique_ptr<duckdb::vector<Dependency>> dependencies;
		auto prepared = PrepareKept(conn, parsed, dependencies);
		if (prepared->HasError()) {
			*out_error = duckmv::CMessage(prepared->GetError());
			return nullptr;
		}
		auto data = PlannedData(*conn.context, *prepared);
		if (!data || !data->physical_plan || data->properties.always_require_rebind) {
			return nullptr;
		}
		auto rows = ScannedRows(*data->physical_plan);
		return new KeptPlan {std::move(prepared), std::move(dependencies), std::move(rows)};
	} catch (std::exception &ex) {
		*out_error = duckmv::CMessage(duckdb::ErrorData(ex).Message());
		return nullptr;
	} catch (...) {
		*out_error = duckmv::CMessage("unknown error");
		return nullptr;
	}
}

// Whether the kept plan was made against the catalogs it reads and writes as `connection`'s open
// transaction sees them: 1 yes, 0 no (plan it again), -1 unknown (no transaction is open).
// DuckDB makes the same check at every run and plans the statement anew, for that run, when it
// fails; it compares the catalogs' versions, which any DDL moves on. When the version moved but
// every entry the plan was bound to is still the one a binding would find, the plan is marked
// as made against the catalog as it is, and kept: DDL on other tables (a user's CREATE TABLE, a
// full refresh's swap of another view's storage) no longer makes every session plan again.
extern "C" int32_t duckmv_kept_plan_current(duckdb_connection connection, const void *kept_p) {
	try {
		auto &context = duckmv::ContextOf(connection);
		auto &kept = *static_cast<const KeptPlan *>(kept_p);
		auto data = PlannedData(context, *kept.prepared);
		if (!data || data->properties.always_require_rebind || !data->physical_plan) {
			return 0;
		}
		if (!context.transaction.HasActiveTransaction()) {
			return -1;
		}
		bool same = true;
		for (auto &it : data->properties.read_databases) {
			same = same && duckdb::CheckCatalogIdentity(context, it.first, it.second);
		}
		for (auto &it : data->properties.modified_databases) {
			same = same && duckdb::CheckCatalogIdentity(context, it.first, it.second.identity);
		}
		if (!same) {
			if (!kept.dependencies) {
				return 0;
			}
			for (auto &dependency : *kept.dependencies) {
				if (!StillBound(context, dependency)) {
					return 0;
				}
			}
			Recertify(context, *data);
		}
		return SizesMoved(kept.scanned_rows, ScannedRows(*data->physical_plan)) ? 0 : 1;
	} catch (...) {
		return 0;
	}
}

// Runs a kept plan with `n_values` values for its parameters `$1`, `$2`, … and stores the pending
// result in `*out_result`, as duckmv_submit_parsed does.
extern "C" duckdb_state duckmv_submit_kept_plan(void *kept, const duckdb_value *values, uint64_t n_values,
                                                duckdb_pending_result *out_result) {
	auto &prepared = *static_cast<KeptPlan *>(kept)->prepared;
	return duckmv::SubmitPending(out_result, [&](duckdb::PendingStatementWrapper &result) {
		auto context = prepared.TryGetContext();
		auto data = context ? PlannedData(*context, prepared) : nullptr;
		if (data && data->physical_plan) {
			ClearRuntimeFilters(*data->physical_plan);
		}
		auto params = duckmv::ParamValues(values, n_values);
		result.statement = prepared.Submit(params);
		result.statement->Materialize();
	});
}

// Drops a kept plan (and its prepared statement from its connection, when that is still open).
extern "C" void duckmv_destroy_kept_plan(void *kept) {
	delete static_cast<KeptPlan *>(kept);
}
