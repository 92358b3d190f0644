// TIMESTAMP WITH TIME ZONE arithmetic for a DuckDB built without its ICU extension.
//
// duckmv computes in UTC: DuckDB without ICU has no time zones, and `TimeZone` reads UTC. Without
// ICU, DuckDB refuses nearly everything done with a TIMESTAMPTZ value: `now() + interval '1
// day'`, `date_trunc('day', created_at)`, `extract(hour from now())`, `now()::date`,
// `current_date`. In UTC a TIMESTAMPTZ is the TIMESTAMP with the same microseconds (both are
// `timestamp_t`), so every one of those is the TIMESTAMP function applied to the same value.
// This registers, once per database, each listed TIMESTAMP overload again with TIMESTAMPTZ in
// place of TIMESTAMP (arguments and result), the casts from TIMESTAMPTZ to DATE and TIME, the
// functions behind `current_date`, `current_time`, `localtimestamp` and `localtime`, and
// clock_timestamp().
//
// Each added overload binds as its TIMESTAMP original over the arguments cast to TIMESTAMP, its
// result cast back to TIMESTAMPTZ where the original returns TIMESTAMP: the originals' own bind
// steps accept only the types they know. An overload is added only where the function has no
// working TIMESTAMPTZ overload of its own; DuckDB's placeholders that would ask for ICU are
// replaced.

#include "native.hpp"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/catalog/catalog_entry/scalar_function_catalog_entry.hpp"
#include "duckdb/catalog/catalog_entry/table_function_catalog_entry.hpp"
#include "duckdb/common/string_util.hpp"
#include "duckdb/common/vector_operations/binary_executor.hpp"
#include "duckdb/common/types/timestamp.hpp"
#include "duckdb/function/cast/cast_function_set.hpp"
#include "duckdb/function/function_binder.hpp"
#include "duckdb/planner/expression/bound_cast_expression.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/main/connection.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/parser/parsed_data/create_table_function_info.hpp"
#include "duckdb/transaction/meta_transaction.hpp"


