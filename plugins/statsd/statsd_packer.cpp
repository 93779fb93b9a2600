// statsd_packer.cpp — datagram packing (see statsd_packer.hpp). No I/O.
#include "statsd_packer.hpp"

namespace tokenspeed::metrics::statsd {

void DatagramPacker::add_lines(std::string_view text, std::vector<std::string>& out) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    add_line(text.substr(0, end), out);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

void DatagramPacker::append(std::string_view piece, std::vector<std::string>& out) {
  const std::size_t needed = current_.empty() ? piece.size() : current_.size() + 1 + piece.size();
  if (needed > max_bytes_) finish(out);
  if (!current_.empty()) current_ += '\n';
  current_ += piece;
}

void DatagramPacker::add_line(std::string_view line, std::vector<std::string>& out) {
  if (line.empty()) return;
  if (line.size() <= max_bytes_) {
    append(line, out);
    return;
  }
  // "name:v|ms:v|ms:...": split between values, the name repeated.
  const std::size_t colon = line.find(':');
  const std::size_t pipe = line.find('|');
  if (colon == std::string_view::npos || pipe == std::string_view::npos || pipe < colon ||
      line.find('#') != std::string_view::npos) {
    ++oversized_;
    oversized_bytes_ += line.size();
    return;
  }
  const std::string_view name = line.substr(0, colon);
  std::string_view values = line.substr(colon + 1);
  std::string piece;
  while (!values.empty()) {
    const std::size_t end = values.find(':');
    const std::string_view value = values.substr(0, end);
    if (name.size() + 1 + value.size() > max_bytes_) {
      ++oversized_;
      oversized_bytes_ += name.size() + 1 + value.size();
    } else {
      if (!piece.empty() && piece.size() + 1 + value.size() > max_bytes_) {
        append(piece, out);
        piece.clear();
      }
      if (piece.empty()) piece.assign(name);
      piece += ':';
      piece += value;
    }
    if (end == std::string_view::npos) break;
    values.remove_prefix(end + 1);
  }
  if (!piece.empty()) append(piece, out);
}

void DatagramPacker::finish(std::vector<std::string>& out) {
  if (current_.empty()) return;
  out.push_back(std::move(current_));
  current_.clear();
}

}  // namespace tokenspeed::metrics::statsd
