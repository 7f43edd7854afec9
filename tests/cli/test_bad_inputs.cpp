// Runs the malformed-input corpus (tests/data/bad/MANIFEST.tsv, written by make_corpus.py)
// through the built CLI, without a shell: every case must end with exit code 2 (bad input)
// or 3 (failed run) and one stderr line "addsim: error: ..." that contains the case's
// fragment and names its file, and must never print "internal error", crash or hang.
// Also the shell-injection regression of `landscape` (issue 18, defect 1).

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

// Runs the addsim binary with `args` (no shell) in `dir`, stdout/stderr captured, killed
// after kCaseTimeout seconds. ADDSIM_MEMORY_LIMIT makes the memory verdicts machine-independent.
Outcome run_argv(const std::vector<std::string>& args, const fs::path& dir) {
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
  Outcome o;
  const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    o.err = "posix_spawn failed";
    return o;
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kCaseTimeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      o.hung = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

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
  std::map<std::string, int> counts;
  std::map<std::string, int> by_group;
  int total = 0;
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cells = split_tabs(line);
    ASSERT_EQ(cells.size(), 4u) << line;
    const std::string& id = cells[0];
    const fs::path tmp = root / id;
    fs::create_directories(tmp);
    auto expand = [&](const std::string& s) {
      return replace_all(replace_all(s, "{bad}", bad.string()), "{tmp}", tmp.string());
    };
    std::vector<std::string> args;
    std::istringstream words(expand(cells[1]));
    for (std::string w; std::getline(words, w, ' ');)
      if (!w.empty()) args.push_back(w);
    const Outcome o = run_argv(args, tmp);
    const std::string v = verdict(o, expand(cells[2]), expand(cells[3]));
    ++counts[v];
    ++by_group[id.substr(0, id.find('_'))];
    ++total;
    EXPECT_EQ(v, "ok") << id << ": addsim " << expand(cells[1]) << "\n  exit " << o.code << " signal " << o.signal
                       << "\n  stderr: " << o.err << "  expected: " << expand(cells[2]) << " naming " << expand(cells[3]);
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
