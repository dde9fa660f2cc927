// vprof-test: roots=main,DB::Run,Status::kind std=c++11
// C++11 (LevelDB's standard) has no decltype(auto): the call-site probe's lambda spells its
// return type as decltype(<the call>), keeping references, values and void; a call with a
// lambda among its arguments is refused (a lambda may not appear in decltype before C++20).
#include <cstdio>
#include <vector>
struct Status {
  enum Code { kOk = 0, kBad = 1 }; // a nested type: spelled ::Status::Code, no tag keyword
  int code;
  Status() : code(0) {}
  explicit Status(int c) : code(c) {}
  Code kind() const { return code > 100 ? kBad : kOk; }
};
struct Batch {
  std::vector<int> ops;
};
class DB {
public:
  Status Write(int sync, Batch *b) { total_ += static_cast<int>(b->ops.size()) + sync; return Status(total_); }
  int &slot(int i) { return slots_[i]; }
  void Touch() { ++touched_; }
  int Run() {
    Batch batch;
    batch.ops.push_back(1);
    Status s;
    s = Write(1, &batch);
    slot(2) = s.code;
    switch (s.kind()) {
    case Status::kOk:
      break;
    case Status::kBad:
      return -1;
    }
    Touch();
    return slot(2) + Apply([](int x) { return x + 1; });
  }
  template <class F> int Apply(F f) { return f(touched_); }

private:
  int total_ = 0;
  int touched_ = 0;
  int slots_[4] = {0, 0, 0, 0};
};
int main() {
  DB db;
  DB *p = &db;
  int r = p->Run();
  std::printf("%d %d\n", r, db.slot(2));
  return 0;
}
