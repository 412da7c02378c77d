// Command fake-node-agent stands in for the two node-local components a real
// KubeVirt cluster has and this e2e control plane has not: the kubelet and
// virt-handler. It writes only what they would write, nothing that
// virt-controller, the scheduler or the operator under test owns:
//
//   - Node objects shaped like KubeVirt's KWOK nodes (tests/testsuite/fixture.go,
//     newFakeKWOKNode) plus the labels virt-handler's node labeller sets, created at
//     start-up for the names given in --nodes; no kubevirt.io/heartbeat annotation,
//     so virt-controller's node controller never declares them unresponsive.
//   - kubelet: bound pods become Running with every container started and ready;
//     pods being deleted are removed at once (grace period 0), as a kubelet does
//     once its containers are gone; a launcher pod whose VM migrated away, or whose
//     migration target failed, completes (phase Succeeded).
//   - virt-handler: a Scheduled VMI on a node becomes Running with the status fields
//     virt-handler sets (pkg/virt-handler/vm.go updateVMIStatus); a VMI handed off for
//     migration walks through the migrationState fields the target and source
//     handlers write (pkg/virt-handler/migration-target.go, migration-source.go):
//     targetNodeAddress, startTimestamp, targetNodeDomainDetected,
//     targetNodeDomainReadyTimestamp, then the completion ack (endTimestamp,
//     nodeName, labels, the eviction-source annotation dropped, completed). One
//     step per observed VMI version, so each step is a separate write that
//     virt-controller sees.
//
// Everything is driven by informers and work queues: there is no polling loop.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	virtv1 "kubevirt.io/api/core/v1"
	kvclient "kubevirt.io/client-go/kubevirt"
)

// launcherUID is the UID virt-launcher runs as when the VM is non-root
// (KubeVirt pkg/util NonRootUID).
const launcherUID = 107

type agent struct {
	kube      kubernetes.Interface
	virt      kvclient.Interface
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	vmis      cache.Indexer
	podQueue  workqueue.TypedRateLimitingInterface[string]
	vmiQueue  workqueue.TypedRateLimitingInterface[string]
	ipMu      sync.Mutex
	podIPs    map[types.UID]string
	nextPodIP int
	// How long a kubelet takes from binding to running containers. Real ones take
	// seconds (sandbox, image, container start); an instant start would let a
	// migration complete before any controller could react to its target pod.
	podStartDelay time.Duration
	// VMI updates are made as virt-handler on the VMI's node, as a real one would
	// be: virt-api's VMI mutator drops status changes from anyone but KubeVirt's
	// service accounts, and with the NodeRestriction gate (Beta, on by default)
	// its VMI update admitter wants the node name a bound token carries in the
	// user's extra "authentication.kubernetes.io/node-name". The agent's own
	// identity impersonates that user per node.
	handlerUser  string
	handlerMu    sync.Mutex
	baseConfig   *rest.Config
	handlerVirts map[string]kvclient.Interface
}

// virtAsHandler returns a client acting as virt-handler on node.
func (a *agent) virtAsHandler(node string) kvclient.Interface {
	a.handlerMu.Lock()
	defer a.handlerMu.Unlock()
	if c, ok := a.handlerVirts[node]; ok {
		return c
	}
	cfg := rest.CopyConfig(a.baseConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: a.handlerUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + handlerNamespace(a.handlerUser), "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {node}},
	}
	c := kvclient.NewForConfigOrDie(cfg)
	a.handlerVirts[node] = c
	return c
}

