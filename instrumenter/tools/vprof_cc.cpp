// vprof-cc / vprof-c++: compiler wrapper (CC=/CXX=). Instruments the translation unit
// being compiled per the workspace plan into a temporary file, compiles that with the
// real compiler, and links libvprof_rt. Any failure compiles the original unchanged.
#include <vprof/instrumenter.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vprof;

namespace {

bool verbose() {
  const char *v = std::getenv("VPROF_VERBOSE");
  return v && *v && std::strcmp(v, "0") != 0;
}

void warn(const std::string &msg) { std::cerr << "vprof-cc: warning: " << msg << "\n"; }

// Runs argv; stderr goes to `err_file` when given. Returns the exit status (127: cannot run).
int run(const std::vector<std::string> &argv, const std::string &err_file = "") {
  std::vector<char *> cargv;
  for (const auto &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return 127;
  if (pid == 0) {
    if (!err_file.empty())
      if (!std::freopen(err_file.c_str(), "w", stderr))
        _exit(127);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "vprof-cc: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool is_source(const std::string &a) {
  static const std::set<std::string> exts = {".c",   ".cc", ".cpp", ".cxx",
                                             ".c++", ".C",  ".cp",  ".CPP"};
  return !a.empty() && a[0] != '-' && exts.count(fs::path(a).extension().string()) > 0;
}

// Options whose value is the next argument.
bool takes_value(const std::string &a) {
  static const std::set<std::string> opts = {"-o",          "-I",
                                             "-D",          "-U",
                                             "-include",    "-imacros",
                                             "-isystem",    "-idirafter",
                                             "-iquote",     "-iprefix",
                                             "-MF",         "-MT",
                                             "-MQ",         "-x",
                                             "-L",          "-Xlinker",
                                             "-Xassembler", "-Xpreprocessor",
                                             "-Xclang",     "-arch",
                                             "-target",     "-isysroot",
                                             "--sysroot",   "-T",
                                             "-aux-info",   "-main-file-name",
                                             "-z"};
  return opts.count(a) > 0;
}

// The first line of a compiler's output that says "error", for a fallback's reason.
std::string first_error(const std::string &text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find("error") != std::string::npos)
      return line;
  return text.substr(0, text.find('\n'));
}

void record_objects(const fs::path &workspace, const std::vector<instr::ObjectRecord> &records) {
  for (const auto &r : records)
    try {
      instr::write_object_record(workspace, r);
    } catch (const std::exception &e) {
      warn(std::string("cannot record the build stamp of ") + r.object.string() + ": " + e.what());
    }
}

std::string read_all(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool cxx = fs::path(argv[0]).filename().string().find("++") != std::string::npos;
  if (!args.empty() && (args[0] == "--vprof-c++" || args[0] == "--vprof-cc")) {
    cxx = args[0] == "--vprof-c++";
    args.erase(args.begin());
  }
  const char *real_env = std::getenv(cxx ? "VPROF_REAL_CXX" : "VPROF_REAL_CC");
  std::string real = real_env && *real_env ? real_env : (cxx ? "c++" : "cc");

  std::vector<std::string> plain{real};
  plain.insert(plain.end(), args.begin(), args.end());

  // Classify the invocation.
  bool preprocess_only = false, compile_only = false, has_x = false, dep_file = false;
  std::string output, mf;
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "-E" || a == "-M" || a == "-MM")
      preprocess_only = true;
    else if (a == "-c" || a == "-S" || a == "-fsyntax-only")
      compile_only = true;
    else if (a == "-MD" || a == "-MMD")
      dep_file = true;
    else if (a == "-x" || a.rfind("-x", 0) == 0)
      has_x = true;
    if (takes_value(a) && i + 1 < args.size()) {
      if (a == "-o")
        output = args[i + 1];
      if (a == "-MF")
        mf = args[i + 1];
      ++i;
      continue;
    }
    if (a.rfind("-MF", 0) == 0 && a.size() > 3)
      mf = a.substr(3);
    if (a.rfind("-o", 0) == 0 && a.size() > 2 && a != "-o")
      output = a.substr(2);
    if (is_source(a))
      sources.push_back(i);
  }
  if (preprocess_only)
    return run(plain);

