// Test-only writer of kernel wake-up files (sched.vpk) in the bytes of
// runtime/include/vprof/sched_format.h, with exact CLOCK_MONOTONIC times, so analyzer tests
// can give their hand-built traces the kernel's scheduler events.
#pragma once

#include <vprof/sched_format.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace vprof::testing {

class SchedBuilder {
public:
  // tid blocked in system call `syscall` (-1: none) at ns
  SchedBuilder &sleep(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid,
                      std::int64_t syscall) {
    return add(ns, tid, pid, VPROF_SCHED_SLEEP, 0, 0, 0, vprof_sched_sleep_arg(syscall, 1));
  }
  // tid blocked as above, and the switch gave the CPU to next_tid, a traced thread that had
  // slept: the record also stands for its RUN (VPROF_SCHED_NEXT_RUNS, version 2)
  SchedBuilder &sleep_next_runs(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid,
                                std::int64_t syscall, std::uint32_t next_tid,
                                std::uint32_t next_pid) {
    return add(ns, tid, pid, VPROF_SCHED_SLEEP, next_tid, next_pid, VPROF_SCHED_NEXT_RUNS,
               vprof_sched_sleep_arg(syscall, 1));
  }
  // the header's version (default VPROF_SCHED_VERSION)
  SchedBuilder &version(std::uint32_t v) {
    version_ = v;
    return *this;
  }
  // tid woken by waker (0: the idle task) of process waker_pid
  SchedBuilder &wake(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid, std::uint32_t waker,
                     std::uint32_t waker_pid, bool irq = false) {
    return add(ns, tid, pid, VPROF_SCHED_WAKE, waker, waker_pid, irq ? VPROF_SCHED_WAKER_IRQ : 0,
               0);
  }
  // version 3: tid, sleeping to receive, woken by a waker receiving in `waker_syscall` (a room
  // wake-up: VPROF_SCHED_WAKE_ROOM)
  SchedBuilder &room_wake(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid,
                          std::uint32_t waker, std::uint32_t waker_pid,
                          std::int64_t waker_syscall) {
    return add(ns, tid, pid, VPROF_SCHED_WAKE, waker, waker_pid, VPROF_SCHED_WAKE_ROOM,
               vprof_sched_sleep_arg(waker_syscall, 0));
  }
  // version 3: the room wake-up's waker sent (VPROF_SCHED_WAKE_DATA) in `waker_syscall`
  SchedBuilder &data_wake(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid,
                          std::uint32_t waker, std::uint32_t waker_pid,
                          std::int64_t waker_syscall) {
    return add(ns, tid, pid, VPROF_SCHED_WAKE, waker, waker_pid, VPROF_SCHED_WAKE_DATA,
               vprof_sched_sleep_arg(waker_syscall, 0));
  }
  SchedBuilder &run(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid) {
    return add(ns, tid, pid, VPROF_SCHED_RUN, 0, 0, 0, 0);
  }
  SchedBuilder &exit(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid) {
    return add(ns, tid, pid, VPROF_SCHED_EXIT, 0, 0, 0, 0);
  }
  SchedBuilder &lost(std::uint64_t n) {
    lost_ = n;
    return *this;
  }
  SchedBuilder &raw(const vprof_sched_record &r) {
    recs_.push_back(r);
    return *this;
  }

  // Writes <dir>/sched.vpk as the recorder leaves it: closed (final counts) or not (killed:
  // records = 0, flags = 0). `keep_bytes` > 0 cuts the file to that many bytes afterwards.
  std::filesystem::path write(const std::filesystem::path &dir, bool closed = true,
                              std::uint64_t keep_bytes = 0) const {
    vprof_sched_header h;
    std::memset(&h, 0, sizeof h);
    std::memcpy(h.magic, VPROF_SCHED_MAGIC, VPROF_SCHED_MAGIC_SIZE);
    h.version = version_;
    h.header_size = VPROF_SCHED_HEADER_SIZE;
    h.record_size = VPROF_SCHED_RECORD_SIZE;
    h.root_pid = 1;
    h.flags = closed ? VPROF_SCHED_CLOSED : 0;
    h.records = closed ? recs_.size() : 0;
    h.lost = lost_;
    return write_raw(dir, h, keep_bytes);
  }
  std::filesystem::path write_raw(const std::filesystem::path &dir, const vprof_sched_header &h,
                                  std::uint64_t keep_bytes = 0) const {
    auto path = dir / VPROF_SCHED_FILE_NAME;
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char *>(&h), sizeof h);
      f.write(reinterpret_cast<const char *>(recs_.data()),
              static_cast<std::streamsize>(recs_.size() * sizeof(vprof_sched_record)));
      if (!f)
        throw std::runtime_error("cannot write " + path.string());
    }
    if (keep_bytes)
      std::filesystem::resize_file(path, keep_bytes);
    return path;
  }

private:
  SchedBuilder &add(std::uint64_t ns, std::uint32_t tid, std::uint32_t pid, std::uint8_t kind,
                    std::uint32_t other, std::uint32_t other_pid, std::uint8_t flags,
                    std::uint32_t arg) {
    vprof_sched_record r;
    std::memset(&r, 0, sizeof r);
    r.time_ns = ns;
    r.tid = tid;
    r.pid = pid;
    r.other = other;
    r.other_pid = other_pid;
    r.kind = kind;
    r.flags = flags;
    r.arg = arg;
    recs_.push_back(r);
    return *this;
  }
  std::vector<vprof_sched_record> recs_;
  std::uint64_t lost_ = 0;
  std::uint32_t version_ = VPROF_SCHED_VERSION;
};

} // namespace vprof::testing
