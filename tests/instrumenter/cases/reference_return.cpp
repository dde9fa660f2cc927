// vprof-test: roots=main
#include <cstdio>
static int store[3];
static int &slot(int i) { return store[i]; }
static const int &cslot(int i) { return store[i]; }
int main() {
  slot(0) = 5;
  int &r = slot(1);
  r = 7;
  int *p = &slot(2);
  *p = 9;
  const int &c = cslot(0);
  std::printf("%d %d %d %d\n", store[0], store[1], store[2], c);
  return 0;
}
