// kube/paging.cc
#include "kube/paging.h"

#include "kube/error.h"

namespace kmt::kube {

Json ListAll(KubeClient& client, const Resource& r, std::string_view ns, ListOptions opts) {
  if (opts.limit <= 0) opts.limit = 500;
  for (int attempt = 0;; ++attempt) {
    Json all;
    Json items = Json::array();
    ListOptions page_opts = opts;
    try {
      while (true) {
        Json page = client.List(r, ns, page_opts);
        const std::string next = page["metadata"].value("continue", "");
        for (Json& item : page["items"]) items.push_back(std::move(item));
        if (all.is_null()) all = std::move(page);  // kind, apiVersion, metadata (items moved out)
        if (next.empty()) break;
        page_opts.continue_token = next;
      }
    } catch (const KubeError& e) {
      if (DispositionOf(e) == Disposition::kRelist && !page_opts.continue_token.empty() &&
          attempt == 0) {
        continue;
      }
      throw;
    }
    all["items"] = std::move(items);
    all["metadata"].erase("continue");
    all["metadata"].erase("remainingItemCount");
    return all;
  }
}

}  // namespace kmt::kube
