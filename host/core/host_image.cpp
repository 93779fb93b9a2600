// host_image.cpp — dladdr of a function of this file: the image it is in.
#include "core/host_image.hpp"

#include <dlfcn.h>

#include <system_error>

namespace tokenspeed::metrics {

std::filesystem::path host_image_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&host_image_directory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ignored;
  return std::filesystem::weakly_canonical(std::filesystem::path(info.dli_fname), ignored)
      .parent_path();
}

}  // namespace tokenspeed::metrics
