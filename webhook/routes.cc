#include "webhook/routes.h"

#include <string>

#include "webhook/pod_mutator.h"
#include "webhook/vmim_validator.h"

namespace kmt::webhook {

std::vector<Route> AdmissionRoutes(AccessReviewer& access, ClusterView& cluster,
                                   bool check_kubevirt_added_node_selector) {
  VmimValidatorDeps deps{access, cluster, check_kubevirt_added_node_selector};
  return {
      {std::string(kValidateVmimPath),
       [deps](const AdmissionRequest& r) { return ValidateVmim(r, deps); }},
      {std::string(kMutatePodPath),
       [&cluster](const AdmissionRequest& r) { return MutateTargetPod(r, cluster); }},
  };
}

}  // namespace kmt::webhook
