/* vprof runtime options: the struct generated from options.def and its parser.
 * Internal to libvprof_rt (and its unit tests). */
#ifndef VPROF_RT_OPTIONS_H
#define VPROF_RT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VPROF_OPTTYPE_string const char *
#define VPROF_OPTTYPE_bool int
#define VPROF_OPTTYPE_level int /* 0, 1 or 2 (or a boolean word: off = 0, on = 1) */
#define VPROF_OPTTYPE_u64 uint64_t
#define VPROF_OPTTYPE_i64 int64_t

typedef struct vprof_options {
#define VPROF_OPTION(type, name, def, help) VPROF_OPTTYPE_##type name;
#include "options.def"
#undef VPROF_OPTION
} vprof_options;

/* Looks a variable up; getenv in production, a table in tests. */
typedef const char *(*vprof_getenv_fn)(const char *name);

/* Fills `o` with defaults overridden by VPROF_<name> variables found through `get`.
 * A malformed value keeps the default; the message (the first problem found, naming the
 * variable) is written to `err` (if non-NULL, size `errn`) and 1 is returned; 0 if every
 * value was well-formed. String values point into the environment (not copied). */
__attribute__((visibility("hidden"))) int vprof_options_parse(vprof_options *o, vprof_getenv_fn get,
                                                              char *err, size_t errn);

/* Writes "VPROF_<name>=<value>  <help>" lines for every option into `buf`. Returns the
 * length that was needed (like snprintf). */
__attribute__((visibility("hidden"))) size_t vprof_options_describe(const vprof_options *o,
                                                                    char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* VPROF_RT_OPTIONS_H */
