#include "handout.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <vector>

#include "build_driver.hpp"

namespace fs = std::filesystem;

namespace course_grader {

bool excluded_from_handout(const std::string& relative_path) {
  const fs::path path(relative_path);
  const std::string first = path.begin() == path.end() ? "" : path.begin()->string();
  if (first == "solutions" || first == ".git") return true;
  if (relative_path.rfind("grader/planted/", 0) == 0) return true;
  for (const auto& part : path)
    if (part == "hidden") return true;
  return false;
}

namespace {

// The files a clone of the course has: git's view when the source is a work tree (tracked files
// plus new ones that are not ignored), otherwise every file except build folders and the
// generated data the setup recreates.
std::vector<std::string> course_files(const std::string& source) {
  std::vector<std::string> files;
  if (fs::exists(source + "/.git")) {
    const CommandResult listed =
        run_command({"git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"}, "", 64u << 20);
    if (listed.ok()) {
      std::size_t start = 0;
      for (std::size_t end; (end = listed.output.find('\0', start)) != std::string::npos; start = end + 1)
        files.push_back(listed.output.substr(start, end - start));
      return files;
    }
  }
  const fs::path root(source);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string relative = it->path().lexically_relative(root).string();
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == ".git" || name == "node_modules" ||
                               name == "__pycache__" || relative == "data/generated" || relative == "data/npm" ||
                               fs::exists(it->path() / "CMakeCache.txt"))) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory()) files.push_back(relative);
  }
  return files;
}

// A destination inside the course would be copied into itself -- unless it lies in a build
// folder, which is never copied (git ignores /build*/, the walk skips build folders).
bool bad_destination(const fs::path& dest, const fs::path& source) {
  if (dest == source) return true;
  const auto rel = dest.lexically_relative(source);
  if (rel.empty() || rel.begin()->string() == "..") return false;
  return rel.begin()->string().rfind("build", 0) != 0;
}

}  // namespace

int run_handout(const HandoutOptions& o) {
  const fs::path source = fs::absolute(o.source_dir).lexically_normal();
  const fs::path dest = fs::absolute(o.destination).lexically_normal();
  if (!fs::exists(source / "CMakeLists.txt") || !fs::is_directory(source / "exercises"))
    throw UsageError(source.string() + " does not look like the course (no CMakeLists.txt or exercises/)");
  if (fs::exists(dest) && (!fs::is_directory(dest) || !fs::is_empty(dest)))
    throw UsageError(dest.string() + " exists and is not an empty folder");
  if (bad_destination(dest, source)) throw UsageError("choose a destination outside the course folder (or in a build folder)");

  std::map<std::string, int> left_out;
  int copied = 0;
  for (const auto& relative : course_files(source.string())) {
    const fs::path from = source / relative;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(from, ec))) continue;  // deleted in the work tree
    if (excluded_from_handout(relative)) {
      const std::size_t planted = relative.rfind("grader/planted/", 0) == 0 ? 15 : relative.find('/') + 1;
      ++left_out[relative.substr(0, planted)];
      continue;
    }
    const fs::path to = dest / relative;
    fs::create_directories(to.parent_path());
    if (fs::is_symlink(from)) fs::copy_symlink(from, to);
    else fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    ++copied;
  }
  std::printf("Exported %d files to %s\n", copied, dest.string().c_str());
  for (const auto& [what, count] : left_out) std::printf("  left out %s (%d files)\n", what.c_str(), count);
  std::printf("Students start with: cd %s && ./course grade\n", dest.string().c_str());
  return 0;
}

}  // namespace course_grader
