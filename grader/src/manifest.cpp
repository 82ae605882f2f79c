#include "manifest.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace course_grader {

Manifest load_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the lab manifest (configure the build first)");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
    Manifest m;
    m.source_dir = doc.at("source_dir").get<std::string>();
    m.build_dir = doc.at("build_dir").get<std::string>();
    for (const auto& v : doc.at("variants")) m.variants[v.at("name").get<std::string>()] = v.at("folder").get<std::string>();
    for (const auto& l : doc.at("labs")) {
      ManifestLab lab;
      lab.name = l.at("name").get<std::string>();
      lab.device = l.at("device").get<std::string>();
      lab.student_sources = l.at("student_sources").get<std::vector<std::string>>();
      if (l.contains("sanitize_tools")) lab.sanitize_tools = l.at("sanitize_tools").get<std::vector<std::string>>();
      if (l.contains("timed_tests")) lab.timed_tests = l.at("timed_tests").get<std::string>();
      if (l.contains("not_built_reason")) lab.not_built_reason = l.at("not_built_reason").get<std::string>();
      for (const auto& [variant, p] : l.at("programs").items())
        lab.programs[variant] = {p.at("target").get<std::string>(), p.at("path").get<std::string>(),
                                 p.at("missing").get<std::vector<std::string>>()};
      m.labs.push_back(std::move(lab));
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a valid lab manifest (" + e.what() + ")");
  }
}

namespace {
// "lab01_conv2d" -> 1; -1 when the name does not start with lab<digits>.
int lab_number(const std::string& name) {
  if (name.rfind("lab", 0) != 0) return -1;
  std::size_t i = 3;
  int n = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) n = n * 10 + (name[i++] - '0');
  return i == 3 ? -1 : n;
}
}  // namespace

std::vector<std::string> resolve_labs(const Manifest& manifest, const std::vector<std::string>& requested) {
  std::vector<bool> chosen(manifest.labs.size(), requested.empty());
  for (const auto& want : requested) {
    int number = -1;
    if (!want.empty() && std::all_of(want.begin(), want.end(), [](unsigned char ch) { return std::isdigit(ch); }))
      number = std::stoi(want);
    else if (want.find('_') == std::string::npos)
      number = lab_number(want);
    bool found = false;
    for (std::size_t i = 0; i < manifest.labs.size(); ++i) {
      const std::string& name = manifest.labs[i].name;
      if (name == want || (number >= 0 && lab_number(name) == number)) {
        chosen[i] = true;
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const auto& l : manifest.labs) known += (known.empty() ? "" : ", ") + l.name;
      throw std::invalid_argument("unknown lab '" + want + "' (labs in this build: " + (known.empty() ? "none" : known) + ")");
    }
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < manifest.labs.size(); ++i)
    if (chosen[i]) out.push_back(manifest.labs[i].name);
  return out;
}

const ManifestLab& find_lab(const Manifest& manifest, const std::string& name) {
  for (const auto& l : manifest.labs)
    if (l.name == name) return l;
  throw std::invalid_argument("lab " + name + " is not in the manifest");
}

}  // namespace course_grader
