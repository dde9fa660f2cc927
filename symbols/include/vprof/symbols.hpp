// The symbols room: sampled stacks' addresses into functions, source files and lines, through a
// process's memory map (a copy of /proc/<pid>/maps: <pid>.maps from the runtime, or
// <pid>.stackmaps from the recorder) and LLVM's symbolizer (DWARF where the object has it, the
// symbol tables where not). PIE executables and shared libraries are placed by their mapping's
// file offset and program headers. docs/symbols.md tells the rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vprof::symbols {

// One line of a maps file.
struct Mapping {
  std::uint64_t start = 0, end = 0; // [start, end)
  std::uint64_t offset = 0;         // file offset of `start`
  bool executable = false;
  std::string path; // the object's path; empty, or "[vdso]", "[stack]", ... when none
};

// A process's mappings, sorted by start. Unreadable lines are skipped; a missing file gives
// none (its frames then stay unsymbolized).
std::vector<Mapping> read_maps(const std::filesystem::path &file);

// The mapping holding `address`, or null.
const Mapping *mapping_of(const std::vector<Mapping> &maps, std::uint64_t address);

// One source-level frame: a function (inlined ones give several frames per address).
struct Frame {
  std::string
      function; // qualified, parameters dropped ("ns::cls::method", "fdatasync"); empty: unknown
  std::string file; // the source file (empty without debug information)
  std::uint32_t line = 0;
  std::string object;   // the mapping's object ("/usr/lib/x86_64-linux-gnu/libc.so.6")
  bool inlined = false; // inlined into the next frame (its caller)
};

// "ns::cls::method" from a symbolizer's name: an Itanium mangled name demangled to its
// qualified function name without parameters or return type; a C name as it is.
std::string function_name(const std::string &symbol);

// Turns addresses into frames; caches the objects it opened. Not thread-safe.
class Symbolizer {
public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer &) = delete;
  Symbolizer &operator=(const Symbolizer &) = delete;

  // The frames at `address` in a process with `maps`, innermost first (inlined callees before
  // the function they are in). `return_address`: the address follows a call (every frame but a
  // stack's first), so the call instruction before it is looked up. Empty when the address is
  // in no mapping of an object; one frame with an empty function when the object does not know it.
  std::vector<Frame> frames(const std::vector<Mapping> &maps, std::uint64_t address,
                            bool return_address);

  // The address inside its object's file as the symbolizer wants it (the ELF virtual address);
  // nullopt when the object cannot be read.
  std::optional<std::uint64_t> object_address(const Mapping &m, std::uint64_t address);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace vprof::symbols

namespace vprof::trace {
struct StacksFile;
}

namespace vprof::symbols {

// Whether the word at the stack pointer is the caller the frame-pointer walk skipped: it
// points into an executable object's code, another object than frame 0's (frame 0 is then in
// a library function without frame pointers, libc's system call wrappers and memcpy: the walk
// goes from them to their caller's caller), and it is not frame 1 already (docs/symbols.md,
// "The first frame").
bool takes_sp_word(const std::vector<Mapping> &maps, const std::vector<std::uint64_t> &pc,
                   std::uint64_t sp_word);

// One sampled stack as source-level frames, innermost first. Frame 0 is the instruction
// pointer, the others return addresses; the word at the stack pointer becomes frame 1 when
// takes_sp_word says so.
std::vector<Frame> stack_frames(Symbolizer &s, const std::vector<Mapping> &maps,
                                const std::vector<std::uint64_t> &pc, std::uint64_t sp_word);

// The stacks of one trace directory's stacks.vpk, symbolized: per stack, its frames (through
// <pid>.maps, else the recorder's <pid>.stackmaps, of the process that sampled it first).
struct SymbolizedStacks {
  std::vector<std::vector<Frame>> frames;   // per StacksFile::stacks index
  std::vector<std::uint32_t> unmapped_pids; // processes without a maps file
};
SymbolizedStacks symbolize(const trace::StacksFile &file, const std::filesystem::path &dir);

// Flame-graph folded lines ("outer;...;inner count"), one per distinct chain of function
// names, of the samples whose `what` is in `whats` (enum vprof_stacks_what), sorted by count.
std::string render_folded(const trace::StacksFile &file, const SymbolizedStacks &sym,
                          const std::vector<std::uint8_t> &whats);

// The text summary `vprof stacks` prints: counts, then per kind of sample (on CPU, at sleeps,
// at wake-ups) the `top` most frequent chains with their share.
std::string render_summary(const trace::StacksFile &file, const SymbolizedStacks &sym,
                           std::size_t top);

} // namespace vprof::symbols
