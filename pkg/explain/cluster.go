package explain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// ClusterAnswer is the cluster-wide autoscaling state, from the status.
type ClusterAnswer struct {
	AutoscalerStatus string `json:"autoscalerStatus,omitempty"`
	// Health is upstream's health condition; SafeToAutoscale is false
	// while the health brake (--ok-total-unready-count,
	// --max-total-unready-percentage) stops the loop.
	Health Health           `json:"health"`
	Nodes  status.DocCounts `json:"nodes"`
	// ScaleUp is the cluster's scale-up condition: InProgress while a
	// group waits for nodes it asked for.
	ScaleUp   Condition `json:"scaleUp"`
	ScaleDown ScaleDown `json:"scaleDown"`
	// Backoffs are the node groups whose scale-ups are backed off.
	Backoffs []Backoff `json:"backoffs,omitempty"`
	// GroupsScalingUp and UnhealthyGroups name node groups.
	GroupsScalingUp []string `json:"groupsScalingUp,omitempty"`
	UnhealthyGroups []string `json:"unhealthyGroups,omitempty"`
	// ScaleUps are the scale-ups decided in the status's loop.
	ScaleUps []status.ScaleUp `json:"scaleUps,omitempty"`
	// PendingPods counts the pods no scale-up helps, in PendingGroups
	// groups of equivalent pods (explain pod says why for each).
	PendingPods   int `json:"pendingPods"`
	PendingGroups int `json:"pendingGroups"`
	// OtherSchedulers count the waiting pods left alone because another
	// scheduler places them, per scheduler.
	OtherSchedulers []status.SchedulerPods `json:"otherSchedulers,omitempty"`
	// KeptByReason counts the nodes kept, by reason.
	KeptByReason map[string]int `json:"keptByReason,omitempty"`
	// Consolidation is set while consolidation is on.
	Consolidation *status.Consolidation `json:"consolidation,omitempty"`
	// Repair is set while node repair is on.
	Repair *status.Repair `json:"repair,omitempty"`
	// CapacityBuffers are the buffers the loop planned with and where
	// their chunks found room.
	CapacityBuffers []status.Buffer `json:"capacityBuffers,omitempty"`
	// Forecasts are how the forecast sized each inference workload's
	// warm capacity.
	Forecasts []status.Forecast `json:"forecasts,omitempty"`
	Omitted   *status.Omitted   `json:"omitted,omitempty"`
	Status    StatusInfo        `json:"status"`
}

// Health is a health condition.
type Health struct {
	Status          string     `json:"status"`
	SafeToAutoscale bool       `json:"safeToAutoscale"`
	Reason          string     `json:"reason,omitempty"`
	Message         string     `json:"message,omitempty"`
	Since           *time.Time `json:"since,omitempty"`
}

// Condition is a scale-up or scale-down condition and since when it holds.
type Condition struct {
	Status string     `json:"status"`
	Since  *time.Time `json:"since,omitempty"`
}

// ScaleDown is the cluster's scale-down state.
type ScaleDown struct {
	Condition
	Candidates int `json:"candidates"`
	// Skipped says why scale-down did not run in the status's loop.
	Skipped string `json:"skipped,omitempty"`
	// InCooldown is true while a delay after a scale-up, a removal or a
	// failure (CooldownReason names the flag) holds removals until
	// CooldownUntil.
	InCooldown     bool       `json:"inCooldown"`
	CooldownUntil  *time.Time `json:"cooldownUntil,omitempty"`
	CooldownReason string     `json:"cooldownReason,omitempty"`
}

// Backoff is a node group whose scale-ups are backed off.
type Backoff struct {
	Group        string     `json:"group"`
	ErrorCode    string     `json:"errorCode,omitempty"`
	ErrorMessage string     `json:"errorMessage,omitempty"`
	Until        *time.Time `json:"until,omitempty"`
	Since        *time.Time `json:"since,omitempty"`
}

