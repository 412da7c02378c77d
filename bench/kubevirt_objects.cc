#include "bench/kubevirt_objects.h"

#include <fmt/format.h>

#include "api/names.h"

namespace kmt::bench {
namespace {

Json LauncherSpec(int i) {
  const std::string vm = fmt::format("vm-{}", i);
  return {
      {"nodeSelector",
       {{"kubevirt.io/schedulable", "true"},
        {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
        {"kubernetes.io/arch", "amd64"}}},
      {"tolerations",
       {{{"key", "node.kubernetes.io/not-ready"},
         {"operator", "Exists"},
         {"effect", "NoExecute"},
         {"tolerationSeconds", 300}},
        {{"key", "node.kubernetes.io/unreachable"},
         {"operator", "Exists"},
         {"effect", "NoExecute"},
         {"tolerationSeconds", 300}}}},
      {"automountServiceAccountToken", false},
      {"terminationGracePeriodSeconds", 210},
      {"securityContext",
       {{"runAsUser", 107},
        {"runAsGroup", 107},
        {"runAsNonRoot", true},
        {"fsGroup", 107},
        {"seLinuxOptions", {{"type", "virt_launcher.process"}}}}},
      {"hostname", vm},
      {"containers",
       {{{"name", "compute"},
         {"image", "registry.invalid/kubevirt/virt-launcher:v1.9.0"},
         {"command",
          {"/usr/bin/virt-launcher-monitor",
           "--qemu-timeout",
           "252s",
           "--name",
           vm,
           "--uid",
           fmt::format("{:08x}-1111-2222-3333-444455556666", i),
           "--namespace",
           "vms",
           "--kubevirt-share-dir",
           "/var/run/kubevirt",
           "--ephemeral-disk-dir",
           "/var/run/kubevirt-ephemeral-disks",
           "--container-disk-dir",
           "/var/run/kubevirt/container-disks",
           "--grace-period-seconds",
           "195",
           "--hook-sidecars",
           "0",
           "--ovmf-path",
           "/usr/share/OVMF",
           "--run-as-nonroot"}},
         {"env",
          {{{"name", "XDG_CACHE_HOME"}, {"value", "/var/run/kubevirt-private"}},
           {{"name", "XDG_CONFIG_HOME"}, {"value", "/var/run/kubevirt-private"}},
           {{"name", "XDG_RUNTIME_DIR"}, {"value", "/var/run"}},
           {{"name", "POD_NAME"},
            {"valueFrom",
             {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.name"}}}}}}}},
         {"resources",
          {{"requests",
            {{"cpu", "400m"},
             {"memory", "2294Mi"},
             {"devices.kubevirt.io/kvm", "1"},
             {"devices.kubevirt.io/tun", "1"},
             {"devices.kubevirt.io/vhost-net", "1"},
             {"ephemeral-storage", "50M"}}},
           {"limits",
            {{"devices.kubevirt.io/kvm", "1"},
             {"devices.kubevirt.io/tun", "1"},
             {"devices.kubevirt.io/vhost-net", "1"}}}}},
         {"securityContext",
          {{"allowPrivilegeEscalation", false},
           {"capabilities", {{"add", {"NET_BIND_SERVICE"}}, {"drop", {"ALL"}}}},
           {"privileged", false},
           {"runAsGroup", 107},
           {"runAsNonRoot", true},
           {"runAsUser", 107}}},
         {"volumeMounts",
          {{{"name", "private"}, {"mountPath", "/var/run/kubevirt-private"}},
           {{"name", "public"}, {"mountPath", "/var/run/kubevirt"}},
           {{"name", "ephemeral-disks"}, {"mountPath", "/var/run/kubevirt-ephemeral-disks"}},
           {{"name", "libvirt-runtime"}, {"mountPath", "/var/run/libvirt"}},
           {{"name", "sockets"}, {"mountPath", "/var/run/kubevirt/sockets"}}}}}}},
      {"volumes",
       {{{"name", "private"}, {"emptyDir", Json::object()}},
        {{"name", "public"}, {"emptyDir", Json::object()}},
        {{"name", "sockets"}, {"emptyDir", Json::object()}},
        {{"name", "ephemeral-disks"}, {"emptyDir", Json::object()}},
        {{"name", "libvirt-runtime"}, {"emptyDir", Json::object()}}}},
  };
}

Json LauncherLabels(int i) {
  return {{"kubevirt.io", "virt-launcher"},
          {"kubevirt.io/created-by", fmt::format("{:08x}-1111-2222-3333-444455556666", i)},
          {"vm.kubevirt.io/name", fmt::format("vm-{}", i)},
          {"kubevirt.io/domain", fmt::format("vm-{}", i)},
          {"kubevirt.io/size", "small"}};
}
}  // namespace

std::string NodeName(int i) { return fmt::format("node-{:05d}", i); }

Json KwokNode(int i) {
  const std::string name = NodeName(i);
  Json labels = {{"kubernetes.io/hostname", name},
                 {"kubernetes.io/arch", "amd64"},
                 {"kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"type", "kwok"},
                 {"kubevirt.io/schedulable", "true"},
                 {"topology.kubernetes.io/zone", fmt::format("zone-{}", i % 3)},
                 {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS", "true"},
                 {"host-model-required-features.node.kubevirt.io/invtsc", "true"},
                 {"cpu-vendor.node.kubevirt.io/Intel", "true"},
                 {"cpu-timer.node.kubevirt.io/tsc-frequency", "2400000000"},
                 {"kubevirt.io/ksm-enabled", "false"}};
  for (int f = 0; f < 90; ++f)
    labels[fmt::format("cpu-feature.node.kubevirt.io/feature-{}", f)] = "true";
  for (int m = 0; m < 20; ++m)
    labels[fmt::format("cpu-model.node.kubevirt.io/model-{}", m)] = "true";
  if (i % 10 == 0) labels["node-labeller.kubevirt.io/obsolete-host-model"] = "true";
  Json taints = Json::array();
  if (i % 7 == 0)
    taints.push_back({{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}});
  if (i % 11 == 0) taints.push_back({{"key", "maintenance"}, {"effect", "NoExecute"}});
  Json spec = Json::object();
  if (i % 13 == 0) spec["unschedulable"] = true;
  if (!taints.empty()) spec["taints"] = taints;
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", labels},
        {"annotations", {{"kwok.x-k8s.io/node", "fake"}, {"node.alpha.kubernetes.io/ttl", "0"}}}}},
      {"spec", spec},
      {"status",
       {{"conditions",
         {{{"type", "Ready"},
           {"status", i % 17 == 0 ? "False" : "True"},
           {"reason", "KubeletReady"}}}},
        {"allocatable",
         {{"cpu", "32"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"ephemeral-storage", "400Gi"},
          {"devices.kubevirt.io/kvm", "1k"},
          {"devices.kubevirt.io/tun", "1k"},
          {"devices.kubevirt.io/vhost-net", "1k"}}},
        {"capacity",
         {{"cpu", "32"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"ephemeral-storage", "400Gi"},
          {"devices.kubevirt.io/kvm", "1k"},
          {"devices.kubevirt.io/tun", "1k"},
          {"devices.kubevirt.io/vhost-net", "1k"}}}}}};
}

Json BoundLauncherPod(int i, const std::string& ns, const std::string& node) {
  Json spec = LauncherSpec(i);
  spec["nodeName"] = node;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", fmt::format("virt-launcher-vm-{}-src", i)},
            {"namespace", ns},
            {"labels", LauncherLabels(i)},
            {"annotations", {{"kubevirt.io/domain", fmt::format("vm-{}", i)}}}}},
          {"spec", spec},
          {"status", {{"phase", "Running"}}}};
}

Json TargetPod(int i, const std::string& ns, const std::string& vmim_name,
               const std::string& vmim_uid, const std::string& source_node, bool gated) {
  Json labels = LauncherLabels(i);
  labels["kubevirt.io/migrationJobUID"] = vmim_uid;
  Json spec = LauncherSpec(i);
  spec["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchExpressions",
              {{{"key", "node-labeller.kubevirt.io/obsolete-host-model"},
                {"operator", "DoesNotExist"}}}}}}}}}}},
      {"podAntiAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         // As KubeVirt's migration controller writes it (matchLabels on created-by).
         {{{"labelSelector",
            {{"matchLabels",
              {{std::string(api::kLabelCreatedBy), labels["kubevirt.io/created-by"]}}}}},
           {"topologyKey", "kubernetes.io/hostname"}}}}}}};
  if (gated) spec["schedulingGates"] = {{{"name", std::string(api::kSchedulingGate)}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", fmt::format("virt-launcher-vm-{}-target", i)},
            {"namespace", ns},
            {"labels", labels},
            {"annotations",
             {{"kubevirt.io/migrationJobName", vmim_name},
              {"kubevirt.io/domain", fmt::format("vm-{}", i)},
              {"kubevirt.io/migration-source-node", source_node},
              {"kubectl.kubernetes.io/default-container", "compute"},
              {"post.hook.backup.velero.io/command",
               R"(["/usr/bin/virt-freezer", "--unfreeze", "--name", "vm", "--namespace", "vms"])"},
              {"pre.hook.backup.velero.io/container", "compute"}}}}},
          {"spec", spec}};
}

