// kube/resources.h — the REST resources this project reads or writes.
// Every verb used on each is granted in manifests/default (a test checks it).
#pragma once

#include "kube/client.h"

namespace kmt::kube {

inline const Resource kPods{"", "v1", "pods", true, "Pod"};
inline const Resource kNodes{"", "v1", "nodes", false, "Node"};
inline const Resource kEvents{"", "v1", "events", true, "Event"};
inline const Resource kNamespaces{"", "v1", "namespaces", false, "Namespace"};
// The target pod's volumes, read one by one when it is explained (api/pod_volumes.h).
inline const Resource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims", true,
                                              "PersistentVolumeClaim"};
inline const Resource kPersistentVolumes{"", "v1", "persistentvolumes", false, "PersistentVolume"};
inline const Resource kStorageClasses{"storage.k8s.io", "v1", "storageclasses", false,
                                      "StorageClass"};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", true, "Lease"};
inline const Resource kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                            false, "SubjectAccessReview"};
inline const Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false,
                                    "TokenReview"};
inline const Resource kSecrets{"", "v1", "secrets", true, "Secret"};
inline const Resource kConfigMaps{"", "v1", "configmaps", true, "ConfigMap"};
inline const Resource kValidatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                       "validatingwebhookconfigurations", false,
                                                       "ValidatingWebhookConfiguration"};
inline const Resource kMutatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                     "mutatingwebhookconfigurations", false,
                                                     "MutatingWebhookConfiguration"};
inline const Resource kVirtualMachineInstances{"kubevirt.io", "v1", "virtualmachineinstances", true,
                                               "VirtualMachineInstance"};
inline const Resource kMigrationTargetPolicies{"migration-target.kubevirt.io", "v1alpha1",
                                               "migrationtargetpolicies", false,
                                               "MigrationTargetPolicy"};
inline const Resource kVirtualMachineInstanceMigrations{"kubevirt.io", "v1",
                                                        "virtualmachineinstancemigrations", true,
                                                        "VirtualMachineInstanceMigration"};
// Read by the plugin only (`kubectl migrate policy explain`: the cluster's eviction strategy
// and migration limits; the disruption budgets of VMs a drain would evict).
inline const Resource kKubeVirts{"kubevirt.io", "v1", "kubevirts", true, "KubeVirt"};
inline const Resource kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets", true,
                                            "PodDisruptionBudget"};

}  // namespace kmt::kube
