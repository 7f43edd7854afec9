// Linear solvers on a step Jacobian of a soft body in sliding frictional contact
// (non-symmetric: friction), ≈ 8.2k DOF. Per refactorisation with the symbolic analysis
// done once: UMFPACK, Eigen SparseLU, KLU; CHOLMOD (supernodal) on the symmetric part;
// BiCGSTAB preconditioned by that Cholesky factor (iterations to 1e-12 relative residual).
// UMFPACK (our symmetric strategy, one solve, and its automatic strategy without values)
// and KLU also on the tori-drop Jacobian (argument 1; needs gmsh) and on the soft-feet
// quadruped's (argument 2: 402 DOF, rigid links + four FEM feet in contact; needs gmsh), where
// the dense LU, KLU's refactorisation on a kept pivot order and the block LU over the
// model's bodies ("schur") are timed too.
// Results go to docs/solver.md.

#include <benchmark/benchmark.h>

#include <random>

#include <Eigen/IterativeLinearSolvers>
#include <cholmod.h>
#include <klu.h>
#include <umfpack.h>

#include "addsim/fem/fem_builder.h"
#include "addsim/mesh/mesh_generators.h"
#include "addsim/io/scene.h"
#include "addsim/mesh/gmsh_generators.h"
#include "addsim/solver/block_schur_lu.h"
#include "addsim/solver/simulator.h"

