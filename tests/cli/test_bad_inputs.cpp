// Runs the malformed-input corpus (tests/data/bad/MANIFEST.tsv, written by make_corpus.py)
// through the built CLI, without a shell: every case must end with exit code 2 (bad input)
// or 3 (failed run) and one stderr line "addsim: error: ..." that contains the case's
// fragment and names its file, and must never print "internal error", crash or hang.
// Also the shell-injection regression of `landscape` (issue 18, defect 1).

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace addsim::cli_test;

// A hostile case may not take longer than this (s).
constexpr double kCaseTimeout = 60.0;

struct Outcome {
  int code = -1;    // exit status, -1 if killed by a signal
  int signal = 0;   // the signal, 0 if none
  bool hung = false;
  std::string out, err;
};

// Starts the addsim binary with `args` (no shell) in `dir`, stdout/stderr into files there;
// returns its pid (0 if it could not be started). ADDSIM_MEMORY_LIMIT makes the memory
// verdicts machine-independent.
pid_t spawn_addsim(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> argv = {ADDSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> env = {"ADDSIM_MEMORY_LIMIT=8G"};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("ADDSIM_MEMORY_LIMIT=", 0) != 0) env.emplace_back(*e);
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : 0;
}

// The outcome of a finished (or killed) run from its wait status and output files.
Outcome collect(int status, bool hung, const fs::path& dir) {
  Outcome o;
  o.hung = hung;
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.out = slurp(dir / "stdout.txt");
  o.err = slurp(dir / "stderr.txt");
  return o;
}

// Runs several argument lists, each in its own directory, up to `parallel` at a time; each is
// killed after kCaseTimeout seconds (a hang).
std::vector<Outcome> run_all(const std::vector<std::vector<std::string>>& args, const std::vector<fs::path>& dirs,
                             int parallel) {
  struct Running {
    pid_t pid;
    std::size_t index;
    std::chrono::steady_clock::time_point start;
  };
  std::vector<Outcome> out(args.size());
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < args.size() || !running.empty()) {
    while (next < args.size() && static_cast<int>(running.size()) < parallel) {
      const pid_t pid = spawn_addsim(args[next], dirs[next]);
      if (pid == 0) {
        out[next].err = "posix_spawn failed";
      } else {
        running.push_back({pid, next, std::chrono::steady_clock::now()});
      }
      ++next;
    }
    for (std::size_t k = 0; k < running.size();) {
      int status = 0;
      bool hung = false;
      pid_t done = waitpid(running[k].pid, &status, WNOHANG);
      if (done == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - running[k].start).count() >
                           kCaseTimeout) {
        kill(running[k].pid, SIGKILL);
        done = waitpid(running[k].pid, &status, 0);
        hung = true;
      }
      if (done == 0) {
        ++k;
        continue;
      }
      out[running[k].index] = collect(status, hung, dirs[running[k].index]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return out;
}

Outcome run_argv(const std::vector<std::string>& args, const fs::path& dir) { return run_all({args}, {dir}, 1)[0]; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, '\t')) cells.push_back(cell);
  if (!line.empty() && line.back() == '\t') cells.emplace_back();
  return cells;
}

// The verdict of one case: "ok" or what went wrong.
std::string verdict(const Outcome& o, const std::string& fragment, const std::string& names) {
  if (o.hung) return "hang";
  if (o.signal != 0) return "crash";
  if (o.err.find("internal error") != std::string::npos || o.code == 1) return "internal error";
  if (o.code == 0) return "accepted";
  if (o.code != 2 && o.code != 3) return "other exit code";
  const auto lines = std::count(o.err.begin(), o.err.end(), '\n');
  const auto notes = [&] {
    int n = 0;
    for (auto p = o.err.find("addsim: note: "); p != std::string::npos; p = o.err.find("addsim: note: ", p + 1)) ++n;
    return n;
  }();
  const std::string last = o.err.substr(o.err.rfind('\n', o.err.size() - 2) == std::string::npos
                                            ? 0
                                            : o.err.rfind('\n', o.err.size() - 2) + 1);
  if (lines - notes != 1 || last.rfind("addsim: error: ", 0) != 0) return "not one error line";
  if (last.find(fragment) == std::string::npos) return "wrong message";
  if (!names.empty() && last.find(names) == std::string::npos) return "file not named";
  return "ok";
}

