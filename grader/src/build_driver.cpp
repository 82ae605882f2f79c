#include "build_driver.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sandbox.hpp"

namespace fs = std::filesystem;

namespace course_grader {

CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir,
                          std::size_t head_bytes) {
  SandboxRequest request;
  request.argv = argv;
  request.result_channel = false;
  request.working_dir = working_dir.empty() ? fs::current_path().string() : working_dir;
  request.limits.timeout_s = 0;
  request.limits.memory_mb = 0;
  request.limits.max_file_mb = 0;
  // Compile errors come first in a log, so keep a generous head.
  request.limits.output_head_bytes = head_bytes;
  request.limits.output_tail_bytes = 64 * 1024;
  const SandboxResult r = run_sandboxed(request);
  CommandResult out;
  out.output = r.start_error.empty() ? r.output : r.start_error;
  out.seconds = r.seconds;
  if (r.ending == Ending::exited) out.exit_code = r.exit_code;
  return out;
}

std::string sanitize_name(const std::string& raw) {
  std::string out;
  for (unsigned char c : raw) out += (std::isalnum(c) || c == '_') ? static_cast<char>(c) : '_';
  return out.empty() ? std::string("submission") : out;
}

namespace {
bool has_lab_folders(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_directory(ec) && entry.path().filename().string().rfind("lab", 0) == 0) return true;
  return false;
}
}  // namespace

std::string submission_root(const std::string& folder) {
  const fs::path path = fs::absolute(folder).lexically_normal();
  if (!has_lab_folders(path) && fs::is_directory(path / "exercises")) return (path / "exercises").string();
  std::string text = path.string();
  if (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::vector<Submission> find_submissions(const std::string& folder) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_directory() && entry.path().filename().string()[0] != '.') dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<Submission> out;
  std::set<std::string> taken;
  for (const auto& dir : dirs) {
    const std::string base = sanitize_name(dir.filename().string());
    std::string name = base;
    for (int n = 2; taken.count(name); ++n) name = base + "_" + std::to_string(n);
    taken.insert(name);
    out.push_back({name, submission_root(dir.string())});
  }
  return out;
}

std::string variants_value(const std::vector<Submission>& submissions) {
  std::string out;
  for (const auto& s : submissions) {
    if (s.folder.find_first_of(";=") != std::string::npos)
      throw std::invalid_argument("cannot grade '" + s.folder + "': CMake cannot handle ';' or '=' in a folder path");
    out += (out.empty() ? "" : ";") + s.name + "=" + s.folder;
  }
  return out;
}

std::string cache_value(const std::string& build_dir, const std::string& key) {
  std::ifstream cache(build_dir + "/CMakeCache.txt");
  std::string line;
  const std::string prefix = key + ":";
  while (std::getline(cache, line))
    if (line.rfind(prefix, 0) == 0) {
      const std::size_t eq = line.find('=');
      return eq == std::string::npos ? "" : line.substr(eq + 1);
    }
  return "";
}

CommandResult ensure_configured(const std::string& source_dir, const std::string& build_dir,
                                const std::vector<std::pair<std::string, std::string>>& definitions,
                                const std::string& like_build_dir) {
  const bool configured = fs::exists(build_dir + "/CMakeCache.txt");
  bool differs = !configured;
  for (const auto& [key, value] : definitions) differs = differs || cache_value(build_dir, key) != value;
  if (!differs) return {0, "", 0};

  std::vector<std::string> argv = {"cmake", "-S", source_dir, "-B", build_dir};
  if (!configured && !like_build_dir.empty() && fs::exists(like_build_dir + "/CMakeCache.txt")) {
    const std::string generator = cache_value(like_build_dir, "CMAKE_GENERATOR");
    if (!generator.empty()) argv.insert(argv.end(), {"-G", generator});
    // COURSE_WITH_CUDA: a CPU-only main build grades submissions CPU-only too. The object cache:
    // the main build's, so the course's own code this build compiles again comes from it.
    for (const char* key : {"CMAKE_BUILD_TYPE", "CMAKE_CXX_COMPILER", "CMAKE_CUDA_COMPILER", "CMAKE_CUDA_ARCHITECTURES",
                            "CUDNN_ROOT", "COURSE_WITH_CUDA", "COURSE_OBJECT_CACHE", "COURSE_OBJECT_CACHE_DIR"}) {
      const std::string value = cache_value(like_build_dir, key);
      if (!value.empty()) argv.push_back(std::string("-D") + key + "=" + value);
    }
  }
  for (const auto& [key, value] : definitions) argv.push_back("-D" + key + "=" + value);
  return run_command(argv);
}

CommandResult build_target(const std::string& build_dir, const std::string& target, int jobs) {
  const int parallel = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  return run_command({"cmake", "--build", build_dir, "--target", target, "--parallel", std::to_string(parallel)});
}

