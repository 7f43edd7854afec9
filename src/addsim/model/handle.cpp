#include "addsim/model/handle.h"

#include "addsim/core/error.h"

namespace addsim {

HandleSample sample_handle(const Handle& h, const VecX& p, int step, const TimeScheme& scheme) {
  HandleSample s;
  auto add = [&](int row, double wx, double wv) {
    for (int k = 0; k < s.count; ++k) {
      if (s.param[k] == h.positions_param + 3 * row) {
        s.wx[k] += wx;
        s.wv[k] += wv;
        return;
      }
    }
    ADDSIM_CHECK(s.count < 4, "handle stencil overflow");
    s.param[s.count] = h.positions_param + 3 * row;
    s.wx[s.count] = wx;
    s.wv[s.count] = wv;
    ++s.count;
  };
  for (int k = 0; k < static_cast<int>(scheme.cv.size()); ++k) {
    const int j = step - k;
    const double wx = k == 0 ? 1.0 : 0.0;
    const double wv = scheme.cv[k] / scheme.h;
    if (j >= 0) {
      add(j, wx, wv);
    } else {
      // c^{j} = (1 − j) c⁰ + j c¹ for j < 0 (constant-velocity extrapolation).
      add(0, (1.0 - j) * wx, (1.0 - j) * wv);
      add(1, j * wx, j * wv);
    }
  }
  for (int k = 0; k < s.count; ++k) {
    const Vec3 c = p.segment<3>(s.param[k]);
    s.x += s.wx[k] * c;
    s.v += s.wv[k] * c;
  }
  return s;
}

}  // namespace addsim
