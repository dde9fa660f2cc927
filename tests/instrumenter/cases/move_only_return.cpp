// vprof-test: roots=main
#include <cstdio>
#include <memory>
struct Pinned {
  int v;
  explicit Pinned(int x) : v(x) {}
  Pinned(const Pinned &) = delete;
  Pinned(Pinned &&) = delete;
};
static Pinned make_pinned(int x) { return Pinned(x); }
static std::unique_ptr<int> make_ptr(int x) { return std::make_unique<int>(x); }
int main() {
  Pinned p = make_pinned(4);
  std::unique_ptr<int> q = make_ptr(5);
  auto r = make_ptr(6);
  std::printf("%d %d %d\n", p.v, *q, *r);
  return 0;
}
