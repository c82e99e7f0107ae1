package explain

import (
	"fmt"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// bufferLine says where one CapacityBuffer's chunks found room in the
// status's loop.
func bufferLine(b status.Buffer) string {
	var parts []string
	if b.Fit > 0 {
		where := ""
		if len(b.Nodes) > 0 {
			where = " (" + strings.Join(b.Nodes, ", ") + ")"
		}
		parts = append(parts, fmt.Sprintf("%d with room on nodes%s", b.Fit, where))
	}
	if b.ScaleUp > 0 {
		parts = append(parts, fmt.Sprintf("%d on nodes this loop adds", b.ScaleUp))
	}
	if b.NoRoom > 0 {
		parts = append(parts, fmt.Sprintf("%d without room: %s (%s)", b.NoRoom, b.Message, b.Reason))
	}
	if len(parts) == 0 {
		parts = append(parts, "not planned this loop")
	}
	return fmt.Sprintf("capacity buffer %s: %d chunk(s); %s", b.Key(), b.Replicas, strings.Join(parts, "; "))
}

// forecastText says, per inference workload, why its warm capacity has
// the size it has.
func forecastText(r *Report, fs []status.Forecast) {
	for _, f := range fs {
		r.add("warm capacity of %s/%s: %d replica(s) held as capacity buffer %s/%s: %s", f.Namespace, f.Name, f.Replicas,
			f.Namespace, f.Buffer, f.Message)
	}
}

// bufferText adds a line per buffer.
func bufferText(r *Report, bufs []status.Buffer) {
	for _, b := range bufs {
		r.add("%s", bufferLine(b))
	}
}

// nodeBufferText says which buffers hold room on a node, and what that
// means for its removal.
func nodeBufferText(r *Report, a *NodeAnswer) {
	if len(a.Buffers) == 0 {
		return
	}
	r.add("holds the room of CapacityBuffer(s) %s: their placeholder pods count as this node's pods, so scale-down and "+
		"consolidation remove it only if that room fits on other nodes; a real pod takes the room first", strings.Join(a.Buffers, ", "))
}

// podBufferText tells a pending pod that buffers' room is its to take.
func podBufferText(r *Report, bufs []status.Buffer) {
	held := 0
	for _, b := range bufs {
		held += b.Fit
	}
	if held > 0 {
		r.add("%d chunk(s) of CapacityBuffers hold room on nodes; real pods take it before them (explain cluster lists the buffers)", held)
	}
}
