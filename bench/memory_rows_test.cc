// The memory benchmark's arithmetic and its /proc parsing.
#include "bench/memory_rows.h"

#include <catch2/catch.hpp>

#include "bench/operator_process.h"

namespace kmt::bench {
namespace {

TEST_CASE("MemoryRows: RSS against the floor and bytes per object per stage") {
  MemoryFigures f;
  f.counts = {5000, 10000, 10000};
  f.json_bytes = {8000, 1000, 6000};
  f.rss_empty = 8 * 1024 * 1024;
  f.rss_after = {f.rss_empty + 5000 * 1024, f.rss_empty + 5000 * 1024 + 10000 * 300,
                 f.rss_empty + 5000 * 1024 + 10000 * 300 + 10000 * 600};
  std::vector<Row> rows = MemoryRows(f);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].figure == "RSS with 5000 nodes, 10000 VMIMs, 10000 target pods cached");
  CHECK(rows[0].floor == "8.00 MiB");
  CHECK(rows[0].pass == true);
  CHECK(rows[1].value == "1.00 KiB");
  CHECK(rows[1].floor == "7.81 KiB JSON");
  CHECK(rows[2].value == "300 B");
  CHECK(rows[2].ratio == "0.30×");
  CHECK(rows[3].value == "600 B");
  CHECK(rows[3].ratio == "0.10×");
  f.rss_after[2] = static_cast<uint64_t>(kMemoryBudgetBytes) + 1;
  CHECK(MemoryRows(f)[0].pass == false);
}

TEST_CASE("ParseVmRss reads kB from /proc/<pid>/status") {
  CHECK(ParseVmRss("Name:\toperator\nVmHWM:\t  9000 kB\nVmRSS:\t   8192 kB\nThreads: 9\n") ==
        8192u * 1024);
  CHECK(ParseVmRss("Name:\tzombie\n") == std::nullopt);
  CHECK(ParseVmRss("VmRSS:\tgarbage\n") == std::nullopt);
}

TEST_CASE("ColdStartRows: time against the floor, CPU against half of 7 CPU-s per 25,000") {
  ColdStartFigures f;
  f.counts = {5000, 10000, 10000};
  f.seconds = 4.2;
  f.cpu_seconds = 3.0;
  f.floor_seconds = 3.0;
  f.floor_cpu_seconds = 1.2;
  std::vector<Row> rows = ColdStartRows(f);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].figure ==
        "time from exec to /readyz with 5000 nodes, 10000 VMIMs, 10000 target pods");
  CHECK(rows[0].value == "4.20 s");
  CHECK(rows[0].floor == "3.00 s");
  CHECK(rows[0].ratio == "1.40×");
  CHECK(rows[0].budget == "≤ 1.5× floor");
  CHECK(rows[0].pass == true);
  CHECK(rows[1].value == "3.00 CPU-s");
  CHECK(rows[1].floor == "1.20 CPU-s");
  CHECK(rows[1].ratio == "2.50×");
  CHECK(rows[1].budget == "≤ 3.50 CPU-s");
  CHECK(rows[1].pass == true);
  f.seconds = 4.6;
  f.cpu_seconds = 3.6;
  rows = ColdStartRows(f);
  CHECK(rows[0].pass == false);
  CHECK(rows[1].pass == false);
  // Quick mode: a tenth of the objects, a tenth of the CPU budget.
  f.counts = {500, 1000, 1000};
  CHECK(ColdStartRows(f)[1].budget == "≤ 0.35 CPU-s");
}

}  // namespace
}  // namespace kmt::bench
