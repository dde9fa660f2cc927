// vprof-test: roots=main std=c++20
#include <coroutine>
#include <cstdio>
struct Task {
  struct promise_type {
    int value = 0;
    Task get_return_object() { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_value(int v) { value = v; }
    void unhandled_exception() {}
  };
  std::coroutine_handle<promise_type> h;
  ~Task() { h.destroy(); }
};
static int work(int x) { return x * 3; }
static Task compute(int x) { co_return work(x) + 1; }
int main() {
  Task t = compute(4);
  std::printf("%d\n", t.h.promise().value);
  return 0;
}
