#include <cstdio>
#include "text_util.hpp"

#include "results.hpp"
#include "text/inert_text.hpp"

namespace course_grader {

std::string clean_text(const std::string& text) { return grader::text::inert_text(text); }

std::string degraded_notice(const GradeRun& run) {
  if (!run.sandbox_degraded) return "";
  return "DEGRADED: student code ran WITHOUT isolation (sandbox mode " + run.sandbox_mode +
         "): as the grader's own user, able to read and change what that user can (hidden cases, "
         "reference workers, other submissions, the reports). " + clean_text(run.sandbox_description);
}

void make_inert(LabResult& lab) {
  for (std::string* field : {&lab.reason, &lab.hint, &lab.details, &lab.output, &lab.sanitizer_report, &lab.sandbox})
    *field = clean_text(*field);
  for (std::string& note : lab.notes) note = clean_text(note);
  for (CaseResult& c : lab.cases) {
    c.name = clean_text(c.name);
    c.exception = clean_text(c.exception);
    for (std::string& m : c.messages) m = clean_text(m);
  }
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : clean_text(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string csv_field(const std::string& text) {
  std::string value = clean_text(text);
  if (!value.empty() && (value[0] == '=' || value[0] == '+' || value[0] == '-' || value[0] == '@'))
    value = "'" + value;
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string last_part(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t start = text.size() - max_bytes;
  const std::size_t line = text.find('\n', start);
  if (line != std::string::npos && line - start < 200) start = line + 1;
  return "[... " + std::to_string(start) + " bytes left out ...]\n" + text.substr(start);
}

std::optional<Speedup> lab_speedup(const LabResult& lab) {
  Speedup s;
  bool found = false;
  for (const Metric& m : lab.metrics) {
    if (m.name == "speedup_vs_reference") {
      s.point = m.value;
      found = true;
    } else if (m.name == "speedup_ci_low") {
      s.low = m.value;
    } else if (m.name == "speedup_ci_high") {
      s.high = m.value;
    } else if (m.name == "speedup_vs_reference_required") {
      s.required = m.value;
    }
  }
  if (!found) return std::nullopt;
  return s;
}

std::string format_speedup(const Speedup& s, bool words) {
  char buf[96];
  if (words) std::snprintf(buf, sizeof buf, "%.2fx (95%% CI %.2f-%.2fx)", s.point, s.low, s.high);
  else std::snprintf(buf, sizeof buf, "%.2f [%.2f-%.2f]", s.point, s.low, s.high);
  return buf;
}

}  // namespace course_grader
