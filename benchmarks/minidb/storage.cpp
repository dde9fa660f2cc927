// minidb storage: the buffer pool (global mutex + LRU over a data file) and the
// write-ahead log (group commit, optional fsync).
#include "minidb.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace minidb {

namespace {
constexpr std::size_t kPageSize = 4096;
} // namespace

BufferPool::BufferPool(const std::string &path, int frames, int io_us) : io_us_(io_us) {
  pthread_mutex_init(&mu_, nullptr);
  pthread_cond_init(&io_done_, nullptr);
  frames_.resize(static_cast<std::size_t>(frames < 1 ? 1 : frames));
  for (Frame &f : frames_) {
    lru_.push_back(&f);
    f.lru_pos = std::prev(lru_.end());
  }
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd_ < 0) {
    std::fprintf(stderr, "minidb: cannot create data file %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return;
  }
  char page[kPageSize];
  for (std::uint64_t i = 0; i < file_pages_; ++i) {
    std::memset(page, int('a' + i % 26), sizeof page);
    if (pwrite(fd_, page, sizeof page, off_t(i * kPageSize)) != ssize_t(sizeof page)) {
      std::fprintf(stderr, "minidb: cannot write data file %s\n", path.c_str());
      close(fd_);
      fd_ = -1;
      return;
    }
  }
}

BufferPool::~BufferPool() {
  if (fd_ >= 0)
    close(fd_);
  pthread_cond_destroy(&io_done_);
  pthread_mutex_destroy(&mu_);
}

void BufferPool::read_page(std::uint64_t page) {
  char buf[kPageSize];
  if (pread(fd_, buf, sizeof buf, off_t((page % file_pages_) * kPageSize)) < 0)
    std::fprintf(stderr, "minidb: pread failed: %s\n", std::strerror(errno));
  if (io_us_ > 0) { // the device latency the page cache hides from pread
    timespec ts{io_us_ / 1000000, long(io_us_ % 1000000) * 1000};
    nanosleep(&ts, nullptr);
  }
}

bool BufferPool::fix(std::uint64_t page) {
  pthread_mutex_lock(&mu_);
  for (;;) {
    auto it = table_.find(page);
    if (it != table_.end()) {
      Frame *f = it->second;
      if (f->loading) { // another thread is reading it: wait for that read
        pthread_cond_wait(&io_done_, &mu_);
        continue;
      }
      lru_.splice(lru_.begin(), lru_, f->lru_pos);
      pthread_mutex_unlock(&mu_);
      return true;
    }
    Frame *victim = nullptr;
    for (auto r = lru_.rbegin(); r != lru_.rend(); ++r)
      if (!(*r)->loading) {
        victim = *r;
        break;
      }
    if (!victim) { // every frame is being read: wait for one
      pthread_cond_wait(&io_done_, &mu_);
      continue;
    }
    if (victim->page != ~0ull)
      table_.erase(victim->page);
    victim->page = page;
    victim->loading = true;
    table_[page] = victim;
    lru_.splice(lru_.begin(), lru_, victim->lru_pos);
    ++misses_;
    pthread_mutex_unlock(&mu_);
    read_page(page);
    pthread_mutex_lock(&mu_);
    victim->loading = false;
    pthread_cond_broadcast(&io_done_);
    pthread_mutex_unlock(&mu_);
    return false;
  }
}

Wal::Wal(const std::string &path, bool fsync_enabled) : fsync_(fsync_enabled) {
  pthread_mutex_init(&mu_, nullptr);
  pthread_cond_init(&flushed_cv_, nullptr);
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd_ < 0)
    std::fprintf(stderr, "minidb: cannot create log %s: %s\n", path.c_str(), std::strerror(errno));
}

Wal::~Wal() {
  if (fd_ >= 0)
    close(fd_);
  pthread_cond_destroy(&flushed_cv_);
  pthread_mutex_destroy(&mu_);
}

std::uint64_t Wal::append(const std::string &record) {
  MutexLock guard(mu_);
  buffer_ += record;
  next_lsn_ += record.size();
  return next_lsn_;
}

void Wal::commit(std::uint64_t lsn) {
  pthread_mutex_lock(&mu_);
  while (flushed_lsn_ < lsn) {
    if (flushing_) { // a leader is writing: its flush or the next one covers us
      pthread_cond_wait(&flushed_cv_, &mu_);
      continue;
    }
    flushing_ = true; // become the group-commit leader
    std::string batch;
    batch.swap(buffer_);
    std::uint64_t target = next_lsn_;
    pthread_mutex_unlock(&mu_);
    std::size_t off = 0;
    while (off < batch.size()) {
      ssize_t n = write(fd_, batch.data() + off, batch.size() - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        std::fprintf(stderr, "minidb: log write failed: %s\n", std::strerror(errno));
        break;
      }
      off += std::size_t(n);
    }
    if (fsync_ && fsync(fd_) != 0)
      std::fprintf(stderr, "minidb: fsync failed: %s\n", std::strerror(errno));
    pthread_mutex_lock(&mu_);
    flushed_lsn_ = target;
    flushing_ = false;
    ++flushes_;
    pthread_cond_broadcast(&flushed_cv_);
  }
  pthread_mutex_unlock(&mu_);
}

} // namespace minidb
