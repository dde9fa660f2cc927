// Build stamps (docs/instrumenter.md, "Builds that just work"): which plan each object was
// compiled for. The wrapper records it per object; before an iteration's build the driver
// makes the objects compiled for another plan older than anything (so the user's own
// make/ninja/CMake rebuild exactly those), and after it checks that every planned file was
// compiled for this plan and that none fell back to its original source.
#include <vprof/instrumenter.hpp>
#include <vprof/workspace_rows.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace vprof::instr {
namespace {

// What the instrumented text depends on besides the source: bump when the probe forms or
// the rewriting rules change, so that objects of an older vprof are rebuilt.
// 3: calls behind macros are timed at their invocation; records list the refusals
constexpr const char *kRewriteVersion = "vprof-rewrite-3"; // 2: units register their plan

std::uint64_t fnv1a(std::uint64_t h, const std::string &s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= 0xff; // separator: ("ab", "c") and ("a", "bc") differ
  h *= 0x100000001b3ull;
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The record file of one (source, object) pair.
fs::path record_path(const fs::path &stamps, const fs::path &source, const fs::path &object) {
  std::uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ull, source.string()), object.string());
  return stamps / (source.filename().string() + "." + hex(h) + ".stamp");
}

// The object a compile command writes: its -o (relative to its directory), else
// <stem>.o in the directory.
fs::path object_of(const CompileCommand &c) {
  fs::path out;
  for (std::size_t i = 0; i + 1 < c.args.size(); ++i)
    if (c.args[i] == "-o")
      out = c.args[i + 1];
  for (const auto &a : c.args)
    if (a.rfind("-o", 0) == 0 && a.size() > 2)
      out = a.substr(2);
  if (out.empty())
    out = fs::path(c.file).stem().string() + ".o";
  return (fs::path(c.directory) / out).lexically_normal();
}

// Whether an object file holds vprof probes: compiled code with probes references the
// runtime's slow path by name. (An object instrumented by another workspace or an older
// history carries that workspace's site ids.)
bool has_probes(const fs::path &object) {
  static const std::string needle = "vprof_emit_slow_";
  std::ifstream in(object, std::ios::binary);
  std::string buf(1 << 20, '\0'), carry;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::string chunk = carry + buf.substr(0, static_cast<std::size_t>(in.gcount()));
    if (chunk.find(needle) != std::string::npos)
      return true;
    carry = chunk.size() >= needle.size() ? chunk.substr(chunk.size() - needle.size()) : chunk;
  }
  return false;
}

// Sets an object's modification time to the epoch: older than every input, so make and
// ninja rebuild it. Returns false when it does not exist.
bool make_older_than_everything(const fs::path &object) {
  struct timespec times[2] = {{0, 0}, {0, 0}};
  return ::utimensat(AT_FDCWD, object.c_str(), times, 0) == 0;
}

} // namespace

std::string workspace_identity(ws::Database &db) {
  if (auto id = db.meta("workspace_id"); id && !id->empty())
    return *id;
  return "";
}

std::string new_workspace_identity(ws::Database &db) {
  std::random_device rd;
  std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  std::string id = hex(v);
  db.set_meta("workspace_id", id);
  return id;
}

std::map<std::string, std::string> plan_stamps(ws::Database &db, int iteration) {
  const bool final_plan = ws::is_final_plan(db, iteration);
  std::map<std::string, std::uint64_t> hashes;
  const std::string seed = std::string(kRewriteVersion) + "|" + workspace_identity(db) + "|" +
                           (final_plan ? "final" : "explore");
  for (const auto &f : ws::planned_functions(db, iteration)) {
    if (f.file.empty())
      continue;
    auto [it, fresh] = hashes.try_emplace(f.file, 0);
    if (fresh)
      it->second = fnv1a(0xcbf29ce484222325ull, seed);
    it->second = fnv1a(it->second, (f.body_only ? "b" : "") + std::to_string(f.id));
  }
  // A file with marks and nothing planned: compiled by the wrapper (VPROF_ENABLE), unchanged.
  for (const auto &file : ws::marked_files(db))
    hashes.try_emplace(file, fnv1a(0xcbf29ce484222325ull, seed + "|marks"));
  std::map<std::string, std::string> out;
  for (const auto &[file, h] : hashes)
    out.emplace(file, hex(h));
  return out;
}

