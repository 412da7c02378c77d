// cli/cancel_cmd.h — `kubectl migrate cancel MIGRATION|--vmi VMI`: cancel a migration the
// way `virtctl migrate-cancel` does (KubeVirt v1.9.0 pkg/virtctl/vm/migrate_cancel.go), by
// deleting its VirtualMachineInstanceMigration. virt-controller sees the deletionTimestamp,
// asks virt-handler to abort (or deletes a target pod that has not started), and the VM
// stays on its source node.
//
// Which VMIM:
//  - MIGRATION: that VMIM, read first so a migration that already ended (phase Succeeded or
//    Failed, KubeVirt's IsFinal) is reported instead of being deleted: deleting it would only
//    lose its record, and the VM would not notice.
//  - --vmi VMI: virtctl's lookup — list the namespace's VMIMs labelled
//    kubevirt.io/vmi-name==VMI and take the first that has not ended. None: an error, as
//    virtctl's "Found no migration to cancel".
// The DELETE carries the uid that was read as a precondition, so a VMIM re-created under
// the same name meanwhile is not deleted by mistake (virtctl sends no precondition).
// --dry-run=server sends dryRun=All; --dry-run=client reads but does not delete.
//
// Output: kubectl's line "virtualmachineinstancemigration.kubevirt.io/NAME cancelled" (with
// " (dry run)" / " (server dry run)"), or the VMIM as -o name|yaml|json.
// Exit codes: 0 deleted (or would be); 1 not found, already ended, nothing to cancel, or the
// API server refused (its message on stderr, as kubectl prints it).
#pragma once

#include <string>

#include "cli/args.h"
#include "cli/migrate.h"
#include "kube/client.h"

namespace kmt::cli {

int RunCancel(const Invocation& inv, const std::string& ns, kube::KubeClient& client, Streams io);

}  // namespace kmt::cli
