#include "webhook/routes.h"

#include <string>
#include <utility>

#include "webhook/pod_mutator.h"
#include "webhook/policy_attacher.h"
#include "webhook/vmim_validator.h"

namespace kmt::webhook {

std::vector<Route> AdmissionRoutes(AccessReviewer& access, ClusterView& cluster,
                                   VmimPolicy policy) {
  PolicyAttacherOptions attacher{policy.virt_controller_username};
  VmimValidatorDeps deps{access, cluster, std::move(policy)};
  return {
      {std::string(kMutateVmimPath),
       [&cluster, attacher](const AdmissionRequest& r) {
         return AttachPolicy(r, cluster, attacher);
       }},
      {std::string(kValidatePolicyPath),
       [](const AdmissionRequest& r) { return ValidatePolicy(r); }},
      {std::string(kValidateVmimPath),
       [deps](const AdmissionRequest& r) { return ValidateVmim(r, deps); }},
      {std::string(kMutatePodPath),
       [&cluster](const AdmissionRequest& r) { return MutateTargetPod(r, cluster); },
       &TargetPodReads()},
  };
}

}  // namespace kmt::webhook
