package kwok

import "fmt"

// Operation names a cloud operation that Faults.Call may fail.
type Operation string

// The operations that change a group.
const (
	OpIncreaseSize       Operation = "IncreaseSize"
	OpDecreaseTargetSize Operation = "DecreaseTargetSize"
	OpDeleteNodes        Operation = "DeleteNodes"
	OpRequestQueued      Operation = "RequestQueued"
)

// Faults make the provider fail the way real clouds do, so that tests can
// watch the autoscaler recover: API errors and throttling, and instances
// that boot but never join the cluster. The zero value injects nothing.
// The functions are called with the provider's lock held and must not call
// back into it.
type Faults struct {
	// Call runs before every operation that changes a group; an error
	// fails the operation before anything changes, as a 5xx or a
	// throttling answer from a cloud API would.
	Call func(op Operation, group string) error
	// NeverRegister reports whether a pending node will never register:
	// when its time comes its instance "boots" (it stays listed as an
	// instance and counts in the group's target) but no Node object
	// appears, as with a broken GPU driver or machine image. Deleting the
	// instance (DeleteNodes with its providerID) takes it away.
	NeverRegister func(group, node string) bool
	// OutOfCapacity reports whether the cloud has no capacity for a node
	// asked for: the next Refresh finds it failed and FailedCreations
	// reports it once (class OutOfResources, code OutOfCapacity), as a
	// failed launch in a cloud's activity log; the node is never created
	// and stays in the group's target until DecreaseTargetSize gives it
	// back.
	OutOfCapacity func(group, node string) bool
}

// CodeOutOfCapacity is the code of the failures Faults.OutOfCapacity
// injects.
const CodeOutOfCapacity = "OutOfCapacity"

func (f Faults) outOfCapacity(group, node string) bool {
	return f.OutOfCapacity != nil && f.OutOfCapacity(group, node)
}

// call asks Faults.Call about an operation.
func (f Faults) call(op Operation, group string) error {
	if f.Call == nil {
		return nil
	}
	if err := f.Call(op, group); err != nil {
		return fmt.Errorf("kwok: node group %s: %s: %w", group, op, err)
	}
	return nil
}

func (f Faults) neverRegisters(group, node string) bool {
	return f.NeverRegister != nil && f.NeverRegister(group, node)
}
