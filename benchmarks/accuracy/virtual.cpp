// Accuracy program "virtual": the planted cause is one override of a virtual function.
// render_scene calls shape->render(i) on a Circle, a Sprite and a Square through
// acc::Shape*; only acc::Sprite::render is random, U(0, 400) u (Var 13333 u^2), the
// other overrides are constant; acc::compose_frame is U(0, 200) u (Var 3333 u^2).
// Var(L) = 16667 u^2, planted share 0.80. A static call graph sees a call to the pure
// virtual acc::Shape::render; the tool must expand to the overrides to name the cause.
#include "acc_common.h"

#include <vprof/vprof.hpp>

#include <memory>
#include <vector>

namespace acc {

static std::vector<double> g_work_u, g_noise_u, g_cause_ns, g_lat_ns;

class Shape {
public:
  virtual ~Shape() = default;
  virtual void render(int i) const = 0;
  virtual bool is_sprite() const { return false; }
};

class Circle : public Shape {
public:
  void render(int) const override { ACC_SPIN_UNITS(8); }
};

class Sprite : public Shape {
public:
  void render(int i) const override { ACC_SPIN_UNITS(g_work_u[i]); }
  bool is_sprite() const override { return true; }
};

class Square : public Shape {
public:
  void render(int) const override { ACC_SPIN_UNITS(5); }
};

void render_scene(const std::vector<std::unique_ptr<Shape>> &scene, int i) {
  for (const auto &shape : scene) {
    uint64_t t = ACC_NOW_NS();
    shape->render(i);
    if (shape->is_sprite())
      g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  }
}

void compose_frame(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

// The root: one interval per frame.
void draw_frame(const std::vector<std::unique_ptr<Shape>> &scene, int i) {
  uint64_t t0 = ACC_NOW_NS();
  {
    VPROF_SCOPED_INTERVAL(iv, "frame");
    render_scene(scene, i);
    compose_frame(i);
  }
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

} // namespace acc

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  acc::g_work_u.resize(n);
  acc::g_noise_u.resize(n);
  acc::g_cause_ns.resize(n);
  acc::g_lat_ns.resize(n);
  for (int i = 0; i < n; ++i) {
    acc::g_work_u[i] = acc_uniform(&rng, 0, 400);
    acc::g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  std::vector<std::unique_ptr<acc::Shape>> scene;
  scene.push_back(std::make_unique<acc::Circle>());
  scene.push_back(std::make_unique<acc::Sprite>());
  scene.push_back(std::make_unique<acc::Square>());
  for (int i = 0; i < n; ++i)
    acc::draw_frame(scene, i);
  acc_report("virtual", "acc::Sprite::render", acc::g_lat_ns.data(), acc::g_cause_ns.data(),
             nullptr, n, 13333.333 / 16666.667);
  return 0;
}