  std::optional<fs::path> wspath = instr::find_workspace(fs::current_path());
  const char *rt_env = std::getenv("VPROF_RUNTIME_LIBDIR");
  std::string rtdir = rt_env && *rt_env ? rt_env : instr::runtime_library_dir();
  if (!wspath) {
    if (const char *w = std::getenv("VPROF_WORKSPACE"); w && *w)
      warn(std::string("VPROF_WORKSPACE=") + w + " holds no workspace; compiling without vprof");
    return run(plain);
  }
  if (rtdir.empty() || !fs::exists(fs::path(rtdir) / "libvprof_rt.so")) {
    warn("libvprof_rt.so not found (set VPROF_RUNTIME_LIBDIR); compiling without vprof");
    return run(plain);
  }

  std::vector<std::string> enable = {std::string("-I") + instr::annotations_include_dir(),
                                     std::string("-I") + instr::runtime_include_dir(),
                                     "-DVPROF_ENABLE"};
  // Frame pointers, so that the kernel recorder's stacks reach every frame of this code
  // (docs/recorder.md, "Stacks"): after the build's own flags, which they override.
#if defined(__x86_64__) || defined(__aarch64__)
  enable.insert(enable.end(), {"-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"});
#endif
  std::vector<std::string> link;
  if (!compile_only)
    link = {"-L" + rtdir, "-Wl,-rpath," + rtdir, "-lvprof_rt"};

  // The unchanged build (also the fallback): original flags + annotations + runtime.
  std::vector<std::string> original = plain;
  original.insert(original.end(), enable.begin(), enable.end());
  original.insert(original.end(), link.begin(), link.end());

  std::vector<std::string> instrumented = {real};
  std::vector<std::pair<std::string, std::string>> temps; // temp path, original spelling
  // What is recorded per source after a successful compile (build stamps: which plan the
  // object was compiled for, and why a planned file fell back to its original source).
  std::vector<instr::ObjectRecord> records;
  if (!sources.empty() && !has_x) {
    try {
      ws::Database db(*wspath);
      std::optional<int> it;
      if (const char *e = std::getenv("VPROF_ITERATION"); e && *e)
        it = std::atoi(e);
      else
        it = instr::current_iteration(db);
      std::string cwd = fs::current_path().string();
      std::map<std::string, std::string> stamps;
      if (it)
        stamps = instr::plan_stamps(db, *it);
      for (std::size_t si : sources) {
        fs::path abs = fs::weakly_canonical(fs::absolute(args[si]));
        instr::ObjectRecord rec;
        rec.source = abs;
        rec.object = fs::absolute(!output.empty() && (sources.size() == 1 || !compile_only)
                                      ? fs::path(output)
                                      : fs::path(abs.stem().string() + ".o"))
                         .lexically_normal();
        auto st = stamps.find(abs.string());
        rec.stamp = st == stamps.end() ? instr::kNoPlanStamp : st->second;
        rec.iteration = it ? *it : -1;
        records.push_back(rec);
      }
      for (std::size_t si : sources) {
        const std::string &src = args[si];
        fs::path abs = fs::weakly_canonical(fs::absolute(src));
        if (!it || !instr::file_has_plan(db, abs, *it))
          continue;
        // The records of this source's objects in this compile.
        auto each_record = [&](auto &&mark) {
          for (auto &rec : records)
            if (rec.source == abs)
              mark(rec);
        };
        auto fell_back = [&](const std::string &why) {
          each_record([&](instr::ObjectRecord &rec) { rec.fallback = why; });
        };
        instr::CompileCommand cmd;
        cmd.file = abs.string();
        cmd.directory = cwd;
        cmd.args.push_back(real);
        for (std::size_t i = 0; i < args.size(); ++i)
          if (std::find(sources.begin(), sources.end(), i) == sources.end())
            cmd.args.push_back(args[i]);
        cmd.args.push_back(src);
        instr::ParseOptions po;
        po.quiet = !verbose();
        instr::RewriteResult r = instr::rewrite(db, cmd, *it, po);
        if (!r.ok) {
          warn(src + ": not instrumented (" + r.error + "); compiling it unchanged");
          fell_back(r.error);
          continue;
        }
        if (!r.changed && r.planned_defined == 0) {
          // built twice with different flags (PostgreSQL's src/common: a frontend and a
          // backend object): this compile leaves the planned functions out
          each_record([](instr::ObjectRecord &rec) { rec.plan_absent = true; });
          continue;
        }
        if (!r.changed) {
          std::string why = "no probe could be inserted";
          if (!r.skipped.empty())
            why += " (" + r.skipped.front().file + ":" + std::to_string(r.skipped.front().line) +
                   ": " + r.skipped.front().reason + ")";
          fell_back(why);
          continue;
        }
        // What the rewrite refused goes into the object's record: the loop names it.
        each_record([&](instr::ObjectRecord &rec) { rec.refused = r.skipped; });
        // The unit registers the plan it was built for: the trace then proves it.
        instr::UnitStamp unit;
        unit.workspace_id = instr::workspace_identity(db);
        auto stamp = stamps.find(abs.string());
        unit.stamp = stamp == stamps.end() ? instr::kNoPlanStamp : stamp->second;
        unit.iteration = *it;
        unit.source = abs;
        r.output += instr::unit_registration(unit);
        std::string name = fs::path(src).filename().string();
        const char *tmpdir = std::getenv("TMPDIR");
        std::string tmpl =
            std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/vprof-XXXXXX-" + name;
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        int fd = mkstemps(buf.data(), static_cast<int>(name.size() + 1));
        if (fd < 0) {
          warn(src + ": cannot create a temporary file; compiling it unchanged");
          fell_back("cannot create a temporary file");
          continue;
        }
        std::string tmp(buf.data());
        bool ok =
            ::write(fd, r.output.data(), r.output.size()) == static_cast<ssize_t>(r.output.size());
        ::close(fd);
        if (!ok) {
          warn(src + ": cannot write " + tmp + "; compiling it unchanged");
          fell_back("cannot write " + tmp);
          fs::remove(tmp);
          continue;
        }
        temps.emplace_back(tmp, src);
        // Quoted includes are searched next to the including file: keep the original's.
        instrumented.push_back("-iquote");
        instrumented.push_back(abs.parent_path().string());
        if (verbose())
          std::cerr << "vprof-cc: " << src << ": " << r.body_sites << " body and " << r.call_sites
                    << " call probes -> " << tmp << "\n";
      }
    } catch (const std::exception &e) {
      warn(std::string("workspace: ") + e.what() + "; compiling unchanged");
      temps.clear();
      records.clear();
    }
  }
  if (temps.empty()) {
    int rc = run(original);
    if (rc == 0)
      record_objects(*wspath, records);
    return rc;
  }

