package gce

import (
	"fmt"
	"regexp"
	"strings"
)

// canonicalPrefix starts every group id, as upstream writes instance-group
// URLs, so --nodes values and priority-expander patterns carry over.
const canonicalPrefix = "https://www.googleapis.com/compute/v1/"

// MIGRef names a zonal managed instance group. The instance group and its
// manager share the name.
type MIGRef struct {
	Project, Zone, Name string
}

// URL is the group's id: its canonical instance-group URL.
func (r MIGRef) URL() string {
	return canonicalPrefix + "projects/" + r.Project + "/zones/" + r.Zone + "/instanceGroups/" + r.Name
}

// String is the URL.
func (r MIGRef) String() string { return r.URL() }

var (
	// resourceName is a Compute Engine resource name (RFC 1035 label).
	resourceName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// zoneName is a zone such as us-central1-a or europe-west4-b.
	zoneName = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)
	// projectID is a project id, domain-scoped ones ("example.com:p") too.
	projectID = regexp.MustCompile(`^([a-z0-9.-]+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
)

// ParseMIGURL reads an instance-group or instance-group-manager URL, in
// full (https://www.googleapis.com/compute/v1/projects/P/zones/Z/instanceGroups/N,
// compute.googleapis.com as well) or as a path from "projects/". Regional
// groups are refused: GKE node pools are zonal groups, one per zone.
func ParseMIGURL(raw string) (MIGRef, error) {
	bad := func(why string, args ...any) (MIGRef, error) {
		return MIGRef{}, fmt.Errorf("instance group URL %q: %s", raw, fmt.Sprintf(why, args...))
	}
	path := raw
	for _, host := range []string{"https://www.googleapis.com", "https://compute.googleapis.com"} {
		if rest, ok := strings.CutPrefix(path, host); ok {
			rest, ok = strings.CutPrefix(rest, "/compute/v1/")
			if !ok {
				return bad("want /compute/v1/ after the host")
			}
			path = rest
			break
		}
	}
	parts := strings.Split(path, "/")
	if len(parts) == 6 && parts[0] == "projects" && parts[2] == "regions" {
		return bad("regional instance groups are not supported; name each zone's group")
	}
	if len(parts) != 6 || parts[0] != "projects" || parts[2] != "zones" ||
		(parts[4] != "instanceGroups" && parts[4] != "instanceGroupManagers") {
		return bad("want https://www.googleapis.com/compute/v1/projects/PROJECT/zones/ZONE/instanceGroups/NAME")
	}
	ref := MIGRef{Project: parts[1], Zone: parts[3], Name: parts[5]}
	switch {
	case !projectID.MatchString(ref.Project):
		return bad("project %q is not a project id", ref.Project)
	case !zoneName.MatchString(ref.Zone):
		return bad("zone %q is not a zone name", ref.Zone)
	case !resourceName.MatchString(ref.Name):
		return bad("name %q is not a Compute Engine resource name", ref.Name)
	}
	return ref, nil
}

// InstanceRef names one VM.
type InstanceRef struct {
	Project, Zone, Name string
}

// ProviderID is the node's spec.providerID: gce://project/zone/name.
func (r InstanceRef) ProviderID() string {
	return "gce://" + r.Project + "/" + r.Zone + "/" + r.Name
}

// ParseProviderID reads gce://project/zone/name.
func ParseProviderID(id string) (InstanceRef, error) {
	rest, ok := strings.CutPrefix(id, "gce://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return InstanceRef{}, fmt.Errorf("provider id %q: want gce://PROJECT/ZONE/INSTANCE", id)
	}
	return InstanceRef{Project: parts[0], Zone: parts[1], Name: parts[2]}, nil
}

// parseInstanceURL reads an instance URL as listManagedInstances returns
// it (.../projects/P/zones/Z/instances/NAME).
func parseInstanceURL(u string) (InstanceRef, error) {
	_, path, ok := strings.Cut(u, "projects/")
	parts := strings.Split(path, "/")
	if !ok || len(parts) != 5 || parts[1] != "zones" || parts[3] != "instances" || parts[4] == "" {
		return InstanceRef{}, fmt.Errorf("instance URL %q: want .../projects/PROJECT/zones/ZONE/instances/NAME", u)
	}
	return InstanceRef{Project: parts[0], Zone: parts[2], Name: parts[4]}, nil
}

// instancePath is the relative URL deleteInstances takes.
func instancePath(r InstanceRef) string {
	return "projects/" + r.Project + "/zones/" + r.Zone + "/instances/" + r.Name
}

// gkeGroupName matches a GKE node-pool group: gke-<cluster>-<pool>-<8 hex>-grp.
var gkeGroupName = regexp.MustCompile(`^gke-(.+)-([0-9a-f]{8})-grp$`)

// gkeNodePoolName returns the pool of a GKE node-pool group of the given
// cluster, or "" when the name is not one. Both the cluster and the pool
// may contain dashes, so the cluster name is needed to split them.
func gkeNodePoolName(group, cluster string) string {
	m := gkeGroupName.FindStringSubmatch(group)
	if m == nil || cluster == "" {
		return ""
	}
	pool, ok := strings.CutPrefix(m[1], cluster+"-")
	if !ok {
		return ""
	}
	return pool
}
