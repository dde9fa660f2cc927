// The instrumenter's rows of the workspace: the scan's call graph (functions, call edges,
// heights) and the rewriter's site table. An ...Entry is a row to insert; its text fields
// are views into the caller's data, read during the call, and default to '' (a
// default-constructed view would store NULL).
#pragma once

#include "vprof/workspace_rows.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vprof::ws {

// ---- the scan's call graph --------------------------------------------------------

// A function as one translation unit sees it.
struct FunctionEntry {
  std::string_view usr = "", name = "", file = "";
  unsigned line = 0;
  bool defined = false, annotated = false;
  bool body = true;       // false: defined `= default` out of line
  bool rewritable = true; // false: defined only in headers
};

// Merges functions into `functions`, one statement prepared once.
class FunctionWriter {
public:
  explicit FunctionWriter(Database &db);
  // Inserts `f` or merges it into the row of its USR: a definition's name, place and body
  // win over a declaration's; defined, annotated and rewritable accumulate, a declaration
  // cannot give back a body. Returns the function's id.
  std::optional<FunctionId> merge(const FunctionEntry &f);

private:
  Statement st_;
};

// A call edge at one call site.
struct CallEntry {
  FunctionId caller = 0, callee = 0;
  std::string_view kind = ""; // direct|member|virtual|ctor|dtor|operator|lambda|indirect
  std::string_view file = "";
  unsigned line = 0, col = 0;
  bool in_loop = false;
};

// Adds call edges to `calls` (an edge already there is kept), one statement prepared once.
class CallWriter {
public:
  explicit CallWriter(Database &db);
  void add(const CallEntry &c);

private:
  Statement st_;
};

// Every function's id by USR.
std::unordered_map<std::string, FunctionId> function_ids(Database &db);
// The ids of the functions with a body.
std::vector<FunctionId> defined_function_ids(Database &db);
// The largest function id, 0 without functions (ids are dense from 1).
FunctionId max_function_id(Database &db);
// Deletes every call edge (a new scan recomputes them).
void delete_calls(Database &db);
// Marks every function not annotated (a new scan recomputes the marks).
void clear_annotated(Database &db);
// Sets the height of functions 1 .. height.size() - 1 to height[id] (height[0] unused).
void write_heights(Database &db, const std::vector<int> &height);

struct CallGraphSize {
  std::int64_t functions = 0, calls = 0;
};
CallGraphSize call_graph_size(Database &db);

// ---- the rewriter's site table ----------------------------------------------------

// A site as the rewriter finds it; a site keeps its id across iterations (same kind,
// function and position, same id).
struct SiteEntry {
  bool body = false;                 // a body probe (else a call site)
  FunctionId function = 0;           // the instrumented function
  FunctionId callee = 0;             // call sites: 0 when unknown (NULL)
  std::string_view callee_name = ""; // call sites: as spelled (bodies: NULL)
  std::string_view file = "";
  unsigned line = 0, col = 0;
};

// The rewriter's reads and writes of functions, calls and sites, each statement prepared
// once. Use it inside one Transaction (BEGIN IMMEDIATE) so that parallel compiler wrappers
// agree on ids.
class SiteTableWriter {
public:
  explicit SiteTableWriter(Database &db);
  // The id of the function with this USR, 0 when unknown.
  FunctionId function_id(std::string_view usr);
  // Records a defined function the scan did not see (kept when the USR is known).
  void add_defined_function(std::string_view usr, std::string_view name, std::string_view file,
                            unsigned line);
  // The callee of the call edges of `caller` at (file, line, col) when they name exactly one
  // function, else 0.
  FunctionId sole_callee_at(FunctionId caller, std::string_view file, unsigned line, unsigned col);
  // Inserts the site unless the table holds it; returns its id (nullopt if not found).
  std::optional<SiteId> site_id(const SiteEntry &s);

private:
  Statement find_fn_, add_fn_, add_site_, sole_callee_, find_site_;
};

} // namespace vprof::ws
