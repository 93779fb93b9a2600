// host_image.hpp — where the file that holds the host's code lies, so that
// what is installed beside it (the sink helper, a relocatable plugin
// directory) is found wherever the install was unpacked.
#pragma once

#include <filesystem>

namespace tokenspeed::metrics {

// The directory of the image (the host library, or an executable that links
// the host statically) containing this code, found with dladdr and made
// canonical; empty when the loader cannot say.
std::filesystem::path host_image_directory();

}  // namespace tokenspeed::metrics
