#include "inert_text.hpp"

namespace grader::text {

bool is_unsafe_code_point(unsigned code) {
  if (code < 0x20) return code != '\t' && code != '\n';
  if (code >= 0x7f && code <= 0x9f) return true;  // DEL and the C1 controls
  if (code == 0x00ad || code == 0x061c || code == 0x180e) return true;
  if (code >= 0x200b && code <= 0x200f) return true;  // zero-width space/joiners, LRM, RLM
  if (code >= 0x2028 && code <= 0x202e) return true;  // separators, bidi embeddings/overrides
  if (code >= 0x2060 && code <= 0x206f) return true;  // word joiner, invisible operators, isolates
  if (code == 0xfeff) return true;                    // zero-width no-break space / BOM
  if (code >= 0xfff9 && code <= 0xfffb) return true;  // interlinear annotations
  if (code == 0xfffe || code == 0xffff) return true;  // noncharacters
  if (code >= 0xe0000 && code <= 0xe007f) return true;  // tag characters
  return false;
}

std::size_t incomplete_utf8_tail(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  // Look back over at most 3 continuation bytes for the lead byte of the last sequence.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char c = s[n - back];
    if ((c & 0xc0) == 0x80) continue;  // a continuation byte: keep looking
    const std::size_t length = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

std::string inert_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if (c != '\r') out += is_unsafe_code_point(c) ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    // The sequence's length from its lead byte, and the smallest code point that length may
    // encode (an overlong form such as C0 9B would otherwise smuggle a control through).
    std::size_t length = 0;
    unsigned min_code = 0, code = 0;
    if ((c & 0xe0) == 0xc0) {
      length = 2, min_code = 0x80, code = c & 0x1fu;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3, min_code = 0x800, code = c & 0x0fu;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4, min_code = 0x10000, code = c & 0x07u;
    }
    bool valid = length > 0 && i + length <= n;
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (s[i + k] & 0xc0) == 0x80;
      code = (code << 6) | (s[i + k] & 0x3fu);
    }
    valid = valid && code >= min_code && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    if (!valid) {
      out += '?';  // one '?' per bad byte; resynchronise at the next byte
      ++i;
    } else {
      if (is_unsafe_code_point(code)) out += '?';
      else out.append(reinterpret_cast<const char*>(s + i), length);
      i += length;
    }
  }
  return out;
}

}  // namespace grader::text
