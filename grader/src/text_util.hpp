// Small text helpers for the report writers: lab programs can print any bytes, and every report
// format has characters that must be escaped.
#pragma once

#include <string>

namespace course_grader {

/// Replaces bytes that are not valid UTF-8 with '?' and control characters other than tab and
/// newline with '?' (escape sequences cannot reach a terminal, XML 1.0 cannot carry them at
/// all); drops carriage returns.
std::string clean_text(const std::string& text);

/// Escapes & < > " ' for XML text and attribute values (after clean_text).
std::string xml_escape(const std::string& text);

/// One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a leading = + -
/// or @ gets a ' in front so that spreadsheets do not run it as a formula.
std::string csv_field(const std::string& text);

/// The last `max_bytes` of `text` (cut at a line start when possible), with a note when cut.
std::string last_part(const std::string& text, std::size_t max_bytes);

}  // namespace course_grader
