/* vprof runtime options: parsing VPROF_* variables into the struct of options.def. */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_string(const char *s, const char **out) {
  *out = s;
  return 0;
}

static int parse_bool(const char *s, int *out) {
  if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")) {
    *out = 1;
    return 0;
  }
  if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off") ||
      !strcmp(s, "")) {
    *out = 0;
    return 0;
  }
  return -1;
}

/* A sync level 0..2; the boolean words keep their old meaning (off = 0, on = 1). */
static int parse_level(const char *s, int *out) {
  if ((s[0] >= '0' && s[0] <= '2') && s[1] == '\0') {
    *out = s[0] - '0';
    return 0;
  }
  return parse_bool(s, out);
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  if (*s < '0' || *s > '9')
    return -1; /* strtoull would accept "-1" and leading blanks */
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = (uint64_t)v;
  return 0;
}

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  long long v;
  if (!((*s >= '0' && *s <= '9') || ((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9')))
    return -1; /* strtoll would accept leading blanks */
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = (int64_t)v;
  return 0;
}

int vprof_options_parse(vprof_options *o, vprof_getenv_fn get, char *err, size_t errn) {
  int bad = 0;
  const char *s;
#define VPROF_OPTION(type, name, def, help)                                                        \
  o->name = def;                                                                                   \
  s = get("VPROF_" #name);                                                                         \
  if (s && parse_##type(s, &o->name) != 0) {                                                       \
    o->name = def;                                                                                 \
    if (!bad && err && errn)                                                                       \
      snprintf(err, errn,                                                                          \
               "VPROF_" #name "=\"%s\" is not a valid " #type " value; using the default", s);     \
    bad = 1;                                                                                       \
  }
#include "options.def"
#undef VPROF_OPTION
  return bad;
}

size_t vprof_options_describe(const vprof_options *o, char *buf, size_t n) {
  size_t len = 0;
  int k;
#define VPROF_FMT_string(v) "%s", (v)
#define VPROF_FMT_bool(v) "%d", (v)
#define VPROF_FMT_level(v) "%d", (v)
#define VPROF_FMT_u64(v) "%llu", (unsigned long long)(v)
#define VPROF_FMT_i64(v) "%lld", (long long)(v)
#define VPROF_OPTION(type, name, def, help)                                                        \
  k = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "VPROF_" #name "=");             \
  len += (size_t)k;                                                                                \
  k = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, VPROF_FMT_##type(o->name));      \
  len += (size_t)k;                                                                                \
  k = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "  %s\n", help);                 \
  len += (size_t)k;
#include "options.def"
#undef VPROF_OPTION
  return len;
}