std::string plan_stamp(ws::Database &db, const fs::path &file, int iteration) {
  auto all = plan_stamps(db, iteration);
  auto it = all.find(file.string());
  return it == all.end() ? std::string(kNoPlanStamp) : it->second;
}

namespace {
// A record's value on one line without tabs (fields are tab-separated).
std::string one_field(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  return s;
}

// "line\tcall|function\tsubject\treason" (the value of a `refused` line).
std::optional<Diagnostic> refusal_of(const std::string &value, const fs::path &source) {
  std::vector<std::string> f;
  for (std::size_t at = 0;;) {
    std::size_t tab = f.size() < 3 ? value.find('\t', at) : std::string::npos;
    f.push_back(value.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
    if (tab == std::string::npos)
      break;
    at = tab + 1;
  }
  if (f.size() != 4)
    return std::nullopt;
  Diagnostic d;
  d.file = source.string();
  d.line = static_cast<unsigned>(std::strtoul(f[0].c_str(), nullptr, 10));
  d.target = f[1] == "function" ? Diagnostic::Target::function : Diagnostic::Target::call;
  d.subject = f[2];
  d.reason = f[3];
  return d;
}
} // namespace

fs::path stamps_dir(const fs::path &workspace_db) { return workspace_db.parent_path() / "stamps"; }

void write_object_record(const fs::path &workspace_db, const ObjectRecord &r) {
  fs::path dir = stamps_dir(workspace_db);
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path dst = record_path(dir, r.source, r.object);
  fs::path tmp = dst;
  tmp += "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "source\t" << r.source.string() << "\nobject\t" << r.object.string() << "\nstamp\t"
        << r.stamp << "\niteration\t" << r.iteration << "\n";
    if (!r.fallback.empty())
      out << "fallback\t" << one_field(r.fallback) << "\n";
    if (r.plan_absent)
      out << "plan_absent\t1\n";
    for (const Diagnostic &d : r.refused)
      out << "refused\t" << d.line << "\t"
          << (d.target == Diagnostic::Target::function ? "function" : "call") << "\t"
          << one_field(d.subject) << "\t" << one_field(d.reason) << "\n";
    if (!out)
      return;
  }
  fs::rename(tmp, dst, ec); // atomic: parallel compiles never see half a record
  if (ec)
    fs::remove(tmp, ec);
}

std::vector<ObjectRecord> read_object_records(const fs::path &workspace_db) {
  std::vector<ObjectRecord> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(stamps_dir(workspace_db), ec)) {
    if (e.path().extension() != ".stamp")
      continue;
    std::ifstream in(e.path());
    ObjectRecord r;
    r.record = e.path();
    std::string line;
    while (std::getline(in, line)) {
      auto tab = line.find('\t');
      if (tab == std::string::npos)
        continue;
      std::string key = line.substr(0, tab), value = line.substr(tab + 1);
      if (key == "source")
        r.source = value;
      else if (key == "object")
        r.object = value;
      else if (key == "stamp")
        r.stamp = value;
      else if (key == "iteration")
        r.iteration = std::atoi(value.c_str());
      else if (key == "fallback")
        r.fallback = value;
      else if (key == "plan_absent")
        r.plan_absent = value == "1";
      else if (key == "refused")
        if (auto d = refusal_of(value, r.source))
          r.refused.push_back(std::move(*d));
    }
    if (!r.source.empty() && !r.object.empty())
      out.push_back(std::move(r));
  }
  return out;
}

