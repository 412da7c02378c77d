#include "webhook/routes.h"

#include <string>
#include <utility>

#include "webhook/pod_mutator.h"
#include "webhook/vmim_validator.h"

namespace kmt::webhook {

std::vector<Route> AdmissionRoutes(AccessReviewer& access, ClusterView& cluster,
                                   VmimPolicy policy) {
  VmimValidatorDeps deps{access, cluster, std::move(policy)};
  return {
      {std::string(kValidateVmimPath),
       [deps](const AdmissionRequest& r) { return ValidateVmim(r, deps); }},
      {std::string(kMutatePodPath),
       [&cluster](const AdmissionRequest& r) { return MutateTargetPod(r, cluster); }},
  };
}

}  // namespace kmt::webhook