namespace {

using namespace duckdb;

// The functions whose TIMESTAMP overloads get a TIMESTAMPTZ twin: the operators, truncation
// and extraction (EXTRACT binds to date_part), differences, bucketing and the part names.
const char *const FUNCTIONS[] = {
    "+",           "-",           "date_trunc",  "datetrunc",   "date_part",   "datepart",
    "date_diff",   "datediff",    "date_sub",    "datesub",     "age",         "time_bucket",
    "epoch",       "epoch_ms",    "epoch_us",    "epoch_ns",    "year",        "month",
    "day",         "hour",        "minute",      "second",      "millisecond", "microsecond",
    "dayofweek",   "isodow",      "dayofyear",   "dayofmonth",  "week",        "weekofyear",
    "weekday",     "yearweek",    "quarter",     "decade",      "century",     "millennium",
    "era",         "isoyear",     "julian",      "dayname",     "monthname",   "last_day",
    "generate_series", "range",
};

// The names under which a zone is UTC: `AT TIME ZONE` with any of them is exact here; any other
// zone needs the time zone data ICU would bring.
const char *const UTC_NAMES[] = {"utc", "etc/utc", "gmt", "etc/gmt", "z", "zulu", "uct", "universal",
                                 "etc/universal", "etc/zulu", "etc/uct", "greenwich", "gmt0", "etc/gmt0",
                                 "+00", "-00", "+00:00", "-00:00", "00:00", "0"};

bool IsTimestamp(const LogicalType &type) {
	return type.id() == LogicalTypeId::TIMESTAMP;
}

// TIMESTAMPTZ for TIMESTAMP, also as a list's elements (generate_series returns a list).
LogicalType WithTimeZone(const LogicalType &type) {
	if (IsTimestamp(type)) {
		return LogicalType::TIMESTAMP_TZ;
	}
	if (type.id() == LogicalTypeId::LIST && IsTimestamp(ListType::GetChildType(type))) {
		return LogicalType::LIST(LogicalType::TIMESTAMP_TZ);
	}
	return type;
}

// A placeholder overload has no function: binding it asks for the extension that defines it.
bool IsPlaceholder(const ScalarFunction &function) {
	return !function.GetFunctionCallback();
}

// Binds a call of an added overload: the TIMESTAMP original over the arguments as TIMESTAMP.
unique_ptr<Expression> BindAsTimestamp(FunctionBindExpressionInput &input) {
	auto &context = input.context;
	vector<unique_ptr<Expression>> children;
	for (auto &child : input.children) {
		if (child->GetReturnType().id() == LogicalTypeId::TIMESTAMP_TZ) {
			children.push_back(BoundCastExpression::AddCastToType(context, std::move(child), LogicalType::TIMESTAMP));
		} else {
			children.push_back(std::move(child));
		}
	}
	auto name = input.bound_function.GetName();
	bool is_operator = name == Identifier("+") || name == Identifier("-");
	FunctionBinder binder(context);
	auto result = binder.BindScalarFunction(Identifier::DefaultSchema(), name, std::move(children), is_operator);
	auto &wanted = input.bound_function.GetReturnType();
	if (result->GetReturnType() != wanted && WithTimeZone(result->GetReturnType()) == wanted) {
		result = BoundCastExpression::AddCastToType(context, std::move(result), wanted);
	}
	return result;
}

// The overload with TIMESTAMPTZ wherever `function` has TIMESTAMP; false when it has none.
bool Twin(const ScalarFunction &function, ScalarFunction &twin) {
	bool any = false;
	for (idx_t i = 0; i < twin.GetSignature().GetParameterCount(); i++) {
		auto &param = twin.GetSignature().GetParameter(i);
		if (IsTimestamp(param.GetType())) {
			param.SetType(LogicalType::TIMESTAMP_TZ);
			any = true;
		}
	}
	if (any) {
		twin.SetReturnType(WithTimeZone(function.GetReturnType()));
	}
	twin.SetBindCallback(nullptr);
	twin.SetStatisticsCallback(nullptr);
	twin.SetBindExpressionCallback(BindAsTimestamp);
	return any;
}

// Whether `set` already has a working overload taking these parameters.
bool HasWorking(const ScalarFunctionSet &set, const ScalarFunction &twin) {
	for (auto &existing : set.functions) {
		if (!IsPlaceholder(*existing) && existing->GetSignature().IsSameOverload(twin.GetSignature())) {
			return true;
		}
	}
	return false;
}

void AddTwins(ClientContext &context, Catalog &catalog, const char *name) {
	auto entry = catalog.GetEntry<ScalarFunctionCatalogEntry>(
	    context, QualifiedName(catalog.GetName(), Identifier::DefaultSchema(), Identifier(name)),
	    OnEntryNotFound::RETURN_NULL);
	if (!entry) {
		return;
	}
	ScalarFunctionSet twins {Identifier(name)};
	for (auto &function : entry->functions.functions) {
		if (IsPlaceholder(*function) || function->GetSignature().IsVariadic()) {
			continue;
		}
		ScalarFunction twin = *function;
		if (Twin(*function, twin) && !HasWorking(entry->functions, twin) && !HasWorking(twins, twin)) {
			twins.AddFunction(std::move(twin));
		}
	}
	if (twins.functions.empty()) {
		return;
	}
	duckmv::AddOverloads(context, std::move(twins));
}

// The table functions generate_series and range over TIMESTAMPTZ: the TIMESTAMP ones, whose
// bind is wrapped to name the column's type TIMESTAMPTZ (the values are the same microseconds).
table_function_bind_t series_bind = nullptr;
table_function_bind_t range_bind = nullptr;

template <bool SERIES>
unique_ptr<FunctionData> BindWithTimeZone(ClientContext &context, TableFunctionBindInput &input,
                                          vector<LogicalType> &types, vector<Identifier> &names) {
	auto result = (SERIES ? series_bind : range_bind)(context, input, types, names);
	for (auto &type : types) {
		type = WithTimeZone(type);
	}
	return result;
}

template <bool SERIES>
void AddTableTwins(ClientContext &context, Catalog &catalog) {
	auto name = SERIES ? "generate_series" : "range";
	auto entry = catalog.GetEntry<TableFunctionCatalogEntry>(
	    context, QualifiedName(catalog.GetName(), Identifier::DefaultSchema(), Identifier(name)),
	    OnEntryNotFound::RETURN_NULL);
	if (!entry) {
		return;
	}
	TableFunctionSet twins {Identifier(name)};
	for (auto &function : entry->functions.functions) {
		auto &params = function->GetSignature().GetParameters();
		bool timestamps = !params.empty() && IsTimestamp(params[0].GetType());
		bool zoned = !params.empty() && params[0].GetType().id() == LogicalTypeId::TIMESTAMP_TZ;
		if (zoned) {
			return;
		}
		if (!timestamps || !function->GetBindCallback()) {
			continue;
		}
		(SERIES ? series_bind : range_bind) = function->GetBindCallback();
		TableFunction twin = *function;
		for (idx_t i = 0; i < twin.GetSignature().GetParameterCount(); i++) {
			auto &param = twin.GetSignature().GetParameter(i);
			param.SetType(WithTimeZone(param.GetType()));
		}
		twin.bind = BindWithTimeZone<SERIES>;
		twins.AddFunction(std::move(twin));
	}
	if (twins.functions.empty()) {
		return;
	}
	CreateTableFunctionInfo info(std::move(twins));
	info.on_conflict = OnCreateConflict::ALTER_ON_CONFLICT;
	info.internal = true;
	// CreateFunction, not CreateTableFunction: only it adds overloads to an existing entry.
	catalog.CreateFunction(context, info);
}

// `ts AT TIME ZONE zone` (timezone(zone, ts)) for the names of UTC; any other zone is an error
// naming it, as PostgreSQL's is for a zone it does not know.
void CheckUtc(const string_t &zone) {
	auto name = StringUtil::Lower(zone.GetString());
	for (auto utc : UTC_NAMES) {
		if (name == utc) {
			return;
		}
	}
	throw InvalidInputException("time zone \"%s\" not recognized: this server runs in UTC and has no time zone data",
	                            zone.GetString());
}

void AtUtc(DataChunk &args, ExpressionState &state, Vector &result) {
	BinaryExecutor::Execute<string_t, timestamp_t, timestamp_t>(args.data[0], args.data[1], result, args.size(),
	                                                            [](string_t zone, timestamp_t ts) {
		                                                            CheckUtc(zone);
		                                                            return ts;
	                                                            });
}

void AddTimeZone(ClientContext &context) {
	ScalarFunctionSet set {Identifier("timezone")};
	ScalarFunction to_zoned(Identifier("timezone"), {LogicalType::VARCHAR, LogicalType::TIMESTAMP},
	                        LogicalType::TIMESTAMP_TZ, AtUtc);
	ScalarFunction to_local(Identifier("timezone"), {LogicalType::VARCHAR, LogicalType::TIMESTAMP_TZ},
	                        LogicalType::TIMESTAMP, AtUtc);
	for (auto function : {to_zoned, to_local}) {
		function.SetFallible();
		set.AddFunction(std::move(function));
	}
	duckmv::AddOverloads(context, std::move(set));
}

// The transaction's start, as now() and current_timestamp read it.
timestamp_t TransactionStart(ExpressionState &state) {
	return MetaTransaction::Get(state.GetContext()).start_timestamp;
}

void CurrentDate(DataChunk &input, ExpressionState &state, Vector &result) {
	auto value = Value::DATE(Timestamp::GetDate(TransactionStart(state)));
	result.Reference(value, count_t(input.size()));
}

void CurrentTime(DataChunk &input, ExpressionState &state, Vector &result) {
	auto value = Value::TIMETZ(dtime_tz_t(Timestamp::GetTime(TransactionStart(state)), 0));
	result.Reference(value, count_t(input.size()));
}

void LocalTimestamp(DataChunk &input, ExpressionState &state, Vector &result) {
	auto value = Value::TIMESTAMP(TransactionStart(state));
	result.Reference(value, count_t(input.size()));
}

void LocalTime(DataChunk &input, ExpressionState &state, Vector &result) {
	auto value = Value::TIME(Timestamp::GetTime(TransactionStart(state)));
	result.Reference(value, count_t(input.size()));
}

// clock_timestamp(): the wall clock now, read again for every row (PostgreSQL's changes during a
// statement, where now() is the transaction's start).
void ClockTimestamp(DataChunk &input, ExpressionState &state, Vector &result) {
	result.SetVectorType(VectorType::FLAT_VECTOR);
	auto data = FlatVector::Writer<timestamp_tz_t>(result, input.size());
	for (idx_t i = 0; i < input.size(); i++) {
		data.WriteValue(timestamp_tz_t(Timestamp::GetCurrentTimestamp()));
	}
}

void AddClock(ClientContext &context) {
	ScalarFunction clock(Identifier("clock_timestamp"), vector<LogicalType> {}, LogicalType::TIMESTAMP_TZ,
	                     ClockTimestamp);
	clock.SetVolatile();
	duckmv::AddOverloads(context, ScalarFunctionSet {std::move(clock)});
}

void AddCurrent(ClientContext &context, const char *name, LogicalType type,
                scalar_function_t function) {
	ScalarFunction current(Identifier(name), vector<LogicalType> {}, std::move(type), function);
	current.SetStability(FunctionStability::CONSISTENT_WITHIN_QUERY);
	duckmv::AddOverloads(context, ScalarFunctionSet {std::move(current)});
}

// TIMESTAMPTZ to `target` as TIMESTAMP to `target`, where DuckDB has no cast of its own.
void AddCast(ClientContext &context, const LogicalType &target) {
	auto &casts = CastFunctionSet::Get(context);
	GetCastFunctionInput input(context);
	if (casts.GetCastFunction(LogicalType::TIMESTAMP_TZ, target, input).HasFunction() &&
	    !casts.GetCastFunction(LogicalType::TIMESTAMP_TZ, target, input).IsNullCast()) {
		return;
	}
	casts.RegisterCastFunction(LogicalType::TIMESTAMP_TZ, target,
	                           casts.GetCastFunction(LogicalType::TIMESTAMP, target, input));
}

void Register(ClientContext &context) {
	auto &catalog = Catalog::GetSystemCatalog(context);
	for (auto name : FUNCTIONS) {
		AddTwins(context, catalog, name);
	}
	AddCurrent(context, "current_date", LogicalType::DATE, CurrentDate);
	AddCurrent(context, "get_current_time", LogicalType::TIME_TZ, CurrentTime);
	AddCurrent(context, "current_localtimestamp", LogicalType::TIMESTAMP, LocalTimestamp);
	AddCurrent(context, "current_localtime", LogicalType::TIME, LocalTime);
	AddClock(context);
	AddCast(context, LogicalType::DATE);
	AddCast(context, LogicalType::TIME);
	AddTableTwins<true>(context, catalog);
	AddTableTwins<false>(context, catalog);
	AddTimeZone(context);
}

} // namespace

// Registers the functions above for every connection of `connection`'s database. Returns NULL,
// or an error message the caller frees with duckdb_free.
extern "C" char *duckmv_register_utc_timestamptz(duckdb_connection connection) {
	return duckmv::Guarded([&]() {
		auto &context = duckmv::ContextOf(connection);
		context.RunFunctionInTransaction([&]() { Register(context); });
	});
}
