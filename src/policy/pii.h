// PII detectors behind the built-in `pii` tagger (policy/taggers.h).
//
// Kinds and their rules (docs/policy.md "Taggers" has the table and what stays undetected):
//  - pii:email: `local@domain.tld`; also written with a spaced `@` (`alice @ example.com`),
//    bracketed markers (`alice[at]example[dot]com`, `(at)`, `{at}`, `<at>`, `[.]`, `(.)`)
//    or the words `at` and `dot` between spaces (`alice at example dot com`). A plain word
//    `at` followed by a real dot (`alice.smith at example.com`) counts only when the local
//    part has a character prose words lack (`.`, `_`, `+`, `%`, `-` or a digit), so that
//    "look at example.com" is not an address.
//  - pii:phone: `+` and 8-15 digits (ITU-T E.164, any grouping, `(0)` trunk included);
//    international prefixes `00` / `011` with 8-15 digits after them; North American
//    `NXX-NXX-XXXX` (optionally `1-`); national numbers with a trunk `0` (first group of 2-5
//    digits starting with 0, 9-12 digits, one kind of separator: `020 7946 0958`,
//    `06 12 34 56 78`, `030-12345678`; the digit after the 0 is not 0); and 10-15 digits in any
//    grouping when a phone word
//    (`phone`, `tel`, `mobile`, `cell`, `fax`, `whatsapp`, `sms`, `call me`) is at most 32
//    characters before them.
//  - pii:payment_card: 13-19 digits grouped by spaces or dashes passing the Luhn check
//    (ISO/IEC 7812-1).
//  - pii:ssn: US social security numbers without the SSA's never-issued ranges (area 000,
//    666, 900-999; group 00; serial 0000): `AAA-GG-SSSS`, `AAA GG SSSS`, `AAA.GG.SSSS`, and
//    nine digits without separators when an SSN word (`ssn`, `social security`, `soc sec`,
//    `ss#`, `ss no`, `ss number`) is at most 32 characters before them.
//  - pii:iban: ISO 13616 mod-97 check, compact or in groups of 4.
//  - pii:ip: IPv4 dotted quad; IPv6 as `inet_pton` accepts it.
//
// Detectors expect normalised text (policy/scan_normalize.h); PiiTags normalises itself.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kinference::policy {

// A part of a scan text (byte offset and size), e.g. one string value of the request body.
struct TextSpan {
  size_t offset = 0;
  size_t size = 0;
};

// How much of each neighbour PiiTags joins (characters from the end of one value and from
// the start of the next): enough for an e-mail address of common length and an SSN with
// its context word; a value split in two longer halves is not recovered.
inline constexpr size_t kSplitWindowChars = 64;

// Kinds of PII found in `text`, as tags ("pii", "pii:email", ...), sorted, no duplicates;
// empty when none. `text` is normalised first (NormalizeForScan).
std::vector<std::string> PiiTags(std::string_view text);

// As above, and also across neighbouring values: for each pair of consecutive `values`
// (spans of `text`, in document order), the last kSplitWindowChars characters of the first
// and the first kSplitWindowChars of the second are joined (directly and with one space) and
// scanned, so that a datum split across two messages or fields ("my card is 4111 1111",
// "1111 1111") is found.
std::vector<std::string> PiiTags(std::string_view text, std::span<const TextSpan> values);

// As above, and also across each group of `groups` as if its spans were neighbours: the
// turns of one role in order (RequestScan::role_values), so that a datum split across
// the user's turns with the assistant's turn between them is found.
std::vector<std::string> PiiTags(std::string_view text, std::span<const TextSpan> values,
                                 std::span<const std::vector<TextSpan>> groups);

// Runs every detector on already-normalised `text`, inserting the kinds found
// ("pii:email", ...; not "pii").
void FindPii(std::string_view text, std::set<std::string>& kinds);

// Individual detectors (exposed for tests).
bool LuhnValid(std::string_view digits);   // digits only
bool IbanValid(std::string_view compact);  // upper-case letters and digits, no spaces
bool IsSsn(std::string_view text);         // exactly "AAA-GG-SSSS"
bool HasEmail(std::string_view text);      // plain or obfuscated (see above)

}  // namespace kinference::policy
