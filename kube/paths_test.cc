// kube/paths_test.cc
#include "kube/paths.h"

#include <catch2/catch.hpp>

#include "kube/resources.h"

namespace kmt::kube {
namespace {

TEST_CASE("ResourcePath builds core, group, namespaced and cluster paths") {
  struct Row {
    const Resource* r;
    const char* ns;
    const char* name;
    const char* sub;
    const char* want;
  };
  const Row row = GENERATE(values<Row>({
      {&kPods, "default", "", "", "/api/v1/namespaces/default/pods"},
      {&kPods, "", "", "", "/api/v1/pods"},
      {&kPods, "ns", "p-1", "status", "/api/v1/namespaces/ns/pods/p-1/status"},
      {&kNodes, "ignored", "n1", "", "/api/v1/nodes/n1"},
      {&kVirtualMachineInstanceMigrations, "vm-ns", "m", "status",
       "/apis/kubevirt.io/v1/namespaces/vm-ns/virtualmachineinstancemigrations/m/status"},
      {&kLeases, "kube-system", "lead", "",
       "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lead"},
      {&kPods, "ns", "we ird/", "", "/api/v1/namespaces/ns/pods/we%20ird%2F"},
  }));
  CAPTURE(row.want);
  CHECK(ResourcePath(*row.r, row.ns, row.name, row.sub) == row.want);
}

TEST_CASE("Names and descriptions") {
  CHECK(ApiVersion(kPods) == "v1");
  CHECK(ApiVersion(kLeases) == "coordination.k8s.io/v1");
  CHECK(GroupResourceName(kPods) == "pods");
  CHECK(GroupResourceName(kVirtualMachineInstanceMigrations) ==
        "virtualmachineinstancemigrations.kubevirt.io");
  CHECK(DescribeCall("get", kPods, "ns", "p") == "get pods ns/p");
  CHECK(DescribeCall("patch", kPods, "ns", "p", "status") == "patch pods ns/p (status)");
  CHECK(DescribeCall("list", kPods, "ns") == "list pods -n ns");
  CHECK(DescribeCall("list", kPods, "") == "list pods");
  CHECK(DescribeCall("get", kNodes, "", "n1") == "get nodes n1");
}

TEST_CASE("EscapeQueryValue keeps selectors intact") {
  CHECK(EscapeQueryValue("a in (x,y),!b,c!=d,e=f") ==
        "a%20in%20%28x%2Cy%29%2C%21b%2Cc%21%3Dd%2Ce%3Df");
  CHECK(EscapeQueryValue("kubevirt.io/migrationJobUID=1-2_3~") ==
        "kubevirt.io%2FmigrationJobUID%3D1-2_3~");
  CHECK(EscapeQueryValue("\xc3\xa9&+#") == "%C3%A9%26%2B%23");
}

}  // namespace
}  // namespace kmt::kube
