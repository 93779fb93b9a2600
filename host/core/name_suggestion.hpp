// name_suggestion.hpp — "did you mean ...?" for a mistyped name: the closest
// of the known names by edit distance, case ignored. Startup messages only;
// never on the hot path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tokenspeed::metrics {

// The candidate closest to name, or "" when none is close enough. A candidate
// equal to name but for letter case always wins; otherwise the smallest
// (case-insensitive) Damerau-Levenshtein distance counts, at most 2 edits and
// at most a third of the longer name's length (so "otl" suggests "otlp", but
// "abc" suggests nothing from "jsonl"). Ties go to the earlier candidate.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

// Edit distance with adjacent transpositions, case-insensitive (ASCII).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace tokenspeed::metrics
