// minidb: a small multi-threaded transactional server (the default vprof demo target).
// Declarations shared by its parts: lock manager, buffer pool, write-ahead log, tables
// and TPC-C-like transactions. See docs/minidb.md for the design.
#ifndef MINIDB_MINIDB_HPP
#define MINIDB_MINIDB_HPP

#include <pthread.h>

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace minidb {

// Monotonic nanoseconds.
std::uint64_t now_ns();
// CPU work of `us` microseconds of this machine's CPU time (row processing, parsing): a
// fixed amount of computation, calibrated once by calibrate_cpu_work() (main calls it
// before the workers start; cpu_work_us calibrates on first use otherwise).
void cpu_work_us(double us);
void calibrate_cpu_work();

// Deterministic RNG (splitmix64).
class Rng {
public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform integer in [lo, hi].
  int uniform(int lo, int hi) { return lo + static_cast<int>(next() % std::uint64_t(hi - lo + 1)); }
  // TPC-C NURand-like skew: values near the low end are hotter.
  int skewed(int lo, int hi);

private:
  std::uint64_t state_;
};

// Scoped pthread mutex lock (pthread directly, so the profiler's runtime sees every
// acquire/release as a sync event).
class MutexLock {
public:
  explicit MutexLock(pthread_mutex_t &mu) : mu_(mu) { pthread_mutex_lock(&mu_); }
  ~MutexLock() { pthread_mutex_unlock(&mu_); }
  MutexLock(const MutexLock &) = delete;
  MutexLock &operator=(const MutexLock &) = delete;

private:
  pthread_mutex_t &mu_;
};

enum class TxnType { NewOrder, Payment, OrderStatus, Delivery, StockLevel };
constexpr int kTxnTypes = 5;
const char *txn_type_name(TxnType t);

enum class LockMode { Shared, Exclusive };
// None takes no row locks at all: a deliberately broken build for testing the consistency
// check (only with the Payment-only mix; other types would race on shared vectors).
enum class LockPolicy { Fcfs, Vats, None };
// Tpcc: every row a transaction touches is locked when it is read. Hot: the lock-scheduling
// workload (docs/minidb.md): InnoDB-like consistent reads take no locks, so a transaction
// locks only the rows it updates, after a varying amount of reading, and NewOrder's items
// include a few hot ones spread over the item range; the waiters of a hot lock then differ
// in age and in the locks they already hold. PaymentOnly: Payments of the Tpcc mix.
enum class Mix { Tpcc, Hot, PaymentOnly };

// Row identifiers: table code in the high bits, key below. The Tpcc mix acquires locks in
// ascending row id order (warehouse < district < customer < stock); the Hot mix in the
// order district < customer < warehouse, district < stock. One order each: no deadlocks.
enum Table : std::uint64_t {
  kWarehouse = 1,
  kDistrict = 2,
  kCustomer = 3,
  kStock = 4,
  kOrders = 5,
  kItem = 6 // read-only catalogue (the Hot mix reads it without locks)
};
inline std::uint64_t row_id(Table t, std::uint64_t key) { return (std::uint64_t(t) << 48) | key; }

struct LockRequest;

// One transaction in flight: its parameters, timing and locks.
struct Txn {
  std::uint64_t seq = 0;      // submission order
  std::uint64_t start_ns = 0; // submission time: latency origin and VATS age
  std::uint64_t end_ns = 0;
  std::uint64_t interval = 0; // vprof interval id
  TxnType type = TxnType::NewOrder;
  int w = 0, d = 0, c = 0;
  std::int64_t amount = 0;                // Payment: cents
  int lookups = 1;                        // Payment (Hot mix): customer rows read to find c
  std::vector<std::pair<int, int>> items; // NewOrder: (item, quantity)
  int threshold = 0;                      // StockLevel
  std::vector<LockRequest *> held;        // lock requests owned (granted or waiting)
  pthread_cond_t granted_cv;              // signalled when a waiting request is granted
  std::uint64_t lock_wait_ns = 0;         // time spent waiting for row locks
  Txn() { pthread_cond_init(&granted_cv, nullptr); }
  ~Txn() { pthread_cond_destroy(&granted_cv); }
  Txn(const Txn &) = delete;
  Txn &operator=(const Txn &) = delete;
};

struct LockRequest {
  Txn *txn;
  LockMode mode;
  bool granted;
  std::uint64_t row;
};

// Row locks with one FIFO queue of requests per row. Granting is FCFS (queue order,
// no overtaking) or VATS (the waiting request of the oldest transaction first,
// Huang et al., "A Top-Down Approach to Achieving Performance Predictability in
// Database Systems", SIGMOD'17). Callers take locks in one global order (see Table).
class LockManager {
public:
  explicit LockManager(LockPolicy policy);
  ~LockManager();
  // Blocks until `txn` holds `row` in `mode` (or stronger). Re-requests are no-ops.
  void acquire(Txn &txn, std::uint64_t row, LockMode mode);
  // Releases every lock of `txn` and grants the waiters that become compatible.
  void release_all(Txn &txn);
  LockPolicy policy() const { return policy_; }

private:
  struct Head {
    std::list<LockRequest *> queue; // arrival order
  };
  struct Partition {
    pthread_mutex_t mu;
    std::unordered_map<std::uint64_t, Head> heads;
  };
  static constexpr int kPartitions = 64;
  Partition &partition(std::uint64_t row) { return parts_[(row * 0x9e3779b97f4a7c15ull) >> 58]; }
  // Grants waiting requests of `head` per the policy; signals their transactions.
  void grant_waiters(Head &head);

  LockPolicy policy_;
  Partition parts_[kPartitions];
};

// Page cache in front of a data file: one global mutex, an LRU list, reads outside the
// mutex (a frame being read makes other readers of that page wait on a condvar).
// A miss costs a real pread of 4 KiB plus a simulated device latency (sleep).
class BufferPool {
public:
  // `path`: data file to create; `frames`: capacity; `io_us`: simulated read latency.
  BufferPool(const std::string &path, int frames, int io_us);
  ~BufferPool();
  // Makes `page` resident and most recently used; returns true on a hit.
  bool fix(std::uint64_t page);
  std::uint64_t misses() const { return misses_; }
  bool ok() const { return fd_ >= 0; }

private:
  struct Frame {
    std::uint64_t page = ~0ull;
    bool loading = false;
    std::list<Frame *>::iterator lru_pos;
  };
  void read_page(std::uint64_t page);

  pthread_mutex_t mu_;
  pthread_cond_t io_done_;
  std::vector<Frame> frames_;
  std::list<Frame *> lru_; // front = most recent
  std::unordered_map<std::uint64_t, Frame *> table_;
  int fd_ = -1;
  int io_us_;
  std::uint64_t file_pages_ = 256;
  std::uint64_t misses_ = 0;
};

// Write-ahead log with group commit: appends go to a shared buffer; the first committer
// that finds no flush running becomes the leader, writes the whole buffer and fsyncs
// (if enabled) outside the mutex, then wakes everyone whose record it covered.
class Wal {
public:
  Wal(const std::string &path, bool fsync_enabled);
  ~Wal();
  // Appends a record; returns its end LSN (byte offset).
  std::uint64_t append(const std::string &record);
  // Returns once the log is durable up to `lsn`.
  void commit(std::uint64_t lsn);
  std::uint64_t flushes() const { return flushes_; }
  bool ok() const { return fd_ >= 0; }

private:
  pthread_mutex_t mu_;
  pthread_cond_t flushed_cv_;
  std::string buffer_;
  std::uint64_t next_lsn_ = 0, flushed_lsn_ = 0;
  bool flushing_ = false;
  bool fsync_;
  int fd_ = -1;
  std::uint64_t flushes_ = 0;
};

// Scale of the database per warehouse.
struct Scale {
  int districts = 10;
  int customers = 300; // per district
  int items = 2000;    // stock rows per warehouse
};

struct Order {
  int c = 0;
  std::int64_t amount = 0;
  int total_qty = 0;
  bool delivered = false;
  std::vector<std::pair<int, int>> lines;
};

// The tables and the five transaction types. Data lives in memory; every row access
// fixes its page in the buffer pool and runs under a row lock.
class Database {
public:
  Database(int warehouses, const Scale &scale, LockManager &locks, BufferPool &pool, Wal &wal,
           Mix mix = Mix::Tpcc);
  // Fills `txn` with random parameters of a random type (TPC-C mix 45/43/4/4/4).
  void generate(Rng &rng, Txn &txn) const;
  // Runs `txn` to commit (strict 2PL: locks held until the log is durable).
  void execute(Txn &txn);
  // Checks the invariants; on failure writes what broke to `why` and returns false.
  bool consistent(std::string &why) const;
  const Scale &scale() const { return scale_; }

private:
  struct District {
    std::int64_t ytd = 0;
    int next_o_id = 1;
    int next_delivery = 0; // index into orders
    std::vector<Order> orders;
  };
  struct Customer {
    std::int64_t balance = 0;
    int payments = 0;
  };
  struct Stock {
    int quantity = 0;
    std::int64_t ytd = 0;
  };

  void access(Txn &txn, Table table, std::uint64_t key, LockMode mode);
  // A consistent read (the Hot mix): the row's page and its processing, no lock.
  void consistent_read(Table table, std::uint64_t key);
  int draw_item(Rng &rng) const;
  std::uint64_t page_of(Table table, std::uint64_t key) const;
  void new_order(Txn &txn);
  void payment(Txn &txn);
  void order_status(Txn &txn);
  void delivery(Txn &txn);
  void stock_level(Txn &txn);
  void commit(Txn &txn, const std::string &record);

  int warehouses_;
  Scale scale_;
  Mix mix_;
  LockManager &locks_;
  BufferPool &pool_;
  Wal &wal_;
  std::vector<std::int64_t> warehouse_ytd_;
  std::vector<District> districts_;
  std::vector<Customer> customers_;
  std::vector<Stock> stock_;
  std::int64_t initial_balance_ = 0;
};

} // namespace minidb

#endif // MINIDB_MINIDB_HPP
