// vprof-test: roots=main
// Constructors and destructors of class templates: a dependent `new T` and `delete p` in the
// pattern, locals of dependent type, a dependent constructor call `T(x)` and dependent
// member calls through a template parameter.
#include <cstdio>
static int events;
static int note(int x) { return events += x; }
struct res {
  int id;
  res() : id(note(1)) {}
  explicit res(int x) : id(note(x)) {}
  ~res() { note(100); }
  int get() const { return id; }
};
template <class T> struct holder {
  T *p;
  holder() : p(new T) {}
  ~holder() { delete p; }
  int peek() const { return p->get(); }
};
template <class T> static int make_and_read(int x) {
  T local(x);
  T copy = T(x + 1);
  return local.get() + copy.get();
}
template <class C> static int sum_all(const C &c) {
  int s = 0;
  for (const auto &x : c)
    s += x.get();
  return s;
}
int main() {
  int r = 0;
  {
    holder<res> h;
    r += h.peek();
  }
  r += make_and_read<res>(5);
  res arr[2] = {res(7), res(8)};
  r += sum_all(arr);
  std::printf("%d %d\n", r, events);
  return 0;
}
