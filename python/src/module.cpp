/// addsim._addsim: the pybind11 binding behind the `addsim` Python package (docs/python.md).
/// Scenes and tasks are loaded and validated by the io module exactly as the CLI does; a
/// rollout keeps its Trajectory for the adjoint (vjp) and direct (jvp) passes. The GIL is
/// released while C++ runs; every call builds its own Simulator, so rollouts from several
/// Python threads (or the batch functions' C++ threads) run in parallel on one shared,
/// immutable Model.

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "addsim/batch/batch.h"
#include "addsim/core/error.h"
#include "addsim/io/output.h"
#include "addsim/io/scene.h"
#include "addsim/io/task.h"
#include "addsim/sensitivity/adjoint.h"
#include "addsim/sensitivity/direct.h"
#include "addsim/sensitivity/parameter_selection.h"
#include "addsim/solver/simulator.h"
#include "python/src/trajectory_cotangent.h"

namespace py = pybind11;

namespace addsim::python {

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
using SceneRef = std::shared_ptr<const Scene>;

// ---------------------------------------------------------------------------------------
// Conversions between numpy and Eigen (always copies: the C++ side then runs without the GIL).

VecX to_vec(const py::handle& obj, const char* what) {
  const Array a = Array::ensure(obj);
  if (!a) throw InputError(std::string(what) + ": expected an array of numbers");
  if (a.ndim() != 1) throw InputError(std::string(what) + ": expected a 1-D array, got " + std::to_string(a.ndim()) + "-D");
  VecX v(a.shape(0));
  std::copy(a.data(), a.data() + a.shape(0), v.data());
  return v;
}

// A (rows × cols) matrix from a 2-D array-like; `shape` names the expected shape in messages.
MatX to_mat(const py::handle& obj, const char* what, const char* shape = "(steps + 1, |q|)") {
  const Array a = Array::ensure(obj);
  if (!a) throw InputError(std::string(what) + ": expected an array of numbers");
  if (a.ndim() != 2) throw InputError(std::string(what) + ": expected a 2-D array " + shape + ", got " +
                                      std::to_string(a.ndim()) + "-D");
  MatX m(a.shape(0), a.shape(1));
  for (py::ssize_t i = 0; i < a.shape(0); ++i)
    for (py::ssize_t j = 0; j < a.shape(1); ++j) m(i, j) = *a.data(i, j);
  return m;
}

Array from_vec(const VecX& v) {
  Array a(v.size());
  std::copy(v.data(), v.data() + v.size(), a.mutable_data());
  return a;
}

// Rows r_0 … r_m (each of size cols) into one C-ordered (m+1) × cols array.
// Rows r_0 … r_m (each `cols` long) one after the other from `out` on.
void copy_rows(const std::vector<VecX>& rows, int cols, double* out) {
  for (const VecX& r : rows) {
    std::copy(r.data(), r.data() + cols, out);
    out += cols;
  }
}

Array from_rows(const std::vector<VecX>& rows, int cols) {
  Array a({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(cols)});
  copy_rows(rows, cols, a.mutable_data());
  return a;
}

Array read_only(Array a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// Rows r_0 … r_m as a read-only (m+1) × cols array whose memory belongs to a capsule. numpy
// lets an array that owns its data be made writeable again (setflags(write=True)), but not
// one whose base exposes no writeable buffer: the cached states, returned on every access,
// cannot be changed through the array or any view of it.
Array frozen_rows(const std::vector<VecX>& rows, int cols) {
  auto* data = new std::vector<double>(std::max<std::size_t>(1, rows.size() * static_cast<std::size_t>(cols)));
  const py::capsule owner(data, [](void* d) { delete static_cast<std::vector<double>*>(d); });
  copy_rows(rows, cols, data->data());
  return read_only(Array({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(cols)}, data->data(), owner));
}

// JSON ↔ Python through the json module (scene documents are small).
py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// ---------------------------------------------------------------------------------------
// Parameters: a full vector p (|p|), or {key path: values} replacing entries of the defaults.

VecX resolve_params(const Model& model, const py::handle& params) {
  const ParameterTable& table = model.params();
  VecX p = table.defaults();
  if (params.is_none()) return p;
  if (py::isinstance<py::dict>(params)) {
    for (const auto& [key, value] : params.cast<py::dict>()) {
      const std::string path = py::str(key);
      const ParamRange r = table.require(path);
      const Array a = Array::ensure(value);
      if (!a) throw InputError("parameter " + path + ": expected numbers");
      if (a.size() != r.size)
        throw InputError("parameter " + path + ": expected " + std::to_string(r.size) + " values, got " +
                         std::to_string(a.size()));
      std::copy(a.data(), a.data() + a.size(), p.data() + r.offset);
    }
  } else {
    p = to_vec(params, "params");
    if (p.size() != table.size())
      throw InputError("params: expected |p| = " + std::to_string(table.size()) + " values, got " +
                       std::to_string(p.size()));
  }
  table.check(p);
  return p;
}

// Key paths (or one path) → a ParameterSelection of the table, in p's units.
ParameterSelection make_selection(const Model& model, const std::vector<std::string>& paths) {
  std::vector<ParameterSpec> specs;
  for (const std::string& path : paths) specs.push_back(ParameterSpec{path});
  return ParameterSelection(model.params(), specs);
}

// ---------------------------------------------------------------------------------------
// Exceptions: SimulationError carries the step and the reason into Python.

class RolloutError : public SimulationError {
 public:
  RolloutError(const std::string& what, int step, std::string reason)
      : SimulationError(what, step), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

void require_completed(const Scene& scene, const Trajectory& traj, const char* who) {
  if (!traj.completed())
    throw RolloutError(scene.source + ": " + who + ": the rollout failed at step " + std::to_string(traj.failed_step) +
                           ": " + traj.failure,
                       traj.failed_step, traj.failure);
}

// ---------------------------------------------------------------------------------------
// Rollouts.

struct Rollout {
  SceneRef scene;
  Trajectory traj;
  double cpp_seconds = 0.0;  // wall time of the C++ call that made it (simulator set-up + run)
  py::object q_cache, v_cache;  // numpy copies, made on first access (under the GIL)

  const Model& model() const { return *scene->model; }
  int num_states() const { return static_cast<int>(traj.q.size()); }

  py::object q() {
    if (!q_cache) q_cache = frozen_rows(traj.q, model().num_dofs());
    return q_cache;
  }
  py::object v() {
    if (!v_cache) {
      std::vector<VecX> rows;
      rows.reserve(traj.q.size());
      for (int i = 0; i < num_states(); ++i) rows.push_back(traj.velocity(model().scheme(), i));
      v_cache = frozen_rows(rows, model().num_dofs());
    }
    return v_cache;
  }
};
using RolloutRef = std::shared_ptr<Rollout>;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs one rollout (GIL released by the caller). threads: the Simulator's override (0 = scene).
RolloutRef run_rollout(const SceneRef& scene, const VecX& p, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = std::make_shared<Rollout>();
  r->scene = scene;
  Simulator sim(*scene->model, threads);
  r->traj = sim.run(p);
  r->cpp_seconds = seconds_since(t0);
  return r;
}

VecX vjp_full(const Rollout& r, MatX dl_dq, MatX dl_dv) {
  require_completed(*r.scene, r.traj, "vjp");
  const TrajectoryCotangent cot(std::move(dl_dq), std::move(dl_dv));
  return gradient_adjoint(r.model(), r.traj, cot).dphi_dp;
}

// The body index named by `key` (meta.json name, "bodies.<i>", or an int).
int body_index(const Scene& scene, const py::handle& key) {
  const int count = static_cast<int>(scene.bodies.size());
  if (py::isinstance<py::int_>(key)) {
    const int k = key.cast<int>();
    if (k < 0 || k >= count)
      throw InputError("body index " + std::to_string(k) + " outside [0, " + std::to_string(count) + ")");
    return k;
  }
  const std::string name = py::str(key);
  for (int k = 0; k < count; ++k)
    if (scene.bodies[k].name == name || scene.bodies[k].path == name) return k;
  std::string known;
  for (int k = 0; k < count; ++k)
    known += (k ? ", " : "") + (scene.bodies[k].name.empty() ? scene.bodies[k].path : scene.bodies[k].name);
  throw InputError(scene.source + ": no body named '" + name + "' (bodies: " + known + ")");
}

// A view of one body's block of a rollout.
struct BodyView {
  RolloutRef rollout;
  int index = 0;

  const Body& body() const { return *rollout->model().bodies()[index]; }
  py::object q() const {
    return rollout->q()[py::make_tuple(py::slice(py::none(), py::none(), py::none()),
                                       py::slice(body().dof_offset(), body().dof_offset() + body().dof_count(), 1))];
  }
  py::object v() const {
    return rollout->v()[py::make_tuple(py::slice(py::none(), py::none(), py::none()),
                                       py::slice(body().dof_offset(), body().dof_offset() + body().dof_count(), 1))];
  }
  Array center_of_mass() const {
    const Trajectory& t = rollout->traj;
    Array a({static_cast<py::ssize_t>(t.q.size()), py::ssize_t{3}});
    for (std::size_t i = 0; i < t.q.size(); ++i) {
      const Vec3 c = body().center_of_mass(t.q[i], t.p);
      for (int d = 0; d < 3; ++d) *a.mutable_data(i, d) = c[d];
    }
    return a;
  }
};

// ---------------------------------------------------------------------------------------
// Tasks: Φ and dΦ/dx in the task's optimiser variables x (ln p for log-scaled scalars).

struct TaskHandle {
  std::shared_ptr<const Task> task;
  SceneRef scene;  // aliases task->scene

  VecX p_of(const VecX& x) const {
    if (x.size() != task->selection.size())
      throw InputError(task->source + ": x has " + std::to_string(x.size()) + " entries, the task selects " +
                       std::to_string(task->selection.size()));
    if (!x.allFinite()) throw InputError(task->source + ": x has non-finite entries");
    VecX p = task->selection.from_scaled(task->p(), x);
    task->selection.check_bounds(p);
    return p;
  }
  Trajectory run(const VecX& p) const {
    Simulator sim(*task->scene.model);
    Trajectory traj = sim.run(p);
    require_completed(task->scene, traj, "forward run");
    return traj;
  }
};

void register_exceptions(py::module_& m) {
  // InputError is a ValueError, SimulationError a RuntimeError with .step and .reason.
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<SimulationError> simulation_error(m, "SimulationError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr ptr) {
    if (!ptr) return;
    try {
      std::rethrow_exception(ptr);
    } catch (const InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const SimulationError& e) {
      py::object err = py::handle(simulation_error.ptr())(py::str(e.what()));
      err.attr("step") = e.step();
      const auto* re = dynamic_cast<const RolloutError*>(&e);
      err.attr("reason") = re ? re->reason() : std::string(e.what());
      PyErr_SetObject(simulation_error.ptr(), err.ptr());
    }
  });
}

}  // namespace

}  // namespace addsim::python

