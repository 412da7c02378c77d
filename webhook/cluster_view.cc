#include "webhook/cluster_view.h"

#include "api/added_term.h"
#include "base/json.h"

namespace kmt::webhook {

std::optional<MigrationRef> ClusterView::GetMigrationRef(std::string_view ns, std::string_view name,
                                                         std::string_view /*expected_uid*/) {
  std::optional<Json> vmim = GetMigration(ns, name);
  if (!vmim) return std::nullopt;
  return MigrationRef{base::StringAt(*vmim, {"metadata", "uid"}),
                      api::AddedTermSource(*vmim).has_value()};
}

}  // namespace kmt::webhook
