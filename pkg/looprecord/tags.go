package looprecord

import (
	"encoding/json"
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// tag names an action or an outcome by its type.
func tag(v any) (Tagged, error) {
	var name string
	switch v.(type) {
	case autoscaler.DecreaseTarget:
		name = "DecreaseTarget"
	case autoscaler.DeleteInstances:
		name = "DeleteInstances"
	case autoscaler.ScaleUp:
		name = "ScaleUp"
	case autoscaler.SoftTaint:
		name = "SoftTaint"
	case autoscaler.SoftUntaint:
		name = "SoftUntaint"
	case autoscaler.RemoveNodes:
		name = "RemoveNodes"
	case autoscaler.Cordon:
		name = "Cordon"
	case autoscaler.Uncordon:
		name = "Uncordon"
	case autoscaler.ScaleUpResult:
		name = "ScaleUpResult"
	case autoscaler.CreationFailed:
		name = "CreationFailed"
	case autoscaler.RemovalDone:
		name = "RemovalDone"
	case autoscaler.RemovalFailed:
		name = "RemovalFailed"
	case autoscaler.RemovalAborted:
		name = "RemovalAborted"
	case autoscaler.SetRequestConditions:
		name = "SetRequestConditions"
	case autoscaler.RequestConditionsSet:
		name = "RequestConditionsSet"
	default:
		return Tagged{}, fmt.Errorf("cannot record %T", v)
	}
	data, err := json.Marshal(v)
	return Tagged{Type: name, Value: data}, err
}

func untagOutcome(t Tagged) (autoscaler.Outcome, error) {
	switch t.Type {
	case "ScaleUpResult":
		return decodeOutcome[autoscaler.ScaleUpResult](t.Value)
	case "CreationFailed":
		return decodeOutcome[autoscaler.CreationFailed](t.Value)
	case "RemovalDone":
		return decodeOutcome[autoscaler.RemovalDone](t.Value)
	case "RemovalFailed":
		return decodeOutcome[autoscaler.RemovalFailed](t.Value)
	case "RemovalAborted":
		return decodeOutcome[autoscaler.RemovalAborted](t.Value)
	case "RequestConditionsSet":
		return decodeOutcome[autoscaler.RequestConditionsSet](t.Value)
	}
	return nil, fmt.Errorf("unknown outcome type %q", t.Type)
}

// decodeOutcome reads an outcome of type T.
func decodeOutcome[T autoscaler.Outcome](data json.RawMessage) (autoscaler.Outcome, error) {
	var o T
	err := json.Unmarshal(data, &o)
	return o, err
}