namespace {
bool is_error_line(const std::string& line) {
  for (const char* marker : {": error:", ": fatal error:", "undefined reference to", "multiple definition of",
                             "ld returned", "CMake Error", "nvcc fatal", "No rule to make target", "error: "})
    if (line.find(marker) != std::string::npos) return true;
  return false;
}
bool is_noise(const std::string& line) {
  if (line.empty()) return true;
  for (const char* prefix : {"make[", "make:", "gmake[", "gmake:", "ninja: ", "FAILED: "})
    if (line.rfind(prefix, 0) == 0) return true;
  // Progress lines: "[ 42%] Building CXX object ..." (Makefiles), "[3/7] Linking ..." (Ninja).
  if (line[0] == '[')
    for (const char* what : {"] Building", "] Linking", "] Built target"})
      if (line.find(what) != std::string::npos) return true;
  // Ninja's "[4/8] <command>" echoes, and a custom command's "cd <build> && <command>".
  if (line[0] == '[' && line.find('/') != std::string::npos && line.find("] ") != std::string::npos &&
      line.find_first_not_of("0123456789/", 1) == line.find(']'))
    return true;
  if (line.rfind("cd ", 0) == 0 && line.find(" && ") != std::string::npos) return true;
  // Ninja echoes the failing compiler command line.
  return line.find(" -c ") != std::string::npos && line.find(" -o ") != std::string::npos;
}
}  // namespace

std::string first_errors(const std::string& log, std::size_t max_lines) {
  std::istringstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (is_error_line(lines[i])) {
      first = i;
      break;
    }
  if (first == lines.size()) {
    // No recognisable error line: show the end of the log, which is where tools say what failed.
    first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  } else if (first > 0 && lines[first - 1].find("In function") != std::string::npos) {
    --first;  // "file.cpp: In function 'f':" names the function the error is in
  }
  std::string out;
  std::size_t taken = 0;
  for (std::size_t i = first; i < lines.size() && taken < max_lines; ++i) {
    if (is_noise(lines[i])) continue;
    out += lines[i] + "\n";
    ++taken;
  }
  return out;
}

namespace {

// The file a diagnostic line is about, or "" for a line that names none: "PATH:12:5: error: ...",
// "PATH: In function ...", "PATH(12): error: ..." (nvcc), "In file included from PATH:3:",
// "                 from PATH:3,".
std::string diagnostic_path(const std::string& line) {
  std::string text = line;
  for (const char* prefix : {"In file included from ", "from "}) {
    const std::size_t start = text.find_first_not_of(" \t");
    if (start != std::string::npos && text.compare(start, std::strlen(prefix), prefix) == 0) {
      text = text.substr(start + std::strlen(prefix));
      break;
    }
  }
  if (text.empty() || text[0] == ' ' || text[0] == '\t') return "";
  for (std::size_t i = 1; i < text.size(); ++i) {
    const bool digit_next = i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if ((text[i] == ':' && (digit_next || text.compare(i, 5, ": In ") == 0 || text.compare(i, 5, ": At ") == 0 ||
                            text.compare(i, 3, ": (") == 0)) ||
        (text[i] == '(' && digit_next)) {
      const std::string path = text.substr(0, i);
      if (path.find('/') != std::string::npos || path.find('.') != std::string::npos) return path;
      return "";
    }
  }
  return "";
}

bool under_one_of(const std::string& path, const std::vector<std::string>& dirs) {
  if (path.empty() || path[0] != '/') return false;  // a relative path: nothing says where it points
  const std::string normal = fs::path(path).lexically_normal().string();
  for (std::string dir : dirs) {
    dir = fs::path(dir).lexically_normal().string();
    if (!dir.empty() && dir.back() != '/') dir += '/';
    if (normal.rfind(dir, 0) == 0) return true;
  }
  return false;
}

// A tool's own message: the guard's, the linker's (it names objects and symbols, never quotes a file).
bool is_tool_line(const std::string& line, const std::string& path) {
  if (line.rfind("course-guard:", 0) == 0 || line.rfind("collect2:", 0) == 0) return true;
  const std::string name = fs::path(path).filename().string();
  return name == "ld" || name.rfind("ld.", 0) == 0 || name == "collect2";
}

}  // namespace

std::string own_files_only(const std::string& log, const std::vector<std::string>& own_dirs) {
  std::istringstream in(log);
  std::string out;
  std::size_t dropped = 0;
  bool keep_following = true;  // whether the indented lines after the last head are shown
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && is_noise(line)) continue;  // the build tool's own lines: neither shown nor counted
    const std::string path = diagnostic_path(line);
    bool keep = false;
    if (is_tool_line(line, path)) {
      keep = true;
      keep_following = true;
    } else if (!path.empty()) {
      keep = under_one_of(path, own_dirs);
      keep_following = keep;
    } else if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      keep = keep_following;  // a quoted source line, a caret, a continuation
    } else {
      keep = true;  // a tool's line that names no file ("compilation terminated.", make's noise)
      keep_following = false;
    }
    if (keep) {
      out += line + "\n";
    } else {
      ++dropped;
    }
  }
  if (dropped > 0)
    out += "(" + std::to_string(dropped) + " line" + (dropped == 1 ? "" : "s") +
           " about files outside your submission not shown)\n";
  return out;
}

std::string first_error_location(const std::string& log, const std::vector<std::string>& own_dirs) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const std::string path = diagnostic_path(line);
    if (path.empty() || line.rfind("In file included", 0) == 0 || !under_one_of(path, own_dirs)) continue;
    if (line.find("error", path.size()) == std::string::npos) continue;
    // PATH:LINE:COL or PATH(LINE): only the numbers after the path.
    std::size_t end = path.size();
    while (end < line.size() && (line[end] == ':' || line[end] == '(' || line[end] == ')' ||
                                 std::isdigit(static_cast<unsigned char>(line[end]))))
      ++end;
    std::string where = fs::path(path).filename().string() + line.substr(path.size(), end - path.size());
    while (!where.empty() && (where.back() == ':' || where.back() == '(')) where.pop_back();
    return where;
  }
  return "";
}

}  // namespace course_grader
