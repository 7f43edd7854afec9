#include "addsim/terms/stick_constraints.h"

#include <cmath>

#include <Eigen/Geometry>

#include "addsim/core/error.h"

namespace addsim {

void tangent_basis(const Vec3& n, Vec3& t1, Vec3& t2) {
  // Start from the coordinate axis least aligned with n.
  Vec3 a = Vec3::UnitX();
  if (std::abs(n.x()) > std::abs(n.y()) && std::abs(n.x()) > std::abs(n.z()))
    a = Vec3::UnitY();
  t1 = (a - n * n.dot(a)).normalized();
  t2 = n.cross(t1);
}

StickRows::StickRows(const SparsePattern& pattern) : rows_(pattern.size()) {
  const std::vector<int>& outer = pattern.outer();
  const std::vector<int>& inner = pattern.inner();
  for (int c = 0; c < pattern.size(); ++c)
    for (int k = outer[c]; k < outer[c + 1]; ++k) rows_[inner[k]].push_back({c, k});
}

StickPoint make_stick_point(DofIndex dof, int obstacle, const Vec3& n, const Vec3& force, double limit, int point) {
  StickPoint s;
  s.dof = dof;
  s.obstacle = obstacle;
  s.n = n;
  tangent_basis(n, s.t1, s.t2);
  s.force = force;
  s.limit = limit;
  s.point = point;
  return s;
}

void StickRows::replace_point_rows(DofIndex dof, const Mat3& frame, const Vec3& coeff, const bool constrained[3],
                                   VecX& values) const {
  const std::vector<Entry>* r[3] = {&rows_[dof], &rows_[dof + 1], &rows_[dof + 2]};
  ADDSIM_CHECK(r[0]->size() == r[1]->size() && r[0]->size() == r[2]->size(), "contact constraint rows differ in pattern");
  for (size_t e = 0; e < r[0]->size(); ++e) {
    const int col = (*r[0])[e].col;
    ADDSIM_CHECK(col == (*r[1])[e].col && col == (*r[2])[e].col, "contact constraint rows differ in pattern");
    const Vec3 old(values[(*r[0])[e].index], values[(*r[1])[e].index], values[(*r[2])[e].index]);
    const int local = col - dof;
    const bool own = local >= 0 && local < 3;
    for (int j = 0; j < 3; ++j)
      values[(*r[j])[e].index] = constrained[j] ? (own ? coeff[j] * frame(j, local) : 0.0) : frame.row(j).dot(old);
  }
}

void StickRows::constrain_matrix(const std::vector<StickPoint>& sticks, double c, VecX& values) const {
  static const bool kStickRows[3] = {true, true, false};
  for (const StickPoint& s : sticks) {
    Mat3 frame;
    frame.row(0) = s.t1.transpose();
    frame.row(1) = s.t2.transpose();
    frame.row(2) = s.n.transpose();
    replace_point_rows(s.dof, frame, Vec3(c, c, 0.0), kStickRows, values);
  }
}

void StickRows::constrain_residual(const std::vector<StickPoint>& sticks, const VecX& v, VecX& r) {
  for (const StickPoint& s : sticks) {
    const Vec3 dx = v.segment<3>(s.dof);
    const double rn = s.n.dot(r.segment<3>(s.dof));
    r[s.dof] = s.t1.dot(dx);
    r[s.dof + 1] = s.t2.dot(dx);
    r[s.dof + 2] = rn;
  }
}

void StickRows::project(const std::vector<StickPoint>& sticks, VecX& v) {
  for (const StickPoint& s : sticks) {
    const double vn = s.n.dot(v.segment<3>(s.dof));
    v.segment<3>(s.dof) = Vec3(0.0, 0.0, vn);
  }
}

void StickRows::project_transpose(const std::vector<StickPoint>& sticks, VecX& lambda) {
  for (const StickPoint& s : sticks) {
    const double ln = lambda[s.dof + 2];
    lambda.segment<3>(s.dof) = s.n * ln;
  }
}

void StickRows::constrain_body_matrix(const std::vector<StickBody>& bodies, double c, bool geometric,
                                      VecX& values) const {
  using Vec6 = Eigen::Matrix<double, 6, 1>;
  for (const StickBody& b : bodies) {
    const Eigen::Matrix<double, 6, 6> Q = Eigen::Matrix<double, 6, 6>::Identity() - b.P;
    const std::vector<Entry>& r0 = rows_[b.dof];
    for (int j = 1; j < 6; ++j)
      ADDSIM_CHECK(rows_[b.dof + j].size() == r0.size(), "rigid stick constraint rows differ in pattern");
    for (size_t e = 0; e < r0.size(); ++e) {
      const int col = r0[e].col;
      Vec6 old;
      for (int j = 0; j < 6; ++j) {
        ADDSIM_CHECK(rows_[b.dof + j][e].col == col, "rigid stick constraint rows differ in pattern");
        old[j] = values[rows_[b.dof + j][e].index];
      }
      Vec6 row = Q * old;
      const int local = col - b.dof;
      if (local >= 0 && local < 6) {
        row += c * b.P.col(local);
        if (geometric && local >= 3) row += b.D.col(local - 3);
      }
      for (int j = 0; j < 6; ++j) values[rows_[b.dof + j][e].index] = row[j];
    }
  }
}

void StickRows::constrain_body_residual(const std::vector<StickBody>& bodies, const VecX& v, VecX& r) {
  for (const StickBody& b : bodies) {
    const Eigen::Matrix<double, 6, 1> rb = r.segment<6>(b.dof);
    r.segment<6>(b.dof) = b.P * v.segment<6>(b.dof) + rb - b.P * rb;
  }
}

void StickRows::project_bodies(const std::vector<StickBody>& bodies, VecX& v) {
  for (const StickBody& b : bodies) {
    const Eigen::Matrix<double, 6, 1> vb = v.segment<6>(b.dof);
    v.segment<6>(b.dof) = vb - b.P * vb;
  }
}

}  // namespace addsim
