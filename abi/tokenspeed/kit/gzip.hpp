/*
 * tokenspeed/kit/gzip.hpp — gzip (RFC 1952) compression of a request body
 * through zlib. Link zlib (dependency('zlib')). Delivery thread only.
 */
#ifndef TOKENSPEED_KIT_GZIP_HPP
#define TOKENSPEED_KIT_GZIP_HPP

#include <zlib.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace tokenspeed::metrics::kit {

/* Appends the gzip encoding of data to out (cleared first). Throws
 * std::runtime_error when zlib fails (out of memory). */
inline void gzip_compress(std::string_view data, std::string& out,
                          int level = Z_DEFAULT_COMPRESSION) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  out.resize(deflateBound(&stream, static_cast<uLong>(data.size())));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  const uLong written = stream.total_out;
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip: deflate failed");
  out.resize(written);
}

inline std::string gzip_compress(std::string_view data, int level = Z_DEFAULT_COMPRESSION) {
  std::string out;
  gzip_compress(data, out, level);
  return out;
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_GZIP_HPP
