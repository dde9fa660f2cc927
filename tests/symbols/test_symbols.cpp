// The symbols room (symbols/include/vprof/symbols.hpp): a maps file into mappings, mangled
// names into qualified function names, and addresses of this process into its functions,
// source lines and objects, a PIE executable and libc alike.
#include <vprof/symbols.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace sym = vprof::symbols;

namespace probe_ns {
struct Widget {
  __attribute__((noinline)) static std::uintptr_t where() {
    return reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  }
};
__attribute__((noinline)) std::uintptr_t call_site() {
  std::uintptr_t r = Widget::where(); // the return address lands on this line
  asm volatile("" ::: "memory");
  return r;
}
} // namespace probe_ns

TEST(Maps, LinesBecomeSortedMappings) {
  const auto file =
      std::filesystem::temp_directory_path() / ("vprof-maps-" + std::to_string(getpid()));
  std::ofstream(file) << "7f0000002000-7f0000003000 r-xp 00001000 08:01 42   /usr/lib/libz.so.1\n"
                         "55aa00000000-55aa00001000 r--p 00000000 08:01 7    /opt/app/server\n"
                         "not a mapping line\n"
                         "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0    [stack]\n"
                         "7f0000009000-7f000000a000 rw-p 00000000 00:00 0\n";
  const auto maps = sym::read_maps(file);
  std::filesystem::remove(file);
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].path, "/opt/app/server");
  EXPECT_FALSE(maps[0].executable);
  EXPECT_EQ(maps[1].path, "/usr/lib/libz.so.1");
  EXPECT_TRUE(maps[1].executable);
  EXPECT_EQ(maps[1].offset, 0x1000u);
  EXPECT_EQ(maps[2].path, "");
  EXPECT_EQ(maps[3].path, "[stack]");
  EXPECT_EQ(sym::mapping_of(maps, 0x7f0000002fffull), &maps[1]);
  EXPECT_EQ(sym::mapping_of(maps, 0x7f0000003000ull), nullptr);
  EXPECT_EQ(sym::mapping_of(maps, 0x1000ull), nullptr);
}

TEST(FunctionName, MangledNamesLoseTheirParametersCNamesStay) {
  EXPECT_EQ(sym::function_name("_ZN8probe_ns6Widget5whereEv"), "probe_ns::Widget::where");
  EXPECT_EQ(sym::function_name("_ZN2db3Txn6commitEib"), "db::Txn::commit");
  EXPECT_EQ(sym::function_name("_Z9stage_onei"), "stage_one");
  EXPECT_EQ(sym::function_name("fdatasync"), "fdatasync");
  EXPECT_EQ(sym::function_name(""), "");
}

TEST(Symbolizer, AReturnAddressNamesItsCallerAndLine) {
  const std::uintptr_t ret = probe_ns::call_site();
  const auto maps = sym::read_maps("/proc/self/maps");
  sym::Symbolizer s;
  const auto frames = s.frames(maps, ret, /*return_address=*/true);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "probe_ns::call_site");
  EXPECT_NE(frames.back().file.find("test_symbols.cpp"), std::string::npos) << frames.back().file;
  EXPECT_EQ(frames.back().line, 22u);
  EXPECT_EQ(frames.back().object, std::filesystem::canonical("/proc/self/exe").string());
}

TEST(Symbolizer, LibcFunctionsAreNamedFromTheirSymbolTable) {
  const auto maps = sym::read_maps("/proc/self/maps");
  sym::Symbolizer s;
  const auto frames = s.frames(maps, reinterpret_cast<std::uintptr_t>(&::fdatasync), false);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fdatasync");
  EXPECT_NE(frames[0].object.find("libc"), std::string::npos) << frames[0].object;
}

TEST(Symbolizer, AnAddressInNoObjectGivesNoFrame) {
  const auto maps = sym::read_maps("/proc/self/maps");
  sym::Symbolizer s;
  int on_stack = 0;
  EXPECT_TRUE(s.frames(maps, reinterpret_cast<std::uintptr_t>(&on_stack), false).empty());
  EXPECT_TRUE(s.frames(maps, 16, false).empty());
}

// The first frame (docs/symbols.md): a sleep in libc's fdatasync, whose wrapper pushes no
// frame, gives the walk [fdatasync, caller's caller]; the word at the stack pointer, the
// return address into the program's function that called it, is put back. It is not taken in
// the program's own code (frame pointers: the walk saw the caller), outside any object, or
// when the walk has it already.
TEST(FirstFrame, TheWordAtTheStackPointerNamesTheCallerOfALibcWrapperOnly) {
  std::vector<sym::Mapping> maps = {
      {0x1000, 0x2000, 0x1000, true, "/opt/app/server"},
      {0x5000, 0x6000, 0x0, false, ""},
      {0x7000, 0x8000, 0x28000, true, "/usr/lib/x86_64-linux-gnu/libc.so.6"}};
  EXPECT_TRUE(sym::takes_sp_word(maps, {0x7100, 0x1500}, 0x1200)); // libc wrapper <- app
  EXPECT_TRUE(
      sym::takes_sp_word(maps, {0x7100, 0x7400}, 0x1200)); // tail call: main's frame skipped
  EXPECT_TRUE(sym::takes_sp_word(maps, {0x7100}, 0x1200)); // a one-frame walk
  EXPECT_FALSE(sym::takes_sp_word(maps, {0x1100, 0x1500}, 0x1200)); // the app's own code
  EXPECT_FALSE(sym::takes_sp_word(maps, {0x7100, 0x1200}, 0x1200)); // the walk has it
  EXPECT_FALSE(sym::takes_sp_word(maps, {0x7100, 0x1500}, 0x5100)); // a data word
  EXPECT_FALSE(sym::takes_sp_word(maps, {0x7100, 0x1500}, 0));      // unreadable
  EXPECT_FALSE(sym::takes_sp_word(maps, {0x7100, 0x1500}, 0x7200)); // libc to libc: unknown
}
