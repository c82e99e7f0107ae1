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
	var err error
	switch t.Type {
	case "ScaleUpResult":
		var o autoscaler.ScaleUpResult
		err = json.Unmarshal(t.Value, &o)
		return o, err
	case "CreationFailed":
		var o autoscaler.CreationFailed
		err = json.Unmarshal(t.Value, &o)
		return o, err
	case "RemovalDone":
		var o autoscaler.RemovalDone
		err = json.Unmarshal(t.Value, &o)
		return o, err
	case "RemovalFailed":
		var o autoscaler.RemovalFailed
		err = json.Unmarshal(t.Value, &o)
		return o, err
	case "RemovalAborted":
		var o autoscaler.RemovalAborted
		err = json.Unmarshal(t.Value, &o)
		return o, err
	case "RequestConditionsSet":
		var o autoscaler.RequestConditionsSet
		err = json.Unmarshal(t.Value, &o)
		return o, err
	}
	return nil, fmt.Errorf("unknown outcome type %q", t.Type)
}
