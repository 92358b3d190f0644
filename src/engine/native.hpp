// What duckmv's own C++ (compiled by build.rs against the bundled DuckDB) shares: the way each
// registration hands an error back across the C API.

#pragma once

#include "duckdb.h"
#include "duckdb/common/error_data.hpp"

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

} // namespace duckmv
