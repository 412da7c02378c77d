// Command virtctl is KubeVirt's virtctl with only the commands an admin uses to
// move VMs: migrate, migrate-cancel and evacuate-cancel.
//
// The commands themselves are KubeVirt's own (kubevirt.io/kubevirt/pkg/virtctl/vm,
// unchanged); only the root differs from pkg/virtctl/root.go. The full root also
// wires virtctl's template commands, which import kubevirt.io/virt-template-engine,
// a module the module proxy this project builds from does not serve (see
// e2e/third_party/README.md), so cmd/virtctl itself cannot be built here. The root
// below does what root.go's does for these commands: the kubeconfig flags of
// kubecli.DefaultClientConfig on the persistent flag set, the client config in the
// command context (clientconfig.NewContext), silenced usage and errors, exit 1 on
// error with the error printed.
package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"kubevirt.io/client-go/kubecli"

	"kubevirt.io/kubevirt/pkg/virtctl/clientconfig"
	"kubevirt.io/kubevirt/pkg/virtctl/vm"
)

func main() {
	root := &cobra.Command{
		Use:           "virtctl",
		Short:         "KubeVirt's virtctl, migration commands only",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(os.Stdout)
	root.SetContext(clientconfig.NewContext(context.Background(), kubecli.DefaultClientConfig(root.PersistentFlags())))
	root.AddCommand(vm.NewMigrateCommand(), vm.NewMigrateCancelCommand(), vm.NewEvacuateCancelCommand())
	if err := root.Execute(); err != nil {
		root.PrintErrln(err)
		os.Exit(1)
	}
}
