// In-process cost of reading one LIST page as the operator's informers read it (issue 41):
// kube::ParseTrimmed with the trim each informer passes (managedFields left out, only the
// members its projection and the informer read: kube::InformerReads of api::TargetPod::Reads,
// NodeInfo's, MigrationInfo's), next to the same parse keeping every member but managedFields
// (what the informers did before they passed their reads), a floor measured in the same process,
// nlohmann's SAX parser over the same bytes into nothing (bench/list_floor.h, the cold start's
// floor), and to a whole DOM (Json::parse) for reference.
//
// A page is 250 objects (the informers' page size) as the API server lists them: the objects
// of bench/kubevirt_objects.h with uid, resourceVersion, creationTimestamp and the
// server-side apply history (managedFields) of the managers that wrote them.
//
//   bazel-bin/bench/parse_benchmark [--benchmark_min_time=0.5] [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "api/projections.h"
#include "bench/kubevirt_objects.h"
#include "bench/list_floor.h"
#include "controller/informer_view.h"
#include "kube/informer.h"
#include "kube/managed_fields.h"
#include "kube/watcher.h"

namespace kmt::bench {
namespace {

constexpr const char* kNs = "bench-parse";

// What the API server adds to an object it stores and lists.
Json Stored(Json o, int i, const std::string& manager) {
  Json& meta = o["metadata"];
  meta["uid"] = fmt::format("{:08x}-1f2e-4d3c-8b7a-{:012x}", i, i * 7919);
  meta["resourceVersion"] = std::to_string(100000 + i);
  meta["creationTimestamp"] = "2026-12-05T12:00:00Z";
  meta["managedFields"] = Json::array(
      {{{"manager", manager},
        {"operation", "Update"},
        {"apiVersion", o.value("apiVersion", "v1")},
        {"time", "2026-12-05T12:00:00Z"},
        {"fieldsType", "FieldsV1"},
        {"fieldsV1",
         {{"f:metadata",
           {{"f:labels", {{".", Json::object()}, {"f:kubevirt.io", Json::object()}}},
            {"f:annotations", {{".", Json::object()}}}}},
          {"f:spec",
           {{"f:containers",
             {{R"(k:{"name":"compute"})",
               {{".", Json::object()},
                {"f:image", Json::object()},
                {"f:name", Json::object()},
                {"f:resources", {{".", Json::object()}, {"f:limits", Json::object()}}}}}}},
            {"f:nodeSelector", Json::object()},
            {"f:affinity", {{".", Json::object()}, {"f:nodeAffinity", Json::object()}}}}}}}},
       {{"manager", "kubelet"},
        {"operation", "Update"},
        {"apiVersion", "v1"},
        {"time", "2026-12-05T12:00:05Z"},
        {"fieldsType", "FieldsV1"},
        {"subresource", "status"},
        {"fieldsV1",
         {{"f:status",
           {{"f:conditions",
             {{R"(k:{"type":"Ready"})",
               {{".", Json::object()}, {"f:status", Json::object()}, {"f:type", Json::object()}}}}},
            {"f:phase", Json::object()}}}}}}});
  return o;
}

std::string Page(const char* kind, int n) {
  Json items = Json::array();
  for (int i = 0; i < n; ++i) {
    const std::string kind_s = kind;
    if (kind_s == "nodes") {
      items.push_back(Stored(KwokNode(i), i, "kwok"));
    } else if (kind_s == "vmims") {
      items.push_back(Stored(Vmim(i, kNs, NodeTerm(NodeName(i))), i, "kubectl-migrate"));
    } else {
      items.push_back(Stored(TargetPod(i, kNs, fmt::format("mig-{}", i), fmt::format("uid-{}", i),
                                       NodeName(i % 5000), /*gated=*/true),
                             i, "virt-controller"));
    }
  }
  return Json{{"apiVersion", "v1"},
              {"kind", "List"},
              {"metadata", {{"resourceVersion", "123456"}, {"continue", "token"}}},
              {"items", items}}
      .dump();
}

const std::string& ThePage(int which) {
  static const std::string* pages[] = {
      new std::string(Page("pods", static_cast<int>(controller::InformerViewOptions().page_size))),
      new std::string(Page("nodes", static_cast<int>(controller::InformerViewOptions().page_size))),
      new std::string(Page("vmims", static_cast<int>(controller::InformerViewOptions().page_size))),
  };
  return *pages[which];
}

void Label(benchmark::State& state) {
  static const char* names[] = {"target pods", "nodes", "VMIMs"};
  const std::string& page = ThePage(static_cast<int>(state.range(0)));
  state.SetLabel(fmt::format("{} page, {} KiB", names[state.range(0)], page.size() / 1024));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(page.size()));
}

// The trim the informer of each page's objects passes (controller/informer_view.cc: the
// watcher's default omit_managed_fields, no label budget for these three, the projection's
// reads with the informer's own).
const kube::ObjectTrim& InformerTrim(int which) {
  static const base::ObjectReads* reads[] = {
      new base::ObjectReads(kube::InformerReads(api::TargetPod::Reads())),
      new base::ObjectReads(kube::InformerReads(api::NodeInfo::Reads())),
      new base::ObjectReads(kube::InformerReads(api::MigrationInfo::Reads())),
  };
  static const kube::ObjectTrim* trims[] = {
      new kube::ObjectTrim{.managed_fields = kube::WatcherConfig().omit_managed_fields,
                           .reads = reads[0]},
      new kube::ObjectTrim{.managed_fields = kube::WatcherConfig().omit_managed_fields,
                           .reads = reads[1]},
      new kube::ObjectTrim{.managed_fields = kube::WatcherConfig().omit_managed_fields,
                           .reads = reads[2]},
  };
  return *trims[which];
}

// What an informer does with a page: only what its projection reads is built.
void BM_ParseTrimmed(benchmark::State& state) {
  const std::string& page = ThePage(static_cast<int>(state.range(0)));
  const kube::ObjectTrim& trim = InformerTrim(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(kube::ParseTrimmed(page, kube::ObjectsAt::kListItems, trim));
  }
  Label(state);
}

// What the informers did before they passed their reads: every member but managedFields built.
void BM_ParseOmittingManagedFields(benchmark::State& state) {
  const std::string& page = ThePage(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(kube::ParseOmittingManagedFields(page, kube::ObjectsAt::kListItems));
  }
  Label(state);
}

// Every byte built.
void BM_JsonParseWhole(benchmark::State& state) {
  const std::string& page = ThePage(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Json::parse(page));
  Label(state);
}

// The floor: the same bytes through nlohmann's SAX parser into nothing.
void BM_FloorDiscarding(benchmark::State& state) {
  const std::string& page = ThePage(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ParseListPageDiscarding(page));
  Label(state);
}

BENCHMARK(BM_FloorDiscarding)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseTrimmed)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseOmittingManagedFields)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonParseWhole)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kmt::bench

BENCHMARK_MAIN();
