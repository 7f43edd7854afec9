// Contact-model study (paper Fig. CylinderDrop, Table 1): a soft puck dropped onto a 20°
// incline, simulated with the linear, tanh, hybrid and SQP contact models. Writes, per
// model, the centroid and mean tangential node speed per step, the residual history of
// steps 60 and 150 and the CPU time, as CSV files into the output directory.
//
// Usage: contact_study <out_dir> [steps] [target_tets]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/solver/simulator.h"

using namespace addsim;

namespace {

constexpr double kTheta = 20.0 * M_PI / 180.0;

// The model of scenes/cylinder_drop.json, built programmatically.
std::unique_ptr<Model> cylinder_drop(ContactModel cm, int steps, const TetMesh& mesh) {
  auto m = std::make_unique<Model>();
  m->scheme_mut() = TimeScheme::make(Integrator::kBdf1, 0.005, steps);
  auto& P = m->params();
  ContactSettings cs;
  cs.model = cm;
  cs.kn_param = P.add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 100.0), 1, 1, 0.0);
  cs.kd_param = P.add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 0.0), 1, 1, 0.0);
  const int pf = P.add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, 0.4), 1, 1, 0.0);
  const Vec3 n(std::sin(kTheta), 0.0, std::cos(kTheta));
  std::vector<std::shared_ptr<const Obstacle>> obstacles{
      std::make_shared<PlaneObstacle>("incline", pf, Vec3::Zero(), n)};
  FemMaterial mat;
  mat.youngs_modulus = 2100.0;
  mat.poisson_ratio = 0.045454545454545456;
  mat.density = 150.0;
  mat.viscosity = 0.0;
  FemInit init;
  init.position = Vec3(0.025651510749425, 0.0, 0.070476946558943);
  init.orientation = Vec3(0.0, kTheta, 0.0);
  FemOptions opt;
  opt.gravity = Vec3(0, 0, -9.81);
  opt.viscosity = ViscosityModel::kNone;
  add_fem_body(*m, "puck", mesh, mat, init, opt, obstacles, cs);
  m->finalize();
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: contact_study <out_dir> [steps] [target_tets]\n");
    return 2;
  }
  const std::string out = argv[1];
  const int steps = argc > 2 ? std::stoi(argv[2]) : 500;
  const int tets = argc > 3 ? std::stoi(argv[3]) : 879;
  const TetMesh mesh = make_cylinder_mesh(0.1, 0.05, tets);
  std::printf("mesh: %d tets, %d nodes\n", static_cast<int>(mesh.num_tets()), static_cast<int>(mesh.num_nodes()));
  const Vec3 n(std::sin(kTheta), 0.0, std::cos(kTheta));
  const Mat3 T = Mat3::Identity() - n * n.transpose();
  std::ofstream summary(out + "/summary.csv");
  summary << "model,cpu_s,wall_s,newton_iterations,completed,final_x,final_y,final_z,final_tangential_speed\n";
  for (ContactModel cm : {ContactModel::kLinear, ContactModel::kTanh, ContactModel::kHybrid, ContactModel::kSqp}) {
    auto model = cylinder_drop(cm, steps, mesh);
    Simulator sim(*model);
    const std::clock_t c0 = std::clock();
    const Trajectory t = sim.run(model->params().defaults());
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    const std::string name = to_string(cm);
    std::ofstream series(out + "/" + name + "_series.csv");
    series << "step,time,cx,cy,cz,mean_tangential_speed,iterations,sticking\n";
    const int nn = static_cast<int>(model->num_dofs() / 3);
    double last_speed = 0.0;
    Vec3 c = Vec3::Zero();
    int iterations = 0;
    for (size_t i = 1; i < t.q.size(); ++i) {
      const VecX v = t.velocity(model->scheme(), static_cast<int>(i));
      double speed = 0.0;
      c.setZero();
      for (int k = 0; k < nn; ++k) {
        speed += (T * v.segment<3>(3 * k)).norm();
        c += t.q[i].segment<3>(3 * k);
      }
      speed /= nn;
      c /= nn;
      last_speed = speed;
      iterations += t.reports[i - 1].iterations;
      series << i << "," << i * model->scheme().h << "," << c.x() << "," << c.y() << "," << c.z() << "," << speed
             << "," << t.reports[i - 1].iterations << "," << t.reports[i - 1].contact.sticking.size() << "\n";
    }
    for (int step : {60, 150}) {
      if (step > static_cast<int>(t.reports.size())) continue;
      std::ofstream conv(out + "/" + name + "_convergence_" + std::to_string(step) + ".csv");
      conv << "iteration,residual\n";
      const auto& h = t.reports[step - 1].residual_history;
      for (size_t k = 0; k < h.size(); ++k) conv << k << "," << h[k] << "\n";
    }
    summary << name << "," << cpu << "," << t.wall_seconds << "," << iterations << "," << t.completed() << ","
            << c.x() << "," << c.y() << "," << c.z() << "," << last_speed << "\n";
    summary.flush();
    std::printf("%-7s cpu %.2f s  wall %.2f s  iterations %d  completed %d  final centroid (%.5f, %.5f, %.5f)  "
                "final mean tangential speed %.3e m/s %s\n",
                name.c_str(), cpu, t.wall_seconds, iterations, t.completed(), c.x(), c.y(), c.z(), last_speed,
                t.failure.c_str());
  }
  return 0;
}
