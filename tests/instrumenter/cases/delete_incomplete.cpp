// vprof-test: roots=main flags=-Wno-delete-incomplete
// `delete` of a class incomplete where it is deleted (defined later, trivially destructible):
// no destructor to name there; and of a class template's specialization through a template.
#include <cstdio>
struct later;
static void drop(later *p) { delete p; }
struct later {
  int v;
};
template <class T> struct box {
  T v;
};
template <class T> static int drop_box(box<T> *b) {
  int v = b->v;
  delete b;
  return v;
}
int main() {
  drop(new later{3});
  int v = drop_box(new box<int>{4});
  std::printf("%d\n", v);
  return 0;
}
