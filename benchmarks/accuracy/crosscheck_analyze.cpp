// acc_analyze: analyses one trace directory with the analyzer library and prints the
// result as JSON (vprof::analyzer::render_json) — the back end of crosscheck.py, which
// compares the accuracy programs' realised shares with the analyzer's node shares.
// Usage: acc_analyze TRACE_DIR WORKSPACE_DB   (exit 1 with a message on bad input)
#include <vprof/analyzer.hpp>
#include <vprof/workspace.hpp>

#include <exception>
#include <iostream>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: acc_analyze TRACE_DIR WORKSPACE_DB\n";
    return 2;
  }
  try {
    vprof::ws::Database db(argv[2]);
    vprof::analyzer::AnalyzeOptions opt;
    opt.bootstrap_samples = 0; // shares only: the comparison needs no intervals
    std::cout << vprof::analyzer::render_json(vprof::analyzer::analyze(argv[1], &db, opt)) << "\n";
  } catch (const std::exception &e) {
    std::cerr << "acc_analyze: " << argv[1] << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
