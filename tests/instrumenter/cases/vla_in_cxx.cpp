// vprof-test: roots=main flags=-Wno-vla,-Wno-vla-cxx-extension
#include <cstdio>
static int total(const int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += a[i];
  return s;
}
static int count() { return 4; }
int main() {
  int n = count();
  int a[n];
  for (int i = 0; i < n; i++)
    a[i] = i;
  std::printf("%d\n", total(a, n));
  return 0;
}
