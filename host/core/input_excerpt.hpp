// input_excerpt.hpp — how an error message quotes what a user or a plugin
// gave (a name, a key, a path): whole when short, otherwise its start and its
// size, so that a 2 MB name cannot turn one error line into 2 MB.
// Header-only so every component can use it without a link dependency.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tokenspeed::metrics {

// The longest quoted input kept whole in a message.
inline constexpr std::size_t kInputExcerptLimit = 120;

// text itself when it has at most limit bytes, otherwise its first limit
// bytes (never ending inside a UTF-8 sequence) followed by "... (N bytes)".
inline std::string input_excerpt(std::string_view text, std::size_t limit = kInputExcerptLimit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t cut = limit;
  // Back up over continuation bytes (10xxxxxx) so a character is not split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace tokenspeed::metrics