PYBIND11_MODULE(_addsim, m) {
  using namespace addsim;
  using namespace addsim::python;
  m.doc() = "addsim: analytically differentiable multi-body simulation (C++ core; see docs/python.md)";
  register_exceptions(m);

  py::class_<StepReport>(m, "StepReport", "What happened in one time step (solver/simulator.h).")
      .def_readonly("step", &StepReport::step)
      .def_readonly("converged", &StepReport::converged)
      .def_readonly("iterations", &StepReport::iterations)
      .def_readonly("line_search_halvings", &StepReport::line_search_halvings)
      .def_readonly("damped_iterations", &StepReport::damped_iterations)
      .def_readonly("residual_norm", &StepReport::residual_norm)
      .def_readonly("tolerance_used", &StepReport::tolerance_used)
      .def_readonly("residual_history", &StepReport::residual_history)
      .def_readonly("wall_ms", &StepReport::wall_ms)
      .def_readonly("factorizations", &StepReport::factorizations)
      .def_readonly("krylov_iterations", &StepReport::krylov_iterations)
      .def_readonly("failure", &StepReport::failure)
      .def_readonly("note", &StepReport::note)
      .def_readonly("relative_residual", &StepReport::relative_residual)
      .def_property_readonly("accepted_at_floor", &StepReport::accepted_at_floor)
      .def("__repr__", [](const StepReport& r) {
        return "StepReport(step=" + std::to_string(r.step) + ", converged=" + (r.converged ? "True" : "False") +
               ", iterations=" + std::to_string(r.iterations) + ", residual_norm=" + std::to_string(r.residual_norm) +
               ")";
      });

  py::class_<ParamEntry>(m, "ParameterEntry", "One entry of the scene's parameter table (model/parameters.h).")
      .def_readonly("path", &ParamEntry::path)
      .def_readonly("alias", &ParamEntry::alias)
      .def_property_readonly("kind", [](const ParamEntry& e) { return std::string(to_string(e.kind)); })
      .def_readonly("offset", &ParamEntry::offset)
      .def_readonly("rows", &ParamEntry::rows)
      .def_readonly("cols", &ParamEntry::cols)
      .def_property_readonly("size", &ParamEntry::size)
      .def_readonly("lower", &ParamEntry::lower)
      .def_readonly("upper", &ParamEntry::upper)
      .def_readonly("log_scale", &ParamEntry::log_scale);

  py::class_<ParameterSelection>(m, "Selection", "Scalars of p chosen by key paths (sensitivity/parameter_selection.h).")
      .def_property_readonly("size", &ParameterSelection::size)
      .def("__len__", &ParameterSelection::size)
      .def_property_readonly("num_params", &ParameterSelection::num_params, "|p| of the scene it was selected from.")
      .def_property_readonly("indices", &ParameterSelection::indices)
      .def_property_readonly("names", &ParameterSelection::names)
      .def("gather", [](const ParameterSelection& s, const py::handle& p) { return from_vec(s.gather(to_vec(p, "p"))); },
           py::arg("p"), "The selected values of a full parameter vector p.")
      .def("scatter",
           [](const ParameterSelection& s, const py::handle& p, const py::handle& values) {
             return from_vec(s.scatter(to_vec(p, "p"), to_vec(values, "values")));
           },
           py::arg("p"), py::arg("values"), "p with the selected scalars replaced by values.");

  py::class_<Scene, std::shared_ptr<Scene>>(m, "_Scene")
      .def_static(
          "load_file",
          [](const std::string& path, const std::vector<std::string>& overrides) {
            return std::make_shared<Scene>(load_scene_file(path, overrides));
          },
          py::arg("path"), py::arg("overrides") = std::vector<std::string>{})
      .def_static(
          "load_text",
          [](const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
            return std::make_shared<Scene>(load_scene_text(text, source, overrides));
          },
          py::arg("text"), py::arg("source"), py::arg("overrides") = std::vector<std::string>{})
      .def_property_readonly("name", [](const Scene& s) { return s.name; })
      .def_property_readonly("description", [](const Scene& s) { return s.description; })
      .def_property_readonly("source", [](const Scene& s) { return s.source; })
      .def_property_readonly("num_dofs", [](const Scene& s) { return s.model->num_dofs(); })
      .def_property_readonly("num_params", [](const Scene& s) { return s.model->params().size(); })
      .def_property_readonly("steps", [](const Scene& s) { return s.model->scheme().steps; })
      .def_property_readonly("dt", [](const Scene& s) { return s.model->scheme().h; })
      .def("document", [](const Scene& s) { return to_python(s.json); }, "The scene after overrides, as validated.")
      .def("meta", [](const Scene& s) { return to_python(make_meta(s)); }, "meta.json's DOF layout.")
      .def("parameter_entries", [](const Scene& s) { return s.model->params().entries(); })
      .def("parameter_names",
           [](const Scene& s) {
             std::vector<std::string> names;
             for (int i = 0; i < s.model->params().size(); ++i) names.push_back(s.model->params().name_of(i));
             return names;
           })
      .def("default_params", [](const Scene& s) { return from_vec(s.model->params().defaults()); })
      .def("params", [](const Scene& s, const py::handle& params) { return from_vec(resolve_params(*s.model, params)); },
           py::arg("params") = py::none())
      .def("select",
           [](const Scene& s, const std::vector<std::string>& paths) { return make_selection(*s.model, paths); },
           py::arg("paths"))
      .def("body_index", [](const Scene& s, const py::handle& key) { return body_index(s, key); });

  py::class_<Rollout, RolloutRef>(m, "Rollout", "A recorded run: states, reports, and its vjp/jvp.")
      .def_property_readonly("q", &Rollout::q, "Positions q⁰ … q^m, shape (m+1, |q|), read-only.")
      .def_property_readonly("v", &Rollout::v, "Velocities v⁰ … v^m (time-scheme differences of q), read-only.")
      .def_property_readonly("p", [](const Rollout& r) { return from_vec(r.traj.p); })
      .def_property_readonly("completed", [](const Rollout& r) { return r.traj.completed(); })
      .def_property_readonly("failure", [](const Rollout& r) { return r.traj.failure; })
      .def_property_readonly("failed_step", [](const Rollout& r) { return r.traj.failed_step; })
      .def_property_readonly("wall_seconds", [](const Rollout& r) { return r.traj.wall_seconds; })
      .def_property_readonly("cpp_seconds", [](const Rollout& r) { return r.cpp_seconds; })
      .def_property_readonly("reports", [](const Rollout& r) { return r.traj.reports; })
      .def_property_readonly("_scene", [](const Rollout& r) { return std::const_pointer_cast<Scene>(r.scene); })
      .def("body",
           [](const RolloutRef& r, const py::handle& key) { return BodyView{r, body_index(*r->scene, key)}; },
           py::arg("key"))
      .def(
          "_vjp",
          [](const Rollout& r, const py::handle& dl_dq, const py::handle& dl_dv) {
            MatX gq = to_mat(dl_dq, "dL_dq");
            MatX gv = dl_dv.is_none() ? MatX() : to_mat(dl_dv, "dL_dv");
            VecX g;
            double seconds = 0.0;
            {
              py::gil_scoped_release release;
              const auto t0 = std::chrono::steady_clock::now();
              g = vjp_full(r, std::move(gq), std::move(gv));
              seconds = seconds_since(t0);
            }
            return py::make_tuple(from_vec(g), seconds);
          },
          py::arg("dL_dq"), py::arg("dL_dv") = py::none())
      .def(
          "_jvp",
          [](const Rollout& r, const py::handle& dp) {
            const VecX w = to_vec(dp, "dp");
            const int np = r.model().params().size();
            if (w.size() != np)
              throw InputError("jvp: dp has " + std::to_string(w.size()) + " entries, expected |p| = " +
                               std::to_string(np));
            if (!w.allFinite()) throw InputError("jvp: dp has non-finite entries");
            std::vector<int> params;
            DirectOptions options;
            for (int j = 0; j < np; ++j)
              if (w[j] != 0.0) params.push_back(j);
            options.direction.resize(static_cast<int>(params.size()));
            for (std::size_t c = 0; c < params.size(); ++c) options.direction[c] = w[params[c]];
            std::vector<VecX> rows;
            {
              py::gil_scoped_release release;
              require_completed(*r.scene, r.traj, "jvp");
              if (params.empty()) {
                rows.assign(r.traj.q.size(), VecX::Zero(r.model().num_dofs()));
              } else {
                const TrajectoryCotangent none(MatX::Zero(r.num_states(), r.model().num_dofs()), MatX());
                rows = gradient_direct(r.model(), r.traj, none, params, options).directional;
              }
            }
            return from_rows(rows, r.model().num_dofs());
          },
          py::arg("dp"));

  py::class_<BodyView>(m, "BodyView", "One body's columns of a rollout (meta.json layout).")
      .def_property_readonly("name",
                             [](const BodyView& b) {
                               const SceneBody& sb = b.rollout->scene->bodies[b.index];
                               return sb.name.empty() ? sb.path : sb.name;
                             })
      .def_property_readonly("type", [](const BodyView& b) { return b.rollout->scene->bodies[b.index].type; })
      .def_property_readonly("dof_offset", [](const BodyView& b) { return b.body().dof_offset(); })
      .def_property_readonly("dof_count", [](const BodyView& b) { return b.body().dof_count(); })
      .def_property_readonly("dof_labels", [](const BodyView& b) { return b.body().dof_labels(); })
      .def_property_readonly("q", &BodyView::q)
      .def_property_readonly("v", &BodyView::v)
      .def("center_of_mass", &BodyView::center_of_mass, "Centre of mass (m) per step, shape (m+1, 3).")
      .def("mass", [](const BodyView& b) { return b.body().total_mass(b.rollout->traj.p); });

  m.def(
      "simulate",
      [](const std::shared_ptr<Scene>& scene, const py::handle& params, int threads) {
        if (threads < 0 || threads > 2)
          throw InputError("simulate: threads must be 0 (the scene's solver.threads), 1 or 2, got " +
                           std::to_string(threads));
        const VecX p = resolve_params(*scene->model, params);
        py::gil_scoped_release release;
        return run_rollout(scene, p, threads);
      },
      py::arg("scene"), py::arg("params") = py::none(), py::arg("threads") = 0);

  m.def(
      "simulate_batch",
      [](const std::shared_ptr<Scene>& scene, const py::handle& batch, int threads) {
        if (threads < 0) throw InputError("simulate_batch: threads must be >= 0 (0 = all cores)");
        const MatX P = to_mat(batch, "params", "(batch, |p|)");
        const Model& model = *scene->model;
        if (P.cols() != model.params().size())
          throw InputError("simulate_batch: params has " + std::to_string(P.cols()) + " columns, expected |p| = " +
                           std::to_string(model.params().size()));
        std::vector<VecX> ps;
        for (int b = 0; b < P.rows(); ++b) {
          ps.push_back(P.row(b).transpose());
          model.params().check(ps.back());
        }
        std::vector<RolloutRef> out(ps.size());
        {
          py::gil_scoped_release release;
          // Rollouts already run one per core: every simulator of a batch runs on one thread
          // (so a batch equals serial simulate(threads=1) calls bit for bit).
          parallel_items(static_cast<int>(ps.size()), threads, [&](int b) { out[b] = run_rollout(scene, ps[b], 1); });
        }
        return out;
      },
      py::arg("scene"), py::arg("params"), py::arg("threads") = 0);

  m.def(
      "vjp_batch",
      [](const std::vector<RolloutRef>& rollouts, const py::handle& dl_dq, const py::handle& dl_dv, int threads) {
        if (threads < 0) throw InputError("vjp_batch: threads must be >= 0 (0 = all cores)");
        const int count = static_cast<int>(rollouts.size());
        const Array gq = Array::ensure(dl_dq);
        if (!gq || gq.ndim() != 3 || gq.shape(0) != count)
          throw InputError("vjp_batch: dL_dq must have shape (batch, steps + 1, |q|) with batch = " +
                           std::to_string(count));
        const bool with_v = !dl_dv.is_none();
        Array gv;
        if (with_v) {
          gv = Array::ensure(dl_dv);
          if (!gv || gv.ndim() != 3 || gv.shape(0) != count)
            throw InputError("vjp_batch: dL_dv must have shape (batch, steps + 1, |q|) with batch = " +
                             std::to_string(count));
        }
        std::vector<MatX> gqs, gvs;
        for (int b = 0; b < count; ++b) {
          gqs.push_back(to_mat(py::object(gq[py::int_(b)]), "dL_dq"));
          gvs.push_back(with_v ? to_mat(py::object(gv[py::int_(b)]), "dL_dv") : MatX());
        }
        std::vector<VecX> grads(count);
        {
          py::gil_scoped_release release;
          parallel_items(count, threads,
                       [&](int b) { grads[b] = vjp_full(*rollouts[b], std::move(gqs[b]), std::move(gvs[b])); });
        }
        const int np = count ? static_cast<int>(grads[0].size()) : 0;
        return from_rows(grads, np);
      },
      py::arg("rollouts"), py::arg("dL_dq"), py::arg("dL_dv") = py::none(), py::arg("threads") = 0);


  py::class_<TaskHandle>(m, "_Task")
      .def_static(
          "load_file",
          [](const std::string& path, const std::vector<std::string>& overrides) {
            auto task = std::make_shared<const Task>(load_task_file(path, overrides));
            return TaskHandle{task, SceneRef(task, &task->scene)};
          },
          py::arg("path"), py::arg("overrides") = std::vector<std::string>{})
      .def_property_readonly("name", [](const TaskHandle& t) { return t.task->name; })
      .def_property_readonly("description", [](const TaskHandle& t) { return t.task->description; })
      .def_property_readonly("scene", [](const TaskHandle& t) { return std::const_pointer_cast<Scene>(t.scene); })
      .def_property_readonly("selection", [](const TaskHandle& t) { return t.task->selection; })
      .def("log_scale",
           [](const TaskHandle& t) {
             std::vector<bool> flags;
             for (int k = 0; k < t.task->selection.size(); ++k) flags.push_back(t.task->selection.log_scale(k));
             return flags;
           })
      .def("bounds",
           [](const TaskHandle& t) {
             const ParameterSelection& s = t.task->selection;
             VecX lo(s.size()), hi(s.size());
             for (int k = 0; k < s.size(); ++k) {
               lo[k] = s.lower(k);
               hi[k] = s.upper(k);
             }
             return py::make_tuple(from_vec(lo), from_vec(hi));
           })
      .def("x0", [](const TaskHandle& t) { return from_vec(t.task->selection.to_scaled(t.task->p())); })
      .def("p_of", [](const TaskHandle& t, const py::handle& x) { return from_vec(t.p_of(to_vec(x, "x"))); })
      .def("evaluate",
           [](const TaskHandle& t, const py::handle& x) {
             const VecX p = t.p_of(to_vec(x, "x"));
             py::gil_scoped_release release;
             const Trajectory traj = t.run(p);
             return t.task->objective.evaluate(*t.task->scene.model, traj, nullptr);
           })
      .def(
          "batch",
          // Φ (and dΦ/dp, all |p|) at every row of P (full parameter vectors) by run_batch
          // (batch/batch.h): the same function `addsim sweep` and addsim.dask run, one fresh
          // simulator per row, so results are bit-identical for any thread count.
          [](const TaskHandle& t, const py::handle& params, bool gradients, int threads, long first_row) {
            const Model& model = *t.task->scene.model;
            const MatX P = to_mat(params, "params");
            if (P.rows() > 0 && P.cols() != model.params().size())
              throw InputError("batch: params has " + std::to_string(P.cols()) + " columns, expected |p| = " +
                               std::to_string(model.params().size()));
            std::vector<VecX> ps;
            for (Eigen::Index b = 0; b < P.rows(); ++b) ps.push_back(P.row(b).transpose());
            BatchOptions o;
            o.threads = threads;
            o.gradients = gradients;
            o.first_index = first_row;
            std::vector<BatchItemResult> results;
            {
              py::gil_scoped_release release;
              results = run_batch(model, ps, &t.task->objective, o);
            }
            const int count = static_cast<int>(results.size());
            VecX phi(count);
            std::vector<VecX> grads;
            py::list failures;
            std::vector<bool> completed;
            std::vector<int> failed_step;
            for (const BatchItemResult& r : results) {
              phi[static_cast<Eigen::Index>(completed.size())] = r.phi;
              grads.push_back(r.completed && gradients ? r.dphi_dp
                                                       : VecX::Constant(model.params().size(),
                                                                        std::numeric_limits<double>::quiet_NaN()));
              failures.append(r.failure);
              completed.push_back(r.completed);
              failed_step.push_back(r.failed_step);
            }
            return py::make_tuple(from_vec(phi), gradients ? py::object(from_rows(grads, model.params().size()))
                                                           : py::object(py::none()),
                                  completed, failures, failed_step);
          },
          py::arg("params"), py::arg("gradients") = true, py::arg("threads") = 0, py::arg("first_row") = 0)
      .def("value_and_gradient", [](const TaskHandle& t, const py::handle& x) {
        const VecX p = t.p_of(to_vec(x, "x"));
        GradientResult r;
        {
          py::gil_scoped_release release;
          const Trajectory traj = t.run(p);
          r = gradient_adjoint(*t.task->scene.model, traj, t.task->objective);
        }
        return py::make_tuple(r.phi, from_vec(t.task->selection.scaled_gradient(p, r.dphi_dp)));
      });
}
