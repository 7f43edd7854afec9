// Finite-difference checks of the SQP comparison solver's rigid KKT rows (solver/sqp_solver.h,
// docs/contact.md "SQP model"). The stick constraints T̄ ẋ_k = T̄ Pv(θ) v and the normal
// constraints w_v g_k(q) are nonlinear in a body's rotation θ; the SQP Newton step uses
//   ∂r_c/∂q^i = (I − P) ∂r_body/∂q^i + w_v P + D e_θᵀ
// for the null-space rows r_c = (I − P)(r_body − f_slide) + B⁺ h̃ (sqp_detail::body_kkt_rows).
// At random states (|θ| ≈ 1, nonzero velocities, BDF1 and BDF2 history, points off their
// constraint so h̃ ≠ 0 and r_body ≠ Bᵀλ) this Jacobian, and the constraint functions' own
// derivatives (∂g/∂q = nᵀPv, ∂Pv/∂θ_j), are compared with central differences. Proxies:
// the cube's corners (points) and the thrown ball's sphere (contact point offset by −r n,
// so ∂x/∂θ and the material-velocity map differ).

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "addsim/integrators/bdf.h"
#include "addsim/io/scene.h"
#include "addsim/rigid/rigid_contact.h"
#include "addsim/solver/sqp_solver.h"
#include "../support/source_dir.h"

namespace addsim {
namespace {

using sqp_detail::BodyConstraint;
using Mat36 = Eigen::Matrix<double, 3, 6>;
using Mat6 = Eigen::Matrix<double, 6, 6>;
using Vec6 = Eigen::Matrix<double, 6, 1>;

// Central-difference step (m, rad): truncation O(ε²) and round-off O(1e-16/ε) relative
// errors both stay near 1e-10, well below the 1e-6 acceptance.
constexpr double kEps = 1e-6;
constexpr double kRelTol = 1e-6;

using test::scene_path;

// Largest entry-wise error relative to the largest entry of the reference (floor 1).
double rel_error(const MatX& a, const MatX& ref) {
  return (a - ref).cwiseAbs().maxCoeff() / std::max(1.0, ref.cwiseAbs().maxCoeff());
}

// One active point of the test: proxy point k against obstacle 0, sticking or sliding
// (with a fixed lagged friction force).
struct PointLabel {
  int k;
  bool stick;
};

// A single-rigid-body SQP scene at a random state of step `step` (BDF history random too).
class RigidState {
 public:
  RigidState(const std::string& file, const std::string& integrator, int step, unsigned seed)
      : scene_(load_scene_file(scene_path(file), {"contact.model=sqp", "integrator=" + integrator})), step_(step) {
    const Model& model = *scene_.model;
    for (const auto& t : model.terms())
      if (const auto* c = dynamic_cast<const RigidContactTerm*>(t.get())) term_ = c;
    EXPECT_NE(term_, nullptr) << file << " has no rigid contact term";
    EXPECT_EQ(term_->settings().model, ContactModel::kSqp);
    dof_ = term_->body().dof();
    p_ = model.params().defaults();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const int n = model.num_dofs();
    auto random_vec = [&](double scale) {
      VecX x(n);
      for (int i = 0; i < n; ++i) x[i] = scale * u(rng);
      return x;
    };
    // q^i: position within 0.5 m, rotation of angle 0.8…1.2 rad about a random axis.
    q_ = random_vec(0.5);
    Vec3 axis(u(rng), u(rng), u(rng));
    axis.normalize();
    q_.segment<3>(dof_ + 3) = (1.0 + 0.2 * u(rng)) * axis;
    // History q^{i-1}, q^{i-2}, … with velocities of order 1 m/s and rad/s, and v⁰.
    const double h = model.scheme().h;
    hist_q_.resize(step);
    for (int j = step - 1; j >= 0; --j) {
      const VecX& next = j == step - 1 ? q_ : hist_q_[j + 1];
      hist_q_[j] = next - h * random_vec(2.0);
    }
    v0_ = random_vec(2.0);
    const StateHistory hist(&hist_q_, &v0_);
    bdf_history_terms(model.scheme(), hist, step, v_hist_, a_hist_);
    wv_ = bdf_weights(model.scheme(), step, 0).wv;
    // Synthetic unconstrained body rows r_body = M q_body + c (the KKT rows take any r).
    for (int i = 0; i < 6; ++i) {
      c_[i] = 10.0 * u(rng);
      for (int j = 0; j < 6; ++j) M_(i, j) = 100.0 * u(rng);
    }
    slide_force_ = Vec3(u(rng), u(rng), u(rng)) * 5.0;
  }