std::vector<fs::path> invalidate_stale_objects(ws::Database &db, const fs::path &workspace_db,
                                               const CompileDb &cdb, int iteration) {
  auto stamps = plan_stamps(db, iteration);
  auto expected = [&](const fs::path &src) {
    auto it = stamps.find(src.string());
    return it == stamps.end() ? std::string(kNoPlanStamp) : it->second;
  };
  std::vector<fs::path> out;
  std::set<std::string> recorded_objects;
  for (const auto &r : read_object_records(workspace_db)) {
    recorded_objects.insert(r.object.string());
    if (r.stamp == expected(r.source))
      continue;
    if (make_older_than_everything(r.object))
      out.push_back(r.object);
    else { // the object is gone (cleaned): its record says nothing any more
      std::error_code ec;
      fs::remove(r.record, ec);
    }
  }
  // Files this workspace never compiled: built without vprof, or by another workspace. A
  // planned one is rebuilt; an unplanned one only if its object holds probes (of another
  // workspace: their site ids mean nothing here); an object found clean is recorded as
  // such, so that it is read once.
  for (const auto &c : cdb.all_commands()) {
    if (recorded_objects.count(object_of(c).string()))
      continue;
    fs::path object = object_of(c);
    std::error_code ec;
    if (!fs::exists(object, ec))
      continue;
    if (expected(c.file) != kNoPlanStamp || has_probes(object)) {
      if (make_older_than_everything(object))
        out.push_back(object);
    } else {
      ObjectRecord plain;
      plain.source = c.file;
      plain.object = object;
      plain.stamp = kNoPlanStamp;
      write_object_record(workspace_db, plain);
    }
  }
  return out;
}

BuildCheck check_build(ws::Database &db, const fs::path &workspace_db, int iteration,
                       const CompileDb *cdb) {
  auto stamps = plan_stamps(db, iteration);
  BuildCheck out;
  // planned translation units -> a record compiled for the plan was seen. Functions defined
  // in headers are planned too but never rewritten (docs/instrumenter.md, "Headers policy"):
  // only the compile database's files (or, without one, the files compiled at all) count.
  std::map<std::string, bool> compiled_for_plan;
  std::set<std::string> refused_from; // a file built into two objects: its refusals once
  std::set<std::string> absent_here;  // compiled for the plan without a planned function
  if (cdb) {
    for (const auto &c : cdb->commands())
      if (stamps.count(c.file))
        compiled_for_plan[c.file] = false;
  }
  for (const auto &r : read_object_records(workspace_db)) {
    auto it = stamps.find(r.source.string());
    std::string want = it == stamps.end() ? std::string(kNoPlanStamp) : it->second;
    if (r.stamp != want) {
      if (it != stamps.end())
        out.stale.push_back({r.source, r.object});
      continue;
    }
    if (r.plan_absent) { // nothing planned in this compile: the file's other object counts
      if (it != stamps.end() && r.iteration == iteration)
        absent_here.insert(r.source.string());
      continue;
    }
    if (it != stamps.end() && (!cdb || compiled_for_plan.count(r.source.string())))
      compiled_for_plan[r.source.string()] = true;
    if (!r.fallback.empty() && r.iteration == iteration)
      out.fallbacks.push_back({r.source, r.fallback});
    if (it != stamps.end() && r.fallback.empty() && refused_from.insert(r.source.string()).second)
      out.refused.insert(out.refused.end(), r.refused.begin(), r.refused.end());
  }
  // Compiled for the plan, but no compile defined a planned function: the flags the build
  // uses leave them all out (or the scan saw them under other names) — no probe anywhere.
  for (const auto &file : absent_here)
    if (!compiled_for_plan[file]) {
      compiled_for_plan[file] = true;
      out.fallbacks.push_back({file, "none of its planned functions is defined under the flags "
                                     "the build compiles it with"});
    }
  // A planned file without an object compiled for the plan: an error when the build
  // produces its object (the build compiled it without the wrappers, or kept a stale one);
  // when no object of it exists at all, the build does not build it (another program of the
  // code base: a virtual call expanded into every override), and its functions cannot run
  // in the profiled one.
  std::map<std::string, fs::path> object;
  if (cdb)
    for (const auto &c : cdb->all_commands())
      object.emplace(c.file, object_of(c));
  for (const auto &[file, seen] : compiled_for_plan) {
    if (seen)
      continue;
    auto o = object.find(file);
    std::error_code ec;
    if (o != object.end() && !fs::exists(o->second, ec))
      out.not_built.push_back(file);
    else
      out.not_compiled.push_back(file);
  }
  return out;
}

} // namespace vprof::instr
