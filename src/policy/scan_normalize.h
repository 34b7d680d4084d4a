// Scan normalisation: the text the built-in PII taggers match against, with the ordinary
// ways of writing the same characters differently undone, so that `alice%40example.com`,
// `alice&#64;example.com`, `ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ`, `4111​1111…`
// (with a zero-width space) or `٤١١١ ١١١١ ١١١١ ١١١١` (Arabic-Indic digits) read as their plain
// ASCII forms.
//
// Steps, repeated (at most kMaxScanNormalizeRounds times) while a step changes the text,
// so that layered encodings (`%2540`, `&amp;#64;`, `％４０`) are undone too:
//  1. Escapes: URL percent-encoding `%XX` (RFC 3986 section 2.1; `+` is left alone, it is
//     a phone number's prefix), HTML character references (numeric `&#64;`, `&#x40;`, with
//     or without the `;`, and the named references that spell the characters PII is made of,
//     e.g. `&commat;`, `&period;`, `&nbsp;`, `&amp;`; WHATWG HTML "named character
//     references"), and JSON/JavaScript `\uXXXX` escapes (surrogate pairs joined) that a
//     client double-encoded.
//  2. Unicode (only when a byte >= 0x80 is present): NFKC (ICU's Normalizer2; Unicode UAX
//     #15), which folds full-width forms (`＠`, `１`), mathematical and circled digits,
//     ligatures and compatibility spaces; then, per code point: default-ignorable code
//     points and General_Category Cf (format: zero-width space/joiners, soft hyphen, BOM,
//     bidi controls), Mn and Me (combining marks left after NFKC) removed; Nd (decimal
//     digits of every script: Arabic-Indic, Devanagari, Thai, ...) mapped to ASCII `0`-`9`;
//     Zs, Zl, Zp (space separators) to ` `; Pd (dashes) and U+2212 MINUS SIGN to `-`;
//     U+3002 IDEOGRAPHIC FULL STOP to `.`; then every other non-ASCII character whose
//     UTS #39 confusable skeleton (ICU's uspoof_getSkeleton over Unicode's confusables.txt),
//     combining marks dropped, is printable ASCII becomes that ASCII (Cyrillic `а`, Greek
//     `ο` -> `a`, `o`; Cyrillic `З` -> `3`; `é` -> `e`), so a homoglyph e-mail address reads
//     as the address it imitates. A look-alike whose skeleton is a digit's (`O` for 0, `l`
//     for 1: Cyrillic `О`, `І`) becomes the digit when the nearest character around it,
//     separators and other such look-alikes skipped, is an ASCII digit (left first, at most
//     24 characters away), else the letter. Characters without an ASCII look-alike are kept.
// Invalid UTF-8 becomes U+FFFD (ICU's conversion) and never matches a detector.
//
// The normalised text is for matching only: it is never sent anywhere.
//
// Thread-safety: pure functions (ICU's normaliser and spoof checker instances are
// immutable and shared; the skeleton cache is per thread).
#pragma once

#include <string>
#include <string_view>

namespace kinference::policy {

inline constexpr int kMaxScanNormalizeRounds = 4;

// True when NormalizeForScan(text) may differ from `text` (a byte >= 0x80, '%', '&' or
// '\'): plain ASCII prose without those is matched as it is, without a copy.
bool NeedsScanNormalization(std::string_view text);

// The normalised text (see above). Usually shorter than `text`; at most 11 times as long
// (NFKC's largest expansion of UTF-8 text, UAX #15 "Stabilization Policies"; U+FDFA becomes
// 18 code points), decoding only shrinks.
std::string NormalizeForScan(std::string_view text);

}  // namespace kinference::policy