  const RigidContactTerm& term() const { return *term_; }
  const VecX& q() const { return q_; }
  DofIndex dof() const { return dof_; }
  double wv() const { return wv_; }
  const Mat6& M() const { return M_; }

  // Rates at q (BDF of this step) into v, a.
  void rates(const VecX& q, VecX& v, VecX& a) const {
    bdf_rates(scene_.model->scheme(), step_, q, v_hist_, a_hist_, v, a);
  }
  // Gap, Pv and ∂Pv/∂θ of proxy point k against obstacle 0 at state q.
  double point(const VecX& q, int k, Mat36& Pv, std::array<Mat36, 3>& dPv) const {
    VecX v, a;
    rates(q, v, a);
    const TermContext ctx{q, v, a, p_, step_, scene_.model->scheme()};
    return term_->point_jacobian(ctx, k, 0, Pv, dPv);
  }
  // KKT rows r_c at q for the labelled points; rank < 0 is determined and returned.
  Vec6 kkt_rows(const VecX& q, const std::vector<PointLabel>& labels, int& rank, StickBody* sb) const {
    VecX v, a;
    rates(q, v, a);
    const Vec3 n = static_cast<const PlaneObstacle&>(*term_->obstacles()[0]).normal();
    std::vector<BodyConstraint> cs;
    for (const PointLabel& l : labels) {
      BodyConstraint c;
      c.g = point(q, l.k, c.Pv, c.dPv);
      c.n = n;
      c.stick = l.stick;
      if (!l.stick) c.slide_force = slide_force_;
      cs.push_back(c);
    }
    const Vec6 r_body = M_ * q.segment<6>(dof_) + c_;
    Vec6 rc;
    sqp_detail::body_kkt_rows(cs, r_body, v.segment<6>(dof_), wv_, rank, rc, nullptr, sb);
    return rc;
  }

 private:
  Scene scene_;
  int step_;
  const RigidContactTerm* term_ = nullptr;
  DofIndex dof_ = 0;
  VecX p_, q_, v0_, v_hist_, a_hist_;
  std::vector<VecX> hist_q_;
  double wv_ = 0.0;
  Mat6 M_;
  Vec6 c_;
  Vec3 slide_force_;
};

struct Case {
  const char* scene;
  const char* integrator;
  std::vector<PointLabel> labels;
  int rank;  ///< expected rank of B
};

std::string describe(const Case& c, unsigned seed) {
  std::string s = std::string(c.scene) + " " + c.integrator + " seed " + std::to_string(seed) + " points";
  // Appended piece by piece: " " + std::to_string(...) trips gcc 12's -Wrestrict false positive.
  for (const PointLabel& l : c.labels) {
    s += ' ';
    s += std::to_string(l.k);
    s += l.stick ? "(stick)" : "(slide)";
  }
  return s;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"rigid_cube_incline.json", "bdf1", {{0, true}}, 3},
      {"rigid_cube_incline.json", "bdf2", {{0, true}}, 3},
      {"rigid_cube_incline.json", "bdf2", {{0, true}, {5, false}}, 4},
      {"rigid_cube_incline.json", "bdf1", {{1, true}, {6, true}}, 5},
      // Three or more normal rows of one plane have rank 3 (redundant constraints).
      {"rigid_cube_incline.json", "bdf2", {{0, false}, {1, false}, {2, false}, {3, false}}, 3},
      {"rigid_cube_incline.json", "bdf2", {{0, true}, {3, true}, {5, true}}, 6},
      {"rigid_sphere_throw.json", "bdf1", {{0, true}}, 3},
      {"rigid_sphere_throw.json", "bdf2", {{0, true}}, 3},
      {"rigid_sphere_throw.json", "bdf2", {{0, false}}, 1},
  };
  return all;
}

constexpr int kStep = 4;  // past the BDF2 start-up: the full two-step history is read
constexpr unsigned kSeeds[] = {7u, 1234u, 99991u};