TEST(BadInputs, EveryCaseIsAOneLineInputErrorNamingTheFile) {
  const fs::path bad = source_dir() / "tests" / "data" / "bad";
  std::ifstream manifest(bad / "MANIFEST.tsv");
  ASSERT_TRUE(manifest) << bad / "MANIFEST.tsv";
  const fs::path root = fresh_temp_dir();
  struct Case {
    std::string id, args, fragment, names;
  };
  std::vector<Case> cases;
  std::vector<std::vector<std::string>> argvs;
  std::vector<fs::path> dirs;
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cells = split_tabs(line);
    ASSERT_EQ(cells.size(), 4u) << line;
    const fs::path tmp = root / cells[0];
    fs::create_directories(tmp);
    auto expand = [&](const std::string& s) {
      return replace_all(replace_all(s, "{bad}", bad.string()), "{tmp}", tmp.string());
    };
    cases.push_back({cells[0], expand(cells[1]), expand(cells[2]), expand(cells[3])});
    std::vector<std::string> args;
    std::istringstream words(cases.back().args);
    for (std::string w; std::getline(words, w, ' ');)
      if (!w.empty()) args.push_back(w);
    argvs.push_back(std::move(args));
    dirs.push_back(tmp);
  }
  const int parallel = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  const std::vector<Outcome> outcomes = run_all(argvs, dirs, parallel);
  std::map<std::string, int> counts, by_group;
  const int total = static_cast<int>(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const Outcome& o = outcomes[k];
    const std::string v = verdict(o, c.fragment, c.names);
    ++counts[v];
    ++by_group[c.id.substr(0, c.id.find('_'))];
    EXPECT_EQ(v, "ok") << c.id << ": addsim " << c.args << "\n  exit " << o.code << " signal " << o.signal
                       << "\n  stderr: " << o.err << "  expected: " << c.fragment << " naming " << c.names;
  }
  EXPECT_GE(total, 100);
  std::printf("bad-input corpus: %d cases (", total);
  for (const auto& [g, n] : by_group) std::printf(" %s %d", g.c_str(), n);
  std::printf(" ); verdicts:");
  for (const auto& [v, n] : counts) std::printf(" %s %d", v.c_str(), n);
  std::printf("\n");
  fs::remove_all(root);
}

// Defect 1: the plot is drawn without a shell, so a task name with quotes and a `;` cannot
// run commands, and an output folder with a quote in its name works.
TEST(BadInputs, LandscapeRunsThePlotterWithoutAShell) {
  const fs::path dir = fresh_temp_dir();
  const fs::path marker = dir / "INJECTED";
  const nlohmann::json task = {
      {"name", "x'; touch " + marker.string() + "; echo '"},
      {"scene", (source_dir() / "scenes" / "spring_oscillator.json").string()},
      {"set", {{"steps", 10}}},
      {"parameters", {"bodies.bob.velocities", "springs.spring.stiffness"}},
      {"objective", {{{"type", "com_target"}, {"body", "bob"}, {"target", {0.1, 0.0, 0.2}}}}}};
  std::ofstream(dir / "task.json") << task.dump(2);
  const fs::path out = dir / "it's \"out\"; touch INJECTED2";
  const Outcome r = run_argv({"landscape", (dir / "task.json").string(), "--axes",
                              "bodies.bob.velocities.0.0,springs.spring.stiffness", "--grid", "2x2",
                              "--range=-0.5:0.5,80:120", "--out", out.string(), "--threads", "1"},
                             dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(dir / "INJECTED2"));
  EXPECT_TRUE(fs::exists(out / "landscape.csv"));
  EXPECT_TRUE(fs::exists(out / "landscape.png"));
  EXPECT_GT(fs::file_size(out / "landscape.png"), 1000u);
}

}  // namespace

namespace {

// Defect 6: gradcheck's relative errors are symmetric and floored by the gradient's norm and
// the FD noise, so derivatives that vanish by symmetry (the bob moves only in the x-z plane,
// so dΦ/dv_y = 0 exactly) pass, and the noise estimate is reported.
TEST(GradcheckRule, DerivativesThatVanishBySymmetryPass) {
  const fs::path dir = fresh_temp_dir();
  const nlohmann::json task = {
      {"scene", (source_dir() / "scenes" / "spring_oscillator.json").string()},
      {"set", {{"steps", 50}, {"bodies.bob.velocities", {{0.3, 0.0, 0.0}}}}},
      {"parameters", {"bodies.bob.velocities"}},
      {"objective", {{{"type", "com_target"}, {"body", "bob"}, {"target", {0.05, 0.0, 0.02}}}}}};
  std::ofstream(dir / "task.json") << task.dump(2);
  const Outcome r = run_argv({"gradcheck", (dir / "task.json").string(), "--out", (dir / "check.json").string()}, dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir / "check.json"));
  ASSERT_EQ(j["parameters"].size(), 3u);
  const nlohmann::json& vy = j["parameters"][1];
  EXPECT_EQ(vy["name"], "bodies.0.velocities.0.1");
  EXPECT_EQ(vy["adjoint"].get<double>(), 0.0) << vy.dump();
  EXPECT_EQ(vy["status"], "pass") << vy.dump();
  EXPECT_EQ(vy["rel_error_direct"].get<double>(), 0.0) << vy.dump();
  for (const auto& row : j["parameters"]) {
    EXPECT_GE(row["fd_noise"].get<double>(), 0.0) << row.dump();
    EXPECT_LE(row["rel_error_fd"].get<double>(), row["tolerance_fd"].get<double>()) << row.dump();
  }
  // The non-zero components are compared for real: well inside the tolerance, not floored away.
  EXPECT_GT(std::abs(j["parameters"][0]["adjoint"].get<double>()), 1e-3);
  EXPECT_LT(j["parameters"][0]["fd_noise"].get<double>(), 1e-6 * std::abs(j["parameters"][0]["adjoint"].get<double>()));
}

}  // namespace