// Cluster explains the cluster-wide state: health and the health brake,
// node counts, scale-up activity, scale-down and its cooldown, backoffs,
// pending pods, kept nodes and consolidation.
func (e *Explainer) Cluster(ctx context.Context) (Report, error) {
	st, err := e.status(ctx)
	if err != nil {
		return Report{}, err
	}
	cw := st.ClusterWide
	a := &ClusterAnswer{AutoscalerStatus: st.AutoscalerStatus, Nodes: cw.Health.NodeCounts, Status: e.statusInfo(st),
		Health: Health{Status: cw.Health.Status, SafeToAutoscale: st.SafeToAutoscale, Reason: cw.Health.Reason,
			Message: cw.Health.Message, Since: timeOf(cw.Health.LastTransitionTime.Time)},
		ScaleUp:         Condition{Status: cw.ScaleUp.Status, Since: timeOf(cw.ScaleUp.LastTransitionTime.Time)},
		ScaleDown:       scaleDownOf(st),
		ScaleUps:        st.ScaleUps,
		KeptByReason:    st.NodeReasons,
		Consolidation:   st.Consolidation,
		Repair:          st.Repair,
		Omitted:         st.Omitted,
		CapacityBuffers: st.CapacityBuffers,
		Forecasts:       st.Forecasts,
	}
	for _, g := range st.NodeGroups {
		if b, ok := backoffOf(g); ok {
			a.Backoffs = append(a.Backoffs, b)
		}
		if g.ScaleUp.Status == status.ActivityInProgress {
			a.GroupsScalingUp = append(a.GroupsScalingUp, g.Name)
		}
		if g.Health.Status == status.Unhealthy {
			a.UnhealthyGroups = append(a.UnhealthyGroups, g.Name)
		}
	}
	for _, p := range st.PendingPods {
		a.PendingPods += p.Count
		a.PendingGroups++
	}
	a.OtherSchedulers = st.OtherSchedulers
	if st.Omitted != nil {
		a.PendingPods += st.Omitted.PendingPods
		a.PendingGroups += st.Omitted.PendingGroups
	}
	r := Report{Kind: KindCluster, Object: "cluster", Cluster: a}
	e.clusterText(&r, a)
	return r, nil
}

func scaleDownOf(st *status.Document) ScaleDown {
	sd := st.ClusterWide.ScaleDown
	out := ScaleDown{Condition: Condition{Status: sd.Status, Since: timeOf(sd.LastTransitionTime.Time)},
		Candidates: sd.Candidates, Skipped: sd.Skipped, CooldownReason: sd.CooldownReason}
	if sd.CooldownUntil != nil {
		until := sd.CooldownUntil.UTC()
		out.CooldownUntil = &until
		if at, err := st.DocTime(); err == nil {
			out.InCooldown = at.Before(until)
		}
	}
	return out
}

func backoffOf(g status.NodeGroupStatus) (Backoff, bool) {
	if g.ScaleUp.Status != status.ActivityBackoff {
		return Backoff{}, false
	}
	b := Backoff{Group: g.Name, Since: timeOf(g.ScaleUp.LastTransitionTime.Time)}
	if g.ScaleUp.BackoffInfo != nil {
		b.ErrorCode, b.ErrorMessage = g.ScaleUp.BackoffInfo.ErrorCode, g.ScaleUp.BackoffInfo.ErrorMessage
	}
	if g.ScaleUp.BackoffUntil != nil {
		until := g.ScaleUp.BackoffUntil.UTC()
		b.Until = &until
	}
	return b, true
}

