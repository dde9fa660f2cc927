// minidb tables and the five TPC-C-like transactions (NewOrder, Payment, OrderStatus,
// Delivery, StockLevel), run under strict two-phase locking with a durable commit.
#include "minidb.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace minidb {

namespace {
constexpr double kRowCpuUs = 2.0; // processing per row access
constexpr int kRowsPerPage = 16;
constexpr int kOrderScan = 200; // OrderStatus looks this far back
constexpr int kStockLevelOrders = 20;
// Hot mix: this many hot items, spread evenly over the item range, and the share (percent)
// of NewOrder's lines that order one of them.
constexpr int kHotItems = 8;
constexpr int kHotLinePercent = 25;
std::int64_t item_price(int item) { return 100 + item % 1000; } // cents
} // namespace

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

namespace {
// Rounds of a xorshift step per microsecond of this CPU (calibrate_cpu_work).
std::atomic<double> g_rounds_per_us{0};

// n dependent xorshift steps: work the compiler can neither vectorize nor fold.
std::uint64_t work_rounds(std::uint64_t n, std::uint64_t x) {
  for (std::uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

double thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}
} // namespace

void calibrate_cpu_work() {
  // In this thread's CPU time, so that a busy machine does not make the unit shorter.
  std::uint64_t x = 0x9e3779b97f4a7c15ull, rounds = 0;
  const double t0 = thread_cpu_us();
  double t = t0;
  while (t - t0 < 20000) { // 20 ms of CPU
    x = work_rounds(1 << 16, x);
    rounds += 1 << 16;
    t = thread_cpu_us();
  }
  __asm__ __volatile__("" : : "r"(x));
  g_rounds_per_us.store(double(rounds) / (t - t0), std::memory_order_relaxed);
}

void cpu_work_us(double us) {
  // A fixed amount of computation (not a spin on the clock): like real row processing it
  // takes longer when the thread is preempted or slowed, and it has no call in its loop
  // for a profiler to probe.
  double rate = g_rounds_per_us.load(std::memory_order_relaxed);
  if (rate == 0) {
    calibrate_cpu_work();
    rate = g_rounds_per_us.load(std::memory_order_relaxed);
  }
  std::uint64_t x = work_rounds(static_cast<std::uint64_t>(us * rate), 0x2545f4914f6cdd1dull);
  __asm__ __volatile__("" : : "r"(x));
}

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int Rng::skewed(int lo, int hi) {
  // Like TPC-C's NURand: OR of two uniforms makes some values far more frequent.
  int span = hi - lo + 1;
  int a = uniform(0, span / 4), b = uniform(0, span - 1);
  return lo + ((a | b) % span);
}

const char *txn_type_name(TxnType t) {
  switch (t) {
  case TxnType::NewOrder:
    return "NewOrder";
  case TxnType::Payment:
    return "Payment";
  case TxnType::OrderStatus:
    return "OrderStatus";
  case TxnType::Delivery:
    return "Delivery";
  case TxnType::StockLevel:
    return "StockLevel";
  }
  return "?";
}

Database::Database(int warehouses, const Scale &scale, LockManager &locks, BufferPool &pool,
                   Wal &wal, Mix mix)
    : warehouses_(warehouses), scale_(scale), mix_(mix), locks_(locks), pool_(pool), wal_(wal),
      warehouse_ytd_(std::size_t(warehouses), 0),
      districts_(std::size_t(warehouses * scale.districts)),
      customers_(std::size_t(warehouses * scale.districts * scale.customers)),
      stock_(std::size_t(warehouses * scale.items)) {
  Rng rng(1); // the initial contents do not depend on --seed
  for (Customer &c : customers_) {
    c.balance = 100000 + rng.uniform(0, 100000);
    initial_balance_ += c.balance;
  }
  for (Stock &s : stock_)
    s.quantity = rng.uniform(10, 100);
}

void Database::generate(Rng &rng, Txn &txn) const {
  int r = rng.uniform(1, 100);
  txn.type = r <= 45   ? TxnType::NewOrder
             : r <= 88 ? TxnType::Payment
             : r <= 92 ? TxnType::OrderStatus
             : r <= 96 ? TxnType::Delivery
                       : TxnType::StockLevel;
  if (mix_ == Mix::PaymentOnly)
    txn.type = TxnType::Payment;
  txn.w = rng.uniform(0, warehouses_ - 1);
  txn.d = rng.uniform(0, scale_.districts - 1);
  txn.c = rng.skewed(0, scale_.customers - 1);
  txn.items.clear();
  if (txn.type == TxnType::NewOrder) {
    int n = rng.uniform(5, 15);
    for (int i = 0; i < n; ++i)
      txn.items.emplace_back(draw_item(rng), rng.uniform(1, 10));
    std::sort(txn.items.begin(), txn.items.end());
    txn.items.erase(std::unique(txn.items.begin(), txn.items.end(),
                                [](auto &a, auto &b) { return a.first == b.first; }),
                    txn.items.end());
  }
  txn.amount = rng.uniform(100, 500000);
  txn.threshold = rng.uniform(10, 20);
  // TPC-C's Payment finds its customer by last name 60 % of the time: a look at the
  // customers sharing that name (2-5 rows here) before the one it pays.
  txn.lookups = mix_ == Mix::Hot && rng.uniform(1, 100) <= 60 ? rng.uniform(2, 5) : 1;
}

int Database::draw_item(Rng &rng) const {
  if (mix_ != Mix::Hot)
    return rng.skewed(0, scale_.items - 1);
  if (rng.uniform(1, 100) > kHotLinePercent)
    return rng.uniform(0, scale_.items - 1);
  // The hot items sit in the middle of the item order, so a NewOrder (which locks its
  // stock rows in item order) reaches one after a varying number of other stock rows.
  int k = rng.uniform(0, kHotItems - 1);
  return (2 * k + 1) * scale_.items / (2 * kHotItems);
}

std::uint64_t Database::page_of(Table table, std::uint64_t key) const {
  std::uint64_t per_page = table == kWarehouse  ? 1
                           : table == kDistrict ? scale_.districts
                                                : kRowsPerPage;
  return (std::uint64_t(table) << 40) | (key / per_page);
}

void Database::access(Txn &txn, Table table, std::uint64_t key, LockMode mode) {
  locks_.acquire(txn, row_id(table, key), mode);
  pool_.fix(page_of(table, key));
  cpu_work_us(kRowCpuUs);
}

void Database::consistent_read(Table table, std::uint64_t key) {
  pool_.fix(page_of(table, key));
  cpu_work_us(kRowCpuUs);
}

void Database::commit(Txn &, const std::string &record) { wal_.commit(wal_.append(record)); }

void Database::new_order(Txn &txn) {
  int di = txn.w * scale_.districts + txn.d;
  pool_.fix(page_of(kWarehouse, std::uint64_t(txn.w))); // w_tax: a read without a lock
  int ci = di * scale_.customers + txn.c;
  if (mix_ == Mix::Hot) { // the customer and the items' catalogue rows, read without locks
    consistent_read(kCustomer, std::uint64_t(ci));
    for (auto [item, qty] : txn.items)
      consistent_read(kItem, std::uint64_t(item));
  }
  access(txn, kDistrict, std::uint64_t(di), LockMode::Exclusive);
  if (mix_ != Mix::Hot)
    access(txn, kCustomer, std::uint64_t(ci), LockMode::Shared);
  District &dist = districts_[std::size_t(di)];
  Order order;
  order.c = ci;
  int o_id = dist.next_o_id++;
  for (auto [item, qty] : txn.items) {
    int si = txn.w * scale_.items + item;
    access(txn, kStock, std::uint64_t(si), LockMode::Exclusive);
    Stock &s = stock_[std::size_t(si)];
    s.quantity = s.quantity >= qty + 10 ? s.quantity - qty : s.quantity - qty + 91;
    s.ytd += qty;
    order.amount += qty * item_price(item);
    order.total_qty += qty;
    order.lines.emplace_back(item, qty);
  }
  pool_.fix(page_of(kOrders, std::uint64_t(di) * 100000 + std::uint64_t(o_id)));
  dist.orders.push_back(std::move(order));
  char rec[96];
  std::snprintf(rec, sizeof rec, "NO w=%d d=%d o=%d c=%d n=%zu\n", txn.w, txn.d, o_id, txn.c,
                txn.items.size());
  commit(txn, rec);
}

void Database::payment(Txn &txn) {
  int di = txn.w * scale_.districts + txn.d;
  int ci = di * scale_.customers + txn.c;
  for (int k = 1; k < txn.lookups; ++k) // namesakes of the customer, read without locks
    consistent_read(kCustomer,
                    std::uint64_t(di * scale_.customers + (txn.c + 37 * k) % scale_.customers));
  if (txn.lookups > 1)
    consistent_read(kCustomer, std::uint64_t(ci));
  // Each row is read when it is accessed and written back at the end (as a real engine
  // updates rows it has read): without the locks, concurrent Payments lose updates.
  // Tpcc takes the hottest row (the warehouse) first, Hot takes it last, after the waits
  // for the district and the customer (its lock order: district < customer < warehouse).
  const bool hot = mix_ == Mix::Hot;
  if (hot) {
    access(txn, kDistrict, std::uint64_t(di), LockMode::Exclusive);
    access(txn, kCustomer, std::uint64_t(ci), LockMode::Exclusive);
  }
  access(txn, kWarehouse, std::uint64_t(txn.w), LockMode::Exclusive);
  std::int64_t w_ytd = warehouse_ytd_[std::size_t(txn.w)];
  if (!hot)
    access(txn, kDistrict, std::uint64_t(di), LockMode::Exclusive);
  std::int64_t d_ytd = districts_[std::size_t(di)].ytd;
  if (!hot)
    access(txn, kCustomer, std::uint64_t(ci), LockMode::Exclusive);
  warehouse_ytd_[std::size_t(txn.w)] = w_ytd + txn.amount;
  districts_[std::size_t(di)].ytd = d_ytd + txn.amount;
  customers_[std::size_t(ci)].balance -= txn.amount;
  customers_[std::size_t(ci)].payments++;
  char rec[96];
  std::snprintf(rec, sizeof rec, "PAY w=%d d=%d c=%d h=%lld\n", txn.w, txn.d, txn.c,
                static_cast<long long>(txn.amount));
  commit(txn, rec);
}

void Database::order_status(Txn &txn) {
  int di = txn.w * scale_.districts + txn.d;
  int ci = di * scale_.customers + txn.c;
  access(txn, kDistrict, std::uint64_t(di), LockMode::Shared);
  access(txn, kCustomer, std::uint64_t(ci), LockMode::Shared);
  const District &dist = districts_[std::size_t(di)];
  int lines = 0;
  int lo = std::max(0, int(dist.orders.size()) - kOrderScan);
  for (int i = int(dist.orders.size()) - 1; i >= lo; --i)
    if (dist.orders[std::size_t(i)].c == ci) {
      pool_.fix(page_of(kOrders, std::uint64_t(di) * 100000 + std::uint64_t(i + 1)));
      lines = int(dist.orders[std::size_t(i)].lines.size());
      break;
    }
  cpu_work_us(kRowCpuUs * (1 + lines));
}

void Database::delivery(Txn &txn) {
  int d0 = txn.w * scale_.districts;
  for (int d = 0; d < scale_.districts; ++d)
    access(txn, kDistrict, std::uint64_t(d0 + d), LockMode::Exclusive);
  std::vector<std::pair<int, Order *>> batch; // (customer, order) per district
  for (int d = 0; d < scale_.districts; ++d) {
    District &dist = districts_[std::size_t(d0 + d)];
    if (dist.next_delivery < int(dist.orders.size())) {
      Order &o = dist.orders[std::size_t(dist.next_delivery++)];
      std::uint64_t key = std::uint64_t(d0 + d) * 100000 + std::uint64_t(dist.next_delivery);
      pool_.fix(page_of(kOrders, key));
      batch.emplace_back(o.c, &o);
    }
  }
  std::sort(batch.begin(), batch.end(),
            [](auto &a, auto &b) { return a.first < b.first; }); // ascending lock order
  for (auto &[ci, order] : batch) {
    access(txn, kCustomer, std::uint64_t(ci), LockMode::Exclusive);
    customers_[std::size_t(ci)].balance += order->amount;
    order->delivered = true;
  }
  char rec[64];
  std::snprintf(rec, sizeof rec, "DLV w=%d n=%zu\n", txn.w, batch.size());
  commit(txn, rec);
}

void Database::stock_level(Txn &txn) {
  int di = txn.w * scale_.districts + txn.d;
  access(txn, kDistrict, std::uint64_t(di), LockMode::Shared);
  const District &dist = districts_[std::size_t(di)];
  std::vector<int> items;
  int lo = std::max(0, int(dist.orders.size()) - kStockLevelOrders);
  for (int i = lo; i < int(dist.orders.size()); ++i)
    for (auto [item, qty] : dist.orders[std::size_t(i)].lines)
      items.push_back(item);
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  int low = 0;
  for (int item : items) {
    int si = txn.w * scale_.items + item;
    access(txn, kStock, std::uint64_t(si), LockMode::Shared);
    low += stock_[std::size_t(si)].quantity < txn.threshold;
  }
  (void)low;
}

void Database::execute(Txn &txn) {
  switch (txn.type) {
  case TxnType::NewOrder:
    new_order(txn);
    break;
  case TxnType::Payment:
    payment(txn);
    break;
  case TxnType::OrderStatus:
    order_status(txn);
    break;
  case TxnType::Delivery:
    delivery(txn);
    break;
  case TxnType::StockLevel:
    stock_level(txn);
    break;
  }
  locks_.release_all(txn);
}

bool Database::consistent(std::string &why) const {
  char buf[160];
  std::int64_t w_total = 0, delivered = 0, stock_ytd = 0, ordered_qty = 0, balances = 0;
  for (int w = 0; w < warehouses_; ++w) {
    std::int64_t d_sum = 0;
    for (int d = 0; d < scale_.districts; ++d)
      d_sum += districts_[std::size_t(w * scale_.districts + d)].ytd;
    if (d_sum != warehouse_ytd_[std::size_t(w)]) {
      std::snprintf(buf, sizeof buf, "warehouse %d: w_ytd %lld != sum(d_ytd) %lld", w,
                    static_cast<long long>(warehouse_ytd_[std::size_t(w)]),
                    static_cast<long long>(d_sum));
      why = buf;
      return false;
    }
    w_total += d_sum;
  }
  for (std::size_t i = 0; i < districts_.size(); ++i) {
    const District &dist = districts_[i];
    if (dist.next_o_id - 1 != int(dist.orders.size())) {
      std::snprintf(buf, sizeof buf, "district %zu: next_o_id %d but %zu orders", i, dist.next_o_id,
                    dist.orders.size());
      why = buf;
      return false;
    }
    for (std::size_t k = 0; k < dist.orders.size(); ++k) {
      const Order &o = dist.orders[k];
      if (o.delivered != (int(k) < dist.next_delivery)) {
        std::snprintf(buf, sizeof buf, "district %zu: order %zu delivery flag wrong", i, k + 1);
        why = buf;
        return false;
      }
      if (o.delivered)
        delivered += o.amount;
      ordered_qty += o.total_qty;
    }
  }
  for (const Customer &c : customers_)
    balances += c.balance;
  for (const Stock &s : stock_)
    stock_ytd += s.ytd;
  if (balances + w_total - delivered != initial_balance_) {
    std::snprintf(buf, sizeof buf, "money: balances %lld + ytd %lld - delivered %lld != %lld",
                  static_cast<long long>(balances), static_cast<long long>(w_total),
                  static_cast<long long>(delivered), static_cast<long long>(initial_balance_));
    why = buf;
    return false;
  }
  if (stock_ytd != ordered_qty) {
    std::snprintf(buf, sizeof buf, "stock: sum(s_ytd) %lld != ordered quantity %lld",
                  static_cast<long long>(stock_ytd), static_cast<long long>(ordered_qty));
    why = buf;
    return false;
  }
  return true;
}

} // namespace minidb
