// Public API of the vprof instrumenter (Clang libTooling): load a compile database, scan
// the whole-program call graph into the workspace, make the first plan, rewrite one
// translation unit per a plan, export an instrumented tree. Clang types stay inside.
// docs/instrumenter.md describes what is instrumented and what is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <vprof/workspace.hpp>

namespace vprof::instr {

// One compile command: the absolute source file, the directory it runs in and its full
// argument vector (argv[0] is the compiler).
struct CompileCommand {
  std::string file;
  std::string directory;
  std::vector<std::string> args;
};

// A compile database with bear's internal `-cc1` jobs dropped and each source file kept
// once (the first command that names it).
class CompileDb {
public:
  // Loads `path` (a compile_commands.json, or a directory containing one). Throws
  // std::runtime_error naming the file and the problem.
  static CompileDb load(const std::filesystem::path &path);
  // One command per source file: a file built into two objects is parsed once.
  const std::vector<CompileCommand> &commands() const { return commands_; }
  // Every command: a file built into two objects (PostgreSQL's src/common, a frontend and
  // a backend object) once per object.
  const std::vector<CompileCommand> &all_commands() const { return all_; }
  // The command for `file` (absolute or relative to the cwd), or nullptr.
  const CompileCommand *find(const std::filesystem::path &file) const;
  // Adds a command (used by tests and the compiler wrapper).
  void add(CompileCommand cmd);

private:
  std::vector<CompileCommand> commands_;
  std::vector<CompileCommand> all_;
};

// Options shared by every command that parses code.
struct ParseOptions {
  std::vector<std::string> extra_args; // appended to every compile command
  bool quiet = false;                  // no progress lines / diagnostics on stderr
  // Files served from memory instead of disk (absolute path -> contents), for tests and
  // editors; the source files on disk are never read for these paths.
  std::map<std::string, std::string> virtual_files;
};

// A translation unit the scan skipped, and why ("does not parse", "crashed (signal 11,
// SIGSEGV) in the scan").
struct SkippedUnit {
  std::string file; // absolute path
  std::string reason;
};

struct ScanStats {
  int tus = 0;     // translation units parsed
  int failed = 0;  // translation units skipped: did not parse, or crashed (named on stderr)
  int crashed = 0; // of those, the ones whose parse or walk crashed (caught)
  std::vector<SkippedUnit> skipped; // each skipped unit (also in the workspace's skipped_units)
  std::int64_t functions = 0;
  std::int64_t calls = 0; // call edges stored
  int max_height = 0;
};

// Parses every TU of `db` once (one ClangTool run per file), stores the static call graph
// (functions, calls; virtual calls reach every known override, calls through pointers
// every defined address-taken function of a matching type, kind 'indirect'; `annotated`
// marks every function that begins/ends/attaches to/detaches from an interval, C++
// guards included, recomputed on every scan) and the heights
// (SCCs condensed) in the workspace, and sets meta keys `H` and `max_height` (the caller
// records `compile_db`). Previous edges are replaced; function ids stay stable. A TU that
// fails to parse, or whose parse or walk crashes (caught: the scan goes on), is reported,
// recorded in the workspace (`skipped_units`) and skipped. Throws ws::Error on database
// failures.
ScanStats scan(ws::Database &wsdb, const CompileDb &db, const ParseOptions &opt = {});

// The highest iteration in `plans`, or nullopt when there is no plan.
std::optional<int> current_iteration(ws::Database &wsdb);

// One refused rewrite: file:line and the reason (also printed on stderr unless quiet),
// what was refused — a call site or a whole function (or lambda) — and its name.
struct Diagnostic {
  enum class Target { call, function };
  std::string file;
  unsigned line = 0;
  std::string reason;           // as printed: "call: macro expansion: ..."
  Target target = Target::call; // a call site, or a whole function or lambda
  std::string subject;          // the callee (as named or spelled) or the function
};

struct RewriteResult {
  bool ok = false;      // parsed and rewritten (output valid)
  bool changed = false; // at least one probe inserted
  std::string output;   // the instrumented source (`#include <vprof/probe.h>`,
                        // `#line 1 "<file>"`, then the edited text); empty if !changed
  int body_sites = 0;
  int call_sites = 0;
  // planned functions the compile defines in the file (0: its flags leave them all out)
  int planned_defined = 0;
  std::vector<Diagnostic> skipped;
  std::string error; // why !ok
};

// Instruments the main file of `cmd` per the plan of `iteration`: a body probe in every
// planned function defined in that file (and in lambdas inside it) and a call-site probe
// around every call inside. Site ids come from (and are added to) the workspace `sites`
// table in one IMMEDIATE transaction, safe for parallel wrappers. Never touches the
// source file. Errors are reported in the result, not thrown.
RewriteResult rewrite(ws::Database &wsdb, const CompileCommand &cmd, int iteration,
                      const ParseOptions &opt = {});

// Whether any function of `iteration`'s plan is defined in `file` (absolute path): a
// cheap test the wrapper runs before parsing.
bool file_has_plan(ws::Database &wsdb, const std::filesystem::path &file, int iteration);

struct ExportOptions {
  int iteration = 0;
  std::filesystem::path out_dir; // write instrumented files here (mirrors `root`)
  std::filesystem::path root;    // source root; default: common parent of the sources
  std::ostream *diff = nullptr;  // or: print a unified diff here
  ParseOptions parse;
};

// Rewrites every TU of `db` that holds planned functions and writes the results below
// out_dir (same relative paths) or prints a unified diff. Returns the number of files
// instrumented; failed TUs are reported on stderr and counted in `failed`.
int export_tree(ws::Database &wsdb, const CompileDb &db, const ExportOptions &opt,
                int *failed = nullptr);

// Unified diff (3 lines of context) between two texts, labelled a/<name> and b/<name>.
std::string unified_diff(const std::string &before, const std::string &after,
                         const std::string &name);

// ---- build stamps: which plan each object was compiled for (build_stamps.cpp) ----

// The workspace's identity (meta `workspace_id`, made by `vprof init`; "" in older ones),
// and a new one (a new history: every object compiled for the old one is rebuilt).
std::string workspace_identity(ws::Database &wsdb);
std::string new_workspace_identity(ws::Database &wsdb);

// The stamp of a source file that has nothing planned in it.
inline constexpr const char *kNoPlanStamp = "none";
// Plan stamps of `iteration`, per source file with planned functions (absolute path):
// a hash of what the instrumented text depends on besides the source itself (the rewrite
// rules' version, the workspace's identity, the planned functions defined in the file,
// whether the plan is final). Files absent from the map have kNoPlanStamp.
std::map<std::string, std::string> plan_stamps(ws::Database &wsdb, int iteration);
std::string plan_stamp(ws::Database &wsdb, const std::filesystem::path &file, int iteration);

// What the wrapper records about one compiled object (.vprof/stamps/<file>.<hash>.stamp).
struct ObjectRecord {
  std::filesystem::path source, object; // absolute
  std::string stamp;                    // plan stamp it was compiled for
  int iteration = -1;
  std::string fallback; // why a planned file was compiled from its original source
  // This compile of a planned file defines none of its planned functions (built twice with
  // different flags, they are in the other object): nothing to probe here, not a fallback.
  bool plan_absent = false;
  std::filesystem::path record; // the record file (when read)
  // What the rewrite of this object's source refused (planned call sites and functions
  // left without probes), for the loop's own output.
  std::vector<Diagnostic> refused;
};
std::filesystem::path stamps_dir(const std::filesystem::path &workspace_db);
// Atomic (write to a temporary file, rename): parallel compiles never see half a record.
void write_object_record(const std::filesystem::path &workspace_db, const ObjectRecord &r);
std::vector<ObjectRecord> read_object_records(const std::filesystem::path &workspace_db);

// Before building `iteration`: sets the modification time of every object compiled for
// another plan stamp than its source's now (or, for a planned file this workspace never
// compiled, of the object its compile command writes) to the epoch, so that the user's own
// make, ninja or CMake rebuild exactly those. Returns them. Records of objects that no
// longer exist are dropped.
std::vector<std::filesystem::path>
invalidate_stale_objects(ws::Database &wsdb, const std::filesystem::path &workspace_db,
                         const CompileDb &cdb, int iteration);

// After building `iteration`: planned files that fell back to their original source
// (file, reason), planned files with no object compiled for this plan, and objects of
// planned files still compiled for another plan (source, object).
struct BuildCheck {
  std::vector<std::pair<std::filesystem::path, std::string>> fallbacks;
  std::vector<std::filesystem::path> not_compiled;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> stale;
  // planned files whose object the build does not produce at all (not part of the profiled
  // program): said, not an error
  std::vector<std::filesystem::path> not_built;
  // call sites and functions the rewrite refused in the objects compiled for this plan
  // (a file's once, however many objects it went into): said, not an error
  std::vector<Diagnostic> refused;
  bool clean() const { return fallbacks.empty() && not_compiled.empty() && stale.empty(); }
};
// `cdb` (may be null) names the translation units: planned functions defined elsewhere
// (headers) are not rewritten by design.
BuildCheck check_build(ws::Database &wsdb, const std::filesystem::path &workspace_db, int iteration,
                       const CompileDb *cdb);

// ---- trace units: the plan a trace's binary was built for (trace_units.cpp) ----

// An instrumented translation unit as it registers with the runtime (<pid>.units).
struct UnitStamp {
  std::string workspace_id, stamp;
  int iteration = -1;
  std::filesystem::path source; // absolute, as in plan_stamps
};
// The text the wrapper appends to an instrumented translation unit: a constructor calling
// vprof_register_unit (C89 and C++ alike, no new warnings).
std::string unit_registration(const UnitStamp &u);
// The units each process of a trace registered.
struct TraceUnits {
  int pid = 0;
  std::vector<UnitStamp> units;
  bool overflow = false; // more units than the runtime's table holds
};
std::vector<TraceUnits> read_trace_units(const std::filesystem::path &trace_dir);
// The trace's units against the plan of `iteration`: units built for another workspace or
// plan stamp, and planned files compiled for this plan (their object records say so) that
// no process registered — the workload ran a program without them.
struct UnitMismatch {
  int pid = 0;
  UnitStamp found;
  std::string expected_stamp;
  bool other_workspace = false;
};
struct TraceUnitCheck {
  std::vector<UnitMismatch> mismatched;
  std::vector<std::filesystem::path> unregistered;
  bool any_units = false; // some process registered a unit
};
TraceUnitCheck check_trace_units(ws::Database &wsdb, const std::filesystem::path &workspace_db,
                                 int iteration, const std::filesystem::path &trace_dir);
// The error for a non-empty `bad`: up to five units named, and the likely fix.
std::string describe_unit_mismatches(const std::vector<UnitMismatch> &bad, int iteration,
                                     const std::filesystem::path &trace_dir);

// Workspace lookup: $VPROF_WORKSPACE (a .db file or a directory holding .vprof/vprof.db),
// else `.vprof/vprof.db` in `start` or its nearest ancestor. nullopt when none exists.
std::optional<std::filesystem::path> find_workspace(const std::filesystem::path &start);

// Build-time facts the wrapper and the driver need.
const char *annotations_include_dir();
const char *runtime_include_dir();
const char *runtime_library_dir(); // may be empty: no runtime known
const char *clang_resource_dir();

} // namespace vprof::instr
