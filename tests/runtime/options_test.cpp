// Unit tests of the VPROF_* option parser (runtime/src/options.c) with an injected
// environment table.
#include "options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace {

std::map<std::string, std::string> g_env;

const char *fake_getenv(const char *name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

vprof_options parse(std::map<std::string, std::string> env, std::string *err = nullptr,
                    int *bad = nullptr) {
  g_env = std::move(env);
  vprof_options o;
  char buf[256] = "";
  int b = vprof_options_parse(&o, fake_getenv, buf, sizeof buf);
  if (err)
    *err = buf;
  if (bad)
    *bad = b;
  return o;
}

TEST(Options, DefaultsWhenNothingIsSet) {
  int bad = -1;
  vprof_options o = parse({}, nullptr, &bad);
  EXPECT_EQ(bad, 0);
  EXPECT_STREQ(o.TRACE_DIR, "./vprof-trace");
  EXPECT_EQ(o.DISABLE, 0);
  EXPECT_EQ(o.VERBOSE, 0);
  EXPECT_EQ(o.SYNC, 1);
  EXPECT_EQ(o.MAX_THREAD_MB, 256u);
  EXPECT_EQ(o.WINDOW_KB, 64u);
}

TEST(Options, ValuesAreRead) {
  vprof_options o = parse({{"VPROF_TRACE_DIR", "/x/y"},
                           {"VPROF_DISABLE", "yes"},
                           {"VPROF_VERBOSE", "1"},
                           {"VPROF_SYNC", "off"},
                           {"VPROF_MAX_THREAD_MB", "0"},
                           {"VPROF_WINDOW_KB", "64"}});
  EXPECT_STREQ(o.TRACE_DIR, "/x/y");
  EXPECT_EQ(o.DISABLE, 1);
  EXPECT_EQ(o.VERBOSE, 1);
  EXPECT_EQ(o.SYNC, 0);
  EXPECT_EQ(o.MAX_THREAD_MB, 0u);
  EXPECT_EQ(o.WINDOW_KB, 64u);
}

TEST(Options, ClockOffsetIsASignedNumber) {
  EXPECT_EQ(parse({}).CLOCK_OFFSET_NS, 0);
  EXPECT_EQ(parse({}).CLOCK_SAMPLE_MS, 1000u);
  EXPECT_EQ(parse({{"VPROF_CLOCK_OFFSET_NS", "-5000000"}}).CLOCK_OFFSET_NS, -5000000);
  EXPECT_EQ(parse({{"VPROF_CLOCK_OFFSET_NS", "+5000000"}}).CLOCK_OFFSET_NS, 5000000);
  for (const char *badv : {" 5", "5ms", "-", "", "99999999999999999999"}) {
    int bad = 0;
    std::string err;
    vprof_options o = parse({{"VPROF_CLOCK_OFFSET_NS", badv}}, &err, &bad);
    EXPECT_EQ(bad, 1) << badv;
    EXPECT_EQ(o.CLOCK_OFFSET_NS, 0) << badv;
    EXPECT_NE(err.find("VPROF_CLOCK_OFFSET_NS"), std::string::npos) << err;
  }
}

TEST(Options, MalformedValueKeepsDefaultAndNamesTheVariable) {
  for (const char *v : {"-1", "12x", " 3", "", "lots", "99999999999999999999999"}) {
    std::string err;
    int bad = 0;
    vprof_options o = parse({{"VPROF_MAX_THREAD_MB", v}}, &err, &bad);
    EXPECT_EQ(bad, 1) << v;
    EXPECT_EQ(o.MAX_THREAD_MB, 256u) << v;
    EXPECT_NE(err.find("VPROF_MAX_THREAD_MB"), std::string::npos) << err;
  }
  std::string err;
  vprof_options o = parse({{"VPROF_SYNC", "maybe"}, {"VPROF_VERBOSE", "2"}}, &err);
  EXPECT_EQ(o.SYNC, 1);
  EXPECT_EQ(o.VERBOSE, 0);
  EXPECT_NE(err.find("VPROF_VERBOSE"), std::string::npos) << err; // first in list order
}

TEST(Options, SyncIsALevelZeroToTwoWithBooleanWordsKept) {
  const std::pair<const char *, int> good[] = {{"0", 0},  {"1", 1},   {"2", 2},    {"off", 0},
                                               {"on", 1}, {"yes", 1}, {"false", 0}};
  for (const auto &[v, want] : good) {
    int bad = -1;
    vprof_options o = parse({{"VPROF_SYNC", v}}, nullptr, &bad);
    EXPECT_EQ(bad, 0) << v;
    EXPECT_EQ(o.SYNC, want) << v;
  }
  for (const char *v : {"3", "12", "-1", "1 ", "full"}) {
    std::string err;
    int bad = 0;
    vprof_options o = parse({{"VPROF_SYNC", v}}, &err, &bad);
    EXPECT_EQ(bad, 1) << v;
    EXPECT_EQ(o.SYNC, 1) << v; // the default: edge-forming records only
    EXPECT_NE(err.find("VPROF_SYNC"), std::string::npos) << err;
  }
}

TEST(Options, DescribeListsEveryOption) {
  vprof_options o = parse({});
  char buf[4096];
  size_t n = vprof_options_describe(&o, buf, sizeof buf);
  ASSERT_LT(n, sizeof buf);
  std::string text(buf, n);
  for (const char *name :
       {"VPROF_TRACE_DIR=./vprof-trace", "VPROF_DISABLE=0", "VPROF_VERBOSE=0",
        "VPROF_MAX_THREAD_MB=256", "VPROF_SYNC=1", "VPROF_WINDOW_KB=64", "VPROF_CALIBRATE_US="})
    EXPECT_NE(text.find(name), std::string::npos) << name;
  EXPECT_EQ(vprof_options_describe(&o, nullptr, 0), n); // size query
}

} // namespace
