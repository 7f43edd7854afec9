#pragma once
/// Kinematic points ("handles"): world points whose position at every step t_i is a
/// per-step control stored in p (entry "handles.<k>.positions", (n+1) × 3, m). Their
/// velocity follows the model's time scheme, v^i = (1/h) Σ_k cv[k] c^{i-k}, with the
/// history before t₀ extrapolated at constant velocity, c^{-m} = (1+m) c⁰ − m c¹, so that a
/// handle moving uniformly has exactly its true velocity from step 1 on.

#include <array>
#include <string>

#include "addsim/core/types.h"
#include "addsim/model/time_scheme.h"

namespace addsim {

struct Handle {
  std::string name;
  int positions_param = -1;  ///< offset of row 0 of the (n+1) × 3 control block in p
};

/// Position and velocity of a handle at one step, with the linear weights that produce
/// them from control rows: x = Σ wx[k] c^{row[k]}, v = Σ wv[k] c^{row[k]}.
struct HandleSample {
  Vec3 x = Vec3::Zero();
  Vec3 v = Vec3::Zero();
  int count = 0;
  std::array<int, 4> param{};  ///< p index of the x component of each contributing row
  std::array<double, 4> wx{};
  std::array<double, 4> wv{};
};

/// Samples handle `h` at step `step` (≥ 1) of `scheme` from parameters p.
HandleSample sample_handle(const Handle& h, const VecX& p, int step, const TimeScheme& scheme);

}  // namespace addsim
