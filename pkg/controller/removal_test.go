package controller

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// The ScaleDown event says why the node goes once, and its annotations
// carry the same reason as data.
func TestRemovalMessageAndAnnotations(t *testing.T) {
	pod := builder.Pod("a").Namespace("ml").Build()
	for _, tc := range []struct {
		rm     disruption.Removal
		msg    string
		reason string
	}{
		{disruption.Removal{Node: "n1", Group: "g", Empty: true}, "removing empty node", status.RemovalEmpty},
		{disruption.Removal{Node: "n1", Group: "g", Unready: true}, "removing node (unready), evicting 0 pod(s): ", status.RemovalUnready},
		{disruption.Removal{Node: "n1", Group: "g", Evict: []disruption.Move{{Pod: pod}}}, "removing node (underutilized), evicting 1 pod(s): ml/a",
			status.RemovalUnderutilized},
		{disruption.Removal{Node: "n1", Group: "g", Empty: true, Consolidation: "delete: saves $1/h"}, "removing empty node (delete: saves $1/h)",
			status.RemovalConsolidation},
		{disruption.Removal{Node: "n1", Group: "g", Evict: []disruption.Move{{Pod: pod}}, Repair: "repair: condition AcceleratedHardwareReady=False since 2026-11-20T12:00:00Z"},
			"removing node (repair: condition AcceleratedHardwareReady=False since 2026-11-20T12:00:00Z), evicting 1 pod(s): ml/a", status.RemovalRepair},
	} {
		if got := removalMessage(tc.rm); got != tc.msg {
			t.Errorf("removalMessage(%+v) = %q, want %q", tc.rm, got, tc.msg)
		}
		a := removalAnnotations(tc.rm, "n1")
		if a[status.AnnotationRemovalReason] != tc.reason || a[status.AnnotationNodeGroup] != "g" || a[status.AnnotationNode] != "n1" {
			t.Errorf("removalAnnotations(%+v) = %v, want reason %s", tc.rm, a, tc.reason)
		}
	}
	if _, ok := removalAnnotations(disruption.Removal{Group: "g"}, "")[status.AnnotationNode]; ok {
		t.Error("events on the node itself name no node in their annotations")
	}
}
