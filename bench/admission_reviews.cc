#include "bench/admission_reviews.h"

#include <fmt/format.h>

namespace kmt::bench {

Json CreateReview(const std::string& uid, const Json& resource, const std::string& ns,
                  const ReviewUser& user, const Json& object) {
  const Json kind = {
      {"group", resource["group"]}, {"version", resource["version"]}, {"kind", object["kind"]}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", kind},
            {"resource", resource},
            {"requestKind", kind},
            {"requestResource", resource},
            {"namespace", ns},
            {"operation", "CREATE"},
            {"userInfo",
             {{"username", user.username}, {"uid", "u-" + user.username}, {"groups", user.groups}}},
            {"object", object},
            {"oldObject", nullptr},
            {"dryRun", false},
            {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
}

std::string VmimCreateReview(int i, const std::string& uid, const std::string& ns,
                             const std::string& term, const ReviewUser& user) {
  Json vmim = Vmim(i, ns, term);
  vmim["metadata"]["uid"] = fmt::format("{:08x}-0000-4000-8000-000000000000", i);
  vmim["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  return CreateReview(uid,
                      {{"group", "kubevirt.io"},
                       {"version", "v1"},
                       {"resource", "virtualmachineinstancemigrations"}},
                      ns, user, vmim)
      .dump();
}

std::string TargetPodCreateReview(int i, const Json& vmim, const std::string& uid,
                                  const std::string& ns, const std::string& source_node) {
  Json pod = TargetPod(i, ns, vmim["metadata"]["name"], vmim["metadata"]["uid"], source_node,
                       /*gated=*/false);
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = fmt::format("virt-launcher-vm-{}-", i);
  return CreateReview(uid, {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}, ns,
                      VirtControllerUser(), pod)
      .dump();
}

bool Allows(const std::string& body) { return body.find("\"allowed\":true") != std::string::npos; }

ReviewUser VirtControllerUser() {
  return {"system:serviceaccount:kubevirt:kubevirt-controller",
          {"system:serviceaccounts", "system:serviceaccounts:kubevirt", "system:authenticated"}};
}

}  // namespace kmt::bench
