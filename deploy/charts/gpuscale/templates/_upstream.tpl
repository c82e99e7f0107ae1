{{/*
The upstream cluster-autoscaler chart's value names, accepted with the same
meaning for the node autoscaler (docs/migrating-from-cluster-autoscaler.md):
autoDiscovery.clusterName and .tags, awsRegion, autoscalingGroups,
autoscalingGroupsnamePrefix, extraArgs, extraEnv, rbac.serviceAccount.* and
image.pullSecrets. They add to the clusterAutoscaler values; where both set
one thing, the upstream name wins.
*/}}

{{/* Command-line arguments from a map of flags: "flag: value" is --flag=value,
a list value repeats the flag, a null value is --flag alone, and anything from
the first "_" of a key on is dropped (upstream's way to repeat a flag:
balancing-ignore-label_1, balancing-ignore-label_2). */}}
{{- define "gpuscale.args" -}}
{{- range $key, $value := . }}
{{- $flag := regexFind "^[^_]+" $key }}
{{- if kindIs "slice" $value }}
{{- range $value }}
- --{{ $flag }}={{ . }}
{{- end }}
{{- else if kindIs "invalid" $value }}
- --{{ $flag }}
{{- else }}
- --{{ $flag }}={{ $value }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The autoscaler's extra flags: extraArgs over clusterAutoscaler.extraArgs. */}}
{{- define "gpuscale.autoscaler.extraArgs" -}}
{{- include "gpuscale.args" (merge (dict) (.Values.extraArgs | default dict) (.Values.clusterAutoscaler.extraArgs | default dict)) }}
{{- end -}}

{{/* --nodes values: clusterAutoscaler.nodes, then autoscalingGroups. */}}
{{- define "gpuscale.autoscaler.nodes" -}}
{{- range .Values.clusterAutoscaler.nodes }}
- --nodes={{ . }}
{{- end }}
{{- range .Values.autoscalingGroups }}
- --nodes={{ .minSize }}:{{ .maxSize }}:{{ .name }}
{{- end }}
{{- end -}}

{{/* --node-group-auto-discovery values: clusterAutoscaler.autoDiscovery, then
the AWS tags of autoDiscovery (when autoDiscovery.clusterName is set), then
autoscalingGroupsnamePrefix (GCE). */}}
{{- define "gpuscale.autoscaler.autoDiscovery" -}}
{{- range .Values.clusterAutoscaler.autoDiscovery }}
- --node-group-auto-discovery={{ . }}
{{- end }}
{{- if .Values.autoDiscovery.clusterName }}
- --node-group-auto-discovery=asg:tag={{ tpl (join "," .Values.autoDiscovery.tags) $ }}
{{- end }}
{{- range .Values.autoscalingGroupsnamePrefix }}
- --node-group-auto-discovery=mig:namePrefix={{ tpl .name $ }},min={{ .minSize }},max={{ .maxSize }}
{{- end }}
{{- end -}}

{{/* The autoscaler's environment: clusterAutoscaler.env, AWS_REGION from
awsRegion, then extraEnv. */}}
{{- define "gpuscale.autoscaler.env" -}}
{{- with .Values.clusterAutoscaler.env }}
{{ toYaml . }}
{{- end }}
{{- with tpl .Values.awsRegion . }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- range $name, $value := .Values.extraEnv }}
- name: {{ $name | quote }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* The autoscaler's ServiceAccount settings: rbac.serviceAccount over
clusterAutoscaler.serviceAccount, as YAML (create, name, annotations,
automountServiceAccountToken when set). */}}
{{- define "gpuscale.autoscaler.serviceAccount" -}}
{{- $ours := .Values.clusterAutoscaler.serviceAccount -}}
{{- $theirs := .Values.rbac.serviceAccount | default dict -}}
{{- $create := $ours.create -}}
{{- if hasKey $theirs "create" }}{{ $create = $theirs.create }}{{ end -}}
{{- $annotations := dict -}}
{{- range $k, $v := ($theirs.annotations | default dict) }}{{ $_ := set $annotations (tpl $k $) (tpl (toString $v) $) }}{{ end -}}
{{- $annotations = merge $annotations ($ours.annotations | default dict) -}}
{{- $out := dict "create" $create "name" (default $ours.name $theirs.name) "annotations" $annotations -}}
{{- if hasKey $theirs "automountServiceAccountToken" }}{{ $_ := set $out "automountServiceAccountToken" $theirs.automountServiceAccountToken }}{{ end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* imagePullSecrets of every pod: imagePullSecrets, then image.pullSecrets
(names, as upstream gives them, or {name: ...}). */}}
{{- define "gpuscale.imagePullSecrets" -}}
{{- $out := list -}}
{{- range .Values.imagePullSecrets }}{{ $out = append $out . }}{{ end -}}
{{- range .Values.image.pullSecrets }}
{{- if kindIs "string" . }}{{ $out = append $out (dict "name" .) }}{{ else }}{{ $out = append $out . }}{{ end -}}
{{- end -}}
{{- with $out }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Refuses upstream values that would mean something else here, naming the value. */}}
{{- define "gpuscale.validateUpstream" -}}
{{- $ca := .Values.clusterAutoscaler -}}
{{- if contains "autoscaling/cluster-autoscaler" .Values.image.repository -}}
{{- fail (printf "image.repository: %s is the upstream Cluster Autoscaler's image; gpuscale runs its own (ghcr.io/gpuscale/gpuscale): leave image.repository and image.tag out of an upstream values file" .Values.image.repository) -}}
{{- end -}}
{{- if and .Values.autoDiscovery.clusterName (ne $ca.cloudProvider "aws") -}}
{{- fail (printf "autoDiscovery.clusterName: discovers Auto Scaling groups by tag, for cloudProvider aws; got %q (for gce use autoscalingGroupsnamePrefix or clusterAutoscaler.autoDiscovery)" $ca.cloudProvider) -}}
{{- end -}}
{{- if and .Values.awsRegion (ne $ca.cloudProvider "aws") -}}
{{- fail (printf "awsRegion: sets AWS_REGION for cloudProvider aws; got %q" $ca.cloudProvider) -}}
{{- end -}}
{{- if and .Values.autoscalingGroupsnamePrefix (ne $ca.cloudProvider "gce") -}}
{{- fail (printf "autoscalingGroupsnamePrefix: discovers managed instance groups, for cloudProvider gce; got %q" $ca.cloudProvider) -}}
{{- end -}}
{{- range $i, $g := .Values.autoscalingGroups -}}
{{- if or (not $g.name) (not (hasKey $g "minSize")) (not (hasKey $g "maxSize")) -}}
{{- fail (printf "autoscalingGroups[%d]: want name, minSize and maxSize, got %v" $i $g) -}}
{{- end -}}
{{- end -}}
{{- range $i, $g := .Values.autoscalingGroupsnamePrefix -}}
{{- if or (not $g.name) (not (hasKey $g "minSize")) (not (hasKey $g "maxSize")) -}}
{{- fail (printf "autoscalingGroupsnamePrefix[%d]: want name, minSize and maxSize, got %v" $i $g) -}}
{{- end -}}
{{- end -}}
{{- $chartFlags := list "cloud-provider" "namespace" "nodes" "node-group-auto-discovery" "leader-elect" "leader-elect-resource-name" "address" "cloud-config" "kubeconfig" -}}
{{- range $path, $args := dict "clusterAutoscaler.extraArgs" $ca.extraArgs "extraArgs" .Values.extraArgs -}}
{{- range $key, $_ := $args -}}
{{- if has (regexFind "^[^_]+" $key) $chartFlags -}}
{{- fail (printf "%s.%s: set by the chart; use the value of its own (see values.yaml)" $path $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names := dict -}}
{{- range (include "gpuscale.autoscaler.env" . | fromYamlArray) -}}
{{- if hasKey $names .name -}}
{{- fail (printf "environment variable %s of the autoscaler is set twice (clusterAutoscaler.env, awsRegion, extraEnv): set it once" .name) -}}
{{- end -}}
{{- $_ := set $names .name true -}}
{{- end -}}
{{- $sa := include "gpuscale.autoscaler.serviceAccount" . | fromYaml -}}
{{- if and (not $sa.create) (not $sa.name) -}}
{{- fail "rbac.serviceAccount.name (or clusterAutoscaler.serviceAccount.name): name the existing ServiceAccount to run as when the chart creates none" -}}
{{- end -}}
{{- end -}}
