// Accuracy program "templates": the planted cause is a member of a class template,
// acc::Batch<Item>::process, reached through a function template acc::run_pipeline<Batch>.
// process busy-waits U(0, 400) u per interval (Var 13333 u^2); acc::Codec<T>::encode is
// constant; acc::flush_sink is U(0, 300) u (Var 7500 u^2). Var(L) = 20833 u^2 and the
// planted share is 13333/20833 = 0.64. The instrumenter sees the template pattern, so the
// expected name is the pattern's qualified name "acc::Batch::process".
#include "acc_common.h"

#include <vprof/vprof.hpp>

#include <vector>

namespace acc {

static std::vector<double> g_work_u, g_noise_u, g_cause_ns, g_lat_ns;

struct Order {
  int id;
  double weight;
};

template <typename T> struct Codec {
  static double encode(const T &item) {
    ACC_SPIN_UNITS(6);
    return item.weight * 2;
  }
};

template <typename Item> class Batch {
public:
  explicit Batch(int id) : item_{id, 1.0} {}
  double process(int i) {
    ACC_SPIN_UNITS(g_work_u[i]);
    return item_.weight;
  }
  const Item &item() const { return item_; }

private:
  Item item_;
};

template <typename B> double run_pipeline(B &batch, int i) {
  double v = Codec<Order>::encode(batch.item());
  uint64_t t = ACC_NOW_NS();
  v += batch.process(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  return v;
}

void flush_sink(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

// The root: one interval per batch.
double handle_batch(int i) {
  uint64_t t0 = ACC_NOW_NS();
  double v;
  {
    VPROF_SCOPED_INTERVAL(iv, "batch");
    Batch<Order> batch(i);
    v = run_pipeline(batch, i);
    flush_sink(i);
  }
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
  return v;
}

} // namespace acc

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  acc::g_work_u.resize(n);
  acc::g_noise_u.resize(n);
  acc::g_cause_ns.resize(n);
  acc::g_lat_ns.resize(n);
  for (int i = 0; i < n; ++i) {
    acc::g_work_u[i] = acc_uniform(&rng, 0, 400);
    acc::g_noise_u[i] = acc_uniform(&rng, 0, 300);
  }
  double sink = 0;
  for (int i = 0; i < n; ++i)
    sink += acc::handle_batch(i);
  if (sink < 0)
    return 1;
  acc_report("templates", "acc::Batch::process", acc::g_lat_ns.data(), acc::g_cause_ns.data(),
             nullptr, n, 13333.333 / 20833.333);
  return 0;
}