namespace {

using namespace addsim;

struct Problem {
  std::unique_ptr<Model> model;
  SparseMat J;      // step Jacobian
  VecX values;      // its value array on the model's pattern
  VecX rhs;
};

// The step Jacobian at the last step of `m`'s run, and a random right-hand side.
void take_jacobian(Problem& p) {
  const Model& m = *p.model;
  Simulator sim(m);
  const VecX params = m.params().defaults();
  const Trajectory t = sim.run(params);
  if (!t.completed()) throw std::runtime_error(t.failure);
  const int i = m.scheme().steps;
  const VecX v = t.velocity(m.scheme(), i), a = t.acceleration(m.scheme(), i);
  const TermContext ctx{t.q[i], v, a, params, i, m.scheme()};
  Assembly out(&m.pattern(), &m.stencils());
  out.reset(EvalMode::kResidualAndStepJacobian, bdf_weights(m.scheme(), i, 0));
  sim.evaluate(ctx, out);
  p.values = out.jac;
  p.J = m.pattern().make_matrix(p.values);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  p.rhs.resize(m.num_dofs());
  for (Eigen::Index k = 0; k < p.rhs.size(); ++k) p.rhs[k] = u(rng);
}

// 0: a 0.3 m soft cube of 13³ cells (6 tets each) thrown sideways onto a frictional floor;
// the Jacobian is taken after 40 steps, while it slides. 1: the tori drop
// (scenes/tori_drop.json, 2,184 DOF) after 100 steps, tumbling in contact.
const Problem& problem(int which = 0) {
  static Problem cube = [] {
    Problem p;
    p.model = std::make_unique<Model>();
    Model& m = *p.model;
    m.scheme_mut() = TimeScheme::make(Integrator::kBdf2, 0.005, 40);
    ContactSettings contact;
    contact.kn_param = m.params().add("contact.kn", "", ParamKind::kContact, VecX::Constant(1, 1e4), 1, 1, 0.0);
    contact.kd_param = m.params().add("contact.kd", "", ParamKind::kContact, VecX::Constant(1, 0.0), 1, 1, 0.0);
    const int fr = m.params().add("obstacles.0.friction", "", ParamKind::kContact, VecX::Constant(1, 0.4), 1, 1, 0.0);
    std::vector<std::shared_ptr<const Obstacle>> obstacles{
        std::make_shared<PlaneObstacle>("floor", fr, Vec3::Zero(), Vec3(0, 0, 1))};
    const TetMesh mesh = make_box_mesh(Vec3::Constant(0.3), Eigen::Vector3i(13, 13, 13));
    FemMaterial mat;
    mat.youngs_modulus = 5e4;
    mat.poisson_ratio = 0.3;
    mat.density = 150;
    mat.viscosity = 0.05;
    FemInit init;
    init.position = Vec3(0, 0, 0.16);
    init.velocity = Vec3(1.5, 0, -0.5);
    init.angular_velocity = Vec3(0, 2, 0);
    FemOptions opt;
    opt.gravity = Vec3(0, 0, -9.81);
    add_fem_body(m, "cube", mesh, mat, init, opt, obstacles, contact);
    m.finalize();
    take_jacobian(p);
    return p;
  }();
  if (which == 0) return cube;
  if (which == 3) {
    // Step 40 of the soft-ball throw (tasks/ball_to_target_lbfgsb_1mm.json's scene, tanh
    // contact): the 451-tet ball rolling on the floor after its bounce.
    static Problem ball = [] {
      Problem p;
      p.model = load_scene_file(std::string(ADDSIM_SOURCE_DIR) + "/scenes/soft_ball_throw.json",
                                {"steps=40", "contact.model=\"tanh\"", "contact.smoothing=0.005"})
                    .model;
      take_jacobian(p);
      return p;
    }();
    return ball;
  }
  if (which == 2) {
    // Step 30 of the soft-feet walk: all four feet on the floor, the trot under way.
    static Problem feet = [] {
      Problem p;
      p.model = load_scene_file(std::string(ADDSIM_SOURCE_DIR) + "/scenes/quadruped_soft_feet.json", {"steps=30"}).model;
      take_jacobian(p);
      return p;
    }();
    return feet;
  }
  static Problem tori = [] {
    Problem p;
    p.model = load_scene_file(std::string(ADDSIM_SOURCE_DIR) + "/scenes/tori_drop.json", {"steps=100"}).model;
    take_jacobian(p);
    return p;
  }();
  return tori;
}

// The problem of the benchmark's argument, labelled; null (benchmark skipped) for the tori
// without gmsh.
const Problem* get_problem(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  if (which >= 1 && !gmsh_available()) {
    state.SkipWithError("the tori-drop and soft-feet Jacobians need gmsh");
    return nullptr;
  }
  state.SetLabel(which == 0   ? "cube, 8,232 DOF"
                 : which == 1 ? "tori drop, 2,184 DOF"
                 : which == 2 ? "soft-feet quadruped, 402 DOF"
                              : "soft ball, 451 tets");
  return &problem(which);
}

double relative_residual(const SparseMat& A, const VecX& x, const VecX& b) { return (A * x - b).norm() / b.norm(); }

void BM_Umfpack(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kUmfpack, &p.model->pattern());
  for (auto _ : state) benchmark::DoNotOptimize(lu->factorize(p.values));
  VecX x;
  lu->solve(p.rhs, x);
  state.counters["dofs"] = p.J.rows();
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  state.counters["flops"] = lu->factor_flops();
  state.counters["lu_nnz"] = lu->solve_flops() / 2.0;
}
BENCHMARK(BM_Umfpack)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// One solve with our UMFPACK factor (symmetric strategy, no iterative refinement as a
// preconditioner uses it).
void BM_UmfpackSolve(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kUmfpack, &p.model->pattern());
  lu->factorize(p.values);
  VecX x;
  for (auto _ : state) lu->precondition(p.rhs, x, false);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
}
BENCHMARK(BM_UmfpackSolve)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// UMFPACK's automatic strategy with the symbolic analysis on the pattern alone (no values),
// as addsim used it before choosing the symmetric strategy: COLAMD on the column pattern.
void BM_UmfpackAutomaticStrategy(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  const SparsePattern& pat = p.model->pattern();
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  umfpack_di_defaults(control);
  void *symbolic = nullptr, *numeric = nullptr;
  umfpack_di_symbolic(pat.size(), pat.size(), pat.outer().data(), pat.inner().data(), nullptr, &symbolic, control,
                      info);
  for (auto _ : state) {
    if (numeric) umfpack_di_free_numeric(&numeric);
    umfpack_di_numeric(pat.outer().data(), pat.inner().data(), p.values.data(), symbolic, &numeric, control, info);
  }
  state.counters["lu_nnz"] = info[UMFPACK_LNZ] + info[UMFPACK_UNZ];
  state.counters["flops"] = info[UMFPACK_FLOPS];
  umfpack_di_free_numeric(&numeric);
  umfpack_di_free_symbolic(&symbolic);
}
BENCHMARK(BM_UmfpackAutomaticStrategy)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(3.0);

void BM_EigenSparseLU(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kEigenLu, &p.model->pattern());
  for (auto _ : state) benchmark::DoNotOptimize(lu->factorize(p.values));
  VecX x;
  lu->solve(p.rhs, x);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
}
BENCHMARK(BM_EigenSparseLU)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3.0);

