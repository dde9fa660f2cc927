// vprof-test: roots=main depth=2
#include <stdio.h>
#include "header_inline.h"
int main(void) {
  printf("%d\n", hdr_add(2, 3));
  return 0;
}
