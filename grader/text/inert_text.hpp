// The one function that makes student text inert before any report shows it. Used by the grader
// (every report writer, through clean_text) and by the test program (the worker's output tap and
// the exception messages that come back over the call channel, grader/rpc/client.cpp), so both
// sides strip exactly the same characters: one implementation, linked into both.
#pragma once

#include <string>
#include <string_view>

namespace grader::text {

/// Returns `text` with everything that could change how a report LOOKS replaced by '?':
///  - bytes that are not valid UTF-8 (stray continuation bytes, overlong forms, surrogates,
///    code points above U+10FFFF, truncated sequences): each offending byte becomes one '?';
///  - C0 controls other than tab and newline, and DEL (escape sequences, bells, backspaces);
///    a carriage return is dropped ("\rPASSED" would overwrite the line it ends);
///  - C1 controls U+0080..U+009F (U+009B is a one-character CSI that many terminals honour);
///  - Unicode format characters that reorder or hide text: bidi embeddings, overrides and
///    isolates (U+202A..U+202E, U+2066..U+2069, U+061C, U+200E/U+200F), zero-width characters
///    (U+200B..U+200D, U+2060..U+2064, U+FEFF), the line and paragraph separators U+2028/U+2029,
///    the deprecated format controls U+206A..U+206F, soft hyphen U+00AD, U+180E, the
///    interlinear annotation marks U+FFF9..U+FFFB, the noncharacters U+FFFE/U+FFFF and the tag
///    characters U+E0000..U+E007F (invisible "ASCII smuggling").
/// Everything else (printable ASCII, tab, newline, ordinary letters of any script) is kept.
std::string inert_text(std::string_view text);

/// How many bytes at the end of `text` are the start of a UTF-8 sequence that is not complete
/// yet (0..3): a reader of a stream keeps them for its next piece instead of cleaning them now.
std::size_t incomplete_utf8_tail(std::string_view text);

/// True for a code point inert_text replaces (the controls and format characters above).
bool is_unsafe_code_point(unsigned code);

}  // namespace grader::text