// handlerNamespace is NS in system:serviceaccount:NS:NAME.
func handlerNamespace(user string) string {
	parts := strings.Split(user, ":")
	if len(parts) == 4 {
		return parts[2]
	}
	return ""
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of an identity allowed to write nodes, pods/status and VMIs")
	nodeList := flag.String("nodes", "node-a,node-b,node-c", "comma-separated names of the fake nodes to create")
	workers := flag.Int("workers", 4, "workers per queue")
	podStartDelay := flag.Duration("pod-start-delay", 2*time.Second, "time from binding to Running, as a kubelet takes")
	handlerUser := flag.String("handler-user", "system:serviceaccount:kubevirt:kubevirt-handler",
		"the user VMI updates are made as (impersonated, with the node's name as a bound token would carry it)")
	flag.Parse() // klog's flags are already registered by a dependency (kubevirt.io/client-go/log)

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "fake-node-agent"
	a := &agent{
		podStartDelay: *podStartDelay,
		kube:          kubernetes.NewForConfigOrDie(cfg),
		virt:          kvclient.NewForConfigOrDie(cfg),
		podQueue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		vmiQueue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		podIPs:        map[types.UID]string{},
		handlerUser:   *handlerUser,
		baseConfig:    cfg,
		handlerVirts:  map[string]kvclient.Interface{},
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	for i, name := range strings.Split(*nodeList, ",") {
		if name = strings.TrimSpace(name); name != "" {
			if err := a.ensureNode(ctx, name, i); err != nil {
				klog.Fatalf("node %s: %v", name, err)
			}
		}
	}

	factory := informers.NewSharedInformerFactory(a.kube, 10*time.Minute)
	podInformer := factory.Core().V1().Pods()
	nodeInformer := factory.Core().V1().Nodes()
	a.pods = podInformer.Lister()
	a.nodes = nodeInformer.Lister()
	if err := podInformer.Informer().AddIndexers(cache.Indexers{"vmi": indexPodByVMI}); err != nil {
		klog.Fatal(err)
	}
	enqueue := func(q workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandlerFuncs {
		add := func(obj interface{}) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				q.Add(key)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o interface{}) { add(o) }}
	}
	if _, err := podInformer.Informer().AddEventHandler(enqueue(a.podQueue)); err != nil {
		klog.Fatal(err)
	}

	vmiLW := cache.NewListWatchFromClient(a.virt.KubevirtV1().RESTClient(), "virtualmachineinstances", k8sv1.NamespaceAll, fields.Everything())
	vmiInformer := cache.NewSharedIndexInformer(vmiLW, &virtv1.VirtualMachineInstance{}, 10*time.Minute, cache.Indexers{})
	a.vmis = vmiInformer.GetIndexer()
	if _, err := vmiInformer.AddEventHandler(enqueue(a.vmiQueue)); err != nil {
		klog.Fatal(err)
	}

	factory.Start(ctx.Done())
	go vmiInformer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced, vmiInformer.HasSynced) {
		klog.Fatal("caches did not sync")
	}
	klog.Infof("fake-node-agent ready: nodes %s", *nodeList)
	for i := 0; i < *workers; i++ {
		go runQueue(ctx, a.podQueue, a.syncPod)
		go runQueue(ctx, a.vmiQueue, a.syncVMI)
	}
	<-ctx.Done()
	a.podQueue.ShutDown()
	a.vmiQueue.ShutDown()
}

func indexPodByVMI(obj interface{}) ([]string, error) {
	pod := obj.(*k8sv1.Pod)
	if uid := pod.Labels[virtv1.CreatedByLabel]; uid != "" {
		return []string{uid}, nil
	}
	return nil, nil
}

func runQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if err := sync(ctx, key); err != nil {
			if !apierrors.IsConflict(err) {
				klog.Warningf("sync %s: %v", key, err)
			}
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

// fakeNodeLabel marks the nodes this agent plays: its own (FakeNode) and the extra ones the
// scenarios create by copying a fake node's labels. A real node (e2e/node.sh's infra-0, with a
// real kubelet) has no such label and is left alone.
const fakeNodeLabel = "type"

// played returns the node if this agent plays it, else an error.
func (a *agent) played(name string) (*k8sv1.Node, error) {
	node, err := a.nodes.Get(name)
	if err != nil {
		return nil, err
	}
	if node.Labels[fakeNodeLabel] != "kwok" {
		return nil, fmt.Errorf("node %s has a real kubelet", name)
	}
	return node, nil
}

// realNode is true for an existing node this agent does not play. Pods on a node that is gone
// are still finished by the agent, as before.
func (a *agent) realNode(name string) bool {
	node, err := a.nodes.Get(name)
	return err == nil && node.Labels[fakeNodeLabel] != "kwok"
}

// ensureNode creates a node like KubeVirt's KWOK nodes, with the labels
// virt-handler's node labeller would add, and a Ready condition a kubelet would
// report. The index picks a distinct InternalIP.
func (a *agent) ensureNode(ctx context.Context, name string, index int) error {
	node := FakeNode(name, fmt.Sprintf("192.168.66.%d", 101+index))
	_, err := a.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// FakeNode returns the Node object of one fake node.
func FakeNode(name, ip string) *k8sv1.Node {
	resources := k8sv1.ResourceList{
		k8sv1.ResourceCPU:               resource.MustParse("32"),
		k8sv1.ResourceMemory:            resource.MustParse("256Gi"),
		k8sv1.ResourceEphemeralStorage:  resource.MustParse("100Gi"),
		k8sv1.ResourcePods:              resource.MustParse("110"),
		"devices.kubevirt.io/kvm":       resource.MustParse("1k"),
		"devices.kubevirt.io/tun":       resource.MustParse("1k"),
		"devices.kubevirt.io/vhost-net": resource.MustParse("1k"),
	}
	now := metav1.Now()
	return &k8sv1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"beta.kubernetes.io/arch":                "amd64",
				"beta.kubernetes.io/os":                  "linux",
				"kubernetes.io/arch":                     "amd64",
				"kubernetes.io/hostname":                 name,
				"kubernetes.io/os":                       "linux",
				"type":                                   "kwok",
				virtv1.NodeSchedulable:                   "true",
				virtv1.SupportedMachineTypeLabel + "q35": "true",
				// What virt-handler's node labeller reports for a host-model CPU.
				virtv1.HostModelCPULabel + "Skylake-Client-IBRS":              "true",
				virtv1.SupportedHostModelMigrationCPU + "Skylake-Client-IBRS": "true",
				virtv1.CPUModelLabel + "Skylake-Client-IBRS":                  "true",
				virtv1.CPUModelVendorLabel + "Intel":                          "true",
			},
		},
		Status: k8sv1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			Addresses: []k8sv1.NodeAddress{
				{Type: k8sv1.NodeInternalIP, Address: ip},
				{Type: k8sv1.NodeHostName, Address: name},
			},
			Conditions: []k8sv1.NodeCondition{{
				Type: k8sv1.NodeReady, Status: k8sv1.ConditionTrue, Reason: "KubeletReady",
				Message: "fake-node-agent is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			NodeInfo: k8sv1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "fake"},
		},
	}
}

