// vprof-test: roots=classify depth=1
#include <stdio.h>
static int is_zero(int x) { return x == 0; }
static int is_neg(int x) { return x < 0; }
static const char *classify(int x) {
  if (is_zero(x))
    return "zero";
  if (is_neg(x))
    return "negative";
  for (int i = 0; i < 3; i++)
    if (is_zero(x - i))
      return "small";
  return "large";
}
int main(void) {
  printf("%s %s %s %s\n", classify(0), classify(-1), classify(2), classify(9));
  return 0;
}
