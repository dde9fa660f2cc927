// vprof-test: roots=main
// Object-like macros: one naming the function (`do_sync(fd)`: the call's name comes from
// the macro, its parentheses from the file) and one expanding to a whole call
// (`CURRENT_DEPTH`) are timed over the text they span; one whose expansion is more than a
// call (`(*depth_slot())`) is refused.
#include <stdio.h>
static int g_depth = 4;
static int sync_block(int fd) { return fd + 1; }
static int *depth_slot(void) { return &g_depth; }
static int depth(void) { return g_depth; }
#define do_sync sync_block
#define CURRENT_DEPTH depth()
#define DEPTH_VAR (*depth_slot())
int main(void) {
  int r = do_sync(2);
  int d = CURRENT_DEPTH + 1;
  DEPTH_VAR = 6;
  printf("%d %d %d\n", r, d, g_depth);
  return 0;
}
