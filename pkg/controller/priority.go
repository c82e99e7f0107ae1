package controller

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/expander"
)

// PriorityConfigMap reads the priority expander's ConfigMap text from its
// data, trying the upstream key first.
func PriorityConfigMap(cm *v1.ConfigMap) (*expander.Priorities, error) {
	for _, k := range expander.PriorityKeys() {
		if text, ok := cm.Data[k]; ok {
			return expander.ParsePriorities(text)
		}
	}
	return nil, fmt.Errorf("ConfigMap %s/%s: no key %q", cm.Namespace, cm.Name, expander.PriorityKeys()[0])
}

// refreshPriorities reads the priority expander's ConfigMap again when the
// priority expander is in use, and keeps it for the core's next Input. A
// ConfigMap that is missing or does not parse leaves the last good
// priorities in force; the problem is logged and shown as a Warning event
// on the ConfigMap, once per version. One GET per loop keeps the
// permission this needs to the "get" the first read already needs.
func (c *Controller) refreshPriorities(ctx context.Context) {
	if !strings.Contains(c.opts.Autoscaler.ScaleUp.Expander, "priority") {
		return
	}
	cm, err := c.client.CoreV1().ConfigMaps(c.opts.Namespace).Get(ctx, expander.PriorityConfigMapName, metav1.GetOptions{})
	if err != nil {
		if c.priorityVersion != "missing" {
			c.log.Error("priority expander ConfigMap unreadable; keeping the last priorities", "namespace", c.opts.Namespace,
				"name", expander.PriorityConfigMapName, "err", err)
			c.priorityVersion = "missing"
		}
		return
	}
	if cm.ResourceVersion == c.priorityVersion {
		return
	}
	c.priorityVersion = cm.ResourceVersion
	prio, err := PriorityConfigMap(cm)
	if err == nil {
		// The expander chain is rebuilt in the core; building it here
		// first refuses what the core would refuse.
		_, err = expander.NewChain(c.opts.Autoscaler.ScaleUp.Expander, expander.Config{Priorities: prio})
	}
	if err != nil {
		c.log.Error("priority expander ConfigMap refused; keeping the last priorities", "resourceVersion", cm.ResourceVersion, "err", err)
		c.recorder.Event(cm, v1.EventTypeWarning, "PriorityConfigRefused", "kept the previous priorities: "+err.Error())
		return
	}
	c.priorities = prio
	c.log.Info("priority expander ConfigMap loaded", "resourceVersion", cm.ResourceVersion)
}
