{{/* The release's base name: the release name, or "<release>-gpuscale" when it does not contain the chart name. */}}
{{- define "gpuscale.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpuscale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries; pass a dict with "ctx" (the root context) and "component". */}}
{{- define "gpuscale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{ include "gpuscale.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: gpuscale
{{- end -}}

{{- define "gpuscale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpuscale.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gpuscale.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Names of the three parts. */}}
{{- define "gpuscale.autoscaler.name" -}}{{ include "gpuscale.fullname" . }}-cluster-autoscaler{{- end -}}
{{- define "gpuscale.adapter.name" -}}{{ include "gpuscale.fullname" . }}-metrics-adapter{{- end -}}
{{- define "gpuscale.dcgmsim.name" -}}{{ include "gpuscale.fullname" . }}-dcgm-sim{{- end -}}

{{- define "gpuscale.autoscaler.serviceAccountName" -}}
{{- $sa := include "gpuscale.autoscaler.serviceAccount" . | fromYaml -}}
{{- default (include "gpuscale.autoscaler.name" .) $sa.name -}}
{{- end -}}
{{- define "gpuscale.adapter.serviceAccountName" -}}
{{- default (include "gpuscale.adapter.name" .) .Values.metricsAdapter.serviceAccount.name -}}
{{- end -}}

{{/* A restricted container security context shared by every container. */}}
{{- define "gpuscale.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Scheduling fields of a part: pass its values. */}}
{{- define "gpuscale.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Refuses values the chart would otherwise render into a broken install, naming the value. */}}
{{- define "gpuscale.validate" -}}
{{- $providers := list "aws" "gce" "kwok" -}}
{{- if and .Values.clusterAutoscaler.enabled (not (has .Values.clusterAutoscaler.cloudProvider $providers)) -}}
{{- fail (printf "clusterAutoscaler.cloudProvider: want aws, gce or kwok, got %q" .Values.clusterAutoscaler.cloudProvider) -}}
{{- end -}}
{{- if and .Values.clusterAutoscaler.enabled (eq .Values.clusterAutoscaler.cloudProvider "kwok") (not .Values.clusterAutoscaler.kwok.config) (not .Values.clusterAutoscaler.cloudConfig) (not .Values.clusterAutoscaler.cloudConfigContent) -}}
{{- fail "clusterAutoscaler.kwok.config: the kwok provider needs its node groups (or a cloud configuration file)" -}}
{{- end -}}
{{- if and .Values.metricsAdapter.enabled (not .Values.metricsAdapter.rules.custom) (not .Values.metricsAdapter.rules.external) -}}
{{- fail "metricsAdapter.rules: no custom or external rules, so the adapter would serve nothing; add rules or set metricsAdapter.enabled=false" -}}
{{- end -}}
{{- if and .Values.metricsAdapter.enabled (not .Values.metricsAdapter.serviceAccount.create) (not .Values.metricsAdapter.serviceAccount.name) -}}
{{- fail "metricsAdapter.serviceAccount.name: name the existing ServiceAccount to run as when metricsAdapter.serviceAccount.create is false" -}}
{{- end -}}
{{- $ma := .Values.metricsAdapter -}}
{{- if and $ma.enabled (eq (include "gpuscale.adapter.tlsMode" .) "secret") (not $ma.apiService.caBundle) (not (hasKey ($ma.apiService.annotations | default dict) "cert-manager.io/inject-ca-from")) -}}
{{- fail "metricsAdapter.apiService.caBundle: the CA of the certificate in metricsAdapter.tls.secretName is needed for the API server to verify the adapter (or the annotation cert-manager.io/inject-ca-from in metricsAdapter.apiService.annotations, or metricsAdapter.apiService.insecureSkipTLSVerify=true to skip verification)" -}}
{{- end -}}
{{- if and .Values.clusterAutoscaler.cloudConfig .Values.clusterAutoscaler.cloudConfigContent -}}
{{- fail "clusterAutoscaler.cloudConfig and clusterAutoscaler.cloudConfigContent: set one, not both" -}}
{{- end -}}
{{- if and (eq .Values.clusterAutoscaler.cloudProvider "kwok") .Values.clusterAutoscaler.kwok.config (or .Values.clusterAutoscaler.cloudConfig .Values.clusterAutoscaler.cloudConfigContent) -}}
{{- fail "clusterAutoscaler.kwok.config: the kwok provider reads it only without a --cloud-config; set one of the two" -}}
{{- end -}}
{{- end -}}

{{/* How the API server trusts the metrics adapter: "insecure" (it skips
verification; an explicit opt-in), "secret" (tls.secretName holds the
certificate, apiService.caBundle or cert-manager's injector its CA) or
"chart" (the default: the chart generates a CA and a certificate). */}}
{{- define "gpuscale.adapter.tlsMode" -}}
{{- $ma := .Values.metricsAdapter -}}
{{- if $ma.apiService.insecureSkipTLSVerify -}}insecure
{{- else if $ma.tls.secretName -}}secret
{{- else -}}chart
{{- end -}}
{{- end -}}

{{/* The Secret holding the adapter's serving certificate; "" when the
adapter generates its own (insecure mode without tls.secretName). */}}
{{- define "gpuscale.adapter.tlsSecret" -}}
{{- $ma := .Values.metricsAdapter -}}
{{- if $ma.tls.secretName -}}{{ $ma.tls.secretName }}
{{- else if eq (include "gpuscale.adapter.tlsMode" .) "chart" -}}{{ include "gpuscale.adapter.name" . }}-tls
{{- end -}}
{{- end -}}

{{/* The chart's CA and serving certificate for the adapter's Service, as
the Secret's data. An existing Secret (lookup, on install and upgrade) is
kept until 30 days before it expires, then replaced: every upgrade in that
window renews it. helm template, which cannot look up, generates anew. */}}
{{- define "gpuscale.adapter.chartTLS" -}}
{{- $svc := include "gpuscale.adapter.name" . -}}
{{- $ns := .Release.Namespace -}}
{{- $days := int .Values.metricsAdapter.tls.validityDays -}}
{{- $now := now | unixEpoch | int64 -}}
{{- $existing := lookup "v1" "Secret" $ns (printf "%s-tls" $svc) -}}
{{- $notAfter := 0 -}}
{{- if $existing -}}
{{- $notAfter = index ($existing.metadata.annotations | default dict) "gpuscale.dev/not-after" | default "0" | int64 -}}
{{- end -}}
{{- if and $existing $existing.data (gt $notAfter (add $now (mul 30 86400))) -}}
{{- dict "data" $existing.data "notAfter" $notAfter | toYaml -}}
{{- else -}}
{{- $ca := genCA (printf "%s-ca" $svc) $days -}}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $names $days $ca -}}
{{- $data := dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- dict "data" $data "notAfter" (add $now (mul $days 86400)) | toYaml -}}
{{- end -}}
{{- end -}}
