// A statement planned once: parsed here, its kind read from the parse, then submitted as parsed.
//
// Why: DuckDB 2.0 re-binds a prepared statement at every execution when it reads a table (the
// optimizer may have folded the table's current state into the plan), so preparing a statement
// to learn its kind and then executing it plans it twice. A query from the simple protocol runs
// once: parsed, checked by the server, then submitted as the parsed statement, it is planned
// once, as `duckdb_query` would plan it.
//
// A statement run again and again (a refresh's) is kept parsed by the server and submitted as a
// copy with its parameter values, planned once per run: a prepared statement is planned when
// prepared and again at each run, since it reads tables.
//
// The pending result handed back is the C API's own wrapper, built as
// `duckdb_pending_prepared_streaming` builds it, so the caller drives and reads it with the C API.

#include "native.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/query_result_stream.hpp"
#include "duckdb/main/valid_checker.hpp"
#include "duckdb/parser/sql_statement.hpp"

// Parses `query`. When it holds exactly one statement, stores it in `*out_statement` (the caller
// owns it: submit it or destroy it) and its kind, as the C API numbers statement types, in
// `*out_type`. Otherwise (none, several, or a parse error) `*out_statement` stays NULL: the caller
// prepares the text instead, which reports what is wrong as it always has.
extern "C" void duckmv_parse_one(duckdb_connection connection, const char *query, void **out_statement,
                                 uint32_t *out_type, uint64_t *out_params) {
	*out_statement = nullptr;
	try {
		auto &conn = *reinterpret_cast<duckdb::Connection *>(connection);
		auto statements = conn.ExtractStatements(query);
		if (statements.size() != 1) {
			return;
		}
		*out_type = static_cast<uint32_t>(duckdb::StatementTypeToC(statements[0]->type));
		*out_params = statements[0]->named_param_map.size();
		*out_statement = statements[0].release();
	} catch (...) {
		*out_statement = nullptr;
	}
}

// Destroys a statement `duckmv_parse_one` returned and nobody submitted.
extern "C" void duckmv_destroy_parsed(void *statement) {
	delete static_cast<duckdb::SQLStatement *>(statement);
}

// A deep copy of a parsed statement (the caller owns it), or NULL when copying failed.
extern "C" void *duckmv_copy_parsed(const void *statement) {
	try {
		return static_cast<const duckdb::SQLStatement *>(statement)->Copy().release();
	} catch (...) {
		return nullptr;
	}
}

// What a statement returns, from binding it alone (`duckmv_bind_parsed`).
struct DuckmvSignature {
	duckdb::vector<std::string> names;
	duckdb::vector<duckdb::LogicalType> types;
};

// Binds a parsed statement (left as it is) in the connection's transaction without optimizing or
// planning it, for the result columns a Describe announces before it runs: preparing would plan
// it whole, and DuckDB plans it again when it runs. On success stores the columns in
// `*out_signature` (free with duckmv_destroy_signature). On failure stores the message, with the
// statement's position as preparing gives it, in `*out_error` (free with duckdb_free) and leaves
// the transaction as a failed prepare leaves it (invalidated, where the error's kind does that).
extern "C" duckdb_state duckmv_bind_parsed(duckdb_connection connection, const void *statement,
                                          void **out_signature, char **out_error) {
	*out_signature = nullptr;
	*out_error = nullptr;
	auto &conn = *reinterpret_cast<duckdb::Connection *>(connection);
	auto &parsed = *static_cast<const duckdb::SQLStatement *>(statement);
	try {
		auto bound = conn.context->BindStatement(parsed.Copy());
		auto signature = new DuckmvSignature();
		for (auto &name : bound.names) {
			signature->names.push_back(name.GetIdentifierName());
		}
		signature->types = std::move(bound.types);
		*out_signature = signature;
		return DuckDBSuccess;
	} catch (std::exception &ex) {
		duckdb::ErrorData error(ex);
		auto &context = *conn.context;
		// As ClientContext::ErrorInvalidatesTransaction decides (private in DuckDB).
		auto policy = context.transaction.GetInvalidationPolicy();
		bool invalidates = policy == duckdb::TransactionInvalidationPolicy::STANDARD_POLICY ||
		                   policy == duckdb::TransactionInvalidationPolicy::ALL_ERRORS_INVALIDATE_TRANSACTION ||
		                   duckdb::Exception::InvalidatesTransaction(error.Type());
		if (invalidates && context.HasActiveTransaction()) {
			duckdb::ValidChecker::Invalidate(context.ActiveTransaction(), error.RawMessage());
		}
		error.FinalizeError();
		error.AddErrorLocation(parsed.query);
		*out_error = strdup(error.Message().c_str());
		return DuckDBError;
	}
}

extern "C" uint64_t duckmv_signature_columns(const void *signature) {
	return static_cast<const DuckmvSignature *>(signature)->names.size();
}

// Column `i`'s name (free with duckdb_free).
extern "C" char *duckmv_signature_name(const void *signature, uint64_t i) {
	return strdup(static_cast<const DuckmvSignature *>(signature)->names[i].c_str());
}

// Column `i`'s type (free with duckdb_destroy_logical_type).
extern "C" duckdb_logical_type duckmv_signature_type(const void *signature, uint64_t i) {
	auto &type = static_cast<const DuckmvSignature *>(signature)->types[i];
	return reinterpret_cast<duckdb_logical_type>(new duckdb::LogicalType(type));
}

extern "C" void duckmv_destroy_signature(void *signature) {
	delete static_cast<DuckmvSignature *>(signature);
}

// Submits a statement `duckmv_parse_one` or `duckmv_copy_parsed` returned (taking it over), with
// `n_values` values for its parameters `$1`, `$2`, … (left to the caller), and stores the pending result in
// `*out_result`, to be destroyed with duckdb_destroy_pending whatever this returns. Streams the
// result where DuckDB would for a prepared statement executed with
// duckdb_pending_prepared_streaming. Returns DuckDBError when the statement failed to plan or start
// (duckdb_pending_error has the message).
extern "C" duckdb_state duckmv_submit_parsed(duckdb_connection connection, void *statement,
                                            const duckdb_value *values, uint64_t n_values,
                                            duckdb_pending_result *out_result) {
	duckdb::unique_ptr<duckdb::SQLStatement> owned(static_cast<duckdb::SQLStatement *>(statement));
	return duckmv::SubmitPending(out_result, [&](duckdb::PendingStatementWrapper &result) {
		auto &conn = *reinterpret_cast<duckdb::Connection *>(connection);
		auto type = owned->type;
		if (n_values == 0) {
			result.statement = conn.Submit(std::move(owned));
		} else {
			auto params = duckmv::ParamValues(values, n_values);
			result.statement = conn.Submit(std::move(owned), params);
		}
		result.allow_streaming = duckdb::StreamsByDefault(type, *result.statement);
		if (!result.allow_streaming) {
			result.statement->Materialize();
		}
	});
}