// timeOf is nil for the zero time, so JSON leaves it out.
func timeOf(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func (e *Explainer) clusterText(r *Report, a *ClusterAnswer) {
	var verdict []string
	if a.Health.SafeToAutoscale {
		verdict = append(verdict, "healthy, autoscaling")
	} else {
		verdict = append(verdict, "NOT autoscaling: the health brake holds ("+a.Health.Reason+")")
	}
	if len(a.GroupsScalingUp) > 0 {
		verdict = append(verdict, "scaling up "+strings.Join(a.GroupsScalingUp, ", "))
	}
	if len(a.Backoffs) > 0 {
		verdict = append(verdict, fmt.Sprintf("%d node group(s) backed off", len(a.Backoffs)))
	}
	if a.ScaleDown.InCooldown {
		verdict = append(verdict, "scale-down in cooldown")
	}
	r.Verdict = strings.Join(verdict, "; ")
	h := "health: " + a.Health.Status
	if a.Health.Since != nil {
		h += " since " + e.at(*a.Health.Since)
	}
	r.add("%s", h)
	if !a.Health.SafeToAutoscale {
		r.add("  %s: neither scale-up nor scale-down runs until enough nodes are ready again (--ok-total-unready-count, --max-total-unready-percentage)", a.Health.Message)
	}
	r.add("nodes: %s", countsText(a.Nodes))
	e.conditionLine(r, "scale-up", a.ScaleUp)
	e.scaleDownText(r, a.ScaleDown)
	for _, b := range a.Backoffs {
		r.add("%s", e.backoffLine(b))
	}
	if len(a.UnhealthyGroups) > 0 {
		r.add("unhealthy node groups (more than half their nodes unready): %s", strings.Join(a.UnhealthyGroups, ", "))
	}
	for _, su := range a.ScaleUps {
		r.add("this loop scaled up node group %s from %d to %d (explain pod or explain nodegroup %s for the options weighed)", su.Group, su.From, su.To, su.Group)
	}
	if a.PendingPods > 0 {
		r.add("pending pods no scale-up helps: %d in %d group(s) of equivalent pods (explain pod NAME says why, per node group)", a.PendingPods, a.PendingGroups)
	}
	for _, o := range a.OtherSchedulers {
		r.add("%s", o.Message)
	}
	if len(a.KeptByReason) > 0 {
		r.add("nodes kept, by reason: %s", reasonCounts(a.KeptByReason))
	}
	e.consolidationText(r, a.Consolidation)
	e.repairText(r, a.Repair)
	forecastText(r, a.Forecasts)
	bufferText(r, a.CapacityBuffers)
	r.add("(status written %s)", e.statusTimeText(a.Status.Time))
}

func (e *Explainer) conditionLine(r *Report, what string, c Condition) {
	line := what + ": " + c.Status
	if c.Since != nil {
		line += " since " + e.at(*c.Since)
	}
	r.add("%s", line)
}

func (e *Explainer) scaleDownText(r *Report, sd ScaleDown) {
	line := fmt.Sprintf("scale-down: %s, %d candidate(s)", sd.Status, sd.Candidates)
	switch {
	case sd.InCooldown:
		line += fmt.Sprintf("; in cooldown until %s (%s)", e.at(*sd.CooldownUntil), sd.CooldownReason)
	case sd.CooldownUntil != nil:
		line += fmt.Sprintf("; its cooldown (%s) ended %s", sd.CooldownReason, e.at(*sd.CooldownUntil))
	}
	r.add("%s", line)
	if sd.Skipped != "" {
		r.add("  scale-down did not run: %s", sd.Skipped)
	}
}

func (e *Explainer) backoffLine(b Backoff) string {
	line := "node group " + b.Group + ": scale-ups backed off"
	if b.Until != nil {
		line += " until " + e.at(*b.Until)
	}
	if b.ErrorMessage != "" || b.ErrorCode != "" {
		line += fmt.Sprintf(": %s (%s)", b.ErrorMessage, b.ErrorCode)
	}
	return line
}

func (e *Explainer) consolidationText(r *Report, c *status.Consolidation) {
	if c == nil {
		return
	}
	if len(c.Moves)+len(c.Waiting)+len(c.Replacing) == 0 {
		r.add("consolidation: on, no move found or in flight")
		return
	}
	for _, m := range c.Moves {
		r.add("consolidation: %s %s: %s", strings.ToLower(m.Kind), strings.Join(m.Nodes, ", "), m.Message)
	}
	for _, w := range c.Waiting {
		r.add("consolidation: %s %s waits until %s (the nodes must stay consolidatable that long)", strings.ToLower(w.Kind), strings.Join(w.Nodes, ", "), e.at(w.Until))
	}
	for _, m := range c.Replacing {
		r.add("consolidation: replacing %s by %d new node(s) of %s since %s", strings.Join(m.Nodes, ", "), m.LaunchCount, m.LaunchGroup, e.at(m.Since))
	}
}

// countsText writes node counts in upstream's terms.
func countsText(c status.DocCounts) string {
	reg := c.Registered
	parts := []string{fmt.Sprintf("%d ready", reg.Ready)}
	if reg.NotStarted > 0 {
		parts = append(parts, fmt.Sprintf("%d starting (notStarted)", reg.NotStarted))
	}
	if reg.Unready.Total > 0 {
		u := fmt.Sprintf("%d unready", reg.Unready.Total)
		if reg.Unready.ResourceUnready > 0 {
			u += fmt.Sprintf(" (%d of them without their GPUs past --max-node-startup-time)", reg.Unready.ResourceUnready)
		}
		parts = append(parts, u)
	}
	if reg.BeingDeleted > 0 {
		parts = append(parts, fmt.Sprintf("%d being deleted", reg.BeingDeleted))
	}
	s := fmt.Sprintf("%d registered (%s)", reg.Total, strings.Join(parts, ", "))
	if c.Unregistered > 0 {
		s += fmt.Sprintf("; %d asked for and not registered yet", c.Unregistered)
		if c.LongUnregistered > 0 {
			s += fmt.Sprintf(" (%d past --max-node-provision-time)", c.LongUnregistered)
		}
	}
	return s
}
