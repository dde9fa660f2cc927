// vprof-test: roots=main
#include <stdio.h>
enum { A = 1, B = 2 };
static int pick(int i) { return i % 3; }
static int val(int x) { return x * 10; }
int main(void) {
  int s = 0;
  for (int i = 0; i < 6; i++) {
    switch (pick(i)) {
    case A:
      s += val(1);
      break;
    case B:
      s += val(2);
      /* fall through */
    default:
      s += val(3);
    }
  }
  printf("%d\n", s);
  return 0;
}
