// vprof: the command-line driver. Git-style subcommands from one table (commands.cpp);
// global flags pick the project and its vprof.toml, subcommand flags override its keys.
#include "commands.hpp"
#include "vprof/analyzer.hpp"

#include <filesystem>
#include <iostream>

using namespace vprof::driver;
namespace fs = std::filesystem;

void Context::progress(const std::string &line) const {
  if (!quiet)
    *err << "vprof: " << line << std::endl;
}

int main(int argc, char **argv) {
  Context ctx;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;

  CLI::App app{
      "vprof: find where the latency variance of semantic intervals (transactions, "
      "requests) comes from.\n\n"
      "Typical session:\n"
      "  vprof init                # workspace + call graph from compile_commands.json\n"
      "  vprof loop                # build, run, analyze, expand until stable\n"
      "  vprof report              # ranked factors of the last iteration\n\n"
      "Settings come from ./vprof.toml (see `vprof config`); every key has a flag.\n"
      "Exit codes: 0 ok, 1 the work failed, 2 usage error, 3 bad input, 4 internal error,\n"
      "5 the machine cannot do what the settings require (kernel_wakeups = \"on\").",
      "vprof"};
  app.set_version_flag("--version", "vprof 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  std::string project;
  std::string config_file;
  app.add_option("-C,--project", project,
                 "project root holding .vprof/ (default: the folder of "
                 "vprof.toml, else the current directory)");
  app.add_option("--config", config_file, "configuration file (default: ./vprof.toml)");
  app.add_flag("-v,--verbose", ctx.verbose, "more progress output");
  app.add_flag("-q,--quiet", ctx.quiet, "no progress output");

  // Load vprof.toml before parsing so that flags override its values. The file is
  // found from the raw arguments (-C / --config) with a tiny pre-scan.
  try {
    fs::path cwd = fs::current_path();
    for (int i = 1; i + 1 < argc; ++i) {
      std::string a = argv[i];
      if (a == "--")
        break;
      if (a == "-C" || a == "--project")
        cwd = fs::absolute(argv[i + 1]);
      else if (a == "--config")
        config_file = argv[i + 1];
    }
    ctx.cfg.root = cwd;
    std::optional<fs::path> cfgpath;
    if (!config_file.empty())
      cfgpath = find_config(fs::path(config_file));
    else if (fs::exists(cwd / "vprof.toml"))
      cfgpath = cwd / "vprof.toml";
    if (cfgpath)
      load_config(*cfgpath, ctx.cfg);
    apply_environment(ctx.cfg);
    if (!project.empty() || ctx.cfg.config_file.empty())
      ctx.cfg.root = cwd;
  } catch (const UsageError &e) {
    std::cerr << "vprof: " << e.what() << "\n";
    return kExitUsage;
  }

  const Command *chosen = nullptr;
  std::vector<std::pair<CLI::App *, const Command *>> subs;
  for (const auto &cmd : commands()) {
    CLI::App *sub = app.add_subcommand(cmd.name, cmd.help);
    cmd.setup(*sub, ctx);
    subs.emplace_back(sub, &cmd);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  for (auto &[sub, cmd] : subs)
    if (sub->parsed())
      chosen = cmd;
  try {
    return chosen->run(ctx);
  } catch (const UsageError &e) {
    std::cerr << "vprof " << chosen->name << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const InputError &e) {
    std::cerr << "vprof " << chosen->name << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const EnvironmentError &e) {
    std::cerr << "vprof " << chosen->name << ": " << e.what() << "\n";
    return kExitEnvironment;
  } catch (const vprof::analyzer::InternalError &e) {
    std::cerr << "vprof " << chosen->name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  } catch (const std::exception &e) {
    std::cerr << "vprof " << chosen->name << ": " << e.what() << "\n";
    return kExitFailed;
  }
}