Json Vmi(int i, const std::string& ns) {
  // The e2e framework's NewVMI (e2e/framework/kubevirt.go), the smallest VMI virt-api admits.
  return {{"apiVersion", "kubevirt.io/v1"},
          {"kind", "VirtualMachineInstance"},
          {"metadata", {{"name", fmt::format("vm-{}", i)}, {"namespace", ns}}},
          {"spec",
           {{"domain",
             {{"resources", {{"requests", {{"memory", "128Mi"}}}}},
              {"devices", {{"autoattachPodInterface", false}}}}},
            {"terminationGracePeriodSeconds", 0}}}};
}

Json Vmim(int i, const std::string& ns, const std::string& term) {
  Json meta = {{"name", fmt::format("mig-{}", i)},
               {"namespace", ns},
               {"labels", {{"kubevirt.io/vmi-name", fmt::format("vm-{}", i)}}}};
  if (!term.empty()) meta["annotations"] = {{std::string(api::kAddedTermAnnotation), term}};
  return {{"apiVersion", "kubevirt.io/v1"},
          {"kind", "VirtualMachineInstanceMigration"},
          {"metadata", meta},
          {"spec", {{"vmiName", fmt::format("vm-{}", i)}}}};
}

std::string NodeTerm(const std::string& node) {
  return R"({"matchFields":[{"key":"metadata.name","operator":"In","values":[")" + node +
         R"("]}]})";
}

}  // namespace kmt::bench