// startWait is how much longer the pod's containers take to start: podStartDelay
// from the pod's PodScheduled transition (or its creation).
func (a *agent) startWait(pod *k8sv1.Pod) time.Duration {
	since := pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == k8sv1.PodScheduled && c.Status == k8sv1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			since = c.LastTransitionTime.Time
		}
	}
	return time.Until(since.Add(a.podStartDelay))
}

// syncPod plays the kubelet for one pod.
func (a *agent) syncPod(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	if a.realNode(pod.Spec.NodeName) {
		return nil // a real kubelet's pod (e2e/node.sh): its kubelet writes status and deletes it
	}
	if pod.DeletionTimestamp != nil {
		// A kubelet stops the containers, then removes the pod with grace period 0.
		err := a.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr(int64(0)),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	node, err := a.played(pod.Spec.NodeName)
	if err != nil {
		return nil // not a node this agent plays; nothing would start the pod
	}
	switch pod.Status.Phase {
	case k8sv1.PodPending, "":
		if wait := a.startWait(pod); wait > 0 {
			a.podQueue.AddAfter(key, wait)
			return nil
		}
		return a.updatePodStatus(ctx, pod.DeepCopy(), node, k8sv1.PodRunning)
	case k8sv1.PodRunning:
		// Readiness gates (virt-controller sets kubevirt.io/virtual-machine-unpaused)
		// feed into the Ready condition, as the kubelet's status manager computes it.
		updated := pod.DeepCopy()
		setPodCondition(&updated.Status, k8sv1.PodReady, podReady(updated, true), metav1.Now())
		if podCondition(pod, k8sv1.PodReady) == podCondition(updated, k8sv1.PodReady) {
			return nil
		}
		_, err := a.kube.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	return nil
}

func podCondition(pod *k8sv1.Pod, t k8sv1.PodConditionType) k8sv1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// podReady is the kubelet's rule: containers ready and every readiness gate's
// condition True.
func podReady(pod *k8sv1.Pod, containersReady bool) k8sv1.ConditionStatus {
	if !containersReady {
		return k8sv1.ConditionFalse
	}
	for _, gate := range pod.Spec.ReadinessGates {
		if podCondition(pod, gate.ConditionType) != k8sv1.ConditionTrue {
			return k8sv1.ConditionFalse
		}
	}
	return k8sv1.ConditionTrue
}

func (a *agent) updatePodStatus(ctx context.Context, pod *k8sv1.Pod, node *k8sv1.Node, phase k8sv1.PodPhase) error {
	now := metav1.Now()
	hostIP := nodeIP(node)
	running := phase == k8sv1.PodRunning
	st := &pod.Status
	st.Phase = phase
	st.HostIP = hostIP
	st.HostIPs = []k8sv1.HostIP{{IP: hostIP}}
	if st.PodIP == "" {
		ip := a.podIP(pod.UID)
		st.PodIP, st.PodIPs = ip, []k8sv1.PodIP{{IP: ip}}
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	ready := k8sv1.ConditionFalse
	if running {
		ready = k8sv1.ConditionTrue
	}
	setPodCondition(st, k8sv1.PodReadyToStartContainers, ready, now)
	setPodCondition(st, k8sv1.PodInitialized, k8sv1.ConditionTrue, now)
	setPodCondition(st, k8sv1.ContainersReady, ready, now)
	setPodCondition(st, k8sv1.PodReady, podReady(pod, running), now)
	setPodCondition(st, k8sv1.PodScheduled, k8sv1.ConditionTrue, now)
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cs := k8sv1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, ContainerID: "fake://" + string(pod.UID) + "/" + c.Name,
			Ready: true, State: k8sv1.ContainerState{Terminated: &k8sv1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: *st.StartTime, FinishedAt: now}},
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == k8sv1.ContainerRestartPolicyAlways && running {
			// A native sidecar (virt-launcher's guest-console-log) keeps running.
			cs.Started = ptr(true)
			cs.State = k8sv1.ContainerState{Running: &k8sv1.ContainerStateRunning{StartedAt: now}}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs := k8sv1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, ContainerID: "fake://" + string(pod.UID) + "/" + c.Name,
			Ready: running, Started: ptr(running),
		}
		if running {
			cs.State.Running = &k8sv1.ContainerStateRunning{StartedAt: now}
		} else {
			cs.State.Terminated = &k8sv1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: *st.StartTime, FinishedAt: now}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	_, err := a.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *agent) podIP(uid types.UID) string {
	a.ipMu.Lock()
	defer a.ipMu.Unlock()
	if ip, ok := a.podIPs[uid]; ok {
		return ip
	}
	a.nextPodIP++
	ip := fmt.Sprintf("10.244.%d.%d", a.nextPodIP/250, 2+a.nextPodIP%250)
	a.podIPs[uid] = ip
	return ip
}

func setPodCondition(st *k8sv1.PodStatus, t k8sv1.PodConditionType, s k8sv1.ConditionStatus, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, now
				st.Conditions[i].Reason, st.Conditions[i].Message = "", ""
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, k8sv1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

func nodeIP(node *k8sv1.Node) string {
	for _, addr := range node.Status.Addresses {
		if addr.Type == k8sv1.NodeInternalIP {
			return addr.Address
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// syncVMI plays virt-handler for one VMI: at most one step per call; the update
// it writes brings the VMI back through the queue for the next step.
func (a *agent) syncVMI(ctx context.Context, key string) error {
	obj, exists, err := a.vmis.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	vmi := obj.(*virtv1.VirtualMachineInstance).DeepCopy()
	if vmi.DeletionTimestamp != nil || vmi.IsFinal() || vmi.Status.NodeName == "" {
		return nil
	}
	if _, err := a.played(vmi.Status.NodeName); err != nil {
		return nil // not on a node this agent plays
	}
	old := vmi.Status.Phase
	switch {
	case vmi.Status.Phase == virtv1.Scheduled:
		startDomain(vmi)
	case vmi.Status.Phase == virtv1.Running && vmi.Status.MigrationState != nil:
		changed, err := a.migrationStep(ctx, vmi)
		if err != nil || !changed {
			return err
		}
	default:
		return nil
	}
	setPhaseTransition(vmi, old)
	// The node that held the VMI before this update makes it (the source during a migration).
	node := obj.(*virtv1.VirtualMachineInstance).Status.NodeName
	_, err = a.virtAsHandler(node).KubevirtV1().VirtualMachineInstances(vmi.Namespace).Update(ctx, vmi, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// startDomain sets what virt-handler reports once the domain runs
// (pkg/virt-handler/vm.go updateVMIStatusFromDomain, updateVMIConditions).
func startDomain(vmi *virtv1.VirtualMachineInstance) {
	now := metav1.Now()
	st := &vmi.Status
	st.Phase = virtv1.Running
	st.SelinuxContext = "none"
	if st.RuntimeUser == 0 {
		// virt-api's VMI mutator sets this at creation on non-root clusters; keep it
		// coherent when a test created the VMI without it.
		st.RuntimeUser = launcherUID
	}
	st.MigrationMethod = virtv1.LiveMigration
	st.MigrationTransport = virtv1.MigrationTransportUnix
	machine := "q35"
	if m := vmi.Spec.Domain.Machine; m != nil && m.Type != "" {
		machine = m.Type
	}
	st.Machine = &virtv1.Machine{Type: machine}
	st.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{}
	setVMICondition(vmi, virtv1.VirtualMachineInstanceIsMigratable, k8sv1.ConditionTrue, now)
	setVMICondition(vmi, virtv1.VirtualMachineInstanceIsStorageLiveMigratable, k8sv1.ConditionTrue, now)
}

// migrationStep advances a handed-off migration by one step. It reports
// whether it changed the VMI.
func (a *agent) migrationStep(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (bool, error) {
	ms := vmi.Status.MigrationState
	now := metav1.Now()
	if ms.Completed {
		return false, a.finishLauncherPods(ctx, vmi)
	}
	if ms.MigrationUID == "" || ms.TargetNode == "" {
		return false, nil // not handed off to the handlers yet
	}
	target, err := a.played(ms.TargetNode)
	if err != nil {
		return false, nil
	}
	switch {
	case ms.AbortRequested:
		// Source handler: the abort succeeded (migration-source.go handleMigrationAbort).
		ms.Failed, ms.Completed = true, true
		ms.AbortStatus = virtv1.MigrationAbortSucceeded
		ms.FailureReason = "Live migration has been aborted"
		ms.EndTimestamp = &now
	case ms.TargetNodeAddress == "":
		// Target handler: the migration proxy listens; advertise it.
		ms.TargetNodeAddress = nodeIP(target)
		ms.TargetDirectMigrationNodePorts = map[string]int{"49152": 0, "49153": 49153}
	case ms.StartTimestamp == nil:
		// Source handler: libvirt started migrating the domain.
		ms.StartTimestamp = &now
		ms.Mode = virtv1.MigrationPreCopy
	case !ms.TargetNodeDomainDetected:
		// Target handler: the migrated domain appeared and runs.
		ms.TargetNodeDomainDetected = true
		ms.TargetNodeDomainReadyTimestamp = &now
	default:
		// Target handler: ackMigrationCompletion and the finalising sync.
		ms.EndTimestamp = &now
		ms.Completed = true
		vmi.Status.NodeName = ms.TargetNode
		vmi.Status.EvacuationNodeName = ""
		vmi.Status.MigrationTransport = virtv1.MigrationTransportUnix
		vmi.Labels[virtv1.NodeNameLabel] = ms.TargetNode
		delete(vmi.Labels, virtv1.MigrationTargetNodeNameLabel)
		// ackMigrationCompletion also drops the mark virt-api's eviction interceptor
		// set for a descheduler eviction (pkg/virt-handler/migration-target.go).
		delete(vmi.Annotations, virtv1.EvictionSourceAnnotation)
	}
	return true, nil
}

// finishLauncherPods completes the launcher pod a finished migration left
// behind: after success the source launcher exits; after a failure the target
// launcher does. The pods are named by migrationState.sourcePod/targetPod.
func (a *agent) finishLauncherPods(ctx context.Context, vmi *virtv1.VirtualMachineInstance) error {
	objs, err := a.podIndexByVMI(string(vmi.UID))
	if err != nil {
		return err
	}
	ms := vmi.Status.MigrationState
	for _, pod := range objs {
		if pod.Status.Phase != k8sv1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		// By name only: a later migration's target pod may sit on the old
		// source node and must keep running.
		done := (!ms.Failed && ms.SourcePod != "" && pod.Name == ms.SourcePod) ||
			(ms.Failed && ms.TargetPod != "" && pod.Name == ms.TargetPod)
		if !done {
			continue
		}
		node, err := a.played(pod.Spec.NodeName)
		if err != nil {
			continue
		}
		if err := a.updatePodStatus(ctx, pod.DeepCopy(), node, k8sv1.PodSucceeded); err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) podIndexByVMI(uid string) ([]*k8sv1.Pod, error) {
	pods, err := a.pods.List(labels.SelectorFromSet(labels.Set{virtv1.CreatedByLabel: uid}))
	return pods, err
}

func setVMICondition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType, s k8sv1.ConditionStatus, now metav1.Time) {
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == t {
			if vmi.Status.Conditions[i].Status != s {
				vmi.Status.Conditions[i].Status, vmi.Status.Conditions[i].LastTransitionTime = s, now
			}
			return
		}
	}
	vmi.Status.Conditions = append(vmi.Status.Conditions, virtv1.VirtualMachineInstanceCondition{
		Type: t, Status: s, LastProbeTime: now, LastTransitionTime: now})
}

// setPhaseTransition records a phase change the way KubeVirt's
// controller.SetVMIPhaseTransitionTimestamp does.
func setPhaseTransition(vmi *virtv1.VirtualMachineInstance, old virtv1.VirtualMachineInstancePhase) {
	if vmi.Status.Phase == old {
		return
	}
	vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
		virtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: vmi.Status.Phase, PhaseTransitionTimestamp: metav1.Now()})
}
