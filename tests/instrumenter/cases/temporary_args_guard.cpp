// vprof-test: roots=main std=c++11
// A call with a temporary argument whose value is an object, a reference or a pointer (that
// may point into the temporary) is timed by a probe object living to the end of the
// full-expression, as the temporaries do, when only an assignment, a conversion or an
// initialization follows the call there (LevelDB: `status = log_->AddRecord(Contents(b))`).
// Inside a larger expression the probe would time what follows too: refused.
#include <cstdio>
#include <string>
struct Slice {
  const char *p;
  std::size_t n;
  Slice(const std::string &s) : p(s.data()), n(s.size()) {}
};
struct Status {
  int code;
};
struct Log {
  int total;
  Status Add(const Slice &s) {
    total += static_cast<int>(s.n);
    Status r = {total};
    return r;
  }
  const char *First(const Slice &s) { return s.p; }
};
static std::string contents(int i) { return std::string(static_cast<std::size_t>(i), 'x'); }
static int use(Status s) { return s.code; }
int main() {
  Log log = {0};
  Status status = {0};
  status = log.Add(Slice(contents(3)));
  Status t = log.Add(contents(2));
  const char *first = log.First(contents(1));
  char c = *log.First(contents(1));
  int u = use(log.Add(contents(4)));
  std::printf("%d %d %d %c %d\n", status.code, t.code, first != 0, c, u);
  return 0;
}
