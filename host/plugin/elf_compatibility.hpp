// elf_compatibility.hpp — checks a plugin file's ELF header against this
// process before dlopen, so a library built for another architecture is named
// as such (glibc reports it as "No such file or directory"). Reads the header
// only; never loads anything.
#pragma once

#include <string>

namespace tokenspeed::metrics {

// "" when the first bytes of the open regular file fd are an ELF header of
// this process's class, byte order and machine; otherwise the reason: "is not
// an ELF file", "built for another architecture (ELF machine 183, AArch64,
// 64-bit; this process: machine 62, x86-64, 64-bit)". The file offset of fd
// is not used (pread).
std::string elf_compatibility_problem(int fd);

// The usual name of an ELF e_machine value ("x86-64", "AArch64"), or "" when
// it is not one of the common ones.
std::string elf_machine_name(unsigned machine);

}  // namespace tokenspeed::metrics
