// elf_compatibility.cpp — the ELF identification of a plugin file compared
// with the header of the image this code runs in (found with dladdr, so no
// table of build targets has to be kept in step).
#include "plugin/elf_compatibility.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tokenspeed::metrics {
namespace {

struct ElfIdentity {
  unsigned char elf_class = 0;  // ELFCLASS32 / ELFCLASS64
  unsigned char data = 0;       // ELFDATA2LSB / ELFDATA2MSB
  unsigned machine = 0;         // e_machine, in host order
};

// e_machine sits at the same offset (18) in 32- and 64-bit headers, in the
// file's byte order.
ElfIdentity identity_of(const unsigned char* header) {
  ElfIdentity id;
  id.elf_class = header[EI_CLASS];
  id.data = header[EI_DATA];
  const unsigned lo = header[18];
  const unsigned hi = header[19];
  id.machine = id.data == ELFDATA2MSB ? (lo << 8) | hi : (hi << 8) | lo;
  return id;
}

// The identity of the image (executable or library) that contains this code.
const ElfIdentity& this_process() {
  static const ElfIdentity identity = [] {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&elf_compatibility_problem), &info) != 0 &&
        info.dli_fbase != nullptr) {
      return identity_of(static_cast<const unsigned char*>(info.dli_fbase));
    }
    return ElfIdentity{};  // unknown: nothing is refused
  }();
  return identity;
}

std::string describe(const ElfIdentity& id) {
  std::string text = "machine " + std::to_string(id.machine);
  if (const std::string name = elf_machine_name(id.machine); !name.empty()) text += ", " + name;
  text += id.elf_class == ELFCLASS64 ? ", 64-bit" : id.elf_class == ELFCLASS32 ? ", 32-bit" : "";
  if (id.data == ELFDATA2MSB) text += ", big-endian";
  return text;
}

}  // namespace

std::string elf_machine_name(unsigned machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_X86_64:
      return "x86-64";
    case EM_ARM:
      return "ARM";
    case EM_AARCH64:
      return "AArch64";
    case EM_PPC:
      return "PowerPC";
    case EM_PPC64:
      return "PowerPC64";
    case EM_S390:
      return "S/390";
    case EM_RISCV:
      return "RISC-V";
    case EM_MIPS:
      return "MIPS";
    case EM_SPARCV9:
      return "SPARC V9";
    case EM_LOONGARCH:
      return "LoongArch";
    default:
      return {};
  }
}

std::string elf_compatibility_problem(int fd) {
  unsigned char header[EI_NIDENT + 8] = {};
  ssize_t n = -1;
  do {
    n = ::pread(fd, header, sizeof header, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return std::string("cannot be read: ") + std::strerror(errno);
  if (static_cast<std::size_t>(n) < sizeof header || std::memcmp(header, ELFMAG, SELFMAG) != 0) {
    return "is not an ELF file (not a shared library)";
  }
  const ElfIdentity& ours = this_process();
  if (ours.machine == 0) return {};
  const ElfIdentity theirs = identity_of(header);
  if (theirs.elf_class == ours.elf_class && theirs.data == ours.data &&
      theirs.machine == ours.machine) {
    return {};
  }
  return "built for another architecture (ELF " + describe(theirs) +
         "; this process: " + describe(ours) + ")";
}

}  // namespace tokenspeed::metrics
