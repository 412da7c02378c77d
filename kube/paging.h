// kube/paging.h — LIST across all pages.
#pragma once

#include "kube/client.h"

namespace kmt::kube {

// Follows metadata.continue until the last page (opts.limit is the page size;
// 0 means 500). Returns one List object with every item and the
// resourceVersion of the snapshot. A 410 on a continue token (the snapshot
// was compacted away) restarts the whole list once, then propagates. Throws only
// KubeError: an answer that is not a List object (or whose items are not an array) is
// kInternal.
Json ListAll(KubeClient& client, const Resource& r, std::string_view ns, ListOptions opts = {});

}  // namespace kmt::kube
