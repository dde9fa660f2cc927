// vprof-test: roots=main
#include <cstdio>
struct Node {
  int v;
  Node *next;
  Node(int x, Node *n) : v(x), next(n) {}
};
static Node *push(Node *head, int v) { return new Node(v, head); }
static int sum(const Node *n) { return n ? n->v + sum(n->next) : 0; }
static void drop(Node *n) {
  while (n) {
    Node *next = n->next;
    delete n;
    n = next;
  }
}
int main() {
  Node *h = nullptr;
  for (int i = 1; i <= 4; i++)
    h = push(h, i);
  std::printf("%d\n", sum(h));
  drop(h);
  return 0;
}
