// webhook/testing/fake_cluster_view.h — an in-memory ClusterView for admitter tests: it
// holds migrations, nodes and VMI placements, and can be made to fail each read.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook::testing {

class FakeClusterView : public ClusterView {
 public:
  // State.
  std::map<std::pair<std::string, std::string>, Json> migrations;  // (ns, name) → VMIM
  std::vector<api::NodeInfo> nodes;
  std::map<std::pair<std::string, std::string>, std::string> vmi_nodes;  // (ns, name) → node
  // When set, the matching read throws std::runtime_error with this message.
  std::optional<std::string> migration_error, nodes_error, vmi_error;
  // For the policy attacher.
  std::vector<Json> policies;
  std::map<std::pair<std::string, std::string>, Json> vmis;  // (ns, name) → VMI
  std::map<std::string, Json> namespaces;
  std::optional<std::string> policies_error, namespace_error;

  void AddNode(std::string name, const std::vector<std::pair<std::string, std::string>>& labels) {
    api::NodeInfo n;
    n.name = std::move(name);
    n.labels = api::Labels(labels);
    nodes.push_back(std::move(n));
  }

  std::optional<Json> GetMigration(std::string_view ns, std::string_view name) override {
    if (migration_error) throw std::runtime_error(*migration_error);
    auto it = migrations.find({std::string(ns), std::string(name)});
    if (it == migrations.end()) return std::nullopt;
    return it->second;
  }

  NodeList ListNodes() override {
    if (nodes_error) throw std::runtime_error(*nodes_error);
    std::vector<std::shared_ptr<const api::NodeInfo>> list;
    list.reserve(nodes.size());
    for (const api::NodeInfo& n : nodes) list.push_back(std::make_shared<const api::NodeInfo>(n));
    return std::make_shared<const std::vector<std::shared_ptr<const api::NodeInfo>>>(
        std::move(list));
  }

  std::vector<Json> ListPolicies() override {
    if (policies_error) throw std::runtime_error(*policies_error);
    return policies;
  }

  std::optional<Json> GetPolicy(std::string_view name) override {
    if (policies_error) throw std::runtime_error(*policies_error);
    for (const Json& p : policies) {
      if (base::StringAt(p, {"metadata", "name"}) == name) return p;
    }
    return std::nullopt;
  }

  std::optional<Json> GetVmi(std::string_view ns, std::string_view name) override {
    if (vmi_error) throw std::runtime_error(*vmi_error);
    auto it = vmis.find({std::string(ns), std::string(name)});
    if (it == vmis.end()) return std::nullopt;
    return it->second;
  }

  std::optional<Json> GetNamespace(std::string_view name) override {
    if (namespace_error) throw std::runtime_error(*namespace_error);
    auto it = namespaces.find(std::string(name));
    if (it == namespaces.end()) return std::nullopt;
    return it->second;
  }

  std::optional<std::string> VmiNodeName(std::string_view ns, std::string_view name) override {
    if (vmi_error) throw std::runtime_error(*vmi_error);
    auto it = vmi_nodes.find({std::string(ns), std::string(name)});
    if (it == vmi_nodes.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace kmt::webhook::testing
