#include <cstdio>
#include "text_util.hpp"

#include "results.hpp"

namespace course_grader {

std::string clean_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      // A carriage return would let a line overwrite itself on a terminal ("\rPASSED"): dropped.
      if (c != '\r') out += (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    // Length of the sequence from its lead byte, and the smallest code point it may encode
    // (rejects overlong forms).
    std::size_t length = 0;
    unsigned min_code = 0;
    unsigned code = 0;
    if ((c & 0xe0) == 0xc0) {
      length = 2;
      min_code = 0x80;
      code = c & 0x1fu;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3;
      min_code = 0x800;
      code = c & 0x0fu;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4;
      min_code = 0x10000;
      code = c & 0x07u;
    }
    bool valid = length > 0 && i + length <= n;
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (s[i + k] & 0xc0) == 0x80;
      code = (code << 6) | (s[i + k] & 0x3fu);
    }
    valid = valid && code >= min_code && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
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
