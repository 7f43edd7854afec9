// Contact-model study driver (docs/validation/contact-models.md; paper Fig. CylinderDrop,
// Fig. ToriBall, Table 1): runs one scene with several contact models and writes, per
// model, a per-step series (centroid of the contact points, their mean tangential speed on
// the first obstacle, contact points per obstacle, sticking points, Newton iterations), the
// residual history ‖r‖ of chosen steps, and a summary line with CPU time and iterations.
//
// Usage: contact_study SCENE OUT_DIR MODELS STEPS [PATH=VALUE ...]
//   MODELS: comma-separated contact models (linear,tanh,hybrid,sqp)
//   STEPS:  comma-separated steps whose residual histories are written; "auto" picks the
//           first step with a point on obstacle 0 (+20) and the first with one on obstacle 1
//   PATH=VALUE: scene overrides as for `addsim simulate --set`
// Example: build/benchmarks/contact_study scenes/tori_drop.json out linear,tanh,hybrid auto

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "addsim/io/scene.h"
#include "addsim/solver/simulator.h"
#include "addsim/terms/contact_term.h"

using namespace addsim;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// Contact points and obstacles of the model (all PointContactTerms).
struct Contacts {
  std::vector<DofIndex> dofs;
  std::vector<const Obstacle*> obstacles;
};

Contacts contacts_of(const Model& m) {
  Contacts c;
  for (const auto& t : m.terms()) {
    const auto* term = dynamic_cast<const PointContactTerm*>(t.get());
    if (!term) continue;
    c.dofs.insert(c.dofs.end(), term->dofs().begin(), term->dofs().end());
    if (c.obstacles.empty())
      for (const auto& o : term->obstacles()) c.obstacles.push_back(o.get());
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: contact_study SCENE OUT_DIR MODELS STEPS [PATH=VALUE ...]\n");
    return 2;
  }
  const std::string scene_file = argv[1], out = argv[2];
  const std::vector<std::string> models = split(argv[3]);
  const std::string steps_arg = argv[4];
  std::vector<std::string> sets;
  for (int i = 5; i < argc; ++i) sets.push_back(argv[i]);
  std::filesystem::create_directories(out);
  std::ofstream summary(out + "/summary.csv");
  if (!summary) {
    std::fprintf(stderr, "contact_study: cannot write %s/summary.csv\n", out.c_str());
    return 2;
  }
  summary << "model,cpu_s,wall_s,newton_iterations,factorizations,krylov_iterations,completed,final_cx,final_cy,"
             "final_cz,final_tangential_speed\n";
  for (const std::string& name : models) {
    std::vector<std::string> s = sets;
    s.push_back("contact.model=\"" + name + "\"");
    const Scene scene = load_scene_file(scene_file, s);
    const Model& model = *scene.model;
    const Contacts c = contacts_of(model);
    if (c.dofs.empty() || c.obstacles.empty()) {
      std::fprintf(stderr, "contact_study: the scene has no contact points\n");
      return 2;
    }
    Simulator sim(model);
    const std::clock_t c0 = std::clock();
    const Trajectory t = sim.run(model.params().defaults());
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    Vec3 n0;
    Mat3 H;
    c.obstacles[0]->gap(Vec3::Zero(), n0, H);
    const Mat3 T = Mat3::Identity() - n0 * n0.transpose();
    std::ofstream series(out + "/" + name + "_series.csv");
    series << "step,time,cx,cy,cz,mean_tangential_speed,iterations,sticking";
    for (size_t o = 0; o < c.obstacles.size(); ++o) series << ",touching_" << o;
    series << "\n";
    const int np = static_cast<int>(c.dofs.size());
    std::vector<int> first_touch(c.obstacles.size(), -1);
    double speed = 0.0;
    Vec3 centroid = Vec3::Zero();
    int iterations = 0, factorizations = 0, krylov = 0;
    for (size_t i = 1; i < t.q.size(); ++i) {
      const VecX v = t.velocity(model.scheme(), static_cast<int>(i));
      const StepReport& r = t.reports[i - 1];
      speed = 0.0;
      centroid.setZero();
      std::vector<int> touching(c.obstacles.size(), 0);
      for (DofIndex d : c.dofs) {
        const Vec3 x = t.q[i].segment<3>(d);
        speed += (T * v.segment<3>(d)).norm();
        centroid += x;
        for (size_t o = 0; o < c.obstacles.size(); ++o) {
          Vec3 n;
          if (c.obstacles[o]->gap(x, n, H) < 0.0) ++touching[o];
        }
      }
      speed /= np;
      centroid /= np;
      iterations += r.iterations;
      factorizations += r.factorizations;
      krylov += r.krylov_iterations;
      series << i << "," << i * model.scheme().h << "," << centroid.x() << "," << centroid.y() << "," << centroid.z()
             << "," << speed << "," << r.iterations << "," << r.contact.sticking.size();
      for (size_t o = 0; o < c.obstacles.size(); ++o) {
        series << "," << touching[o];
        if (touching[o] > 0 && first_touch[o] < 0) first_touch[o] = static_cast<int>(i);
      }
      series << "\n";
    }
    std::vector<int> steps;
    if (steps_arg == "auto") {
      if (first_touch[0] > 0) steps.push_back(first_touch[0] + 20);
      if (first_touch.size() > 1 && first_touch[1] > 0) steps.push_back(first_touch[1]);
    } else {
      for (const std::string& k : split(steps_arg)) steps.push_back(std::stoi(k));
    }
    for (int step : steps) {
      if (step < 1 || step > static_cast<int>(t.reports.size())) continue;
      std::ofstream conv(out + "/" + name + "_convergence_" + std::to_string(step) + ".csv");
      conv << "evaluation,residual\n";
      const auto& h = t.reports[step - 1].residual_history;
      for (size_t k = 0; k < h.size(); ++k) conv << k << "," << h[k] << "\n";
    }
    summary << name << "," << cpu << "," << t.wall_seconds << "," << iterations << "," << factorizations << ","
            << krylov << "," << t.completed() << "," << centroid.x() << "," << centroid.y() << "," << centroid.z()
            << "," << speed << "\n";
    summary.flush();
    std::printf("%-7s cpu %.2f s  wall %.2f s  iterations %d  completed %d  final centroid (%.4f, %.4f, %.4f)  "
                "mean tangential speed %.3e m/s  first contact steps",
                name.c_str(), cpu, t.wall_seconds, iterations, t.completed(), centroid.x(), centroid.y(),
                centroid.z(), speed);
    for (int f : first_touch) std::printf(" %d", f);
    std::printf("  %s\n", t.failure.c_str());
  }
  return 0;
}
