// vprof-test: roots=main
// Macros inside macros: an invocation inside another macro's body is not written in the
// file — refused when the outer macro adds code of its own (a `do { } while (0)`
// statement macro); timed at the outer invocation when the outer macro expands to just
// the inner one (`SYNC(x)` -> `FLUSH(x)` -> `flush_block(x)`). Nothing is inserted inside an
// invocation, so an outer macro that stringifies its argument keeps its text.
#include <stdio.h>
#define FLUSH(x) flush_block(x)
#define SYNC(x) FLUSH(x)
#define SYNC_LOGGED(x)                                                                          \
  do {                                                                                          \
    FLUSH(x);                                                                                   \
    puts("synced " #x);                                                                         \
  } while (0)
#define LOG_CALL(e) log_value(#e, e)
static int g_blocks;
static int flush_block(int n) {
  g_blocks += n;
  return g_blocks;
}
static int log_value(const char *what, int v) {
  printf("%s = %d\n", what, v);
  return v;
}
int main(void) {
  SYNC(1);
  SYNC_LOGGED(2);
  int v = LOG_CALL(flush_block(3));
  printf("%d %d\n", v, g_blocks);
  return 0;
}
