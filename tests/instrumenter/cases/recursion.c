// vprof-test: roots=main
#include <stdio.h>
static int is_odd(int n);
static int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
static int is_odd(int n) { return n == 0 ? 0 : is_even(n - 1); }
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) {
  printf("%d %d %d\n", fib(10), is_even(7), is_odd(7));
  return 0;
}
