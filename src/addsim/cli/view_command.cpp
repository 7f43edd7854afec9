#include "addsim/cli/view_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "addsim/cli/commands.h"
#include "addsim/cli/process.h"
#include "addsim/core/error.h"


namespace addsim::cli {

namespace fs = std::filesystem;

namespace {

// Size of the still (CSS pixels): the 3D view plus the plot column.
constexpr const char* kStillWindowSize = "--window-size=1280,720";

// The browser for stills: $ADDSIM_CHROMIUM, else Debian's chromium on PATH.
std::string chromium_program() {
  const char* env = std::getenv("ADDSIM_CHROMIUM");
  return env && *env ? env : "chromium";
}

}  // namespace

ViewerResult write_viewer_page(const fs::path& dir, bool quiet) {
  ViewerResult page = write_viewer(dir);
  if (!page.has_three && !quiet) std::cerr << "addsim: warning: " << page.notice << "\n";
  return page;
}

std::string write_still(const fs::path& page, const fs::path& png, int frame) {
  // A fresh profile per run, so no state leaks between runs and nothing touches the user's.
  std::string profile_template = (fs::temp_directory_path() / "addsim-chromium-XXXXXX").string();
  if (!mkdtemp(profile_template.data())) return "cannot create a temporary browser profile";
  // Removed on every way out, an exception included: success, a browser that failed, one that
  // never started.
  struct RemovedProfile {
    fs::path dir;
    ~RemovedProfile() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } const removed{profile_template};
  const fs::path& profile = removed.dir;
  const std::string url = "file://" + fs::absolute(page).string() + "?frame=" + std::to_string(frame);
  const std::vector<std::string> args = {chromium_program(), "--headless", "--no-sandbox", "--disable-gpu",
                                         "--enable-unsafe-swiftshader", "--disable-background-networking",
                                         "--disable-component-update", "--disable-sync", "--no-first-run",
                                         "--hide-scrollbars", "--user-data-dir=" + profile.string(),
                                         "--screenshot=" + fs::absolute(png).string(), kStillWindowSize, url};
  std::error_code ec;
  fs::remove(png, ec);
  ProgramOptions quiet_browser;
  quiet_browser.search_path = true;
  quiet_browser.silent = true;
  const ProgramResult run = run_program(args, quiet_browser);
  std::string failure;
  if (!run.started)
    failure = args[0] + " not found (install it with `bash scripts/install-deps.sh`)";
  else if (!run.ok() || !fs::exists(png))
    failure = args[0] + " did not write " + png.string();
  return failure;
}

std::function<int()> setup_view(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string png;
    int frame = -1;
  };
  auto opt = std::make_shared<Options>();
  app.add_option("dir", opt->dir, "Output folder of simulate or demo (with meta.json and trajectory.npy)")->required();
  CLI::Option* png_option = app.add_option("--png", opt->png, "Also save a still of the page (headless chromium) to this file");
  CLI::Option* frame_option =
      app.add_option("--frame", opt->frame, "With --png: the stored frame to show (0 first, negative from the end)")
          ->capture_default_str();
  return [opt, png_option, frame_option]() {
    // The still's path is checked before anything is written: a folder, or a file in a folder
    // that does not exist, is an error (chromium would only fail without saying why).
    if (png_option->count() > 0) {
      std::error_code ec;
      const fs::path png(opt->png);
      if (png.empty()) throw InputError("--png: empty path");
      if (fs::is_directory(png, ec))
        throw InputError("--png: " + png.string() + ": is a directory; give the still's file name, e.g. " +
                         (png / "still.png").string());
      const fs::path parent = fs::absolute(png, ec).parent_path();
      if (!fs::is_directory(parent, ec))
        throw InputError("--png: " + png.string() + ": the folder " + parent.string() + " does not exist");
      if (access(parent.c_str(), W_OK) != 0)
        throw InputError("--png: " + png.string() + ": cannot write into the folder " + parent.string());
    } else if (frame_option->count() > 0) {
      throw InputError("--frame: needs --png (it selects the frame of the still)");
    }
    const ViewerResult page = write_viewer_page(opt->dir);
    if (!opt->png.empty()) {
      const int n = page.states_embedded;
      if (n > 0 && (opt->frame >= n || opt->frame < -n))
        throw InputError("--frame: " + std::to_string(opt->frame) + " is outside the " + std::to_string(n) +
                         " stored frames (0 to " + std::to_string(n - 1) + ", or -1 to -" + std::to_string(n) + ")");
      if (!page.has_three) throw InputError("--png: the page has no 3D view (" + page.notice + ")");
      const std::string failure = write_still(page.page, opt->png, opt->frame);
      if (!failure.empty()) throw InputError("--png: " + failure);
    }
    std::printf("%s\n", page.page.string().c_str());
    return kOk;
  };
}

}  // namespace addsim::cli
