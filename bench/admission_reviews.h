// bench/admission_reviews.h — AdmissionReview bodies as kube-apiserver sends them to the
// operator's webhook, for the benchmarks that drive it directly: who asks and in which
// namespace are parameters, so a benchmark against a real API server can name a user its
// authorizer knows.
#pragma once

#include <string>
#include <vector>

#include "bench/kubevirt_objects.h"

namespace kmt::bench {

// The request's userInfo.
struct ReviewUser {
  std::string username;
  std::vector<std::string> groups;
};

// An admission.k8s.io/v1 AdmissionReview of a CREATE of `object` (its "kind" taken from it)
// in namespace `ns` by `user`; `resource` is {"group", "version", "resource"}. The uid of
// the user is "u-<username>".
Json CreateReview(const std::string& uid, const Json& resource, const std::string& ns,
                  const ReviewUser& user, const Json& object);

// VMIM "mig-<i>" CREATE in `ns` by `user` carrying `term` (→ /validate-vmim).
std::string VmimCreateReview(int i, const std::string& uid, const std::string& ns,
                             const std::string& term, const ReviewUser& user);

// virt-controller's CREATE of the target pod of `vmim` (as stored: name and uid) in `ns`
// (→ /mutate-pod); the pod's source node is `source_node`.
std::string TargetPodCreateReview(int i, const Json& vmim, const std::string& uid,
                                  const std::string& ns, const std::string& source_node);

// True when an answer (an AdmissionReview, or a SubjectAccessReview as kube-apiserver writes
// it) says "allowed": true.
bool Allows(const std::string& body);

// KubeVirt's virt-controller as the API server names it.
ReviewUser VirtControllerUser();

}  // namespace kmt::bench
