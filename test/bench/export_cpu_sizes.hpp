// export_cpu_sizes.hpp — the sizes at which every output plugin's
// BM_ExportCpu measures one export (docs/performance.md, "How costs grow with
// outputs, threads and series per export"): 1,000, 10,000 and 100,000
// series, the CPU of the whole process.
#pragma once

#include <benchmark/benchmark.h>

inline void export_cpu_sizes(benchmark::internal::Benchmark* bench) {
  bench->ArgName("series")->Arg(1'000)->Arg(10'000)->Arg(100'000)->MeasureProcessCPUTime()->Unit(
      benchmark::kMillisecond);
}
