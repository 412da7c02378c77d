// bench/list_floor.h — the floor of the operator's cold start: the LISTs its informers make,
// paged as they page, each page read whole and parsed into nothing.
//
// Each LIST runs on a thread of its own, as each informer does; a page is one GET of
// `limit` items, its body parsed by nlohmann's SAX parser with a handler that keeps only the
// continue token and counts the items. So the floor is the API server's answers, their
// bytes on the wire and one parse of every byte with the JSON library the operator uses,
// without building anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace kmt::bench {

// One page as the discarding parser saw it: its items and metadata.continue ("" on the
// last page); nullopt when the body is not JSON.
struct PageSummary {
  size_t items = 0;
  std::string continue_token;
};
std::optional<PageSummary> ParseListPageDiscarding(std::string_view body);

struct ListQuery {
  kube::Resource resource;
  std::string label_selector;  // "" for none
};

struct ListFloor {
  double seconds = 0;            // from the first request to the last page parsed, all lists
  double cpu_seconds = 0;        // of the threads that listed and parsed (RUSAGE_THREAD, summed)
  uint64_t bytes = 0;            // bodies read
  size_t requests = 0;           // pages
  size_t items = 0;              // objects listed
  double parse_cpu_seconds = 0;  // of cpu_seconds, the discarding parses
};

// Runs `queries` (all namespaces) concurrently with `page_size` items a page. Throws
// kube::KubeError on a failed request or an answer that is not a List.
ListFloor MeasureListFloor(const kube::ClientConfig& config, const std::vector<ListQuery>& queries,
                           int64_t page_size);

}  // namespace kmt::bench
