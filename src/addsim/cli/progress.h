#pragma once
/// Progress of long phases on stderr (docs/cli.md "Progress"), shared by every command: on a
/// terminal one self-overwriting line (carriage return, refreshed at most every 0.1 s) that
/// is cleared when the reporter ends; when stderr is piped or a file, a plain line
/// "addsim: …" at most every kPipedProgressSeconds ($ADDSIM_PROGRESS_SECONDS overrides it);
/// nothing with --quiet. The library reports through callbacks (Simulator::run,
/// gradient_adjoint, …, MeshObserver); only this file prints them.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace addsim::cli {

/// Default time between two piped progress lines, s.
constexpr double kPipedProgressSeconds = 5.0;

/// "0.4 s", "12 s", "3 min 05 s": a duration for progress lines.
std::string duration(double seconds);

/// One progress line on stderr (see the file comment).
class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ProgressLine(bool quiet);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// False with --quiet: callers may skip formatting.
  bool enabled() const { return tty_ || lines_; }
  /// True on a terminal (a live, self-overwriting line), false when piped or quiet.
  bool live() const { return tty_; }
  /// Whether update() would show something now (throttling), unless `force`.
  bool due(bool force = false) const;
  /// Shows `live` on a terminal and "addsim: <piped>" (or `live` when `piped` is empty) as a
  /// line when piped, subject to throttling; `force` shows it regardless (e.g. a last update).
  void update(const std::string& live, const std::string& piped = {}, bool force = false);
  /// A permanent line "addsim: <text>" (on a terminal it replaces the live line).
  void message(const std::string& text);
  /// Removes the live line from the terminal (no-op when piped).
  void clear();
  /// Seconds since the reporter was made.
  double elapsed() const;
  /// A (done, total) callback for the library's progress hooks: shows
  /// "<label> done/total, <rate> <unit>/s, ETA …" with the rate measured from the
  /// callback's creation. The callback refers to this line: it must not outlive it.
  std::function<void(int done, int total)> counter(const std::string& label, const std::string& unit);

 private:
  bool tty_;
  bool lines_;
  bool shown_ = false;
  double interval_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
};

/// While alive, reports the meshes generated on this thread (mesh/mesh_cache.h): on a
/// terminal "meshing <what> …" while gmsh runs, then a line per mesh with its size and time,
/// saying when it came from the mesh cache; the same lines when piped.
class MeshProgress {
 public:
  explicit MeshProgress(bool quiet);
  ~MeshProgress();
  MeshProgress(const MeshProgress&) = delete;
  MeshProgress& operator=(const MeshProgress&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace addsim::cli
