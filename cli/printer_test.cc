#include "cli/printer.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <charconv>
#include <system_error>

namespace kmt::cli {
namespace {

using nlohmann::json;

// Reads YAML back into JSON (strings stay strings only where the emitter quoted them).
json FromYaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = FromYaml(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& v : n) a.push_back(FromYaml(v));
      return a;
    }
    case YAML::NodeType::Scalar: {
      if (n.Tag() == "!") return n.as<std::string>();  // quoted
      auto s = n.as<std::string>();
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null") return nullptr;
      long long v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size()) return v;
      return s;
    }
    default:
      return nullptr;
  }
}

TEST_CASE("YAML output reads back as the same document") {
  json doc = json::parse(R"({
    "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
    "metadata": {"name": "m", "annotations": {"migration-target.kubevirt.io/added-node-selector-term":
      "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"w3\"]}]}"},
      "labels": {}, "generation": 1},
    "spec": {"vmiName": "db-1", "list": [[1, 2], {}, [], "true", "007", " x", "a: b", "-x", true, null]},
    "status": {"conditions": [{"type": "t", "status": "True"}, {"type": "u", "status": "False"}]}
  })");
  std::string y = ToYaml(doc);
  CAPTURE(y);
  CHECK(FromYaml(YAML::Load(y)) == doc);
  CHECK(y.find("kind: VirtualMachineInstanceMigration\n") != std::string::npos);
  CHECK(y.find("  - status: \"True\"\n    type: t\n") != std::string::npos);
}

TEST_CASE("kubectl default, name and json renderings") {
  json obj = {{"apiVersion", "kubevirt.io/v1"},
              {"kind", "VirtualMachineInstanceMigration"},
              {"metadata", {{"name", "db-1-migration-x7k2p"}}}};
  CHECK(Render(obj, "", "created", "") ==
        "virtualmachineinstancemigration.kubevirt.io/db-1-migration-x7k2p created\n");
  CHECK(Render(obj, "", "created", " (server dry run)") ==
        "virtualmachineinstancemigration.kubevirt.io/db-1-migration-x7k2p created (server dry "
        "run)\n");
  CHECK(Render(obj, "name", "created", "") ==
        "virtualmachineinstancemigration.kubevirt.io/db-1-migration-x7k2p\n");
  CHECK(json::parse(Render(obj, "json", "created", "")) == obj);
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  CHECK(ResourceName(pod) == "pod/p");
}

TEST_CASE("RenderTable aligns columns as kubectl does") {
  CHECK(RenderTable({{"NAME", "PHASE", "AGE"}, {"db-1-migration-abcde", "Running", "5s"}}) ==
        "NAME                   PHASE     AGE\n"
        "db-1-migration-abcde   Running   5s\n");
  CHECK(RenderTable({}).empty());
}

}  // namespace
}  // namespace kmt::cli
