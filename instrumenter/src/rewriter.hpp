// The rewrite pass's parts (rewrite.cpp runs them): what one rewrite collects (State,
// Site), the planned functions and their body probes (plan_functions.cpp), the call sites
// in their bodies (call_sites.cpp), the calls that get no probe (untimed_calls.cpp, and
// final_plan.cpp for a final plan), the form each probe takes and its text
// (probe_forms.cpp), and the walks up the parent map (parent_walk.cpp).
#pragma once

#include "internal.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/Basic/SourceManager.h>

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace vprof::instr::rewriting {

struct FnRef {
  std::string usr, name, file;
  unsigned line = 0;
};

// How a call-site probe wraps its call (docs/instrumenter.md, "What is inserted"): C++ by
// default a lambda returning decltype(auto) through vprof::rt::call; C the GNU
// statement-expression form.
struct ProbeForm {
  bool stmt_expr = false;     // C++: the statement-expression form (no lambda can capture)
  bool decltype_text = false; // C++11: the lambda's return type is decltype(<call text>)
  std::string return_type;    // C++11: ... or this type, spelled out (decltype(<call>))
  bool cast_void = false;     // ... with the call cast to void (its value is discarded)
  std::string captures;       // lambda form: extra init-captures (", &b = b") for bindings
  bool guard = false; // C++: a probe object that ends with the full-expression (temporaries)
};

struct Site {
  bool body = false;
  unsigned begin = 0, end = 0; // call: [begin, end) of the call text; body: insertion offset
  unsigned line = 0, col = 0;  // identifying position
  std::size_t fn = 0;          // index into State::fns
  std::string callee_usr, callee_name;
  bool dependent = false; // a template's unresolved call: callee taken from the scan's edge
  ProbeForm form;         // call sites only
  std::int64_t id = 0;
};

// Everything one rewrite collects before it touches the database.
struct State {
  std::unordered_map<std::string, std::int64_t> planned; // usr -> function id
  // Planned functions (and lambdas in them) this compile defines in the main file, probed
  // or refused: 0 when the compile's flags leave them all out (a file built twice).
  int planned_defined = 0;
  // Planned for their body probe only (plans.body_only): none of their calls is timed.
  std::unordered_set<std::string> body_only;
  // A final plan (`vprof loop`'s final plan, plans.final = 1): direct calls of the
  // program's own functions are not timed (a dropped callee's time stays in the caller's
  // body, a planned one's body probe times it); calls of outside functions and virtual
  // calls still are — those the final plan lists (final_sites: the calls whose places
  // carried variance), by their position in the main file (final_plan.cpp).
  bool final_plan = false;
  std::unordered_set<std::string> dropped; // usrs of defined functions not in a final plan
  std::set<std::pair<unsigned, unsigned>> final_sites; // (line, col)
  std::vector<FnRef> fns;
  std::vector<Site> sites;
  std::vector<Diagnostic> skipped;
  std::string main_path;    // absolute path (sites.file)
  std::string spelled_path; // as the compiler saw it (#line)
  std::string code;         // the main file's text
  // Where `#include <vprof/probe.h>` goes: the start of the line of the first top-level
  // declaration that holds an instrumented function, so that feature macros defined
  // above it (_GNU_SOURCE) keep their effect on the user's own includes.
  unsigned include_at = ~0u;
  unsigned include_line = 1; // presumed line there (honours the user's #line)
  std::string include_file;  // presumed file name there
  bool cplusplus = false;
  bool quiet = false;
};

// Records a refusal (and prints it unless quiet): file:line of `loc` and the reason.
void report(State &st, const clang::SourceManager &sm, clang::SourceLocation loc,
            std::string reason, Diagnostic::Target target, std::string subject);

// --- plan_functions.cpp

// Finds the planned functions (and the lambdas inside them) defined in the main file,
// gives each a body probe and collects the call sites in its body; notes where the probe
// header goes.
void collect_sites(clang::ASTContext &ctx, State &st);

// --- call_sites.cpp

// Collects the call sites of the body of st.fns[fn] into st.sites; `seen` ([begin, end)
// of calls already wrapped) is shared by the bodies of one translation unit.
void collect_calls(clang::ASTContext &ctx, State &st, std::size_t fn, clang::Stmt *body,
                   std::set<std::pair<unsigned, unsigned>> &seen);

// --- untimed_calls.cpp

// A call of `callee` that gets no probe and no refusal: compiler builtins, vprof's own
// functions, conversions, compiler-generated assignments, library code from system
// headers, the C library's clock reads and the synchronization calls the runtime
// interposes.
bool untimed_callee(const clang::ASTContext &ctx, const clang::FunctionDecl *callee);

// Why a call of `callee` cannot be timed (its probe exit would not run once, or at all),
// or null.
const char *refused_callee(const clang::FunctionDecl *callee);

// --- final_plan.cpp

// Reads the final plan's dropped functions and listed call sites of `st.main_path` when
// `iteration`'s plan is a final plan.
void load_final_plan(ws::Database &db, int iteration, State &st);

// In a final plan: whether a direct call of `callee` (a program function) goes untimed —
// the callee is planned (its body probe times it) or dropped. Virtual calls, and calls of
// a planned callee without a body probe (*unprobed_callee), keep their probe.
bool final_plan_skips_callee(const State &st, const clang::FunctionDecl *callee,
                             bool *unprobed_callee);

// In a final plan: whether the call at (line, col) is one whose place carried variance.
bool final_plan_lists_call(const State &st, unsigned line, unsigned col);

// --- probe_forms.cpp

// The probe form for wrapping `w` (the call, or the macro invocation's expression that
// holds it) — or the reason it cannot be wrapped (`refusal` non-empty).
struct FormChoice {
  ProbeForm form;
  std::string refusal;
};
FormChoice choose_probe_form(clang::ASTContext &ctx, const clang::Expr *w);

// The main file's text with every site's probe inserted (tooling::Replacements, one per
// offset); empty with `err` set on failure.
std::string apply_probes(const State &st, std::string &err);

// --- parent_walk.cpp

// True when the value of `e` is never used: an expression statement (also an unbraced
// if/loop body, a for increment, the left of a comma, a cast to void), but not the last
// statement of a GNU statement expression, whose value is its result.
bool discarded(clang::ASTContext &ctx, const clang::Expr *e);

// Whether only conversions, a copy or an assignment of its value follow the call `e` in
// its full-expression (what a probe object living to the full-expression's end may time).
bool ends_full_expression(clang::ASTContext &ctx, const clang::Expr *e);

} // namespace vprof::instr::rewriting
