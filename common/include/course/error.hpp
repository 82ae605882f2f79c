// Error types shared by the whole course.
//
// Every problem with input (a file, a shape, a parameter) is reported by throwing course::Error
// with a message that names the thing and the problem, so that a program can print one clear
// line instead of crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace course {

/// A problem the user can fix: bad file, wrong shape, invalid parameter, CUDA failure.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown by exercise skeletons until the student fills them in. The grader recognises the
/// "not implemented: " prefix and tells the student which function is still missing.
class NotImplemented : public Error {
 public:
  explicit NotImplemented(const std::string& function)
      : Error("not implemented: " + function) {}
};

}  // namespace course
