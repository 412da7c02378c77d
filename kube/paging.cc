// kube/paging.cc
#include "kube/paging.h"

#include <fmt/format.h>

#include "base/json.h"
#include "kube/error.h"
#include "kube/paths.h"

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
        // A List object whose items (absent or null: none) are an array; anything else
        // is an answer we cannot page through.
        Json* page_items = nullptr;
        if (page.is_object()) {
          auto it = page.find("items");
          page_items = it == page.end() ? nullptr : &*it;
        }
        if (!page.is_object() ||
            (page_items != nullptr && !page_items->is_array() && !page_items->is_null())) {
          throw KubeError(ErrorKind::kInternal, fmt::format("{}: list answer has no items array",
                                                            DescribeCall("list", r, ns)));
        }
        const std::string next = base::StringAt(page, {"metadata", "continue"});
        if (page_items != nullptr && page_items->is_array()) {
          for (Json& item : *page_items) items.push_back(std::move(item));
        }
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
    if (auto m = all.find("metadata"); m != all.end() && m->is_object()) {
      m->erase("continue");
      m->erase("remainingItemCount");
    }
    return all;
  }
}

}  // namespace kmt::kube