void BM_Klu(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  const int n = static_cast<int>(p.J.rows());
  klu_common common;
  klu_defaults(&common);
  auto* Ap = const_cast<int*>(p.J.outerIndexPtr());
  auto* Ai = const_cast<int*>(p.J.innerIndexPtr());
  auto* Ax = const_cast<double*>(p.J.valuePtr());
  klu_symbolic* sym = klu_analyze(n, Ap, Ai, &common);
  klu_numeric* num = nullptr;
  for (auto _ : state) {
    if (num) klu_free_numeric(&num, &common);
    num = klu_factor(Ap, Ai, Ax, sym, &common);
  }
  VecX x = p.rhs;
  klu_solve(sym, num, n, 1, x.data(), &common);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  klu_free_numeric(&num, &common);
  klu_free_symbolic(&sym, &common);
}
BENCHMARK(BM_Klu)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// The dense LU (partial pivoting) that kAuto takes below 300 DOF.
void BM_DenseLu(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kDense, &p.model->pattern());
  for (auto _ : state) benchmark::DoNotOptimize(lu->factorize(p.values));
  VecX x;
  lu->solve(p.rhs, x);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
}
BENCHMARK(BM_DenseLu)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// KLU's refactorisation with the pivot order of an earlier factorisation of the same
// matrix (klu_refactor), and one solve with it.
void BM_KluRefactor(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  const int n = static_cast<int>(p.J.rows());
  klu_common common;
  klu_defaults(&common);
  auto* Ap = const_cast<int*>(p.J.outerIndexPtr());
  auto* Ai = const_cast<int*>(p.J.innerIndexPtr());
  auto* Ax = const_cast<double*>(p.J.valuePtr());
  klu_symbolic* sym = klu_analyze(n, Ap, Ai, &common);
  klu_numeric* num = klu_factor(Ap, Ai, Ax, sym, &common);
  for (auto _ : state) benchmark::DoNotOptimize(klu_refactor(Ap, Ai, Ax, sym, num, &common));
  klu_flops(sym, num, &common);
  VecX x = p.rhs;
  klu_solve(sym, num, n, 1, x.data(), &common);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  state.counters["flops"] = common.flops;
  state.counters["lu_nnz"] = num->lnz + num->unz + n;
  klu_free_numeric(&num, &common);
  klu_free_symbolic(&sym, &common);
}
BENCHMARK(BM_KluRefactor)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_KluSolve(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  const int n = static_cast<int>(p.J.rows());
  klu_common common;
  klu_defaults(&common);
  auto* Ap = const_cast<int*>(p.J.outerIndexPtr());
  auto* Ai = const_cast<int*>(p.J.innerIndexPtr());
  auto* Ax = const_cast<double*>(p.J.valuePtr());
  klu_symbolic* sym = klu_analyze(n, Ap, Ai, &common);
  klu_numeric* num = klu_factor(Ap, Ai, Ax, sym, &common);
  VecX x;
  for (auto _ : state) {
    x = p.rhs;
    klu_solve(sym, num, n, 1, x.data(), &common);
  }
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  klu_free_numeric(&num, &common);
  klu_free_symbolic(&sym, &common);
}
BENCHMARK(BM_KluSolve)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// The block LU over the model's bodies (solver/block_schur_lu.h, linear_solver = "schur"):
// one factorisation, and one substitution (precondition: no refinement, as KLU's solve above).
void BM_BlockSchur(benchmark::State& state) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kSchur, &p.model->pattern());
  for (auto _ : state) benchmark::DoNotOptimize(lu->factorize(p.values));
  VecX x;
  lu->solve(p.rhs, x);
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  state.counters["flops"] = lu->factor_flops();
  const BlockSchurLu schur(&p.model->pattern());
  int largest = 0, widest = 0;
  double stored = 0.0;
  for (int k = 0; k < schur.blocks(); ++k) {
    const double s = schur.dofs(k).size(), t = schur.front(k).size();
    largest = std::max(largest, static_cast<int>(s));
    widest = std::max(widest, static_cast<int>(t));
    stored += s * s + 2.0 * s * t;
  }
  state.counters["blocks"] = schur.blocks();
  state.counters["largest_block"] = largest;
  state.counters["widest_front"] = widest;
  state.counters["stored"] = stored;
}
BENCHMARK(BM_BlockSchur)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// One substitution with A, and with Aᵀ (the adjoint's solves).
void BM_BlockSchurSolve(benchmark::State& state, bool transpose) {
  const Problem* pp = get_problem(state);
  if (!pp) return;
  const Problem& p = *pp;
  auto lu = make_linear_solver(LinearSolverKind::kSchur, &p.model->pattern());
  lu->factorize(p.values);
  VecX x;
  for (auto _ : state) lu->precondition(p.rhs, x, transpose);
  state.counters["rel_residual"] = relative_residual(transpose ? SparseMat(p.J.transpose()) : p.J, x, p.rhs);
  state.counters["flops"] = lu->solve_flops();
}
BENCHMARK_CAPTURE(BM_BlockSchurSolve, plain, false)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_BlockSchurSolve, transposed, true)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// CHOLMOD on the symmetric part S = (J + Jᵀ)/2 (lower triangle), supernodal.
struct Cholmod {
  cholmod_common c;
  cholmod_sparse* S = nullptr;
  cholmod_factor* L = nullptr;
  SparseMat S_eigen;
  Cholmod(const SparseMat& J) {
    cholmod_start(&c);
    c.supernodal = CHOLMOD_SUPERNODAL;
    S_eigen = (0.5 * (J + SparseMat(J.transpose()))).triangularView<Eigen::Lower>();
    S_eigen.makeCompressed();
    S = cholmod_allocate_sparse(S_eigen.rows(), S_eigen.cols(), S_eigen.nonZeros(), 1, 1, -1, CHOLMOD_REAL, &c);
    std::copy_n(S_eigen.outerIndexPtr(), S_eigen.cols() + 1, static_cast<int*>(S->p));
    std::copy_n(S_eigen.innerIndexPtr(), S_eigen.nonZeros(), static_cast<int*>(S->i));
    std::copy_n(S_eigen.valuePtr(), S_eigen.nonZeros(), static_cast<double*>(S->x));
    L = cholmod_analyze(S, &c);
  }
  bool factorize() { return cholmod_factorize(S, L, &c) && c.status == CHOLMOD_OK; }
  void solve(const VecX& b, VecX& x) {
    cholmod_dense* B = cholmod_allocate_dense(b.size(), 1, b.size(), CHOLMOD_REAL, &c);
    std::copy_n(b.data(), b.size(), static_cast<double*>(B->x));
    cholmod_dense* X = cholmod_solve(CHOLMOD_A, L, B, &c);
    x = Eigen::Map<VecX>(static_cast<double*>(X->x), b.size());
    cholmod_free_dense(&B, &c);
    cholmod_free_dense(&X, &c);
  }
  ~Cholmod() {
    cholmod_free_factor(&L, &c);
    cholmod_free_sparse(&S, &c);
    cholmod_finish(&c);
  }
};

