// vprof-test: roots=main
// `delete` of a dependent operand in a member of a class template (the scan once crashed
// here: the pattern has no destroyed type), with dependent member calls in the pattern.
#include <cstdio>
#include <list>
static int freed;
struct node {
  int v;
  ~node() { freed += v; }
};
template <typename Tcnt> struct owning : public Tcnt {
  typedef typename Tcnt::iterator iterator;
  ~owning() {
    for (iterator i = this->begin(); i != this->end(); ++i)
      delete *i;
  }
  int total() {
    int s = 0;
    for (iterator i = this->begin(); i != this->end(); ++i)
      s += (*i)->v;
    return s;
  }
};
static int use() {
  owning<std::list<node *>> h;
  h.push_back(new node{1});
  h.push_back(new node{2});
  return h.total() + h.front()->v;
}
int main() {
  int r = use();
  std::printf("%d %d\n", r, freed);
  return 0;
}