TEST(SqpKkt, ConstraintFunctionsMatchFiniteDifferences) {
  // g_k(q) with ∂g/∂q_body = nᵀPv, and Pv(θ) with ∂Pv/∂θ_j = dPv[j], for every proxy point.
  for (const char* file : {"rigid_cube_incline.json", "rigid_sphere_throw.json"})
    for (unsigned seed : kSeeds) {
      const RigidState st(file, "bdf2", kStep, seed);
      const Vec3 n = static_cast<const PlaneObstacle&>(*st.term().obstacles()[0]).normal();
      for (int k = 0; k < st.term().num_points(); ++k) {
        Mat36 Pv;
        std::array<Mat36, 3> dPv;
        st.point(st.q(), k, Pv, dPv);
        Eigen::Matrix<double, 1, 6> dg_fd;
        std::array<Mat36, 3> dPv_fd;
        for (int j = 0; j < 6; ++j) {
          VecX qp = st.q(), qm = st.q();
          qp[st.dof() + j] += kEps;
          qm[st.dof() + j] -= kEps;
          Mat36 Pp, Pm;
          std::array<Mat36, 3> unused;
          const double gp = st.point(qp, k, Pp, unused), gm = st.point(qm, k, Pm, unused);
          dg_fd[j] = (gp - gm) / (2.0 * kEps);
          if (j >= 3) dPv_fd[j - 3] = (Pp - Pm) / (2.0 * kEps);
          if (j < 3) {
            EXPECT_LT((Pp - Pm).cwiseAbs().maxCoeff(), 1e-12) << "Pv depends on the position";
          }
        }
        const Eigen::Matrix<double, 1, 6> dg = n.transpose() * Pv;
        EXPECT_LT(rel_error(dg, dg_fd), kRelTol) << file << " seed " << seed << " point " << k;
        for (int j = 0; j < 3; ++j) {
          ASSERT_GT(dPv[j].cwiseAbs().maxCoeff(), 1e-3) << "dPv vanishes: the check would be vacuous";
          EXPECT_LT(rel_error(dPv[j], dPv_fd[j]), kRelTol)
              << file << " seed " << seed << " point " << k << " theta_" << j << "\nanalytic\n"
              << dPv[j] << "\nfd\n"
              << dPv_fd[j];
        }
      }
    }
}

TEST(SqpKkt, BodyRowsJacobianMatchesFiniteDifferences) {
  for (const Case& c : cases())
    for (unsigned seed : kSeeds) {
      const RigidState st(c.scene, c.integrator, kStep, seed);
      const std::string what = describe(c, seed);
      int rank = -1;
      StickBody sb;
      const Vec6 rc = st.kkt_rows(st.q(), c.labels, rank, &sb);
      ASSERT_EQ(rank, c.rank) << what;
      ASSERT_TRUE(rc.allFinite()) << what;
      // The constraints are not satisfied at a random state: h̃ ≠ 0 and r_body ≠ Bᵀλ, so
      // every term of D (also those vanishing at a KKT point) is exercised.
      const Mat6 Q = Mat6::Identity() - sb.P;
      Mat6 J = Q * st.M() + st.wv() * sb.P;
      J.rightCols<3>() += sb.D;
      Mat6 J_fd;
      for (int j = 0; j < 6; ++j) {
        VecX qp = st.q(), qm = st.q();
        qp[st.dof() + j] += kEps;
        qm[st.dof() + j] -= kEps;
        int rank_p = rank, rank_m = rank;  // constant rank, as between label changes
        J_fd.col(j) = (st.kkt_rows(qp, c.labels, rank_p, nullptr) - st.kkt_rows(qm, c.labels, rank_m, nullptr)) /
                      (2.0 * kEps);
      }
      EXPECT_LT(rel_error(J, J_fd), kRelTol) << what << "\nanalytic\n" << J << "\nfd\n" << J_fd;
      // The curvature term D on its own scale (it can be small next to w_v P and ∂r/∂q):
      // D_fd is what the differences leave of the θ columns beyond (I − P) M + w_v P.
      const Mat6 J_no_d = Q * st.M() + st.wv() * sb.P;
      const Eigen::Matrix<double, 6, 3> D_fd = J_fd.rightCols<3>() - J_no_d.rightCols<3>();
      ASSERT_GT(sb.D.cwiseAbs().maxCoeff(), 1e-2) << what << ": D vanishes, the check would be vacuous";
      EXPECT_LT(rel_error(sb.D, D_fd), kRelTol) << what << "\nD\n" << sb.D << "\nD_fd\n" << D_fd;
    }
}

}  // namespace
}  // namespace addsim
