#include "addsim/cli/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "addsim/mesh/mesh_cache.h"

namespace addsim::cli {

namespace {

// Minimum time between two updates of the live line on a terminal, s.
constexpr double kTtyRefreshSeconds = 0.1;

// The piped interval: $ADDSIM_PROGRESS_SECONDS if it is a number ≥ 0, else the default.
double piped_interval() {
  if (const char* env = std::getenv("ADDSIM_PROGRESS_SECONDS")) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(s) && s >= 0.0) return s;
  }
  return kPipedProgressSeconds;
}

}  // namespace

std::string duration(double seconds) {
  char text[32];
  if (seconds < 10.0)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else if (seconds < 60.0)
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else
    std::snprintf(text, sizeof text, "%d min %02d s", static_cast<int>(seconds / 60.0), static_cast<int>(seconds) % 60);
  return text;
}

ProgressLine::ProgressLine(bool quiet)
    : tty_(!quiet && isatty(STDERR_FILENO)), lines_(!quiet && !tty_), interval_(piped_interval()) {}

ProgressLine::~ProgressLine() { clear(); }

bool ProgressLine::due(bool force) const {
  if (!enabled()) return false;
  if (force) return true;
  const double since = std::chrono::duration<double>(Clock::now() - last_).count();
  return tty_ ? !shown_ || since >= kTtyRefreshSeconds : since >= interval_;
}

void ProgressLine::update(const std::string& live, const std::string& piped, bool force) {
  if (!due(force)) return;
  last_ = Clock::now();
  if (tty_) {
    shown_ = true;
    std::fprintf(stderr, "\r\033[K%s", live.c_str());
  } else {
    std::fprintf(stderr, "addsim: %s\n", (piped.empty() ? live : piped).c_str());
  }
  std::fflush(stderr);
}

void ProgressLine::message(const std::string& text) {
  if (!enabled()) return;
  clear();
  std::fprintf(stderr, "addsim: %s\n", text.c_str());
  std::fflush(stderr);
}

void ProgressLine::clear() {
  if (!tty_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

double ProgressLine::elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

std::function<void(int, int)> ProgressLine::counter(const std::string& label, const std::string& unit) {
  return [this, label, unit, start = Clock::now()](int done, int total) {
    if (!due()) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double rate = seconds > 0.0 ? done / seconds : 0.0;
    std::string text = label + " " + std::to_string(done) + "/" + std::to_string(total);
    if (rate > 0.0) {
      char number[32];
      std::snprintf(number, sizeof number, "%.3g", rate);
      text += ", " + std::string(number) + " " + unit + "/s, ETA " + duration((total - done) / rate);
    }
    update(text);
  };
}

struct MeshProgress::Impl {
  explicit Impl(bool quiet) : line(quiet), scope([this](const MeshEvent& e) { report(e); }) {}

  void report(const MeshEvent& e) {
    switch (e.kind) {
      case MeshEvent::Kind::kGenerating:
        // A terminal shows it until the mesh is done; a log gets the start as its own line,
        // since gmsh may take a while.
        line.update("meshing " + e.what + " with gmsh ...", "meshing " + e.what + " with gmsh ...", true);
        break;
      case MeshEvent::Kind::kGenerated:
        line.message("meshed " + e.what + ": " + std::to_string(e.tets) + " tets in " + duration(e.seconds) +
                     (e.stored ? " (stored in the mesh cache)" : ""));
        break;
      case MeshEvent::Kind::kFromCache:
        line.message(e.what + ": " + std::to_string(e.tets) + " tets from the mesh cache (" + duration(e.seconds) +
                     ")");
        break;
    }
  }

  ProgressLine line;
  ScopedMeshObserver scope;
};

MeshProgress::MeshProgress(bool quiet) : impl_(std::make_unique<Impl>(quiet)) {}

MeshProgress::~MeshProgress() = default;

}  // namespace addsim::cli
