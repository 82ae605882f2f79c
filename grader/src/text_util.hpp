// Small text helpers for the report writers: lab programs can print any bytes, and every report
// format has characters that must be escaped.
#pragma once

#include <string>

namespace course_grader {

/// Student text made inert: grader::text::inert_text (grader/text/inert_text.hpp): invalid
/// UTF-8, C0/C1 controls and Unicode format characters (bidi overrides and isolates, zero-width
/// characters) become '?' (escape sequences cannot reach a terminal, XML 1.0 cannot carry them,
/// nothing can reorder a line); carriage returns are dropped.
std::string clean_text(const std::string& text);

struct LabResult;
struct GradeRun;

/// The one line every report shows when the run's sandbox is degraded ("" when it is not).
std::string degraded_notice(const GradeRun& run);

/// Every text field of a lab's result through clean_text (reason, hint, details, output,
/// sanitizer report, notes, the cases' messages and exceptions): run on every result before any
/// report sees it, so a field a future change fills from student text is covered too.
void make_inert(LabResult& lab);

/// Escapes & < > " ' for XML text and attribute values (after clean_text).
std::string xml_escape(const std::string& text);

/// One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a leading = + -
/// or @ gets a ' in front so that spreadsheets do not run it as a formula.
std::string csv_field(const std::string& text);

/// The last `max_bytes` of `text` (cut at a line start when possible), with a note when cut.
std::string last_part(const std::string& text, std::size_t max_bytes);

}  // namespace course_grader
