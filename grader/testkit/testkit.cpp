#include "testkit.hpp"

#include <functional>

namespace grader {

std::uint64_t seed() {
  static const std::uint64_t value = course::test_seed();
  return value;
}

course::Rng& rng() {
  static course::Rng generator(seed());
  return generator;
}

course::Rng case_rng(const std::string& case_name) {
  return course::Rng(seed() ^ (std::hash<std::string>{}(case_name) * 0x9E3779B97F4A7C15ull));
}

course::Tensor poisoned(const course::Shape& shape) {
  course::Tensor t(shape);
  course::poison(t);
  return t;
}

bool check_tensor(const std::string& what, const course::Tensor& actual, const course::Tensor& expected,
                  const course::Tolerance& tol) {
  const course::Comparison c = course::compare(actual, expected, tol);
  CHECK_MESSAGE(c.ok(), what << ": " << c.report(expected.shape()) << "\n  (seed " << seed()
                             << "; replay with COURSE_SEED=" << seed() << ")");
  return c.ok();
}

void check_rejects(const std::string& what, const std::function<void()>& call, const std::string& part) {
  std::string message;
  bool threw = false;
  try {
    call();
  } catch (const course::NotImplemented&) {
    throw;  // let the runner report "not implemented" rather than a confusing check failure
  } catch (const course::Error& e) {
    threw = true;
    message = e.what();
  }
  CHECK_MESSAGE(threw, what << ": expected a course::Error, but the call returned normally");
  if (threw && !part.empty())
    CHECK_MESSAGE(message.find(part) != std::string::npos,
                  what << ": error message \"" << message << "\" should mention \"" << part << "\"");
}

}  // namespace grader

#include <cstdlib>
#include <fstream>

namespace grader {

std::vector<nlohmann::json> hidden_cases(const std::string& lab) {
  const char* dir = std::getenv("COURSE_HIDDEN_DIR");
  if (dir == nullptr || *dir == '\0') return {};
  const std::string path = std::string(dir) + "/" + lab + ".json";
  std::ifstream in(path);
  if (!in) return {};
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw course::Error(path + ": hidden cases are not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
    throw course::Error(path + ": hidden cases file must be {\"cases\": [ ... ]}");
  return doc["cases"].get<std::vector<nlohmann::json>>();
}

}  // namespace grader

#include <filesystem>
#include <random>

namespace grader {

TemporaryHiddenDir::TemporaryHiddenDir() {
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() / ("course-hidden-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  path_ = dir.string();
  if (const char* old = std::getenv("COURSE_HIDDEN_DIR")) previous_ = std::string(old);
  ::setenv("COURSE_HIDDEN_DIR", path_.c_str(), 1);
}

TemporaryHiddenDir::~TemporaryHiddenDir() {
  if (previous_)
    ::setenv("COURSE_HIDDEN_DIR", previous_->c_str(), 1);
  else
    ::unsetenv("COURSE_HIDDEN_DIR");
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void TemporaryHiddenDir::write(const std::string& lab, const std::string& json_text) const {
  const std::string file = path_ + "/" + lab + ".json";
  std::ofstream out(file);
  out << json_text;
  if (!out) throw course::Error(file + ": cannot write the hidden-case file");
}

}  // namespace grader

#include <map>

namespace grader {

const course::TensorFile& fixture_file(const std::string& file_name) {
  static std::map<std::string, course::TensorFile> cache;  // tests run on one thread
  auto it = cache.find(file_name);
  if (it == cache.end())
    it = cache.emplace(file_name, course::read_safetensors(std::string(COURSE_FIXTURE_DIR) + "/" + file_name)).first;
  return it->second;
}

const course::Tensor& fixture_tensor(const std::string& file_name, const std::string& tensor_name) {
  const auto& tensors = fixture_file(file_name).tensors;
  const auto it = tensors.find(tensor_name);
  if (it == tensors.end()) throw course::Error(file_name + " has no tensor \"" + tensor_name + "\"");
  return it->second;
}

}  // namespace grader
