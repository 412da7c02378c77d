#include "kube/volume_reads.h"

#include <catch2/catch.hpp>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

using nlohmann::json;

TEST_CASE("VolumeReads GETs claims in the namespace, classes and volumes cluster-wide") {
  FakeClient client;
  client.Create(kPersistentVolumeClaims, "vms", {{"metadata", {{"name", "disk-a"}}}});
  client.Create(kStorageClasses, "", {{"metadata", {{"name", "local"}}}});
  client.Create(kPersistentVolumes, "", {{"metadata", {{"name", "pv-1"}}}});
  const api::VolumeReader read = VolumeReads(client, "vms");

  auto name = [](const std::optional<Json>& o) {
    return o ? o->at("metadata").at("name").get<std::string>() : std::string("<none>");
  };
  CHECK(name(read(api::VolumeObject::kClaim, "disk-a")) == "disk-a");
  CHECK(name(read(api::VolumeObject::kStorageClass, "local")) == "local");
  CHECK(name(read(api::VolumeObject::kVolume, "pv-1")) == "pv-1");
  CHECK(name(read(api::VolumeObject::kClaim, "pv-1")) == "<none>");
  CHECK(name(VolumeReads(client, "other")(api::VolumeObject::kClaim, "disk-a")) == "<none>");

  client.FailNext(Verb::kGet, 1, ErrorKind::kForbidden, "persistentvolumes");
  CHECK_THROWS_AS(read(api::VolumeObject::kVolume, "pv-1"), KubeError);
}

}  // namespace
}  // namespace kmt::kube
