// vprof-test: roots=main
#include <stdio.h>
#include <string.h>
static int here(int line) { return line; }
#line 500 "grammar.y"
static const char *base(const char *f) { return strrchr(f, '/') ? strrchr(f, '/') + 1 : f; }
int main(void) {
  printf("%s:%d %d\n", base(__FILE__), __LINE__, here(__LINE__));
  return 0;
}