void BM_CholmodBicgstabSolver(benchmark::State& state) {
  const Problem& p = problem();
  auto solver = make_linear_solver(LinearSolverKind::kCholmodBicgstab, &p.model->pattern());
  VecX x;
  for (auto _ : state) {
    solver->factorize(p.values);
    solver->solve(p.rhs, x);
  }
  state.counters["rel_residual"] = relative_residual(p.J, x, p.rhs);
  state.SetLabel("factorize + one solve");
}
BENCHMARK(BM_CholmodBicgstabSolver)->Unit(benchmark::kMillisecond)->MinTime(3.0);

void BM_CholmodSymmetricPart(benchmark::State& state) {
  const Problem& p = problem();
  Cholmod ch(p.J);
  bool ok = true;
  for (auto _ : state) ok = ch.factorize();
  state.counters["positive_definite"] = ok;
}
BENCHMARK(BM_CholmodSymmetricPart)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// A preconditioner object for Eigen's BiCGSTAB applying the CHOLMOD factor.
class CholmodPreconditioner {
 public:
  CholmodPreconditioner() = default;
  template <class M>
  explicit CholmodPreconditioner(const M&) {}
  template <class M>
  CholmodPreconditioner& analyzePattern(const M&) { return *this; }
  template <class M>
  CholmodPreconditioner& factorize(const M&) { return *this; }
  template <class M>
  CholmodPreconditioner& compute(const M&) { return *this; }
  VecX solve(const VecX& b) const {
    VecX x;
    ch->solve(b, x);
    return x;
  }
  Eigen::ComputationInfo info() const { return Eigen::Success; }
  static Cholmod* ch;
};
Cholmod* CholmodPreconditioner::ch = nullptr;

void BM_BicgstabCholmodPreconditioned(benchmark::State& state) {
  const Problem& p = problem();
  Cholmod ch(p.J);
  CholmodPreconditioner::ch = &ch;
  Eigen::BiCGSTAB<SparseMat, CholmodPreconditioner> solver;
  solver.setTolerance(1e-12);
  double iterations = 0, residual = 0;
  for (auto _ : state) {
    ch.factorize();
    solver.compute(p.J);
    const VecX x = solver.solve(p.rhs);
    iterations = static_cast<double>(solver.iterations());
    residual = relative_residual(p.J, x, p.rhs);
  }
  state.counters["iterations"] = iterations;
  state.counters["rel_residual"] = residual;
}
BENCHMARK(BM_BicgstabCholmodPreconditioned)->Unit(benchmark::kMillisecond)->MinTime(3.0);

}  // namespace

BENCHMARK_MAIN();