  for (const auto &a : args) {
    auto t = std::find_if(temps.begin(), temps.end(), [&](auto &p) { return p.second == a; });
    instrumented.push_back(t != temps.end() ? t->first : a);
  }
  instrumented.insert(instrumented.end(), enable.begin(), enable.end());
  instrumented.insert(instrumented.end(), link.begin(), link.end());

  std::string errlog = temps.front().first + ".stderr";
  int rc = run(instrumented, errlog);
  std::string errtext = read_all(errlog);
  fs::remove(errlog);
  for (auto &[tmp, src] : temps)
    fs::remove(tmp);
  if (rc != 0) {
    warn("the instrumented compile failed; compiling the original unchanged");
    if (verbose())
      std::cerr << errtext;
    std::string why = "the instrumented source did not compile: " + first_error(errtext);
    for (auto &rec : records)
      for (auto &[tmp, src] : temps)
        if (rec.source == fs::weakly_canonical(fs::absolute(src)))
          rec.fallback = why;
    int orc = run(original);
    if (orc == 0)
      record_objects(*wspath, records);
    return orc;
  }
  std::cerr << errtext;
  // A dependency file names the temporary source: point it back at the original.
  if (dep_file) {
    std::string depfile = mf;
    if (depfile.empty() && !output.empty())
      depfile = fs::path(output).replace_extension(".d").string();
    if (!depfile.empty() && fs::exists(depfile)) {
      std::string text = read_all(depfile);
      for (auto &[tmp, src] : temps)
        for (std::size_t p; (p = text.find(tmp)) != std::string::npos;)
          text.replace(p, tmp.size(), src);
      std::ofstream(depfile, std::ios::binary) << text;
    }
  }
  record_objects(*wspath, records);
  return 0;
}
