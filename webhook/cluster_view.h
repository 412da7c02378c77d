// webhook/cluster_view.h — the few reads the admitters make.
//
// The pod mutator reads the migration a target pod belongs to; the validator reads the
// nodes and the VMI's current node for its warnings. KubeClusterView
// (webhook/kube_cluster_view.h) answers from caches where the operator wires them (the
// controller's nodes and migrations, the webhook's VMI nodes: webhook/vmi_node_cache.h) and
// with live API reads otherwise.
// webhook/testing/fake_cluster_view.h keeps state in memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/projections.h"
#include "webhook/admission.h"

namespace kmt::webhook {

// An immutable node list, shared between concurrent reviews (and with an informer cache's
// projections) without copying.
using NodeList = std::shared_ptr<const std::vector<std::shared_ptr<const api::NodeInfo>>>;

// What the pod mutator needs to know of a target pod's migration.
struct MigrationRef {
  std::string uid;              // metadata.uid
  bool has_added_term = false;  // api::AddedTermSource() found one
  bool operator==(const MigrationRef&) const = default;
};

// The ref of a migration as a cache projects it (api::MigrationInfo::FromJson reads the same
// uid and AddedTermSource()).
inline MigrationRef MigrationRefOf(const api::MigrationInfo& m) {
  return {m.uid, m.added_term_text.has_value()};
}

class ClusterView {
 public:
  virtual ~ClusterView() = default;

  // The VirtualMachineInstanceMigration, or nullopt when it does not exist. Throws
  // (std::exception) when it cannot be read.
  virtual std::optional<Json> GetMigration(std::string_view ns, std::string_view name) = 0;

  // The migration's uid and whether it carries an added term. `expected_uid` is the uid the
  // caller believes it has (the target pod's label): a cache may answer only when its copy
  // has that uid, since a migration deleted and created again under the same name is
  // another one. Nullopt when it does not exist; throws when it cannot be read. By default
  // reads GetMigration().
  virtual std::optional<MigrationRef> GetMigrationRef(std::string_view ns, std::string_view name,
                                                      std::string_view expected_uid);

  // Every node (never null). Throws when they cannot be listed.
  virtual NodeList ListNodes() = 0;

  // status.nodeName of the VMI ("" while it has none), or nullopt when the VMI does not
  // exist. Throws when it cannot be read.
  virtual std::optional<std::string> VmiNodeName(std::string_view ns, std::string_view name) = 0;

  // For the policy attacher (webhook/policy_attacher.h); each throws when it cannot read.
  // Every MigrationTargetPolicy, as stored.
  virtual std::vector<Json> ListPolicies() = 0;
  // One policy, or nullopt when it does not exist.
  virtual std::optional<Json> GetPolicy(std::string_view name) = 0;
  // The VMI (its labels and annotations are read), or nullopt when it does not exist.
  virtual std::optional<Json> GetVmi(std::string_view ns, std::string_view name) = 0;
  // The namespace (its labels), or nullopt when it does not exist.
  virtual std::optional<Json> GetNamespace(std::string_view name) = 0;
};

}  // namespace kmt::webhook
