// round(double precision) rounds halves to even, as PostgreSQL's does (it is the C library's
// rint: round(2.5::float8) = 2, round(3.5::float8) = 4). DuckDB's rounds them away from zero
// (3 and 4), a silent difference in every report that rounds a float. round(numeric) rounds
// away from zero in both and is left alone. The DOUBLE and FLOAT overloads of one argument are
// replaced.

#include "native.hpp"
#include "duckdb/common/vector_operations/unary_executor.hpp"

#include <cmath>

namespace {

using namespace duckdb;

template <class T>
void RoundHalfEven(DataChunk &args, ExpressionState &state, Vector &result) {
	UnaryExecutor::Execute<T, T>(args.data[0], result, args.size(), [](T x) { return std::nearbyint(x); });
}

} // namespace

// Registers both overloads for every connection of `connection`'s database. Returns NULL, or an
// error message the caller frees with duckdb_free.
extern "C" char *duckmv_register_pg_round(duckdb_connection connection) {
	return duckmv::Guarded([&]() {
		auto &context = duckmv::ContextOf(connection);
		context.RunFunctionInTransaction([&]() {
			duckdb::ScalarFunctionSet set {duckdb::Identifier("round")};
			set.AddFunction(duckdb::ScalarFunction(duckdb::Identifier("round"), {duckdb::LogicalType::DOUBLE},
			                                       duckdb::LogicalType::DOUBLE, RoundHalfEven<double>));
			set.AddFunction(duckdb::ScalarFunction(duckdb::Identifier("round"), {duckdb::LogicalType::FLOAT},
			                                       duckdb::LogicalType::FLOAT, RoundHalfEven<float>));
			duckmv::AddOverloads(context, std::move(set));
		});
	});
}
