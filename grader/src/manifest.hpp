// The lab manifest written by CMake at configure time (<build>/labs/manifest.json, see the end of
// grader/CMakeLists.txt): which labs exist, on which device they run, which files the student
// edits, and for every variant (exercises, solutions, a submission) the program and its target.
// The grader trusts this file, never what a lab program says about itself.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace course_grader {

struct LabProgram {
  std::string target;                  ///< cmake target, e.g. lab01_conv2d__exercises
  std::string path;                    ///< the test program (empty when not built)
  std::vector<std::string> missing;    ///< student sources missing from this variant's folder
};

struct ManifestLab {
  std::string name;                    ///< lab01_conv2d
  std::string device;                  ///< cpu or gpu
  std::vector<std::string> student_sources;  ///< relative to <variant folder>/<lab>
  std::vector<std::string> sanitize_tools;   ///< GPU labs: compute-sanitizer tools of the gate
  /// GPU labs: the doctest filter of the test cases that time the GPU (course_add_lab TIMED_TESTS).
  /// The grader runs them alone on the machine and the lab's other cases in parallel; empty (a
  /// manifest written before the field existed): the whole lab program runs alone.
  std::string timed_tests;
  /// Set when this build cannot compile the lab (a GPU lab in a build without the CUDA toolkit):
  /// the grader reports it as skipped with this reason. Its programs then have no path.
  std::string not_built_reason;
  std::map<std::string, LabProgram> programs;  ///< by variant name
};

struct Manifest {
  std::string source_dir;
  std::string build_dir;
  std::map<std::string, std::string> variants;  ///< name -> folder
  std::vector<ManifestLab> labs;               ///< in course order
};

/// Reads a manifest; throws std::runtime_error naming the file and the problem.
Manifest load_manifest(const std::string& path);

/// Maps what a user typed ("lab01", "1", "01", "lab01_conv2d") to lab names, in course order and
/// without duplicates. Empty input = every lab. Throws std::invalid_argument for an unknown lab.
std::vector<std::string> resolve_labs(const Manifest& manifest, const std::vector<std::string>& requested);

const ManifestLab& find_lab(const Manifest& manifest, const std::string& name);

}  // namespace course_grader
