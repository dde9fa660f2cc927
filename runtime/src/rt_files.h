/* libvprof_rt's files beside the streams (rt_files.c): the trace directory and the
 * process's side files <pid>.maps, <pid>.units and <pid>.cpu. */
#ifndef VPROF_RT_FILES_H
#define VPROF_RT_FILES_H

#include "rt_internal.h"

/* mkdir -p; returns 0 if `dir` is a writable directory afterwards. */
int vprof_rt_make_dirs_(const char *dir) VPROF_RT_HIDDEN_;

/* Returns a malloc'ed absolute form of `dir` (relative to the current directory), or
 * NULL with errno. */
char *vprof_rt_absolute_dir_(const char *dir) VPROF_RT_HIDDEN_;

/* Copies `from` to `to` (opened with O_WRONLY | O_CREAT | `flags`); 0 unless a file could
 * not be opened. */
int vprof_rt_copy_file_(const char *from, const char *to, int flags) VPROF_RT_HIDDEN_;

/* Leaves $TMPDIR/vprof-unusable-trace-dir.<pid> ("pid uid errno dir") for `vprof loop` and
 * `vprof run` to report; once per process, best effort. */
void vprof_rt_note_unusable_dir_(const char *dir, int err) VPROF_RT_HIDDEN_;

/* <dir>/<pid>.maps from /proc/self/maps, <dir>/<pid>.units from the registered units,
 * <dir>/<pid>.cpu from getrusage: each written to a temporary file and renamed, so a
 * reader never sees a half-written one. No stdio streams. */
void vprof_rt_write_maps_(const char *dir) VPROF_RT_HIDDEN_;
void vprof_rt_write_units_(const char *dir) VPROF_RT_HIDDEN_;
void vprof_rt_write_cpu_(const char *dir) VPROF_RT_HIDDEN_;

#endif /* VPROF_RT_FILES_H */
