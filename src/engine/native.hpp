// What duckmv's own C++ (compiled by build.rs against the bundled DuckDB) shares: the way each
// registration hands an error back across the C API, and how it adds overloads.

#pragma once

#include "duckdb.h"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/common/error_data.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/connection.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"

#include <cstring>
#include <exception>
#include <string>

namespace duckmv {

// `message` in memory from duckdb_malloc, which the Rust caller frees with duckdb_free.
inline char *CMessage(const std::string &message) {
	auto out = static_cast<char *>(duckdb_malloc(message.size() + 1));
	std::memcpy(out, message.c_str(), message.size() + 1);
	return out;
}

// Runs `body`; NULL, or the message of what it threw. No C++ exception crosses the C API.
template <class BODY>
char *Guarded(BODY &&body) {
	try {
		body();
		return nullptr;
	} catch (std::exception &e) {
		return CMessage(duckdb::ErrorData(e).Message());
	} catch (...) {
		return CMessage("unknown error");
	}
}

// The values a C API call hands for a statement's parameters `$1`, `$2`, … (copied).
inline duckdb::vector<duckdb::Value> ParamValues(const duckdb_value *values, uint64_t n_values) {
	duckdb::vector<duckdb::Value> params;
	for (uint64_t i = 0; i < n_values; i++) {
		params.push_back(*reinterpret_cast<const duckdb::Value *>(values[i]));
	}
	return params;
}

// A pending result for the C API, whose statement `submit` sets (materialized unless it lets it
// stream); what `submit` throws becomes an error result. Stored in `*out`, to be destroyed with
// duckdb_destroy_pending whatever this returns: DuckDBError when the statement failed to plan or
// start (duckdb_pending_error has the message).
template <class SUBMIT>
duckdb_state SubmitPending(duckdb_pending_result *out, SUBMIT &&submit) {
	auto result = new duckdb::PendingStatementWrapper();
	result->allow_streaming = false;
	try {
		submit(*result);
	} catch (std::exception &ex) {
		result->statement = duckdb::make_uniq<duckdb::QueryResult>(duckdb::ErrorData(ex));
	} catch (...) {
		result->statement = duckdb::make_uniq<duckdb::QueryResult>(duckdb::ErrorData("unknown error"));
	}
	*out = reinterpret_cast<duckdb_pending_result>(result);
	return result->statement->HasError() ? DuckDBError : DuckDBSuccess;
}

// The client context of a C API connection handle (a duckdb::Connection).
inline duckdb::ClientContext &ContextOf(duckdb_connection connection) {
	return *reinterpret_cast<duckdb::Connection *>(connection)->context;
}

// Adds `set`'s overloads to the system catalog's function of that name (creating it when
// absent), where every connection binds them; an overload of the same arguments is replaced.
inline void AddOverloads(duckdb::ClientContext &context, duckdb::ScalarFunctionSet set) {
	auto &catalog = duckdb::Catalog::GetSystemCatalog(context);
	duckdb::CreateScalarFunctionInfo info(std::move(set));
	info.on_conflict = duckdb::OnCreateConflict::ALTER_ON_CONFLICT;
	info.internal = true;
	catalog.CreateFunction(context, info);
}

} // namespace duckmv
