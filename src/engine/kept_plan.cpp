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
// as for any prepared statement).
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
#include "duckdb/common/enums/optimizer_type.hpp"
#include "duckdb/execution/operator/scan/physical_table_scan.hpp"
#include "duckdb/execution/physical_plan_generator.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/client_data.hpp"
#include "duckdb/main/config.hpp"
#include "duckdb/main/prepared_statement.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "duckdb/optimizer/optimizer_extension.hpp"
#include "duckdb/parser/sql_statement.hpp"
#include "duckdb/parser/statement/execute_statement.hpp"
#include "duckdb/planner/operator/logical_prepare.hpp"

#include <mutex>

namespace duckdb {
// Defined with external linkage in prepared_statement_data.cpp: whether a catalog is still the
// one (and at the version) a plan was made against.
bool CheckCatalogIdentity(ClientContext &context, const Identifier &catalog_name,
                          const StatementProperties::CatalogIdentity catalog_identity);
// Read by duckmv's copy of DuckDB's expression_nullability.cpp (build.rs): while set, this
// thread's planning takes no column for NULL-free from the table's statistics.
thread_local bool duckmv_plan_without_statistics = false;
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

// A kept plan: its prepared statement (which holds its name in the connection).
struct KeptPlan {
	duckdb::unique_ptr<duckdb::PreparedStatement> prepared;
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

// Prepares `parsed` with its plan kept.
duckdb::unique_ptr<duckdb::PreparedStatement> PrepareKept(duckdb::Connection &conn,
                                                         const duckdb::SQLStatement &parsed) {
	KeptPlanning planning(duckdb::DBConfig::GetConfig(*conn.context));
	return conn.Prepare(parsed.Copy());
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
		auto prepared = PrepareKept(conn, parsed);
		if (prepared->HasError()) {
			*out_error = duckmv::CMessage(prepared->GetError());
			return nullptr;
		}
		auto data = PlannedData(*conn.context, *prepared);
		if (!data || !data->physical_plan || data->properties.always_require_rebind) {
			return nullptr;
		}
		return new KeptPlan {std::move(prepared)};
	} catch (std::exception &ex) {
		*out_error = duckmv::CMessage(duckdb::ErrorData(ex).Message());
		return nullptr;
	} catch (...) {
		*out_error = duckmv::CMessage("unknown error");
		return nullptr;
	}
}

// Whether the kept plan was made against the catalogs it reads and writes as `connection`'s open
// transaction sees them: 1 yes, 0 no (plan it again), -1 unknown (no transaction is open). Only a
// hint for keeping plans fresh: DuckDB makes the same check at every run and plans the statement
// anew, for that run, when it fails.
extern "C" int32_t duckmv_kept_plan_current(duckdb_connection connection, const void *kept) {
	try {
		auto &context = duckmv::ContextOf(connection);
		auto data = PlannedData(context, *static_cast<const KeptPlan *>(kept)->prepared);
		if (!data || data->properties.always_require_rebind) {
			return 0;
		}
		if (!context.transaction.HasActiveTransaction()) {
			return -1;
		}
		for (auto &it : data->properties.read_databases) {
			if (!duckdb::CheckCatalogIdentity(context, it.first, it.second)) {
				return 0;
			}
		}
		for (auto &it : data->properties.modified_databases) {
			if (!duckdb::CheckCatalogIdentity(context, it.first, it.second.identity)) {
				return 0;
			}
		}
		return 1;
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
