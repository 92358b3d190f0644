// PostgreSQL's bytea where DuckDB's BLOB differs: its hex input, and length().
//
// A string `\x0001ff` is the three bytes 00 01 ff. DuckDB reads `\xHH` as one escaped byte and
// everything after it as characters, so the same string became five bytes (00 '0' '1' 'f' 'f')
// without a word wherever a string turns into a BLOB: a literal inserted into a bytea column,
// compared with one, assigned in UPDATE, a CSV COPY field. This registers the VARCHAR to BLOB
// cast again: a string that is PostgreSQL's hex format (`\x`, then pairs of hex digits,
// whitespace allowed between pairs) is decoded as PostgreSQL decodes it; any other string is
// read as DuckDB reads it, so DuckDB's own escapes (`\x00\xFF`, which is not PostgreSQL hex)
// keep working.
//
// `length(bytea)` counts bytes in PostgreSQL; DuckDB has only octet_length for a BLOB.

#include "native.hpp"
#include "duckdb/common/operator/cast_operators.hpp"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/common/types/blob.hpp"
#include "duckdb/function/function_binder.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/function/cast/cast_function_set.hpp"
#include "duckdb/function/cast/vector_cast_helpers.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/main/connection.hpp"

#include <cstring>
#include <string>

namespace {

using namespace duckdb;

int HexValue(char c) {
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

bool IsSpace(char c) {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The bytes of `input` read as PostgreSQL's hex format, or false when it is not in it.
bool DecodePgHex(string_t input, std::string &bytes) {
	auto data = input.GetData();
	auto size = input.GetSize();
	if (size < 2 || data[0] != '\\' || (data[1] != 'x' && data[1] != 'X')) {
		return false;
	}
	bytes.clear();
	for (idx_t i = 2; i < size;) {
		if (IsSpace(data[i])) {
			i++;
			continue;
		}
		if (i + 1 >= size) {
			return false;
		}
		auto high = HexValue(data[i]);
		auto low = HexValue(data[i + 1]);
		if (high < 0 || low < 0) {
			return false;
		}
		bytes.push_back(static_cast<char>(high * 16 + low));
		i += 2;
	}
	return true;
}

struct TryCastPgBytea {
	template <class SRC, class DST>
	static bool Operation(SRC input, DST &result, Vector &result_vector, CastParameters &parameters) {
		std::string bytes;
		if (!DecodePgHex(input, bytes)) {
			return TryCastToBlob::Operation(input, result, result_vector, parameters);
		}
		result = StringVector::EmptyString(result_vector, bytes.size());
		if (!bytes.empty()) {
			std::memcpy(result.GetDataWriteable(), bytes.data(), bytes.size());
		}
		result.Finalize();
		return true;
	}
};

// Binds length(BLOB) as octet_length of the same argument.
unique_ptr<Expression> BindAsOctetLength(FunctionBindExpressionInput &input) {
	FunctionBinder binder(input.context);
	return binder.BindScalarFunction(Identifier::DefaultSchema(), Identifier("octet_length"),
	                                 std::move(input.children));
}

void AddLength(ClientContext &context) {
	ScalarFunction length(Identifier("length"), {LogicalType::BLOB}, LogicalType::BIGINT, nullptr);
	length.SetBindExpressionCallback(BindAsOctetLength);
	duckmv::AddOverloads(context, ScalarFunctionSet {std::move(length)});
}

void AddHexInput(ClientContext &context) {
	auto &casts = CastFunctionSet::Get(context);
	auto cost = CastFunctionSet::ImplicitCastCost(context, LogicalType::VARCHAR, LogicalType::BLOB);
	casts.RegisterCastFunction(LogicalType::VARCHAR, LogicalType::BLOB,
	                           BoundCastInfo(&VectorCastHelpers::TryCastStringLoop<string_t, string_t, TryCastPgBytea>),
	                           cost);
}

} // namespace

// Registers both for every connection of `connection`'s database. Returns NULL, or an error
// message the caller frees with duckdb_free.
extern "C" char *duckmv_register_pg_bytea(duckdb_connection connection) {
	return duckmv::Guarded([&]() {
		auto &context = duckmv::ContextOf(connection);
		AddHexInput(context);
		context.RunFunctionInTransaction([&]() { AddLength(context); });
	});
}
